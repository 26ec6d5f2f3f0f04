"""The RACE model's conversion: the original's run_race.py head and HuggingFace's
XLNetForMultipleChoice, into and out of our `XLNetMultipleChoice` (race.json).

The original: the sequence summary (`summary`; our RACE model: summary_type "last" with the
projection, the original's default) and logits/dense/{kernel [D, 1], bias [1]}.
HuggingFace: the same summary and logits_proj [1, D] -> logits/dense. The probes are
[B, 2, T]: two choices per question.
"""

import re
from typing import Any, Dict, Mapping, Optional

import numpy as np

from xlnet_tf.configs import XLNetConfig
from xlnet_tf.convert.heads import base
from xlnet_tf.convert.heads import summary
from xlnet_tf.models.xlnet_classifier import SUMMARY_PROJECTION
from xlnet_tf.models.xlnet_classifier import summary_variables
from xlnet_tf.models.xlnet_multiple_choice import RaceSpec
from xlnet_tf.models.xlnet_multiple_choice import build_multiple_choice

# get_race_loss: one dense layer in a top-level "logits" scope, on the sequence summary.
RACE_HEAD = ("logits/dense/kernel", "logits/dense/bias")


class RaceConversion(summary.SummaryConversion):
  """See the module docstring."""
  spec_class = RaceSpec
  hf_architectures_in = ("XLNetForMultipleChoice",)
  hf_architecture_out = "XLNetForMultipleChoice"
  released_head = "model/sequnece_summary/summary/{kernel,bias} + logits/dense/{kernel,bias}"
  released_scope = re.compile(r"^model/sequnece_summary/|^logits/")

  # ---- the original's checkpoints ----------------------------------------------------------

  def owns_released(self, name: str) -> bool:
    return name in RACE_HEAD

  def identify_released(self, own, shared, heads, config, source, task_name, summary_type):
    base.require_all(source, "RACE head", own, RACE_HEAD)
    kind, use_proj = self.released_summary(source, "RACE head", shared, summary_type)
    if kind != "last" or not use_proj:
      raise base.fail(source, f"the RACE head sits on summary_type {kind!r} "
                              f"{'with' if use_proj else 'without'} the projection "
                              f"({SUMMARY_PROJECTION[0]}); our RACE model "
                              f"(experiments/run_race.py) uses summary_type 'last' with the "
                              f"projection, the original's default")
    return summary.SummaryHead("race", RACE_HEAD + SUMMARY_PROJECTION, summary_type=kind,
                               use_proj=True)

  def logit_shapes(self, head: summary.SummaryHead, config: XLNetConfig) -> base.Shapes:
    d = config.d_model
    return {RACE_HEAD[0]: ([d, 1], f"[d_model, 1], d_model {d}"), RACE_HEAD[1]: ([1], "[1]")}

  # ---- HuggingFace's heads -------------------------------------------------------------------

  def reads_without_architectures(self, weights) -> bool:
    """No: without architectures, the tensors it shares are the classifier's."""
    del weights
    return False

  def read_hf_head(self, weights, architecture, labels, notes) -> base.Head:
    base.no_labels(labels, "XLNetForMultipleChoice")
    return super().read_hf_head(weights, architecture, labels, notes)

  def hf_logit_shapes(self, outputs: int, d: int) -> base.Shapes:
    del outputs
    return {"logits_proj.weight": ([1, d], f"one score per choice: [1, d_model], d_model {d}"),
            "logits_proj.bias": ([1], "[1]")}

  def read_hf_logits(self, weights, outputs, labels, summary_settings) -> summary.SummaryHead:
    del outputs, labels
    base.linear(weights, "logits_proj", "logits/dense")
    return summary.SummaryHead(
        "race", RACE_HEAD + (SUMMARY_PROJECTION if summary_settings["use_proj"] else ()),
        **summary_settings)

  # ---- our model and its spec ----------------------------------------------------------------

  def build_model(self, head: summary.SummaryHead, config: XLNetConfig, options):
    del options
    return build_multiple_choice(config, **self.summary_options(head))

  def head_variables(self, model, task_name: Optional[str]) -> Dict[str, Any]:
    """Released name -> variable of a RACE model (a 1-output `XLNetClassifier`)."""
    del task_name
    return {**summary_variables(model.sequence_summary),
            RACE_HEAD[0]: model.logit.kernel, RACE_HEAD[1]: model.logit.bias}

  def converted_spec(self, head: summary.SummaryHead, options, settings, weights, described,
                     notes):
    del options
    summary_type = summary.our_summary_type(head.summary_type)
    described.update(summary_type=summary_type, use_proj=head.use_proj,
                     summary_activation=head.activation)
    spec = RaceSpec(max_seq_length=settings["max_seq_length"], uncased=settings["uncased"],
                    summary_type=summary_type, use_proj=head.use_proj,
                    summary_activation=head.activation,
                    keep_accents=settings.get("keep_accents", False))
    if weights.kind == "huggingface":
      notes.append(
          "XLNetForMultipleChoice -> the multiple choice model of the RACE task (race.json): "
          "any number of choices in Python; its SavedModel takes RACE's 4 options")
    return spec, settings

  # ---- the parity probes ---------------------------------------------------------------------

  def probe(self, feed: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
    other = {k: v[::-1].copy() for k, v in feed.items()}
    return {k: np.stack([feed[k], other[k]], axis=1) for k in feed}   # [B, 2, T]

  def export_probe(self, inputs, pad, rng, config):
    del pad
    batch = inputs["input_ids"].shape[0]
    inputs = {k: np.stack([v, v[::-1]], axis=1) for k, v in inputs.items()}   # [B, 2, T]
    inputs["input_ids"][:, 1, -3:-1] = rng.integers(0, config.n_token, [batch, 2])
    return inputs

  def card_title(self, spec: Mapping[str, Any], task: str) -> str:
    del spec, task
    return "RACE multiple choice"
