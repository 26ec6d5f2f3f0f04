"""SavedModel export of a fine-tuned RACE (multiple choice) model: raw text in, answer out.

Signatures (batch-major, any batch size):
  serving_default  article string [B], question string [B], options string [B, 4]
                   -> logits float32 [B, 4], probabilities float32 [B, 4] (softmax over
                      the options), answer int32 [B] (0..3, the best option),
                      answer_letter string [B] ("A".."D")
  serving_ids      input_ids int32 [B, 4, T], segment_ids int32 [B, 4, T], input_mask
                   float32 [B, 4, T] (1 = padding; `data.race.race_features`' rows)
                   -> the same outputs
The shapes are checked first (`text_encoder.check_shapes`): a scalar string, options of
another count than 4, rows of another length than the export's max_seq_length or inputs of
different batch sizes fail at once, naming the input and the shape expected.

In the graph, as `data.race.race_features` does in Python (`race_inputs`): each option's
question+option text is the question with every "_" replaced by the option (cloze
questions) or else the question, a space and the option; the texts are normalised and
encoded (`XLNetTextEncoder.tokenize`: the released normalisation, SentencePiece, the
digit-comma re-split; the model inside the SavedModel); the question+option part keeps its
LAST max_qa_length pieces, the article its first max_seq_length - 3 - len(qa) pieces; then
the classification layout `article <sep> qa <sep> <cls>`, padded on the LEFT
(`text_layouts.classifier_layout`). Serving needs only TensorFlow and tensorflow-text:

  import tensorflow as tf, tensorflow_text  # registers the SentencePiece ops
  serve = tf.saved_model.load(EXPORT_DIR).signatures["serving_default"]
  out = serve(article=tf.constant(["Call me Ishmael. ..."]),
              question=tf.constant(["What does the narrator ask to be called?"]),
              options=tf.constant([["Ahab", "Ishmael", "Queequeg", "Starbuck"]]))
  out["answer_letter"]                      # [b'B']

This module imports no training code.
"""

from typing import Dict, Optional

import tensorflow as tf

from xlnet_tf.data.race import ANSWERS
from xlnet_tf.data.race import NUM_OPTIONS
from xlnet_tf.models.xlnet_multiple_choice import RaceSpec
from xlnet_tf.serving import export_card
from xlnet_tf.serving.model_dir_export import export_model_dir
from xlnet_tf.serving.text_encoder import TEXTS
from xlnet_tf.serving.text_encoder import XLNetTextEncoder
from xlnet_tf.serving.text_encoder import check_shapes
from xlnet_tf.serving.text_layouts import classifier_layout

OPTIONS = (f"a 2-D string Tensor, the {NUM_OPTIONS} answer options of each question "
           f"(options[b, k] is option {', '.join(ANSWERS)}[k] of question b)")


@tf.autograph.experimental.do_not_convert
def qa_texts(question: tf.Tensor, options: tf.Tensor) -> tf.Tensor:
  """`data.race.qa_text` of every (question, option): question [B], options [B, C] ->
  string [B * C] (question-major): the question with each "_" replaced by the option if
  it has one, else question + " " + option."""
  num_options = tf.shape(options, out_type=tf.int64)[1]
  questions = tf.repeat(question, num_options)                           # [B*C]
  opts = tf.reshape(options, [-1])                                       # [B*C]
  # question.replace("_", option) == "".join(part + option for part in parts)[:-len(option)]
  parts = tf.strings.split(questions, sep="_").with_row_splits_dtype(tf.int64)
  with_option = tf.strings.join([parts.flat_values,
                                 tf.gather(opts, parts.value_rowids())])
  joined = tf.strings.reduce_join(parts.with_flat_values(with_option), axis=1)
  filled = tf.strings.substr(joined, tf.zeros_like(tf.strings.length(joined)),
                             tf.strings.length(joined) - tf.strings.length(opts))
  has_blank = tf.strings.regex_full_match(questions, "(?s).*_.*")
  return tf.where(has_blank, filled, tf.strings.join([questions, opts], separator=" "))


