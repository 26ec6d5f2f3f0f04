"""The classifier's conversion: the original's run_classifier.py head and HuggingFace's
XLNetForSequenceClassification, into and out of our `XLNetClassifier` (classifier.json).

The original (D = d_model, C = classes):
  model/sequnece_summary/...              the sequence summary (`summary`)
  model/classification_<task>/logit/{kernel [D, C], bias [C]}, or
  model/regression_<task>/logit/{kernel [D, 1], bias [1]} (is_regression)
HuggingFace: sequence_summary.summary [D, D] (summary_use_proj) and logits_proj [C, D]
(torch Linear, transposed) -> the same names (regression_<task> when num_labels is 1 or
problem_type "regression"); the labels are id2label in id order, the task config.json's
finetuning_task (else "huggingface"). A checkpoint of the original without label names
gets the original's labels of its own tasks (`ORIGINAL_LABELS`), else the class ids.
"""

import dataclasses
import re
from typing import Any, Dict, List, Mapping, Optional, Tuple

from xlnet_tf.configs import XLNetConfig
from xlnet_tf.convert.heads import base
from xlnet_tf.convert.heads import summary
from xlnet_tf.models.xlnet_classifier import ClassifierSpec
from xlnet_tf.models.xlnet_classifier import build_classifier
from xlnet_tf.models.xlnet_classifier import classification_scope
from xlnet_tf.models.xlnet_classifier import released_head_variables
from xlnet_tf.models.xlnet_classifier import SUMMARY_ATTENTION
from xlnet_tf.models.xlnet_classifier import SUMMARY_PROJECTION

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
class ClassifierHead(summary.SummaryHead):
  """A classification head: task_name is the <task> of model/classification_<task> (or
  regression_<task>); is_regression: one score; num_outputs: C, the logit layer's outputs;
  labels: the label names in id order, when the source names them (HF's id2label)."""
  is_regression: bool = False
  num_outputs: int = 1
  labels: Optional[Tuple[str, ...]] = None

  @property
  def logit_scope(self) -> str:
    return classification_scope(self.task_name, self.is_regression)


