"""The head of a HuggingFace XLNet directory: which kind it is (config.json's
`architectures` and the head tensors present), read by that kind's conversion.

Every answer about a kind comes from its `task_kind` record's `conversion`
(`xlnet_tf.convert.heads`): the classes read (`hf_architectures_in`) and written
(`hf_architecture_out`), the tensors of its head (`hf_head_keys`; kinds whose heads have
the same tensors, the classifier's and the RACE model's, are told apart by
`architectures`), and reading them (`read_hf_head`: checked and translated into
`weights.heads`, by the released names where the original has the head, else by the
names of our layers; torch Linear weights [out, in] transposed).
"""

import dataclasses
from typing import Dict, List, Optional, Sequence, Tuple

from xlnet_tf import task_kind
from xlnet_tf.convert import huggingface
from xlnet_tf.convert import task_heads
from xlnet_tf.convert.heads import base
from xlnet_tf.convert.huggingface import HFSourceWeights


def architecture_out(kind: str) -> str:
  """The HuggingFace class an export of a model of `kind` writes (its record's conversion);
  ValueError saying why when the kind has none."""
  record = task_kind.get(kind)
  if record.conversion is None:
    raise ValueError(f"a {kind} model cannot be exported to HuggingFace: "
                     f"{record.hf_not_exportable}")
  return record.conversion.hf_architecture_out


def architectures_in() -> Dict[str, str]:
  """HF's model classes -> the kind of our output ("pretrained": no head), from the
  `task_kind` records."""
  return {architecture: kind.name for kind in task_kind.kinds() if kind.conversion
          for architecture in kind.conversion.hf_architectures_in}


@dataclasses.dataclass
class HFHead:
  """What `identify_hf_head` found: the head (None: the pretrained layout), the class it
  came from, and the conversion's notes about HF behaviour that differs from the original's."""
  head: Optional[base.Head]
  architecture: Optional[str]
  notes: List[str] = dataclasses.field(default_factory=list)


def _architecture(weights: HFSourceWeights) -> Optional[str]:
  """The one HF class of config.json's `architectures` (None if it names none)."""
  where = weights.config_path
  listed = weights.hf_config.get("architectures") or []
  if isinstance(listed, str) or not all(isinstance(a, str) for a in listed):
    raise ValueError(f"{where}: architectures is {listed!r}, expected a list of HuggingFace "
                     f"class names")
  unknown = [a for a in listed if a not in architectures_in()]
  if unknown:
    raise ValueError(f"{where}: architectures {listed} names {unknown}, which is not an "
                     f"XLNet model class this converter knows; expected one of "
                     f"{sorted(architectures_in())}")
  if len(set(listed)) > 1:
    raise ValueError(f"{where}: architectures {listed} lists {len(set(listed))} models (the "
                     f"heads of different tasks); expected the one class the weights were "
                     f"saved from")
  return listed[0] if listed else None


def _present_groups(weights: HFSourceWeights) -> Dict[Tuple[str, ...], List[str]]:
  """The head tensors present, by the kinds whose heads have them."""
  kinds_of = huggingface.head_keys()
  groups: Dict[Tuple[str, ...], List[str]] = {}
  for key in sorted(weights.head_tensors):
    groups.setdefault(kinds_of[key], []).append(key)
  return groups


def _group_architectures(group: Tuple[str, ...]) -> str:
  """"XLNetForSequenceClassification or XLNetForMultipleChoice": the classes of the kinds
  in `group`."""
  return " or ".join(task_kind.get(kind).conversion.hf_architecture_out for kind in group)


def identify_hf_head(weights: HFSourceWeights, task: str = "auto",
                     labels: Optional[Sequence[str]] = None,
                     task_name: Optional[str] = None) -> HFHead:
  """The head of a HuggingFace task model (config.json's `architectures` and the head
  tensors), checked and translated into `weights.heads` (released names, our layout).

  Args:
    task: "auto" (the directory's head, or the pretrained layout without one),
      "pretrained" (the encoder alone: the head's tensors are left out) or one of
      `task_kind.head_kinds()` (that head, or an error).
    labels: the label names of a head that has them (default: id2label).
    task_name: the classification task (default: config.json's finetuning_task, else
      "huggingface"), for the kinds whose conversion `takes_task_name`.
  Raises:
    ValueError naming config.json and the field, or the weight file and the tensor: several
    architectures; heads of several tasks; a head that disagrees with `architectures`; a
    tensor missing, extra or of a shape that does not fit the config; an id2label that
    does not fit the head; a summary HF cannot run.
  """
  architecture = _architecture(weights)
  groups = _present_groups(weights)
  where = weights.config_path
  if len(groups) > 1:
    listed = "; ".join(f"{_group_architectures(g)}: {keys[0]}, ..." for g, keys in
                       groups.items())
    raise ValueError(f"{weights.path}: holds the heads of several tasks ({listed}); expected "
                     f"the head of one HuggingFace model class ({where} architectures: "
                     f"{weights.hf_config.get('architectures')})")
  group = next(iter(groups), None)
  kind = architectures_in().get(architecture) if architecture else None
  inferred = None                 # a note when the head names the class
  if group is None:
    if kind is not None and task_kind.get(kind).conversion.hf_head_keys:
      keys = ", ".join(task_kind.get(kind).conversion.hf_head_keys)
      raise ValueError(f"{weights.path}: {where} says {architecture}, but the weights have "
                       f"none of its head's tensors ({keys}); expected them")
    kind = task_kind.PRETRAINED
  elif kind is not None and not task_kind.get(kind).conversion.hf_head_keys:
    raise ValueError(f"{weights.path}: {where} says {architecture} (no task head), but the "
                     f"weights hold a {_group_architectures(group)} head ({groups[group][0]}, "
                     f"...); expected architectures to name the model they were saved from")
  elif kind is not None and kind not in group:
    raise ValueError(f"{weights.path}: {where} says {architecture}, but the weights hold a "
                     f"{_group_architectures(group)} head ({groups[group][0]}, ...)")
  elif kind is None:
    claimed = [name for name in group
               if task_kind.get(name).conversion.reads_without_architectures(weights)]
    if not claimed:
      raise ValueError(f"{where}: no architectures, and the head's tensors are those of "
                       f"{_group_architectures(group)}; expected architectures to name the "
                       f"class")
    kind = claimed[0]
    architecture = architecture_out(kind)
    inferred = f"{where} has no architectures: the head's tensors are {architecture}'s"
  conversion = task_kind.get(kind).conversion
  if task_name is not None and not conversion.takes_task_name:
    raise ValueError(f"--task_name {task_name}: names a classification task; {weights.path} "
                     f"converts to the {kind} layout")
  if task == task_kind.PRETRAINED or kind == task_kind.PRETRAINED:
    if task not in ("auto", task_kind.PRETRAINED):
      raise ValueError(f"--task {task}: {weights.path} has no task head ({where} "
                       f"architectures: {weights.hf_config.get('architectures')})")
    return HFHead(None, architecture)
  if task != "auto" and task != kind:
    raise ValueError(f"--task {task}: {weights.path} holds the head of {architecture} (--task "
                     f"{kind}); pass --task {kind}, or --task pretrained for the encoder alone")
  notes: List[str] = [inferred] if inferred else []
  if task_name is not None:
    weights.hf_config = {**weights.hf_config, "finetuning_task": task_name}
  head = conversion.read_hf_head(weights, architecture, labels, notes)
  task_heads.check_shapes(head, weights.heads, weights.config, weights.path)
  return HFHead(head, architecture, notes)
