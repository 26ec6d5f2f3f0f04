"""Task heads of checkpoints written by the original's fine-tuning scripts, found by name.

The original (zihangdai/xlnet) builds these on the encoder's content stream; its checkpoints
name them (D = d_model, N = n_head, H = d_head, C = classes):

  run_classifier.py  model/sequnece_summary/summary/{kernel [D, D], bias [D]}  (use_summ_proj,
                       the default; the scope name is the original's spelling)
                     model/sequnece_summary/summary_bias [D],
                       model/sequnece_summary/abs_attn/{q,k,v,o}/kernel [D, N, H],
                       model/sequnece_summary/abs_attn/LayerNorm/{gamma,beta} [D]  (summary_type
                       attn only)
                     model/classification_<task>/logit/{kernel [D, C], bias [C]}, or
                       model/regression_<task>/logit/{kernel [D, 1], bias [1]} (is_regression)
  run_squad.py       start_logits/dense/{kernel [D, 1], bias [1]}
                     end_logits/dense_0/{kernel [2D, D], bias [D]}, end_logits/LayerNorm/
                       {gamma,beta} [D], end_logits/dense_1/{kernel [D, 1], bias [1]}
                     answer_class/dense_0/{kernel [2D, D], bias [D]}, answer_class/dense_1/
                       kernel [D, 1] (no bias)
  run_race.py        the sequence summary as above + logits/dense/{kernel [D, 1], bias [1]}

`identify_head` finds the one head of a checkpoint (or the one asked for) and checks that it
is complete and that every shape fits the config; `build_task_model` builds our model for it
and `load_task_model` assigns the encoder and the head by these names. Errors name the
checkpoint, the variable and what was expected.

HuggingFace task models (`huggingface.identify_hf_head`) come through the same path: their
head tensors are renamed to these names where the original has the head (sequence
classification, multiple choice, XLNetForQuestionAnswering), and to the names of our
layers where it has none (kinds "tagger": `classifier/{kernel,bias}` of `XLNetTagger`;
"qa_simple": `qa_outputs/{kernel,bias}` of `XLNetSimpleQA`).
"""

import dataclasses
import re
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from xlnet_tf import released_names as names
from xlnet_tf import task_kind
from xlnet_tf.configs import XLNetConfig

# The heads only HuggingFace models have, by the names of our layers (see the docstring).
TAGGER_HEAD = names.TAGGER_HEAD
QA_SIMPLE_HEAD = names.QA_SIMPLE_HEAD
SUMMARY_TYPES = ("last", "first", "mean", "attn")

_LOGIT = re.compile(r"^model/(classification|regression)_(.+)/logit/(kernel|bias)$")

# The label lists of the tasks the original's run_classifier.py defines itself (its
# processors' get_labels, in id order) and our name of the task where it differs.
ORIGINAL_LABELS = {
    "mnli_matched": ("contradiction", "entailment", "neutral"),
    "mnli_mismatched": ("contradiction", "entailment", "neutral"),
    "imdb": ("neg", "pos"),
    "yelp5": ("1", "2", "3", "4", "5"),
}
OUR_TASK_NAME = {"mnli_matched": "mnli", "mnli_mismatched": "mnli"}



@dataclasses.dataclass(frozen=True)
class Head:
  """The task head found in a checkpoint.

  kind: a `task_kind` with a head (`task_kind.head_kinds()`).
  names: the released names of its variables (what is loaded).
  task_name: classifier: the <task> of model/classification_<task> (or regression_<task>).
  is_regression: classifier: a regression head (one score).
  num_outputs: C, the logit layer's outputs (1 for regression, RACE and SQuAD; the tags
    of a tagger).
  summary_type, use_proj: classifier and RACE: the sequence summary ("mean" is the
    original's and HF's, over the padding too: our "mean_with_padding").
  activation: classifier and RACE: the summary's activation (None: the released one).
  labels: the label names in id order, when the source names them (HF's id2label).
  answer_class_start: squad: what the answer class reads in training (`SquadHead`).
  start_n_top, end_n_top: squad and qa_simple: the candidates the source searches (None:
    the conversion's options).
  """
  kind: str
  names: Tuple[str, ...]
  task_name: Optional[str] = None
  is_regression: bool = False
  num_outputs: int = 1
  summary_type: Optional[str] = None
  use_proj: bool = False
  activation: Optional[str] = None
  labels: Optional[Tuple[str, ...]] = None
  answer_class_start: str = "expected"
  start_n_top: Optional[int] = None
  end_n_top: Optional[int] = None

  @property
  def logit_scope(self) -> Optional[str]:
    if self.kind != "classifier":
      return None
    return names.classification_scope(self.task_name, self.is_regression)


