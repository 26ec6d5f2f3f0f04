"""The span-QA conversions: the original's run_squad.py head and HuggingFace's
XLNetForQuestionAnswering into and out of our `XLNetForSquad` (squad.json), and
HuggingFace's XLNetForQuestionAnsweringSimple into and out of our `XLNetSimpleQA`
(qa_simple.json; the original has no such head).

The original's SQuAD head (D = d_model; `SQUAD_HEAD`): start_logits/dense/{kernel [D, 1],
bias [1]}, end_logits/dense_0/{kernel [2D, D], bias [D]}, end_logits/LayerNorm/{gamma,beta}
[D], end_logits/dense_1/{kernel [D, 1], bias [1]}, answer_class/dense_0/{kernel [2D, D],
bias [D]}, answer_class/dense_1/kernel [D, 1] (no bias); HuggingFace's start_logits.dense,
end_logits.{dense_0,LayerNorm,dense_1} and answer_class.{dense_0,dense_1} are the same
layers (torch Linear, transposed). An import from HuggingFace keeps its behaviour: the answer
class reads the gold start in training (answer_class_start "gold"). HuggingFace's
qa_outputs [2, D] is our qa_outputs/{kernel [D, 2], bias [2]} (`QA_SIMPLE_HEAD`). Both heads
search start_n_top x end_n_top answer candidates: config.json's (HuggingFace), else the
conversion's options.
"""

import dataclasses
import re
from typing import Any, Dict, List, Mapping, Optional, Sequence

import numpy as np

from xlnet_tf.configs import XLNetConfig
from xlnet_tf.convert.heads import base
from xlnet_tf.data import layouts
from xlnet_tf.models.xlnet_simple_qa import SimpleQASpec
from xlnet_tf.models.xlnet_simple_qa import build_simple_qa
from xlnet_tf.models.xlnet_squad import SQUAD_HEAD
from xlnet_tf.models.xlnet_squad import SquadSpec
from xlnet_tf.models.xlnet_squad import build_squad_model
from xlnet_tf.models.xlnet_squad import released_head_variables

# XLNetForQuestionAnsweringSimple's head by the names of our layer (HuggingFace's
# `qa_outputs`; the original has no such head).
QA_SIMPLE_HEAD = ("qa_outputs/kernel", "qa_outputs/bias")


@dataclasses.dataclass(frozen=True)
class SpanHead(base.Head):
  """A span-QA head: start_n_top, end_n_top, the candidates the source searches (None: the
  conversion's options)."""
  start_n_top: Optional[int] = None
  end_n_top: Optional[int] = None

  @property
  def top_k(self) -> int:
    return max(self.start_n_top or 0, self.end_n_top or 0)


@dataclasses.dataclass(frozen=True)
class SquadHead(SpanHead):
  """The SQuAD head: answer_class_start, what the answer class reads in training
  (`layers.squad_head.SquadHead`: "expected" as released, "gold" as HuggingFace)."""
  answer_class_start: str = "expected"