class ClassifierConversion(summary.SummaryConversion):
  """See the module docstring."""
  spec_class = ClassifierSpec
  hf_architectures_in = ("XLNetForSequenceClassification",)
  hf_architecture_out = "XLNetForSequenceClassification"
  takes_task_name = True
  released_head = ("model/sequnece_summary/summary/{kernel,bias} + "
                   "model/classification_<task>/logit/{kernel,bias} (or regression_<task>)")
  released_scope = re.compile(r"^model/(sequnece_summary|classification_[^/]+|"
                              r"regression_[^/]+)/")

  # ---- the original's checkpoints ----------------------------------------------------------

  def owns_released(self, name: str) -> bool:
    return bool(_LOGIT.match(name))

  def identify_released(self, own, shared, heads, config, source, task_name, summary_type):
    scopes: Dict[Tuple[str, str], Dict[str, str]] = {}      # (kind, task): {part: name}
    for name in own:
      logit = _LOGIT.match(name)
      scopes.setdefault((logit.group(1), logit.group(2)), {})[logit.group(3)] = name
    if task_name is not None:
      chosen = [key for key in scopes if key[1] == task_name]
      if not chosen:
        raise base.fail(source, f"--task_name {task_name!r}: no model/classification_"
                                f"{task_name}/logit or model/regression_{task_name}/logit; "
                                f"the checkpoint's classification heads are "
                                f"{_scope_list(scopes)}")
    else:
      chosen = list(scopes)
    if len(chosen) > 1:
      raise base.fail(source, f"the checkpoint has several classification heads "
                              f"{_scope_list(scopes)}; pass --task_name to choose one (the "
                              f"<task> of model/classification_<task>)")
    (kind, name), = chosen
    scope = classification_scope(name, kind == "regression")
    logit = (f"{scope}/logit/kernel", f"{scope}/logit/bias")
    base.require_all(source, f"classification head {scope}/logit",
                     list(scopes[chosen[0]].values()), logit)
    summary_type, use_proj = self.released_summary(source, f"classification head {scope}",
                                                   shared, summary_type)
    kernel = heads[logit[0]]
    d = config.d_model
    if kernel.ndim != 2 or kernel.shape[0] != d:
      raise base.fail(source, f"variable {logit[0]} has shape {list(kernel.shape)}, expected "
                              f"[{d}, number of classes] (d_model {d} from the config)")
    return ClassifierHead(
        "classifier", logit + (SUMMARY_PROJECTION if use_proj else ()) +
        (SUMMARY_ATTENTION if summary_type == "attn" else ()),
        task_name=name, is_regression=kind == "regression",
        num_outputs=int(kernel.shape[1]), summary_type=summary_type, use_proj=use_proj)

  def check_labels(self, head: ClassifierHead, labels, heads, source) -> None:
    if labels is None:
      return
    if head.is_regression:
      raise base.fail(source, f"{head.logit_scope}/logit is a regression head (one score, no "
                              f"labels); --labels {list(labels)} does not apply")
    if len(labels) != head.num_outputs:
      raise base.fail(source, f"{head.logit_scope}/logit has {head.num_outputs} outputs "
                              f"(kernel {list(heads[head.names[0]].shape)}), but --labels "
                              f"gives {len(labels)}: {list(labels)}")

  def logit_shapes(self, head: ClassifierHead, config: XLNetConfig) -> base.Shapes:
    d, c = config.d_model, head.num_outputs
    model = f"d_model {d}"
    scope = head.logit_scope
    if head.is_regression:
      return {f"{scope}/logit/kernel": ([d, 1], f"[d_model, 1] for a regression head, "
                                                f"{model}"),
              f"{scope}/logit/bias": ([1], "[1] for a regression head")}
    return {f"{scope}/logit/kernel": ([d, c], f"[d_model, classes], {model}"),
            f"{scope}/logit/bias": ([c], f"[classes]: the kernel has {c} outputs")}

  # ---- HuggingFace's heads -------------------------------------------------------------------

  def reads_without_architectures(self, weights) -> bool:
    rows = weights.head_tensors.get("logits_proj.weight")
    if rows is None or rows.shape[0] == 1:
      raise ValueError(f"{weights.config_path}: no architectures, and sequence_summary/"
                       f"logits_proj with one output are the head of both "
                       f"XLNetForSequenceClassification (regression) and "
                       f"XLNetForMultipleChoice; expected architectures to name the class")
    return True

  def hf_logit_shapes(self, outputs: int, d: int) -> base.Shapes:
    return {"logits_proj.weight": ([outputs, d], f"[num_labels, d_model], d_model {d}"),
            "logits_proj.bias": ([outputs], f"[num_labels]: logits_proj.weight has "
                                            f"{outputs} outputs")}

  def read_hf_logits(self, weights, outputs, labels, summary_settings) -> ClassifierHead:
    where = weights.config_path
    problem = weights.hf_config.get("problem_type")
    if problem not in (None, "regression", "single_label_classification"):
      raise ValueError(f"{where}: problem_type {problem!r} is not supported: the classifier "
                       f"and its export give softmax probabilities (one label per text); "
                       f"expected single_label_classification or regression")
    is_regression = outputs == 1 or problem == "regression"
    if is_regression and outputs != 1:
      raise ValueError(f"{where}: problem_type 'regression' with {outputs} outputs "
                       f"(logits_proj.weight "
                       f"{list(weights.head_tensors['logits_proj.weight'].shape)}); the "
                       f"classifier's regression gives one score: expected num_labels 1")
    if problem == "single_label_classification" and outputs == 1:
      raise ValueError(f"{where}: problem_type 'single_label_classification' with one "
                       f"output; expected num_labels >= 2 (or problem_type regression)")
    task_name = str(weights.hf_config.get("finetuning_task") or "huggingface")
    names_found = None
    if not is_regression:
      names_found = base.given_labels(weights, "logits_proj.weight", outputs, labels)
    else:
      _one_output_id2label(weights)
      if labels is not None:
        raise ValueError(f"--labels {list(labels)}: {weights.path} holds a regression head "
                         f"(one score, no labels)")
    scope = classification_scope(task_name, is_regression)
    base.linear(weights, "logits_proj", f"{scope}/logit")
    use_proj = summary_settings["use_proj"]
    return ClassifierHead(
        "classifier", (f"{scope}/logit/kernel", f"{scope}/logit/bias") +
        (SUMMARY_PROJECTION if use_proj else ()), task_name=task_name,
        is_regression=is_regression, num_outputs=outputs, labels=names_found,
        **summary_settings)

  # ---- our model and its spec ----------------------------------------------------------------

  def build_model(self, head: ClassifierHead, config: XLNetConfig, options):
    del options
    return build_classifier(config, head.num_outputs, is_regression=head.is_regression,
                            **self.summary_options(head))

  def head_variables(self, model, task_name: Optional[str]) -> Dict[str, Any]:
    return released_head_variables(model, task_name)

  def converted_spec(self, head: ClassifierHead, options, settings, weights, described,
                     notes):
    if head.labels is not None:
      labels = head.labels
      labels_from = "--labels" if options.labels is not None else "config.json id2label"
    else:
      labels, labels_from = _label_names(head, options, weights.path)
    task_name = OUR_TASK_NAME.get(head.task_name, head.task_name)
    summary_type = summary.our_summary_type(head.summary_type)
    spec = ClassifierSpec(
        task_name=task_name, labels=labels, is_regression=head.is_regression,
        max_seq_length=settings["max_seq_length"], uncased=settings["uncased"],
        summary_type=summary_type, use_proj=head.use_proj,
        summary_activation=head.activation, keep_accents=settings.get("keep_accents", False))
    described.update(scope=head.logit_scope, task_name=task_name, labels=labels,
                     labels_from=labels_from, is_regression=head.is_regression,
                     num_outputs=head.num_outputs, summary_type=summary_type,
                     use_proj=head.use_proj, summary_activation=head.activation)
    if weights.kind == "released":
      if options.summary_type is None and head.summary_type == "last":
        notes.append(
            "summary_type 'last' (<cls>), the original's default: 'first' and 'mean' have "
            "no variables of their own to tell them apart (--summary_type sets it)")
      if head.summary_type == "mean":
        notes.append(
            "summary_type 'mean': the original averages over the padding too, so the model "
            "uses 'mean_with_padding' (the same logits as the original at the same "
            "max_seq_length)")
    if labels_from.startswith("the checkpoint has no label names"):
      notes.append(f"labels: {labels_from}")
    return spec, settings

  # ---- the export ------------------------------------------------------------------------------

  def hf_config(self, model, spec: Mapping[str, Any], model_dir: str,
                notes: List[str]) -> Dict[str, Any]:
    values = super().hf_config(model, spec, model_dir, notes)
    values["finetuning_task"] = spec["task_name"]
    if spec.get("is_regression"):
      labels = ["LABEL_0"]
      values["problem_type"] = "regression"
    else:
      labels = [str(label) for label in spec["labels"]]
      values["problem_type"] = "single_label_classification"
    values["id2label"] = {str(i): label for i, label in enumerate(labels)}
    values["label2id"] = {label: i for i, label in enumerate(labels)}
    return values

  def card_task(self, task: str, values: Mapping[str, Any]) -> str:
    return "regression" if values.get("is_regression") else task

  def card_title(self, spec: Mapping[str, Any], task: str) -> str:
    return f"{spec.get('task_name')} {task}"


