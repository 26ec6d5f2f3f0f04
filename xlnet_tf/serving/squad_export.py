"""SavedModel export of a SQuAD model: raw question and context in, answer span out.

Signature `serving_default` (any batch size):
  question string [B], context string [B]
  -> answer_text string [B]        the raw context's characters of the best span ("" for
                                   "no answer": v2.0 above the threshold, or no valid span)
     answer_start_char int32 [B]   its first character in the raw context (-1 if "")
     score float32 [B]             start + end log-probability of the best span (-inf if
                                   no span qualifies)
     paragraph_truncated bool [B]  the context did not fit one window (see below)
     is_impossible float32 [B]     v2.0 models only: sigmoid of the answer-class logit
The shapes are checked first (`text_encoder.check_shapes`): anything but two 1-D string
tensors of one batch size fails at once, naming the input and the shape expected.
Tokenization (`squad_text.squad_inputs`), the model and span decoding all run in the graph;
serving needs only TensorFlow and tensorflow-text:

  import tensorflow as tf, tensorflow_text  # registers the SentencePiece ops
  answer = tf.saved_model.load(EXPORT_DIR).signatures["serving_default"]
  answer(question=tf.constant(["Who?"]), context=tf.constant(["Ahab hunted."]))

Padding: the window is laid out as released, `P <sep> Q <sep> <cls>` from position 0 and
padded on the RIGHT (<cls> is the last real token, cls_index = length - 1, not position
T - 1), and each batch is padded only to the window it needs: the smallest of 16, 24, 32,
48, 64, 96, ..., max_seq_length that holds its longest window (`text_layouts.
bucket_lengths`; at least the head's top-k). The real tokens keep their positions,
padding is masked as a key and is no answer boundary (p_mask), so the answers, starts and
scores equal a fixed-length export's (tests/serving/test_bucketing.py); `SquadServing(...,
bucketed=False)` / `export_squad(..., bucketed=False)` pads to max_seq_length as before.

Decoding is `squad_postprocess.decode` for one window: the best of the start_n_top x
end_n_top candidates whose start and end are paragraph pieces covering text, end >= start
and at most `max_answer_length` pieces; ties go to the earlier (start rank, end rank).
A v2.0 model answers "" when its answer-class logit exceeds `null_score_diff_threshold`
(recorded by run_squad --do_predict on a dev file, or given). Contexts longer than one
window (`max_seq_length` minus the question and 3 special tokens) are cut to their first
window; use `experiments/run_squad.py --do_predict` for doc-stride windows over long
contexts.
"""

import json
import os
from typing import Any, Dict, Mapping, Optional

import tensorflow as tf

from xlnet_tf import model_directory
from xlnet_tf.models.xlnet_simple_qa import SimpleQASpec
from xlnet_tf.models.xlnet_squad import SquadSpec
from xlnet_tf.serving import export_card
from xlnet_tf.serving import squad_text
from xlnet_tf.serving.export_card import PROBE_CONTEXTS
from xlnet_tf.serving.export_card import PROBE_QUESTIONS
from xlnet_tf.serving.model_dir_export import check_export_dir
from xlnet_tf.serving.model_dir_export import export_model_dir
from xlnet_tf.serving.model_dir_export import save
from xlnet_tf.serving.text_encoder import XLNetTextEncoder
from xlnet_tf.serving.text_encoder import check_shapes


