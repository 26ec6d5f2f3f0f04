"""SavedModel export of a pretrained model: raw text in, the encoder's hidden states out
(feature extraction, what HuggingFace's "feature-extraction" pipeline gives).

Signature `serving_default`: text string [B] -> `hidden_states` float32 [B, T, D] (the
last layer's content stream, in the classification layout `text <sep> <cls>` padded on
the LEFT to `max_seq_length`), `input_mask` float32 [B, T] (1 = padding) and `summary`
float32 [B, D] (the state at <cls>, the last position, which the classifier's "last"
summary reads). Normalisation and SentencePiece run in the graph: serving needs only
TensorFlow and tensorflow-text.

  >>> export_encoder("runs/pretrain/final", "exports/encoder", max_seq_length=128)
  >>> serve = tf.saved_model.load("exports/encoder").signatures["serving_default"]
  >>> serve(text=tf.constant(["Call me Ishmael."]))["summary"]          # [1, D]
"""

import os
from typing import Optional

import tensorflow as tf

from xlnet_tf import model_directory
from xlnet_tf import pretrained
from xlnet_tf.serving import export_card
from xlnet_tf.serving.text_encoder import TEXTS
from xlnet_tf.serving.text_encoder import XLNetTextEncoder
from xlnet_tf.serving.text_encoder import check_shapes


class EncoderServing(tf.Module):
  """The encoder of a pretrained model with the text encoder."""

  def __init__(self, encoder, spiece_model: str, max_seq_length: int, lower: bool = False,
               keep_accents: bool = False):
    super().__init__(name="xlnet_encoder_serving")
    self.encoder = encoder
    self.max_seq_length = max_seq_length
    self.text_encoder = XLNetTextEncoder(spiece_model, lower=lower,
                                         keep_accents=keep_accents)

  def serve_text(self, text):
    checked = check_shapes("serving_default", {"text": (text, [None], TEXTS)})
    features = self.text_encoder.classifier_inputs(checked["text"], None,
                                                   self.max_seq_length)
    outputs = self.encoder(features, training=False)
    hidden = tf.cast(outputs["content"], tf.float32)                        # [B, T, D]
    return {"hidden_states": hidden, "input_mask": features["input_mask"],
            "summary": hidden[:, -1]}                                       # [B, D]

  def signatures(self):
    text_fn = tf.function(lambda text: self.serve_text(text))
    return {"serving_default": text_fn.get_concrete_function(
        text=tf.TensorSpec([None], tf.string))}


def export_encoder(model_dir: str, export_dir: str, max_seq_length: int = 128,
                   lower: Optional[bool] = None,
                   keep_accents: Optional[bool] = None) -> str:
  """Exports the encoder of the pretrained model directory `model_dir` (with its
  spiece.model); `lower` and `keep_accents` are the text normalisation of the model
  (uncased; accents kept), by default the directory's
  (`model_directory.read_text_settings`: its text.json, else cased with accents
  stripped). Returns export_dir."""
  export_card.check_export_dir(export_dir)
  if lower is None or keep_accents is None:
    settings = model_directory.read_text_settings(model_dir, spec_files=())  # pretrained
    lower = settings["uncased"] if lower is None else lower
    keep_accents = settings["keep_accents"] if keep_accents is None else keep_accents
  spiece_model = os.path.join(model_dir, model_directory.SPIECE_FILE)
  if not tf.io.gfile.exists(spiece_model):
    raise FileNotFoundError(f"{spiece_model}: the SentencePiece model to put in the "
                            f"SavedModel is missing")
  model = pretrained.load_pretrained(model_dir, mem_len=0, reuse_len=0, bi_data=False,
                                     dropout=0.0, dropatt=0.0)
  module = EncoderServing(model.encoder, spiece_model, max_seq_length, lower, keep_accents)
  return export_card.save(module, export_dir, model_dir, model,
                          export_card.encoder_card(module))