def _fail(source: str, message: str) -> ValueError:
  return ValueError(f"{source}: {message}")


def _partition(heads: Mapping[str, np.ndarray], source: str):
  """Task-head names -> (logit scopes {(kind, task): {part: name}}, summary projection
  names, summary attention names, SQuAD names, RACE names); unknown names are an error."""
  scopes: Dict[Tuple[str, str], Dict[str, str]] = {}
  projection, attention, squad, race, unknown = [], [], [], [], []
  for name in sorted(heads):
    logit = _LOGIT.match(name)
    if logit:
      scopes.setdefault((logit.group(1), logit.group(2)), {})[logit.group(3)] = name
    elif name in names.SUMMARY_PROJECTION:
      projection.append(name)
    elif name in names.SUMMARY_ATTENTION:
      attention.append(name)
    elif name in names.SQUAD_HEAD:
      squad.append(name)
    elif name in names.RACE_HEAD:
      race.append(name)
    else:
      unknown.append(name)
  if unknown:
    raise _fail(source, f"unknown task-head variable(s) {unknown}; the original's fine-tuning "
                        f"scripts write {names.SUMMARY}/..., model/classification_<task>/"
                        f"logit/..., model/regression_<task>/logit/..., start_logits/..., "
                        f"end_logits/..., answer_class/... and logits/dense/...")
  return scopes, projection, attention, squad, race


def _require_all(source: str, what: str, present: Sequence[str],
                 required: Sequence[str]) -> None:
  missing = [name for name in required if name not in present]
  if missing:
    raise _fail(source, f"incomplete {what}: it has {sorted(present)} but not {missing}")


def _summary(source: str, what: str, projection: List[str], attention: List[str],
             summary_type: Optional[str]) -> Tuple[str, bool]:
  """(summary_type, use_proj) of the sequence summary, checked."""
  if projection:
    _require_all(source, f"sequence summary projection of the {what}", projection,
                 names.SUMMARY_PROJECTION)
  if attention:
    _require_all(source, f"attention summary (summary_type attn) of the {what}", attention,
                 names.SUMMARY_ATTENTION)
    if summary_type not in (None, "attn"):
      raise _fail(source, f"the checkpoint has the attention summary's variables "
                          f"({names.SUMMARY_ATTENTION[0]}, ...), which only summary_type attn "
                          f"has; --summary_type is {summary_type!r}")
    summary_type = "attn"
  elif summary_type == "attn":
    raise _fail(source, f"--summary_type attn, but the checkpoint has no "
                        f"{names.SUMMARY_ATTENTION[0]} (summary_type attn's variables)")
  return summary_type or "last", bool(projection)


