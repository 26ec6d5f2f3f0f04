"""The sequence summary the classifier's and the RACE head sit on (`SequenceSummary`; the
original's modeling.summarize_sequence, HuggingFace's sequence_summary): its variables in
the original's checkpoints, HuggingFace's settings of it, and both ways between them.

Summary types: the original's and HF's "last", "first" and "mean" (over the padding too)
are our "last", "first" and "mean_with_padding" (`OUR_SUMMARY_TYPES`); our "mean" (over the
real tokens) has no equivalent in either, the original's "attn" none in HF. HF's
`summary_activation` applies with or without the projection, as ours does; our "gelu" (the
tanh approximation) is HF's "gelu_new", our "gelu_exact" (erf) HF's "gelu"
(`HF_SUMMARY_ACTIVATIONS`). HF's summary_type "cls_index" without a cls_index (as its
classifier and multiple-choice models call it) is the last position.
"""

import abc
import dataclasses
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from xlnet_tf.configs import XLNetConfig
from xlnet_tf.convert.heads import base
from xlnet_tf.layers import sequence_summary
from xlnet_tf.models.xlnet_classifier import SUMMARY
from xlnet_tf.models.xlnet_classifier import SUMMARY_ATTENTION
from xlnet_tf.models.xlnet_classifier import SUMMARY_PROJECTION

# The original's --summary_type.
SUMMARY_TYPES = ("last", "first", "mean", "attn")
# The one table of summary types shared with HuggingFace: HF's XLNetSequenceSummary
# summary_type (the original's names too) -> ours (`SequenceSummary`).
OUR_SUMMARY_TYPES = {"last": "last", "first": "first", "mean": "mean_with_padding"}
HF_SUMMARY_TYPES = {ours: hf for hf, ours in OUR_SUMMARY_TYPES.items()}
# Our summary activations (`sequence_summary.ACTIVATIONS`) -> HF's `summary_activation`
# (transformers.activations). An export writes these names.
HF_SUMMARY_ACTIVATIONS = {"tanh": "tanh", "linear": "linear", "relu": "relu",
                          "gelu": "gelu_new", "gelu_exact": "gelu", "sigmoid": "sigmoid",
                          "silu": "silu"}
# HF's other names of the same functions -> the name above (an import reads them too).
HF_ACTIVATION_ALIASES = {"gelu_python": "gelu", "gelu_pytorch_tanh": "gelu_new",
                         "gelu_fast": "gelu_new", "swish": "silu"}
# HF `summary_activation` -> `SequenceSummary`'s; "" and null: none.
SUMMARY_ACTIVATIONS = {hf: ours for ours, hf in HF_SUMMARY_ACTIVATIONS.items()}
SUMMARY_ACTIVATIONS.update({alias: SUMMARY_ACTIVATIONS[hf]
                            for alias, hf in HF_ACTIVATION_ALIASES.items()})


def our_summary_type(summary_type: Optional[str]) -> Optional[str]:
  """The `SequenceSummary` type of a head's summary (the original's or HF's name:
  `OUR_SUMMARY_TYPES`; "attn" stays "attn")."""
  return OUR_SUMMARY_TYPES.get(summary_type, summary_type)


@dataclasses.dataclass(frozen=True)
class SummaryHead(base.Head):
  """A head on the sequence summary: summary_type and use_proj (the original's or HF's
  names: "mean" is over the padding too, our "mean_with_padding"), activation (None: the
  released one)."""
  summary_type: Optional[str] = None
  use_proj: bool = False
  activation: Optional[str] = None