class SpanConversion(base.HeadConversion):
  """What the two span heads share: the candidates searched, the lengths, the probes."""

  @staticmethod
  def n_top(head: SpanHead, options):
    """(start_n_top, end_n_top): the head's, else the options'."""
    return head.start_n_top or options.start_n_top, head.end_n_top or options.end_n_top

  def check_options(self, options, max_seq_length: int) -> None:
    if options.max_query_length + 3 >= max_seq_length:
      raise ValueError(f"--max_seq_length {max_seq_length} leaves no room for the paragraph "
                       f"after --max_query_length {options.max_query_length} and 3 special "
                       f"tokens")

  def n_top_note(self, weights, start_n_top: int, end_n_top: int, notes: List[str]) -> None:
    if weights.kind == "huggingface":
      notes.append(f"start_n_top {start_n_top}, end_n_top {end_n_top}: from config.json")

  def probe(self, feed: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
    ids, mask = feed["input_ids"], feed["input_mask"]
    batch, length = ids.shape
    special = np.isin(ids, layouts.FUNCTIONAL_IDS) | (mask > 0)
    feed["p_mask"] = special.astype(np.float32)                    # [B, T]
    feed["cls_index"] = np.full([batch], length - 1, np.int32)
    return feed


def _top(weights, key: str) -> int:
  value = base.setting(weights, key)
  if not isinstance(value, int) or isinstance(value, bool) or value < 1:
    raise ValueError(f"{weights.config_path}: {key} is {value!r}, expected an integer >= 1")
  return value


class SquadConversion(SpanConversion):
  """XLNetForQuestionAnswering and the original's run_squad.py head."""
  spec_class = SquadSpec
  hf_architectures_in = ("XLNetForQuestionAnswering",)
  hf_architecture_out = "XLNetForQuestionAnswering"
  hf_head_keys = ("start_logits.dense.weight", "start_logits.dense.bias",
                  "end_logits.dense_0.weight", "end_logits.dense_0.bias",
                  "end_logits.LayerNorm.weight", "end_logits.LayerNorm.bias",
                  "end_logits.dense_1.weight", "end_logits.dense_1.bias",
                  "answer_class.dense_0.weight", "answer_class.dense_0.bias",
                  "answer_class.dense_1.weight")
  hf_head_pattern = ("start_logits.dense.*, end_logits.{dense_0,LayerNorm,dense_1}.*, "
                     "answer_class.{dense_0.*,dense_1.weight}")
  released_head = ("start_logits/dense, end_logits/{dense_0,LayerNorm,dense_1}, "
                   "answer_class/{dense_0,dense_1}")
  released_scope = re.compile(r"^(start_logits|end_logits|answer_class)/")

  # ---- the original's checkpoints ----------------------------------------------------------

  def owns_released(self, name: str) -> bool:
    return name in SQUAD_HEAD

  def identify_released(self, own, shared, heads, config, source, task_name, summary_type):
    del shared, heads, config, task_name, summary_type
    base.require_all(source, "SQuAD head", own, SQUAD_HEAD)
    return SquadHead("squad", SQUAD_HEAD)

  def expected_shapes(self, head: SquadHead, config: XLNetConfig) -> base.Shapes:
    d = config.d_model
    model = f"d_model {d}"
    wide = ([2 * d, d], f"[2 * d_model, d_model], {model}")
    return dict(zip(SQUAD_HEAD, (
        ([d, 1], f"[d_model, 1], {model}"), ([1], "[1]"),
        wide, ([d], f"[d_model], {model}"),
        ([d], f"[d_model], {model}"), ([d], f"[d_model], {model}"),
        ([d, 1], f"[d_model, 1], {model}"), ([1], "[1]"),
        wide, ([d], f"[d_model], {model}"),
        ([d, 1], f"[d_model, 1], {model}"))))

  # ---- HuggingFace's heads -------------------------------------------------------------------

  def read_hf_head(self, weights, architecture: str, labels: Optional[Sequence[str]],
                   notes: List[str]) -> SquadHead:
    del architecture
    base.no_labels(labels, "XLNetForQuestionAnswering")
    d = weights.config.d_model
    model = f"d_model {d}"
    wide = ([d, 2 * d], f"[d_model, 2 * d_model] (torch Linear [out, in]), {model}")
    vector = ([d], f"[d_model], {model}")
    base.check_hf_shapes(weights, {
        "start_logits.dense.weight": ([1, d], f"[1, d_model], {model}"),
        "start_logits.dense.bias": ([1], "[1]"),
        "end_logits.dense_0.weight": wide, "end_logits.dense_0.bias": vector,
        "end_logits.LayerNorm.weight": vector, "end_logits.LayerNorm.bias": vector,
        "end_logits.dense_1.weight": ([1, d], f"[1, d_model], {model}"),
        "end_logits.dense_1.bias": ([1], "[1]"),
        "answer_class.dense_0.weight": wide, "answer_class.dense_0.bias": vector,
        "answer_class.dense_1.weight": ([1, d], f"[1, d_model], {model}")})
    for key in ("start_logits.dense", "end_logits.dense_0", "end_logits.dense_1",
                "answer_class.dense_0"):
      base.linear(weights, key, key.replace(".", "/"))
    base.linear(weights, "answer_class.dense_1", "answer_class/dense_1", bias=False)
    weights.heads["end_logits/LayerNorm/gamma"] = weights.head_tensors[
        "end_logits.LayerNorm.weight"]
    weights.heads["end_logits/LayerNorm/beta"] = weights.head_tensors[
        "end_logits.LayerNorm.bias"]
    notes.append("XLNetForQuestionAnswering: the answer class reads the gold start's state in "
                 "training (HuggingFace), not the expected start (the original): squad.json "
                 "records answer_class_start 'gold'; inference is the same")
    notes.append("HuggingFace's start_top_log_probs / end_top_log_probs are probabilities "
                 "(softmax) despite their names, its end candidates flattened end-major "
                 "[B, end_n_top * start_n_top]; the model gives log-probabilities, end "
                 "candidates [B, start_n_top, end_n_top] (the same top-k indices; exp of "
                 "ours is HF's)")
    return SquadHead("squad", SQUAD_HEAD, answer_class_start="gold",
                     start_n_top=_top(weights, "start_n_top"),
                     end_n_top=_top(weights, "end_n_top"))

  # ---- our model and its spec ----------------------------------------------------------------

  def build_model(self, head: SquadHead, config: XLNetConfig, options):
    return build_squad_model(config, *self.n_top(head, options),
                             answer_class_start=head.answer_class_start)

  def head_variables(self, model, task_name: Optional[str]) -> Dict[str, Any]:
    del task_name
    return released_head_variables(model)

  def converted_spec(self, head: SquadHead, options, settings, weights, described, notes):
    del described
    start_n_top, end_n_top = self.n_top(head, options)
    settings.update(doc_stride=options.doc_stride, max_query_length=options.max_query_length,
                    start_n_top=start_n_top, end_n_top=end_n_top,
                    version_2_with_negative=options.version_2_with_negative)
    if head.answer_class_start != "expected":
      settings["answer_class_start"] = head.answer_class_start
    if options.null_score_diff_threshold is not None:
      settings["null_score_diff_threshold"] = options.null_score_diff_threshold
    self.n_top_note(weights, start_n_top, end_n_top, notes)
    return SquadSpec(settings), settings

  # ---- the parity at import ------------------------------------------------------------------

  def hf_inputs(self, feed: Mapping[str, np.ndarray], tensor) -> Dict[str, Any]:
    import torch  # pylint: disable=g-import-not-at-top
    return dict(p_mask=tensor("p_mask", torch.float32),
                cls_index=tensor("cls_index", torch.long))

  def hf_outputs(self, out, model) -> Dict[str, np.ndarray]:
    """HF's top-k in our layout: its probabilities (exp of ours), its end candidates
    start-major."""
    k1, k2 = model.start_n_top, model.end_n_top
    end = lambda x: x.numpy().reshape(-1, k2, k1).transpose(0, 2, 1)   # -> [B, K1, K2]
    return {"start_top_probs": out.start_top_log_probs.numpy(),
            "start_top_index": out.start_top_index.numpy(),
            "end_top_probs": end(out.end_top_log_probs),
            "end_top_index": end(out.end_top_index), "cls_logits": out.cls_logits.numpy()}

  def our_outputs(self, model, inputs) -> Dict[str, np.ndarray]:
    out = {k: v.numpy() for k, v in model(inputs, training=False).items()}
    return {"start_top_probs": np.exp(out["start_top_log_probs"]),
            "start_top_index": out["start_top_index"],
            "end_top_probs": np.exp(out["end_top_log_probs"]),
            "end_top_index": out["end_top_index"], "cls_logits": out["cls_logits"]}

  # ---- the export ------------------------------------------------------------------------------

  def hf_tensors(self, model) -> Dict[str, Any]:
    head = model.head
    return dict(base.dense("start_logits.dense", head.start_dense) +
                base.dense("end_logits.dense_0", head.end_dense_0) +
                [("end_logits.LayerNorm.weight", base.value(head.end_layer_norm.gamma)),
                 ("end_logits.LayerNorm.bias", base.value(head.end_layer_norm.beta))] +
                base.dense("end_logits.dense_1", head.end_dense_1) +
                base.dense("answer_class.dense_0", head.class_dense_0) +
                base.dense("answer_class.dense_1", head.class_dense_1, bias=False))

  def hf_config(self, model, spec: Mapping[str, Any], model_dir: str,
                notes: List[str]) -> Dict[str, Any]:
    del spec, model_dir
    notes.append("answer class: HuggingFace's XLNetForQuestionAnswering has no dropout in it"
                 + ("" if model.head.answer_class_start == "gold" else
                    " and, in training, reads the gold start's state (this model: the "
                    "expected start, as released)")
                 + "; inference is the same computation")
    return dict(start_n_top=int(model.head.start_n_top), end_n_top=int(model.head.end_n_top))

  def export_probe(self, inputs, pad, rng, config):
    del rng, config
    batch, length = pad.shape
    p_mask = pad.copy()
    p_mask[:, [3, 7]] = 1.0
    inputs.update(p_mask=p_mask, cls_index=np.full([batch], length - 1))
    return inputs

  def export_pairs(self, model, hf_model, inputs, torch_in, feed, torch):
    p_mask = torch.as_tensor(inputs["p_mask"], dtype=torch.float32)
    out = hf_model(**torch_in, p_mask=p_mask,
                   cls_index=torch.as_tensor(inputs["cls_index"], dtype=torch.long))
    ours = model(feed, training=False)
    k1, k2 = hf_model.start_n_top, hf_model.end_n_top
    # HF's "log probs" are probabilities, its end top-k [B, K2 * K1] end-major.
    hf_end_index = out.end_top_index.view(-1, k2, k1).transpose(1, 2).numpy()
    hf_end_probs = out.end_top_log_probs.view(-1, k2, k1).transpose(1, 2).numpy()
    if not (np.array_equal(ours["start_top_index"].numpy(), out.start_top_index.numpy())
            and np.array_equal(ours["end_top_index"].numpy(), hf_end_index)):
      return None
    hidden = hf_model.transformer(**torch_in)[0]
    real = inputs["p_mask"] == 0
    return [("start logits", ours["start_logits"].numpy()[real],
             hf_model.start_logits(hidden, p_mask=p_mask).numpy()[real]),
            ("start probabilities", np.exp(ours["start_top_log_probs"].numpy()),
             out.start_top_log_probs.numpy()),
            ("end probabilities", np.exp(ours["end_top_log_probs"].numpy()), hf_end_probs),
            ("answer-class logits", ours["cls_logits"].numpy(), out.cls_logits.numpy())]

  def card_title(self, spec: Mapping[str, Any], task: str) -> str:
    del spec, task
    return "SQuAD"


class SimpleQAConversion(SpanConversion):
  """XLNetForQuestionAnsweringSimple (the original has no such head)."""
  spec_class = SimpleQASpec
  hf_architectures_in = ("XLNetForQuestionAnsweringSimple",)
  hf_architecture_out = "XLNetForQuestionAnsweringSimple"
  hf_head_keys = ("qa_outputs.weight", "qa_outputs.bias")
  hf_head_pattern = "qa_outputs.*"
  released_head = "qa_outputs/{kernel,bias} (no released head; HuggingFace's qa_outputs)"
  card_head = ("simple span head: start and end logits, no answer class (HuggingFace's "
               "XLNetForQuestionAnsweringSimple)")

  def read_hf_head(self, weights, architecture: str, labels: Optional[Sequence[str]],
                   notes: List[str]) -> SpanHead:
    del architecture
    base.no_labels(labels, "XLNetForQuestionAnsweringSimple")
    d = weights.config.d_model
    base.check_hf_shapes(weights, {
        "qa_outputs.weight": ([2, d], f"start and end logits: [2, d_model], d_model {d}"),
        "qa_outputs.bias": ([2], "[2] (start, end)")})
    base.linear(weights, "qa_outputs", "qa_outputs")
    notes.append("XLNetForQuestionAnsweringSimple: start_logits and end_logits as HuggingFace "
                 "computes them (every position, no p_mask); with a p_mask the model also "
                 "gives the top-k log-probabilities of the masked logits, which the SQuAD "
                 "export decodes (v1.1: the head has no answer class)")
    return SpanHead("qa_simple", QA_SIMPLE_HEAD, start_n_top=_top(weights, "start_n_top"),
                    end_n_top=_top(weights, "end_n_top"))

  def expected_shapes(self, head: SpanHead, config: XLNetConfig) -> base.Shapes:
    d = config.d_model
    return {QA_SIMPLE_HEAD[0]: ([d, 2], f"[d_model, 2] (start, end), d_model {d}"),
            QA_SIMPLE_HEAD[1]: ([2], "[2] (start, end)")}

  def build_model(self, head: SpanHead, config: XLNetConfig, options):
    return build_simple_qa(config, *self.n_top(head, options))

  def head_variables(self, model, task_name: Optional[str]) -> Dict[str, Any]:
    """Converted name -> variable of an `XLNetSimpleQA`'s head."""
    del task_name
    return dict(zip(QA_SIMPLE_HEAD, (model.qa_outputs.kernel, model.qa_outputs.bias)))

  def converted_spec(self, head: SpanHead, options, settings, weights, described, notes):
    del described
    start_n_top, end_n_top = self.n_top(head, options)
    spec = SimpleQASpec(
        max_seq_length=settings["max_seq_length"], max_query_length=options.max_query_length,
        doc_stride=options.doc_stride, start_n_top=start_n_top, end_n_top=end_n_top,
        uncased=settings["uncased"], keep_accents=settings.get("keep_accents", False))
    self.n_top_note(weights, start_n_top, end_n_top, notes)
    return spec, spec.to_values()

  def hf_outputs(self, out, model) -> Dict[str, np.ndarray]:
    del model
    return {"start_logits": out.start_logits.numpy(), "end_logits": out.end_logits.numpy()}

  def our_outputs(self, model, inputs) -> Dict[str, np.ndarray]:
    out = model(inputs, training=False)
    return {k: out[k].numpy() for k in ("start_logits", "end_logits")}

  def hf_tensors(self, model) -> Dict[str, Any]:
    return dict(base.dense("qa_outputs", model.qa_outputs))

  def hf_config(self, model, spec: Mapping[str, Any], model_dir: str,
                notes: List[str]) -> Dict[str, Any]:
    del spec, model_dir, notes
    return dict(start_n_top=int(model.start_n_top), end_n_top=int(model.end_n_top))

  def export_pairs(self, model, hf_model, inputs, torch_in, feed, torch):
    del inputs, torch
    ours, out = model(feed, training=False), hf_model(**torch_in)
    return [("start logits", ours["start_logits"].numpy(), out.start_logits.numpy()),
            ("end logits", ours["end_logits"].numpy(), out.end_logits.numpy())]

  def card_title(self, spec: Mapping[str, Any], task: str) -> str:
    del spec, task
    return "span QA (simple head)"