def _scope_list(scopes) -> List[str]:
  return sorted(classification_scope(task, kind == "regression") for kind, task in scopes)


def _one_output_id2label(weights) -> None:
  """A one-output (regression) head: config.json's id2label must be absent or name one
  label (HF's num_labels 1); more labels mean the config and the weights disagree."""
  id2label = weights.hf_config.get("id2label")
  if id2label is None or (isinstance(id2label, dict) and len(id2label) == 1):
    return
  shown = (f"{len(id2label)} labels {list(id2label.values())}"
           if isinstance(id2label, dict) else repr(id2label))
  raise ValueError(
      f"{weights.config_path}: id2label has {shown}, but the head's logits_proj.weight has "
      f"one output (shape {list(weights.head_tensors['logits_proj.weight'].shape)}): a "
      f"regression head; expected id2label absent or of exactly one entry (num_labels 1), "
      f"or weights with one output per label")


def _label_names(head: ClassifierHead, options, source: str):
  """(labels or None, where they came from) of a head whose source names none."""
  if head.is_regression:
    return None, "a regression head: one score, no labels"
  if options.labels is not None:
    return tuple(options.labels), "--labels"
  original = ORIGINAL_LABELS.get(head.task_name)
  if original is not None:
    if len(original) != head.num_outputs:
      raise ValueError(
          f"{source}: {head.logit_scope}/logit has {head.num_outputs} outputs, but the "
          f"original's {head.task_name} task has {len(original)} labels {list(original)}; "
          f"pass --labels")
    return original, (f"the original run_classifier.py's labels of task {head.task_name} "
                      f"(in its id order)")
  labels = tuple(str(i) for i in range(head.num_outputs))
  return labels, ("the checkpoint has no label names: labels are the class ids 0.."
                  f"{head.num_outputs - 1}; pass --labels (in the id order the model was "
                  f"fine-tuned with) to name them")