def identify_head(heads: Mapping[str, np.ndarray], config: XLNetConfig, source: str,
                  task: str = "auto", task_name: Optional[str] = None,
                  summary_type: Optional[str] = None,
                  labels: Optional[Sequence[str]] = None) -> Optional[Head]:
  """The head to load from `heads` (task-head arrays by released name), checked.

  Args:
    task: "auto" (the checkpoint's only head, None if it has none) or one of `task_kind.head_kinds()`.
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
    raise ValueError(f"--task must be auto, pretrained or one of {list(task_kind.head_kinds())}, got {task!r}")
  scopes, projection, attention, squad, race = _partition(heads, source)
  found = {kind: present for kind, present in
           (("classifier", sorted(n for parts in scopes.values() for n in parts.values())),
            ("squad", squad), ("race", race)) if present}
  if task == "auto":
    if not found:
      if projection or attention:
        raise _fail(source, f"the checkpoint has sequence-summary variables "
                            f"{sorted(projection + attention)} but no logit layer on them "
                            f"(no {task_kind.get('classifier').description} or "
                            f"{task_kind.get('race').description})")
      return None
    if len(found) > 1:
      listed = "; ".join(f"{kind}: {present[0]}, ..." for kind, present in found.items())
      raise _fail(source, f"the checkpoint has the heads of several tasks ({listed}); pass "
                          f"--task to choose one of {list(found)}, or --task=pretrained for "
                          f"the encoder alone")
    task = next(iter(found))
  elif task not in found:
    have = f"its task-head variables are {sorted(heads)}" if heads else (
        "it has no task-head variables")
    raise _fail(source, f"--task {task}: no {task_kind.get(task).description} in the "
                        f"checkpoint; {have}")

  d = config.d_model
  if task == "squad":
    _require_all(source, "SQuAD head", squad, names.SQUAD_HEAD)
    head = Head("squad", names.SQUAD_HEAD)
  elif task == "race":
    _require_all(source, "RACE head", race, names.RACE_HEAD)
    kind, use_proj = _summary(source, "RACE head", projection, attention, summary_type)
    if kind != "last" or not use_proj:
      raise _fail(source, f"the RACE head sits on summary_type {kind!r} "
                          f"{'with' if use_proj else 'without'} the projection "
                          f"({names.SUMMARY_PROJECTION[0]}); our RACE model "
                          f"(experiments/run_race.py) uses summary_type 'last' with the "
                          f"projection, the original's default")
    head = Head("race", names.RACE_HEAD + names.SUMMARY_PROJECTION, summary_type=kind,
                use_proj=True)
  else:
    if task_name is not None:
      chosen = [key for key in scopes if key[1] == task_name]
      if not chosen:
        raise _fail(source, f"--task_name {task_name!r}: no model/classification_{task_name}/"
                            f"logit or model/regression_{task_name}/logit; the checkpoint's "
                            f"classification heads are {_scope_list(scopes)}")
    else:
      chosen = list(scopes)
    if len(chosen) > 1:
      raise _fail(source, f"the checkpoint has several classification heads "
                          f"{_scope_list(scopes)}; pass --task_name to choose one (the "
                          f"<task> of model/classification_<task>)")
    (kind, name), = chosen
    scope = names.classification_scope(name, kind == "regression")
    logit = (f"{scope}/logit/kernel", f"{scope}/logit/bias")
    _require_all(source, f"classification head {scope}/logit", list(scopes[chosen[0]].values()),
                 logit)
    summary, use_proj = _summary(source, f"classification head {scope}", projection, attention,
                                 summary_type)
    kernel = heads[logit[0]]
    if kernel.ndim != 2 or kernel.shape[0] != d:
      raise _fail(source, f"variable {logit[0]} has shape {list(kernel.shape)}, expected "
                          f"[{d}, number of classes] (d_model {d} from the config)")
    head = Head("classifier", logit + (names.SUMMARY_PROJECTION if use_proj else ()) +
                (names.SUMMARY_ATTENTION if summary == "attn" else ()),
                task_name=name, is_regression=kind == "regression",
                num_outputs=int(kernel.shape[1]), summary_type=summary, use_proj=use_proj)
  check_shapes(head, heads, config, source)
  if head.kind == "classifier" and labels is not None:
    if head.is_regression:
      raise _fail(source, f"{head.logit_scope}/logit is a regression head (one score, no "
                          f"labels); --labels {list(labels)} does not apply")
    if len(labels) != head.num_outputs:
      raise _fail(source, f"{head.logit_scope}/logit has {head.num_outputs} outputs (kernel "
                          f"{list(heads[head.names[0]].shape)}), but --labels gives "
                          f"{len(labels)}: {list(labels)}")
  return head


def _scope_list(scopes) -> List[str]:
  return sorted(names.classification_scope(task, kind == "regression") for kind, task in scopes)


def expected_shapes(head: Head, config: XLNetConfig) -> Dict[str, Tuple[List[int], str]]:
  """Released name -> (shape, why) for every variable of `head`."""
  d, n, h = config.d_model, config.n_head, config.d_head
  model = f"d_model {d}"
  shapes = {}
  if head.use_proj:
    shapes[names.SUMMARY_PROJECTION[0]] = ([d, d], f"[d_model, d_model], {model}")
    shapes[names.SUMMARY_PROJECTION[1]] = ([d], f"[d_model], {model}")
  if head.summary_type == "attn":
    shapes[names.SUMMARY_ATTENTION[0]] = ([d], f"[d_model], {model}")
    for name in names.SUMMARY_ATTENTION[1:5]:
      shapes[name] = ([d, n, h], f"[d_model, n_head, d_head], {model}, n_head {n}, d_head {h}")
    for name in names.SUMMARY_ATTENTION[5:]:
      shapes[name] = ([d], f"[d_model], {model}")
  if head.kind == "classifier":
    c = head.num_outputs
    scope = head.logit_scope
    if head.is_regression:
      shapes[f"{scope}/logit/kernel"] = ([d, 1], f"[d_model, 1] for a regression head, {model}")
      shapes[f"{scope}/logit/bias"] = ([1], "[1] for a regression head")
    else:
      shapes[f"{scope}/logit/kernel"] = ([d, c], f"[d_model, classes], {model}")
      shapes[f"{scope}/logit/bias"] = ([c], f"[classes]: the kernel has {c} outputs")
  elif head.kind == "race":
    shapes[names.RACE_HEAD[0]] = ([d, 1], f"[d_model, 1], {model}")
    shapes[names.RACE_HEAD[1]] = ([1], "[1]")
  elif head.kind == "tagger":
    c = head.num_outputs
    shapes[TAGGER_HEAD[0]] = ([d, c], f"[d_model, tags], {model}")
    shapes[TAGGER_HEAD[1]] = ([c], f"[tags]: the kernel has {c} outputs")
  elif head.kind == "qa_simple":
    shapes[QA_SIMPLE_HEAD[0]] = ([d, 2], f"[d_model, 2] (start, end), {model}")
    shapes[QA_SIMPLE_HEAD[1]] = ([2], "[2] (start, end)")
  else:
    wide = ([2 * d, d], f"[2 * d_model, d_model], {model}")
    for name, shape in zip(names.SQUAD_HEAD, (
        ([d, 1], f"[d_model, 1], {model}"), ([1], "[1]"),
        wide, ([d], f"[d_model], {model}"),
        ([d], f"[d_model], {model}"), ([d], f"[d_model], {model}"),
        ([d, 1], f"[d_model, 1], {model}"), ([1], "[1]"),
        wide, ([d], f"[d_model], {model}"),
        ([d, 1], f"[d_model, 1], {model}"))):
      shapes[name] = shape
  return shapes


def check_shapes(head: Head, heads: Mapping[str, np.ndarray], config: XLNetConfig,
                 source: str) -> None:
  """Raises ValueError naming the first variable of `head` whose shape or dtype is wrong."""
  for name, (shape, why) in expected_shapes(head, config).items():
    array = np.asarray(heads[name])
    if list(array.shape) != shape:
      raise _fail(source, f"variable {name} has shape {list(array.shape)}, expected {shape} "
                          f"({why})")
    if not np.issubdtype(array.dtype, np.floating):
      raise _fail(source, f"variable {name} has dtype {array.dtype}, expected float")


def build_task_model(head: Head, config: XLNetConfig, start_n_top: int = 5,
                     end_n_top: int = 5):
  """Our model for `head` (every weight created; memory off, as in fine-tuning)."""
  build = task_kind.get(head.kind).build_model
  if head.kind in ("squad", "qa_simple"):
    extra = {"answer_class_start": head.answer_class_start} if head.kind == "squad" else {}
    return build(config, start_n_top, end_n_top, **extra)
  if head.kind == "tagger":
    return build(config, head.num_outputs)
  summary = dict(summary_type=our_summary_type(head.summary_type), use_proj=head.use_proj,
                 summary_activation=head.activation)
  if head.kind == "race":
    return build(config, **summary)
  return build(config, head.num_outputs, is_regression=head.is_regression, **summary)


# The one table of summary types shared with HuggingFace: HF's XLNetSequenceSummary
# summary_type (the original's names too) -> ours (`SequenceSummary`). HF's and the
# original's "mean" averages over the padding too: our "mean_with_padding". Our "mean" (over
# the real tokens) and "attn" (the original's alone) have no HF equivalent.
OUR_SUMMARY_TYPES = {"last": "last", "first": "first", "mean": "mean_with_padding"}
HF_SUMMARY_TYPES = {ours: hf for hf, ours in OUR_SUMMARY_TYPES.items()}


def our_summary_type(summary_type: Optional[str]) -> Optional[str]:
  """The `SequenceSummary` type of a head's summary (the original's or HF's name:
  `OUR_SUMMARY_TYPES`; "attn" stays "attn")."""
  return OUR_SUMMARY_TYPES.get(summary_type, summary_type)


def head_variables(head: Head, model):
  """Released name -> our variable, for the head of `model` (built by `build_task_model`):
  the kind's `head_variables`."""
  return task_kind.get(head.kind).head_variables(model, head.task_name)


def load_task_model(model, head: Head, encoder_arrays: Mapping[str, np.ndarray],
                    heads: Mapping[str, np.ndarray], source: str) -> None:
  """Assigns the encoder (`encoder_arrays`, every encoder weight) and `head` (from
  `heads`) to `model`, after checking every name and shape; nothing is assigned otherwise."""
  targets = {**names.encoder_variables(model.encoder), **head_variables(head, model)}
  arrays = {**encoder_arrays, **{name: heads[name] for name in head.names}}
  names.assign_by_name(targets, arrays, source)
