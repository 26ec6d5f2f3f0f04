"""The tagger's conversion: HuggingFace's XLNetForTokenClassification into and out of our
`XLNetTagger` (tagger.json). The original has no such head.

HuggingFace's classifier [C, D] (torch Linear) is our classifier/{kernel [D, C], bias [C]}
(the names of our layer, `TAGGER_HEAD`); the tags are id2label in id order (or --labels),
the task config.json's finetuning_task (else "huggingface").
"""

import dataclasses
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from xlnet_tf.configs import XLNetConfig
from xlnet_tf.convert.heads import base
from xlnet_tf.models.xlnet_tagger import TaggerSpec
from xlnet_tf.models.xlnet_tagger import build_tagger

# The head by the names of our layer (the original has none; HuggingFace's `classifier`).
TAGGER_HEAD = ("classifier/kernel", "classifier/bias")


@dataclasses.dataclass(frozen=True)
class TaggerHead(base.Head):
  """A token classification head: num_outputs tags, named `labels` in id order."""
  num_outputs: int = 1
  labels: Optional[Tuple[str, ...]] = None


class TaggerConversion(base.HeadConversion):
  """See the module docstring."""
  spec_class = TaggerSpec
  hf_architectures_in = ("XLNetForTokenClassification",)
  hf_architecture_out = "XLNetForTokenClassification"
  hf_head_keys = ("classifier.weight", "classifier.bias")
  hf_head_pattern = "classifier.*"
  released_head = "classifier/{kernel,bias} (no released head; HuggingFace's classifier)"

  def read_hf_head(self, weights, architecture: str, labels: Optional[Sequence[str]],
                   notes: List[str]) -> TaggerHead:
    del architecture
    d = weights.config.d_model
    outputs = base.rows(weights, "classifier.weight", d)
    base.check_hf_shapes(weights, {
        "classifier.weight": ([outputs, d], f"[num_labels, d_model], d_model {d}"),
        "classifier.bias": ([outputs], f"[num_labels]: classifier.weight has {outputs} "
                                       f"outputs")})
    tags = base.given_labels(weights, "classifier.weight", outputs, labels)
    base.linear(weights, "classifier", "classifier")
    notes.append("XLNetForTokenClassification has no dropout in front of its classifier; "
                 "the tagger's dropout_rate is 0.0 (the same)")
    return TaggerHead("tagger", TAGGER_HEAD, num_outputs=outputs, labels=tags)

  def expected_shapes(self, head: TaggerHead, config: XLNetConfig) -> base.Shapes:
    d, c = config.d_model, head.num_outputs
    return {TAGGER_HEAD[0]: ([d, c], f"[d_model, tags], d_model {d}"),
            TAGGER_HEAD[1]: ([c], f"[tags]: the kernel has {c} outputs")}

  def build_model(self, head: TaggerHead, config: XLNetConfig, options):
    del options
    return build_tagger(config, head.num_outputs)

  def head_variables(self, model, task_name: Optional[str]) -> Dict[str, Any]:
    """Converted name -> variable of an `XLNetTagger`'s head."""
    del task_name
    return dict(zip(TAGGER_HEAD, (model.classifier.kernel, model.classifier.bias)))

  def converted_spec(self, head: TaggerHead, options, settings, weights, described, notes):
    del notes
    labels = head.labels
    scheme = "bio" if _is_bio(labels) else "tags"
    task_name = str(getattr(weights, "hf_config", {}).get("finetuning_task") or "huggingface")
    spec = TaggerSpec(task_name=task_name, labels=tuple(labels),
                      max_seq_length=settings["max_seq_length"], uncased=settings["uncased"],
                      scheme=scheme, keep_accents=settings.get("keep_accents", False))
    described.update(task_name=task_name, labels=list(labels), num_outputs=head.num_outputs,
                     labels_from="--labels" if options.labels else "config.json id2label",
                     scheme=scheme)
    return spec, settings

  def hf_tensors(self, model) -> Dict[str, Any]:
    return dict(base.dense("classifier", model.classifier))

  def hf_config(self, model, spec: Mapping[str, Any], model_dir: str,
                notes: List[str]) -> Dict[str, Any]:
    del model, model_dir, notes
    labels = [str(label) for label in spec["labels"]]
    return {"finetuning_task": spec["task_name"],
            "id2label": {str(i): label for i, label in enumerate(labels)},
            "label2id": {label: i for i, label in enumerate(labels)}}

  def card_title(self, spec: Mapping[str, Any], task: str) -> str:
    del task
    return f"{spec.get('task_name')} tagger"


def _is_bio(labels: Sequence[str]) -> bool:
  """Whether tags are a BIO scheme: "O" and B-/I- tags, at least one B-."""
  return (any(t.startswith("B-") for t in labels) and
          all(t == "O" or t[:2] in ("B-", "I-") for t in labels))