def _take(ids: tf.RaggedTensor, starts: tf.Tensor, sizes: tf.Tensor) -> tf.RaggedTensor:
  """Row r of the result: `ids.flat_values[starts[r] : starts[r] + sizes[r]]`."""
  index = tf.ragged.range(starts, starts + sizes, row_splits_dtype=tf.int64)
  return index.with_flat_values(tf.gather(ids.flat_values, index.flat_values))


@tf.autograph.experimental.do_not_convert
def race_inputs(encoder: XLNetTextEncoder, article: tf.Tensor, question: tf.Tensor,
                options: tf.Tensor, max_seq_length: int,
                max_qa_length: int) -> Dict[str, tf.Tensor]:
  """The model inputs of raw RACE questions, `data.race.race_features` in the graph.

  Args:
    encoder: the text encoder (its `lower` is the model's `uncased`).
    article, question: string [B]; options: string [B, C].
    max_seq_length, max_qa_length: T and the question+option pieces kept (the last ones).
  Returns:
    input_ids int32 [B, C, T], segment_ids int32 [B, C, T], input_mask float32 [B, C, T].
  """
  seq_len, qa_len = int(max_seq_length), int(max_qa_length)
  if qa_len < 1 or seq_len < 3:
    raise ValueError(f"max_qa_length must be >= 1 and max_seq_length >= 3, got "
                     f"{max_qa_length} and {max_seq_length}")
  num_options = options.shape[1] if options.shape[1] is not None else tf.shape(options)[1]
  qa = encoder.tokenize(qa_texts(question, options))                      # [B*C, (m)]
  qa = tf.cast(qa, tf.int32).with_row_splits_dtype(tf.int64)
  keep_qa = tf.minimum(qa.row_lengths(), qa_len)                          # the LAST ones
  qa = _take(qa, qa.row_limits() - keep_qa, keep_qa)
  article_ids = encoder.tokenize(article)                                 # [B, (n)]
  article_ids = tf.cast(article_ids, tf.int32).with_row_splits_dtype(tf.int64)
  rows = tf.repeat(tf.range(tf.shape(article, out_type=tf.int64)[0]),
                   tf.cast(num_options, tf.int64))                        # [B*C]
  starts = tf.gather(article_ids.row_starts(), rows)
  keep_article = tf.minimum(tf.gather(article_ids.row_lengths(), rows),
                            tf.maximum(tf.constant(0, tf.int64), seq_len - 3 - keep_qa))
  context = _take(article_ids, starts, keep_article)                      # the FIRST ones
  flat = classifier_layout(context, qa, seq_len)                          # [B*C, T]
  return {key: tf.reshape(value, [-1, num_options, seq_len]) for key, value in flat.items()}


