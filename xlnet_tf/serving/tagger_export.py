"""SavedModel export of a fine-tuned tagger: raw text in, one tag per word out.

Signature (batch-major, any batch size):
  serving_default  text string [B], whitespace-separated words
                   -> tags string [B, W], tag_ids int32 [B, W], probabilities float32
                      [B, W, C], words string [B, W], num_words int32 [B],
                      num_tagged int32 [B]
W is the largest word count of the batch; row b holds its num_words words, then "" / -1 /
zeros. The words are the text split at whitespace as Python's `str.split()` splits (every
character for which `str.isspace()` is true); each word gets the tag predicted at its
first piece. Words whose first piece does not fit max_seq_length (the export's T) are not
tagged: tag "", tag_id -1, zero probabilities; they come last, num_tagged counts the rest.

In the graph, as `tagging_features` does in Python: each word is normalised and encoded
on its own (`XLNetTextEncoder.tokenize`, the released normalisation and SentencePiece, the
model inside the SavedModel), a word without pieces becomes one <unk>, and the pieces form
the classification layout `pieces <sep> <cls>`, padded on the left
(`text_layouts.classifier_layout`). Each batch is padded only to its bucket: the smallest
of 16, 24, 32, 48, 64, 96, ..., max_seq_length that holds its longest row
(`text_layouts.bucket_lengths`; truncation still at max_seq_length). With left padding and
relative positions a word's logits do not depend on the amount of padding, so the tags
and probabilities equal the fixed-length export's (tests/serving/test_bucketing.py: every held-out
Brown sentence, within 1e-5); `export_tagger(..., bucketed=False)` pads every batch to
max_seq_length as before. Serving needs only TensorFlow and tensorflow-text:

  import tensorflow as tf, tensorflow_text  # registers the SentencePiece ops
  serve = tf.saved_model.load(EXPORT_DIR).signatures["serving_default"]
  out = serve(text=tf.constant(["The jury said it did find that many of Georgia's laws"]))
  out["tags"][0, :out["num_words"][0]]      # [b'at', b'nn', b'vbd', ...]
"""

import functools
from typing import Dict, Optional

import tensorflow as tf

from xlnet_tf.data import tokenization
from xlnet_tf.models.xlnet_tagger import TaggerSpec
from xlnet_tf.serving import export_card
from xlnet_tf.serving.export_card import PROBE_TEXTS
from xlnet_tf.serving.model_dir_export import export_model_dir
from xlnet_tf.serving.text_encoder import TEXTS
from xlnet_tf.serving.text_encoder import XLNetTextEncoder
from xlnet_tf.serving.text_encoder import check_shapes
from xlnet_tf.serving.text_layouts import classifier_layout


@functools.lru_cache(maxsize=None)
def _space_class() -> str:
  """An RE2 class of the characters Python's `str.split()` splits at (`str.isspace()`)."""
  spaces = [cp for cp in range(0x110000) if chr(cp).isspace()]
  return "[" + "".join(f"\\x{{{cp:x}}}" for cp in spaces) + "]"


@tf.autograph.experimental.do_not_convert
def split_words(texts: tf.Tensor) -> tf.RaggedTensor:
  """string [B] -> RaggedTensor string [B, (w)]: `text.split()` of every text (invalid
  UTF-8 bytes become U+FFFD first, as in the text encoder)."""
  texts = tf.strings.unicode_transcode(texts, "UTF-8", "UTF-8", errors="replace",
                                       replacement_char=0xFFFD,
                                       replace_control_characters=False)
  texts = tf.strings.regex_replace(texts, _space_class() + "+", " ")
  texts = tf.strings.regex_replace(texts, "^ | $", "")
  words = tf.strings.split(texts, sep=" ").with_row_splits_dtype(tf.int64)
  return tf.ragged.boolean_mask(words, tf.not_equal(words, ""))      # "" -> no words


