"""Task heads found by name, checked against the config, and loaded into our model of their
kind.

The original (zihangdai/xlnet) builds its fine-tuning heads on the encoder's content
stream, and its checkpoints name their variables; which names a kind's head has, and what
they mean, is the kind's conversion's (`xlnet_tf.convert.heads`: the classifier's
run_classifier.py head, the RACE model's run_race.py head, run_squad.py's SQuAD head, each
in its record's `conversion`). `identify_head` finds the one head of a checkpoint (or the
one asked for) and checks that it is complete and that every shape fits the config;
`load_task_model` assigns the encoder and the head to the model the kind's conversion
builds. Errors name the checkpoint, the variable and what was expected.

HuggingFace task models (`hf_heads.identify_hf_head`) come through the same path: their
head tensors are renamed to the original's names where the original has the head, and to
the names of our layers where it has none.
"""

from typing import Any, Dict, List, Mapping, Optional, Sequence

import numpy as np

from xlnet_tf import released_names as names
from xlnet_tf import task_kind
from xlnet_tf.configs import XLNetConfig
from xlnet_tf.convert.heads.base import Head
from xlnet_tf.convert.heads.base import HeadConversion
from xlnet_tf.convert.heads.base import fail


def _released_heads() -> List[task_kind.TaskKind]:
  """The kinds whose head the original's checkpoints have, in the order of the kinds."""
  return [kind for kind in task_kind.kinds() if isinstance(kind.conversion, HeadConversion)
          and kind.conversion.released_scope is not None]


def is_task_head(name: str) -> bool:
  """Whether the variable `name` of a TF1 checkpoint lies in a task head's scope (loaded by
  the task models, not with the encoder)."""
  return any(kind.conversion.released_scope.search(name) for kind in _released_heads())


def identify_head(heads: Mapping[str, np.ndarray], config: XLNetConfig, source: str,
                  task: str = "auto", task_name: Optional[str] = None,
                  summary_type: Optional[str] = None,
                  labels: Optional[Sequence[str]] = None) -> Optional[Head]:
  """The head to load from `heads` (task-head arrays by released name), checked.

  Args:
    task: "auto" (the checkpoint's only head, None if it has none) or one of
      `task_kind.head_kinds()`.
    task_name: chooses among several classification heads (the <task> of the scope).
    summary_type: None to infer it ("attn" when its variables are there, else "last", the
      original's default: "first" and "mean" have no variables of their own).
    labels: the classifier's labels, if given: their number must be the head's outputs.
  Raises:
    ValueError naming `source` and the variables: no head of the requested kind; heads of
    several tasks (task "auto") or several classification heads (no `task_name`); an
    incomplete head; a variable the original does not write; a shape that does not fit the
    config; labels that do not match the head.
  """
  if task != "auto" and task not in task_kind.head_kinds():
    raise ValueError(f"--task must be auto, pretrained or one of "
                     f"{list(task_kind.head_kinds())}, got {task!r}")
  kinds = _released_heads()
  found: Dict[str, List[str]] = {}         # kind -> the variables of its own
  shared, unknown = [], []                 # read by several heads; of none
  for name in sorted(heads):
    owner = next((kind.name for kind in kinds if kind.conversion.owns_released(name)), None)
    if owner is not None:
      found.setdefault(owner, []).append(name)
    elif any(kind.conversion.shares_released(name) for kind in kinds):
      shared.append(name)
    else:
      unknown.append(name)
  if unknown:
    written = "; ".join(kind.conversion.released_head for kind in kinds)
    raise fail(source, f"unknown task-head variable(s) {unknown}; the original's fine-tuning "
                       f"scripts write {written}")
  found = {kind.name: found[kind.name] for kind in kinds if kind.name in found}
  if task == "auto":
    if not found:
      if shared:
        readers = [kind for kind in kinds
                   if any(kind.conversion.shares_released(name) for name in shared)]
        raise fail(source, f"the checkpoint has {readers[0].conversion.released_shared_what} "
                           f"variables {sorted(shared)} but no logit layer on them (no "
                           f"{' or '.join(kind.description for kind in readers)})")
      return None
    if len(found) > 1:
      listed = "; ".join(f"{kind}: {present[0]}, ..." for kind, present in found.items())
      raise fail(source, f"the checkpoint has the heads of several tasks ({listed}); pass "
                         f"--task to choose one of {list(found)}, or --task=pretrained for "
                         f"the encoder alone")
    task = next(iter(found))
  elif task not in found:
    have = f"its task-head variables are {sorted(heads)}" if heads else (
        "it has no task-head variables")
    raise fail(source, f"--task {task}: no {task_kind.get(task).description} in the "
                       f"checkpoint; {have}")
  conversion = task_kind.get(task).conversion
  head = conversion.identify_released(found[task], shared, heads, config, source, task_name,
                                      summary_type)
  check_shapes(head, heads, config, source)
  conversion.check_labels(head, labels, heads, source)
  return head


def check_shapes(head: Head, heads: Mapping[str, np.ndarray], config: XLNetConfig,
                 source: str) -> None:
  """Raises ValueError naming the first variable of `head` whose shape or dtype is wrong
  (the shapes of its kind's conversion, `expected_shapes`)."""
  expected = task_kind.get(head.kind).conversion.expected_shapes(head, config)
  for name, (shape, why) in expected.items():
    array = np.asarray(heads[name])
    if list(array.shape) != shape:
      raise fail(source, f"variable {name} has shape {list(array.shape)}, expected {shape} "
                         f"({why})")
    if not np.issubdtype(array.dtype, np.floating):
      raise fail(source, f"variable {name} has dtype {array.dtype}, expected float")


def head_variables(head: Head, model) -> Dict[str, Any]:
  """Released (or converted) name -> our variable, for the head of `model` (built by its
  kind's conversion): the conversion's `head_variables`."""
  return task_kind.get(head.kind).conversion.head_variables(model, head.task_name)


def load_task_model(model, head: Head, encoder_arrays: Mapping[str, np.ndarray],
                    heads: Mapping[str, np.ndarray], source: str) -> None:
  """Assigns the encoder (`encoder_arrays`, every encoder weight) and `head` (from
  `heads`) to `model`, after checking every name and shape; nothing is assigned otherwise."""
  targets = {**names.encoder_variables(model.encoder), **head_variables(head, model)}
  arrays = {**encoder_arrays, **{name: heads[name] for name in head.names}}
  names.assign_by_name(targets, arrays, source)