class RaceServing(tf.Module):
  """The exported module: the multiple choice model and the text encoder."""

  def __init__(self, model, spiece_model: str, max_seq_length: int, max_qa_length: int,
               uncased: bool = False, keep_accents: bool = False):
    super().__init__(name="xlnet_race_serving")
    if int(max_qa_length) < 1 or int(max_seq_length) < 3:
      raise ValueError(f"max_qa_length must be >= 1 and max_seq_length >= 3, got "
                       f"{max_qa_length} and {max_seq_length}")
    self.model = model
    self.max_seq_length = int(max_seq_length)
    self.max_qa_length = int(max_qa_length)
    self.text_encoder = XLNetTextEncoder(spiece_model, lower=uncased,
                                         keep_accents=keep_accents)
    self.letters = tf.constant(list(ANSWERS))

  def features(self, article, question, options) -> Dict[str, tf.Tensor]:
    """Raw text -> [B, 4, T] model inputs (`race_inputs`)."""
    return race_inputs(self.text_encoder, article, question, options, self.max_seq_length,
                       self.max_qa_length)

  def outputs(self, features: Dict[str, tf.Tensor]) -> Dict[str, tf.Tensor]:
    logits = tf.cast(self.model(features, training=False)["logits"], tf.float32)  # [B, 4]
    answer = tf.argmax(logits, axis=-1, output_type=tf.int32)
    return {"logits": logits, "probabilities": tf.nn.softmax(logits, axis=-1),
            "answer": answer, "answer_letter": tf.gather(self.letters, answer)}

  def serve_text(self, article, question, options) -> Dict[str, tf.Tensor]:
    """serving_default: the shapes checked, then `features` and `outputs`."""
    checked = check_shapes("serving_default", {
        "article": (article, [None], TEXTS), "question": (question, [None], TEXTS),
        "options": (options, [None, NUM_OPTIONS], OPTIONS)})
    return self.outputs(self.features(checked["article"], checked["question"],
                                      checked["options"]))

  def serve_ids(self, input_ids, segment_ids, input_mask) -> Dict[str, tf.Tensor]:
    """serving_ids: the shapes checked, then `outputs`."""
    dims = [None, NUM_OPTIONS, self.max_seq_length]
    note = (f"one row per option, max_seq_length of this export: {self.max_seq_length}; "
            f"the released layout, padded on the left")
    return self.outputs(check_shapes("serving_ids", {
        "input_ids": (input_ids, dims, f"int32 token ids, {note}"),
        "segment_ids": (segment_ids, dims, f"int32 segment ids, {note}"),
        "input_mask": (input_mask, dims, f"float32, 1 at padding, {note}")}))

  def signatures(self) -> Dict[str, tf.types.experimental.ConcreteFunction]:
    strings = tf.TensorSpec([None], tf.string)
    text_fn = tf.function(lambda article, question, options:
                          self.serve_text(article, question, options))
    text = text_fn.get_concrete_function(
        article=strings, question=strings,
        options=tf.TensorSpec([None, NUM_OPTIONS], tf.string))
    shape = [None, NUM_OPTIONS, self.max_seq_length]
    ids = tf.function(self.serve_ids).get_concrete_function(
        input_ids=tf.TensorSpec(shape, tf.int32),
        segment_ids=tf.TensorSpec(shape, tf.int32),
        input_mask=tf.TensorSpec(shape, tf.float32))
    return {"serving_default": text, "serving_ids": ids}


def export_race(model_dir: str, export_dir: str, spiece_model: Optional[str] = None) -> str:
  """Exports the fine-tuned RACE model directory `model_dir` as a SavedModel
  (`model_dir_export.export_model_dir` with `RaceSpec`: race.json's max_seq_length,
  max_qa_length, uncased and keep_accents); returns export_dir. `spiece_model` defaults to
  `model_dir/spiece.model`; a missing one raises FileNotFoundError.
  """
  def serving(model, spec: RaceSpec, spiece: str) -> RaceServing:
    return RaceServing(model, spiece, spec.max_seq_length, spec.max_qa_length,
                       uncased=bool(spec.uncased), keep_accents=bool(spec.keep_accents))
  return export_model_dir(model_dir, export_dir, RaceSpec, serving, spiece_model,
                          card=race_card)


# ---- the card -------------------------------------------------------------------------------

# Probe questions (`race_card`): an article, a question and four options each.
PROBE_ARTICLES = ("Call me Ishmael. Some years ago I went to sea to see the watery part "
                  "of the world.", "")
PROBE_RACE_QUESTIONS = ("What did the narrator do?", "The answer is _ .")
PROBE_OPTIONS = (("He went to sea.", "He stayed home.", "He sold a ship.", "He slept."),
                 ("yes", "no", "maybe", ""))


def race_card(module: RaceServing) -> export_card.ExportCard:
  """`RaceServing`: the options' logits and probabilities."""
  return export_card.ExportCard(
      task="multiple_choice", title="XLNet multiple choice (RACE), SavedModel",
      about=("a RACE (multiple choice) export: its serving_default takes article, question "
             "and options; call it from Python (docs/serving.md)"),
      python_fn=module.serve_text,
      inputs={"article": list(PROBE_ARTICLES), "question": list(PROBE_RACE_QUESTIONS),
              "options": [list(options) for options in PROBE_OPTIONS]},
      keys=("logits", "probabilities"), labels=list(ANSWERS),
      details={"max_seq_length": module.max_seq_length,
               "max_qa_length": module.max_qa_length})