@tf.autograph.experimental.do_not_convert
def best_spans(outputs: Dict[str, tf.Tensor], features: Dict[str, tf.Tensor],
               max_answer_length: int) -> Dict[str, tf.Tensor]:
  """Head outputs (inference) of one window per question -> the best span per question.

  Args:
    outputs: start_top_log_probs, start_top_index [B, K1]; end_top_log_probs,
      end_top_index [B, K1, K2] (start-major).
    features: `squad_text.squad_inputs` (raw_begin, raw_end [B, T]: -1 outside text).
  Returns: begin, end int64 [B] (raw characters; -1 when no candidate qualifies), score
    float32 [B] (-inf then).
  """
  begin_at, end_at = features["raw_begin"], features["raw_end"]
  starts = tf.cast(outputs["start_top_index"], tf.int32)                    # [B, K1]
  ends = tf.cast(outputs["end_top_index"], tf.int32)                        # [B, K1, K2]
  start_ok = tf.gather(begin_at, starts, batch_dims=1) >= 0
  end_ok = tf.gather(end_at, ends, batch_dims=1) >= 0                      # [B, K1, K2]
  length = ends - starts[:, :, None] + 1
  valid = start_ok[:, :, None] & end_ok & (length >= 1) & (length <= max_answer_length)
  score = outputs["start_top_log_probs"][:, :, None] + outputs["end_top_log_probs"]
  score = tf.where(valid, score, -float("inf"))
  flat = tf.reshape(score, [tf.shape(score)[0], -1])                      # [B, K1 * K2]
  best = tf.argmax(flat, axis=-1, output_type=tf.int32)                   # first maximum
  k2 = tf.shape(ends)[2]
  best_start = tf.gather(starts, best // k2, batch_dims=1)
  best_end = tf.gather(tf.reshape(ends, tf.shape(flat)), best, batch_dims=1)
  found = tf.reduce_any(tf.reshape(valid, tf.shape(flat)), axis=-1)
  begin = tf.where(found, tf.gather(begin_at, best_start, batch_dims=1), -1)
  end = tf.where(found, tf.gather(end_at, best_end, batch_dims=1), -1)
  return {"begin": begin, "end": end,
          "score": tf.gather(flat, best, batch_dims=1)}


class SquadServing(tf.Module):
  """The exported module: the SQuAD model, the text encoder and the decoding settings."""

  def __init__(self, model, spiece_model: str, max_seq_length: int,
               max_query_length: int = 64, max_answer_length: int = 64,
               uncased: bool = False, null_score_diff_threshold: Optional[float] = None,
               keep_accents: bool = False, bucketed: bool = True):
    """`null_score_diff_threshold` None: a v1.1 model (no is_impossible output).
    `bucketed`: pad each batch to the window it needs (default) or to max_seq_length."""
    super().__init__(name="xlnet_squad_serving")
    self.model = model
    self.bucketed = bool(bucketed)
    # The head's top-k must fit the window: the smallest window it is given.
    head = getattr(model, "head", model)
    self.min_length = max(int(getattr(head, "start_n_top", 0)),
                          int(getattr(head, "end_n_top", 0)))
    self.text_encoder = XLNetTextEncoder(spiece_model, lower=uncased,
                                         keep_accents=keep_accents)
    self.max_seq_length = int(max_seq_length)
    self.max_query_length = int(max_query_length)
    self.max_answer_length = int(max_answer_length)
    self.null_threshold = null_score_diff_threshold
    squad_text.squad_inputs(self.text_encoder, tf.constant(["?"]), tf.constant(["."]),
                            self.max_seq_length, self.max_query_length)  # checks lengths

  def answer(self, question, context) -> Dict[str, tf.Tensor]:
    checked = check_shapes("serving_default", {
        "question": (question, [None], "a 1-D string Tensor, one UTF-8 question per example"),
        "context": (context, [None], "a 1-D string Tensor, the UTF-8 context of each "
                                     "question")})
    question, context = checked["question"], checked["context"]
    features = squad_text.squad_inputs(self.text_encoder, question, context,  # [B, L]
                                       self.max_seq_length, self.max_query_length,
                                       bucketed=self.bucketed, min_length=self.min_length)
    outputs = self.model({k: features[k] for k in (
        "input_ids", "segment_ids", "input_mask", "p_mask", "cls_index")}, training=False)
    spans = best_spans(outputs, features, self.max_answer_length)
    begin, end = spans["begin"], spans["end"]
    answered = begin >= 0
    result = {"score": spans["score"], "paragraph_truncated": features["paragraph_truncated"]}
    if self.null_threshold is not None:
      result["is_impossible"] = tf.sigmoid(outputs["cls_logits"])
      answered &= outputs["cls_logits"] <= self.null_threshold
    context = tf.strings.unicode_transcode(context, "UTF-8", "UTF-8", errors="replace",
                                           replacement_char=0xFFFD,
                                           replace_control_characters=False)
    text = tf.strings.substr(context, tf.maximum(begin, 0), tf.maximum(end - begin, 0),
                             unit="UTF8_CHAR")
    result["answer_text"] = tf.where(answered, text, "")
    result["answer_start_char"] = tf.cast(tf.where(answered, begin, -1), tf.int32)
    return result

  def signatures(self) -> Dict[str, tf.types.experimental.ConcreteFunction]:
    strings = tf.TensorSpec([None], tf.string)
    answer = tf.function(lambda question, context: self.answer(question, context))
    return {"serving_default": answer.get_concrete_function(question=strings,
                                                            context=strings)}


def squad_serving(model, settings: Mapping[str, Any], spiece_model: str,
                  null_score_diff_threshold: Optional[float] = None,
                  max_answer_length: int = 64, bucketed: bool = True) -> SquadServing:
  """The serving module of a SQuAD model with its squad.json `settings` (max_seq_length,
  max_query_length, uncased, keep_accents, v2.0 and its recorded null threshold):
  `null_score_diff_threshold` overrides the recorded threshold of a v2.0 model (default
  0.0 when none was recorded); a v1.1 model has none."""
  threshold = None
  if settings.get("version_2_with_negative"):
    threshold = null_score_diff_threshold
    if threshold is None:
      threshold = settings.get("null_score_diff_threshold", 0.0)
  return SquadServing(model, spiece_model, settings["max_seq_length"],
                      settings["max_query_length"], max_answer_length,
                      uncased=settings.get("uncased", False),
                      null_score_diff_threshold=threshold,
                      keep_accents=settings.get("keep_accents", False), bucketed=bucketed)


def export_squad(model, model_dir: str, export_dir: str,
                 null_score_diff_threshold: Optional[float] = None,
                 max_answer_length: int = 64, bucketed: bool = True) -> str:
  """Exports `model`, fine-tuned by run_squad into `model_dir` (spiece.model, squad.json).

  The settings (max_seq_length, max_query_length, uncased, v2.0 and its recorded null
  threshold) come from `model_dir/squad.json` (`squad_serving`); `null_score_diff_threshold`
  overrides the recorded threshold of a v2.0 model (default 0.0 when none was recorded).
  `bucketed`: pad each batch to the window it needs (default) or to max_seq_length.
  `export_dir` is checked first (a file, under a file, not writable: an error naming
  --export_dir).
  """
  check_export_dir(export_dir)
  settings_path = os.path.join(model_dir, SquadSpec.FILE)
  spiece_model = os.path.join(model_dir, model_directory.SPIECE_FILE)
  for path in (settings_path, spiece_model):
    if not tf.io.gfile.exists(path):
      raise FileNotFoundError(f"{path}: missing; export a model directory written by "
                              f"experiments/run_squad.py --do_train")
  with tf.io.gfile.GFile(settings_path) as f:
    settings = json.load(f)
  module = squad_serving(model, settings, spiece_model, null_score_diff_threshold,
                         max_answer_length, bucketed)
  return save(module, export_dir, model_dir, model, squad_card(module))


def export_squad_dir(model_dir: str, export_dir: str,
                     null_score_diff_threshold: Optional[float] = None,
                     max_answer_length: int = 64, start_n_top: Optional[int] = None,
                     end_n_top: Optional[int] = None, bucketed: bool = True) -> str:
  """`export_squad` of the SQuAD model directory `model_dir` (`model_dir_export.
  export_model_dir` with `SquadSpec`; the head searches `start_n_top` x `end_n_top`
  candidates, by default squad.json's). Returns export_dir."""
  def serving(model, spec: SquadSpec, spiece: str) -> SquadServing:
    return squad_serving(model, spec, spiece, null_score_diff_threshold, max_answer_length,
                         bucketed)
  return export_model_dir(model_dir, export_dir, SquadSpec, serving, card=squad_card,
                          build_options=lambda spec: {"start_n_top": start_n_top,
                                                      "end_n_top": end_n_top})


def export_qa_simple(model_dir: str, export_dir: str, max_answer_length: int = 64,
                     bucketed: bool = True) -> str:
  """Exports a simple span QA model directory (`model_dir_export.export_model_dir` with
  `SimpleQASpec`, imported from HuggingFace's XLNetForQuestionAnsweringSimple) with the
  signature above, v1.1 (no answer class, so no is_impossible): the best of its
  start_n_top x end_n_top spans, padded like `export_squad` (`bucketed`). Returns
  export_dir."""
  def serving(model, spec: SimpleQASpec, spiece: str) -> SquadServing:
    return SquadServing(model, spiece, spec.max_seq_length, spec.max_query_length,
                        max_answer_length, uncased=spec.uncased,
                        keep_accents=spec.keep_accents, bucketed=bucketed)
  return export_model_dir(model_dir, export_dir, SimpleQASpec, serving, card=squad_card)


# ---- the card -------------------------------------------------------------------------------

def squad_card(module: SquadServing) -> export_card.ExportCard:
  """`SquadServing`: the best span's score (and is_impossible for v2.0, the models with a
  null threshold)."""
  version_2 = module.null_threshold is not None
  return export_card.ExportCard(
      task="squad", title=f"XLNet SQuAD {'2.0' if version_2 else '1.1'} reader, SavedModel",
      about=("a question-answering (SQuAD) export: its serving_default takes question and "
             "context; call it from Python (docs/serving.md, Question answering)"),
      python_fn=module.answer,
      inputs={"question": list(PROBE_QUESTIONS), "context": list(PROBE_CONTEXTS)},
      keys=("score", "is_impossible") if version_2 else ("score",),
      details={"max_seq_length": module.max_seq_length,
               "max_query_length": module.max_query_length,
               "max_answer_length": module.max_answer_length,
               "null_score_diff_threshold": (module.null_threshold if version_2 else
                                             "none (v1.1: always answers)"),
               "Padding": export_card.padding_detail(module.max_seq_length, module.bucketed,
                                                     "right")})