class TaggerServing(tf.Module):
  """The exported module: the tagger, the text encoder and the tag names."""

  def __init__(self, model, spec: TaggerSpec, spiece_model: str, bucketed: bool = True):
    """`bucketed`: pad each batch to its bucket (default) rather than to max_seq_length."""
    super().__init__(name="xlnet_tagger_serving")
    self.model = model
    self.spec = spec
    self.bucketed = bool(bucketed)
    self.text_encoder = XLNetTextEncoder(spiece_model, lower=spec.uncased,
                                         keep_accents=spec.keep_accents)
    self.tag_names = tf.constant(list(spec.labels))
    _space_class()  # fail early, not while tracing

  @tf.autograph.experimental.do_not_convert
  def tag_text(self, texts: tf.Tensor) -> Dict[str, tf.Tensor]:
    """string [B] -> the outputs of serving_default (see the module docstring)."""
    seq_len = self.spec.max_seq_length
    words = split_words(texts)                                       # [B, (w)]
    ids = self.text_encoder.tokenize(words.flat_values)              # [W, (p)]
    ids = tf.cast(ids, tf.int32).with_row_splits_dtype(tf.int64)
    # A word without pieces becomes one <unk> (tagging_features.word_ids).
    num = tf.shape(ids.row_splits, out_type=tf.int64)[0] - 1         # W
    empty = tf.equal(ids.row_lengths(), 0)
    unk = tf.RaggedTensor.from_row_lengths(
        tf.fill([num], tf.constant(tokenization.UNK_ID, tf.int32)), tf.ones([num], tf.int64),
        validate=False)
    ids = tf.gather(tf.concat([ids, unk], axis=0),
                    tf.where(empty, num + tf.range(num), tf.range(num)))
    pieces = tf.RaggedTensor.from_row_splits(ids, words.row_splits,
                                             validate=False).merge_dims(1, 2)  # [B, (n)]
    features = classifier_layout(pieces, None, seq_len,              # [B, L] each, L <= T
                                 bucketed=self.bucketed)
    logits = self.model(features, training=False)["logits"]           # [B, L, C]
    padded = tf.shape(features["input_ids"], out_type=tf.int64)[1]   # L (T if not bucketed)

    # Each word's first piece: its offset in the sentence's pieces, after the padding.
    row = words.value_rowids()                                       # [W]
    first = tf.gather(ids.row_splits, words.row_splits[:-1])         # [B]
    start = ids.row_starts() - tf.gather(first, row)                 # [W]
    kept = tf.minimum(pieces.row_lengths(), seq_len - 2)             # [B], cut at T
    tagged = start < tf.gather(kept, row)                            # [W]
    position = tf.where(tagged, tf.gather(padded - 2 - kept, row) + start, 0)
    word_logits = tf.gather_nd(logits, tf.stack([row, position], axis=1))  # [W, C]
    probabilities = tf.where(tagged[:, tf.newaxis], tf.nn.softmax(word_logits, axis=-1), 0.0)
    tag_ids = tf.where(tagged, tf.argmax(word_logits, axis=-1, output_type=tf.int32), -1)
    tags = tf.where(tagged, tf.gather(self.tag_names, tf.maximum(tag_ids, 0)), "")
    return {
        "tags": words.with_flat_values(tags).to_tensor(default_value=""),
        "tag_ids": words.with_flat_values(tag_ids).to_tensor(default_value=-1),
        "probabilities": words.with_flat_values(probabilities).to_tensor(default_value=0.0),
        "words": words.to_tensor(default_value=""),
        "num_words": tf.cast(words.row_lengths(), tf.int32),
        "num_tagged": tf.reduce_sum(words.with_flat_values(tf.cast(tagged, tf.int32)),
                                    axis=1),
    }

  def serve_text(self, text) -> Dict[str, tf.Tensor]:
    """serving_default: the shape checked, then `tag_text`."""
    checked = check_shapes("serving_default", {"text": (text, [None], TEXTS)})
    return self.tag_text(checked["text"])

  def signatures(self) -> Dict[str, tf.types.experimental.ConcreteFunction]:
    text_fn = tf.function(lambda text: self.serve_text(text))
    return {"serving_default": text_fn.get_concrete_function(
        text=tf.TensorSpec([None], tf.string))}


def export_tagger(model_dir: str, export_dir: str,
                  spiece_model: Optional[str] = None, bucketed: bool = True) -> str:
  """Exports the fine-tuned tagger in `model_dir` (a tagger model directory, `model_directory`).

  Args:
    spiece_model: default `model_dir/spiece.model`.
    bucketed: pad each batch to its bucket (default) or, False, to max_seq_length.
  Returns: export_dir.
  Raises:
    NotADirectoryError / PermissionError: `export_dir` is a file, lies under a file or
      cannot be written (checked before the model is loaded).
  """
  def serving(model, spec: TaggerSpec, spiece: str) -> TaggerServing:
    return TaggerServing(model, spec, spiece, bucketed=bucketed)
  return export_model_dir(model_dir, export_dir, TaggerSpec, serving, spiece_model,
                          spiece_hint="spiece_model", card=tagger_card)


# ---- the card -------------------------------------------------------------------------------

def tagger_card(module: TaggerServing) -> export_card.ExportCard:
  """`TaggerServing`: per-word tag probabilities."""
  spec = module.spec
  return export_card.ExportCard(
      task="token_classification", title=f"XLNet tagger ({spec.task_name}), SavedModel",
      about=("a tagger export: its serving_default takes text (whitespace-separated words) "
             "and returns tags; call it from Python (docs/serving.md, Token classification)"),
      python_fn=module.serve_text, inputs={"text": list(PROBE_TEXTS)},
      keys=("probabilities",), labels=list(spec.labels),
      details={"max_seq_length": spec.max_seq_length, "uncased": spec.uncased,
               "keep_accents": getattr(spec, "keep_accents", False),
               "Tag scheme": spec.scheme,
               "Padding": export_card.padding_detail(spec.max_seq_length, module.bucketed)})