class SummaryConversion(base.HeadConversion):
  """What the classifier's and the RACE head share: the summary's variables (the original's
  and HF's), its shapes, its options and its HuggingFace config. A kind adds its logit
  layer (`logit_shapes`, `read_hf_logits`)."""
  hf_head_keys = ("sequence_summary.summary.weight", "sequence_summary.summary.bias",
                  "logits_proj.weight", "logits_proj.bias")
  hf_head_pattern = "sequence_summary.summary.*, logits_proj.*"
  released_shared_what = "sequence-summary"

  # ---- the original's checkpoints ----------------------------------------------------------

  def shares_released(self, name: str) -> bool:
    return name in SUMMARY_PROJECTION or name in SUMMARY_ATTENTION

  @staticmethod
  def released_summary(source: str, what: str, shared: Sequence[str],
                       summary_type: Optional[str]) -> Tuple[str, bool]:
    """(summary_type, use_proj) of the sequence summary whose variables are `shared`,
    checked (`summary_type`: --summary_type)."""
    projection = [name for name in shared if name in SUMMARY_PROJECTION]
    attention = [name for name in shared if name in SUMMARY_ATTENTION]
    if projection:
      base.require_all(source, f"sequence summary projection of the {what}", projection,
                       SUMMARY_PROJECTION)
    if attention:
      base.require_all(source, f"attention summary (summary_type attn) of the {what}",
                       attention, SUMMARY_ATTENTION)
      if summary_type not in (None, "attn"):
        raise base.fail(source, f"the checkpoint has the attention summary's variables "
                                f"({SUMMARY_ATTENTION[0]}, ...), which only summary_type attn "
                                f"has; --summary_type is {summary_type!r}")
      summary_type = "attn"
    elif summary_type == "attn":
      raise base.fail(source, f"--summary_type attn, but the checkpoint has no "
                              f"{SUMMARY_ATTENTION[0]} (summary_type attn's variables)")
    return summary_type or "last", bool(projection)

  def expected_shapes(self, head: SummaryHead, config: XLNetConfig) -> base.Shapes:
    d, n, h = config.d_model, config.n_head, config.d_head
    model = f"d_model {d}"
    shapes = {}
    if head.use_proj:
      shapes[SUMMARY_PROJECTION[0]] = ([d, d], f"[d_model, d_model], {model}")
      shapes[SUMMARY_PROJECTION[1]] = ([d], f"[d_model], {model}")
    if head.summary_type == "attn":
      shapes[SUMMARY_ATTENTION[0]] = ([d], f"[d_model], {model}")
      for name in SUMMARY_ATTENTION[1:5]:
        shapes[name] = ([d, n, h], f"[d_model, n_head, d_head], {model}, n_head {n}, d_head "
                                   f"{h}")
      for name in SUMMARY_ATTENTION[5:]:
        shapes[name] = ([d], f"[d_model], {model}")
    shapes.update(self.logit_shapes(head, config))
    return shapes

  @abc.abstractmethod
  def logit_shapes(self, head: SummaryHead, config: XLNetConfig) -> base.Shapes:
    """`expected_shapes` of the logit layer on the summary."""

  @staticmethod
  def summary_options(head: SummaryHead) -> Dict[str, Any]:
    """The model builder's summary options for `head`."""
    return dict(summary_type=our_summary_type(head.summary_type), use_proj=head.use_proj,
                summary_activation=head.activation)

  # ---- HuggingFace's heads -------------------------------------------------------------------

  def read_hf_head(self, weights, architecture: str, labels: Optional[Sequence[str]],
                   notes: List[str]) -> base.Head:
    d = weights.config.d_model
    outputs = base.rows(weights, "logits_proj.weight", d)
    summary = self.hf_summary(weights, base.num_labels(weights), architecture, notes)
    use_proj = summary["use_proj"]
    model = f"d_model {d}"
    expected = {}
    if use_proj:
      expected["sequence_summary.summary.weight"] = ([d, d], f"[d_model, d_model], {model}")
      expected["sequence_summary.summary.bias"] = ([d], f"[d_model], {model}")
    expected.update(self.hf_logit_shapes(outputs, d))
    base.check_hf_shapes(weights, expected)
    if use_proj:
      base.linear(weights, "sequence_summary.summary", f"{SUMMARY}/summary")
    return self.read_hf_logits(weights, outputs, labels, summary)

  @abc.abstractmethod
  def hf_logit_shapes(self, outputs: int, d: int) -> base.Shapes:
    """HF's logits_proj.{weight,bias} -> (shape, why), `outputs` its rows."""

  @abc.abstractmethod
  def read_hf_logits(self, weights, outputs: int, labels: Optional[Sequence[str]],
                     summary: Dict[str, Any]) -> SummaryHead:
    """The head, from HF's logits_proj (`outputs` rows) on the summary (`summary`:
    summary_type, use_proj and activation, `hf_summary`'s)."""

  @staticmethod
  def hf_summary(weights, num_labels: int, architecture: str,
                 notes: List[str]) -> Dict[str, Any]:
    """{summary_type, use_proj, activation (ours)} of HF's sequence summary, checked."""
    where = weights.config_path
    d = weights.config.d_model
    summary_type = base.setting(weights, "summary_type")
    if summary_type == "attn":
      raise ValueError(f"{where}: summary_type 'attn': HuggingFace's sequence summary does "
                       f"not implement it (it raises NotImplementedError), so no such "
                       f"{architecture} exists; expected last, first, mean or cls_index")
    if summary_type not in (*OUR_SUMMARY_TYPES, "cls_index"):
      raise ValueError(f"{where}: summary_type {summary_type!r}, expected last, first, mean "
                       f"or cls_index")
    use_proj = base.setting(weights, "summary_use_proj")
    if not isinstance(use_proj, bool):
      raise ValueError(f"{where}: summary_use_proj is {use_proj!r}, expected true or false")
    if use_proj and base.setting(weights, "summary_proj_to_labels") and num_labels != d:
      raise ValueError(
          f"{where}: summary_proj_to_labels is true with summary_use_proj, so HuggingFace's "
          f"sequence summary projects to num_labels ({num_labels}) features, but its "
          f"logits_proj reads d_model ({d}): {architecture} cannot run such a config; "
          f"expected summary_proj_to_labels false (or num_labels == d_model)")
    activation = base.setting(weights, "summary_activation")
    if activation in (None, ""):
      ours = "linear"
    elif activation in SUMMARY_ACTIVATIONS:
      ours = SUMMARY_ACTIVATIONS[activation]
    else:
      raise ValueError(f"{where}: summary_activation {activation!r} is not supported; "
                       f"expected one of {sorted(SUMMARY_ACTIVATIONS)}, \"\" or null (none)")
    if summary_type == "cls_index":
      notes.append("summary_type 'cls_index': HuggingFace's model passes no cls_index, so "
                   "the summary is the last position (our 'last')")
      summary_type = "last"
    if summary_type == "mean":
      notes.append("summary_type 'mean': HuggingFace averages over every position, padding "
                   "included; the model uses 'mean_with_padding' (the same logits)")
    if not use_proj and ours != "linear":
      notes.append(f"summary_activation {activation!r} without the projection: HuggingFace "
                   f"applies it to the summary anyway, and so does the model")
    assert ours in sequence_summary.ACTIVATIONS
    return {"summary_type": summary_type, "use_proj": use_proj, "activation": ours}

  # ---- the export ------------------------------------------------------------------------------

  def check_exportable(self, model_dir: str, spec: Mapping[str, Any]) -> None:
    self.hf_summary_type(model_dir, spec)

  def hf_summary_type(self, model_dir: str, spec: Mapping[str, Any]) -> str:
    """HF's summary_type for the spec's; raises ValueError naming the spec field."""
    ours = spec.get("summary_type", "last")
    if ours not in HF_SUMMARY_TYPES:
      path = os.path.join(model_dir, self.spec_class.FILE)
      raise ValueError(
          f"{path}: summary_type {ours!r} has no HuggingFace equivalent. HuggingFace's "
          f"XLNetSequenceSummary offers 'last', 'first' and 'mean' (the mean over every "
          f"position, padding included: our 'mean_with_padding'); our 'mean' averages over "
          f"the real tokens only and 'attn' pools with attention weights of its own. Only "
          f"models with summary_type 'last', 'first' or 'mean_with_padding' can be exported")
    return HF_SUMMARY_TYPES[ours]

  def hf_tensors(self, model) -> Dict[str, Any]:
    tensors = []
    if model.use_proj:
      tensors += base.dense("sequence_summary.summary", model.sequence_summary.summary)
    tensors += base.dense("logits_proj", model.logit)
    return dict(tensors)

  def hf_config(self, model, spec: Mapping[str, Any], model_dir: str,
                notes: List[str]) -> Dict[str, Any]:
    # HF applies summary_activation with or without the projection, as ours does.
    activation = model.sequence_summary.activation
    if activation not in HF_SUMMARY_ACTIVATIONS:
      raise ValueError(f"{os.path.join(model_dir, self.spec_class.FILE)}: summary_activation "
                       f"{activation!r} has no HuggingFace name; expected one of "
                       f"{sorted(HF_SUMMARY_ACTIVATIONS)}")
    return dict(summary_type=self.hf_summary_type(model_dir, spec),
                summary_use_proj=bool(model.use_proj),
                summary_activation=HF_SUMMARY_ACTIVATIONS[activation],
                summary_last_dropout=float(model.dropout_rate))

  def card_details(self, spec: Mapping[str, Any],
                   hf_values: Mapping[str, Any]) -> Dict[str, Any]:
    return {"Summary": (f"summary_type {hf_values['summary_type']} (ours: "
                        f"{spec.get('summary_type', 'last')})"
                        f"{', projection' if hf_values['summary_use_proj'] else ''}, "
                        f"summary_activation {hf_values['summary_activation']}")}
