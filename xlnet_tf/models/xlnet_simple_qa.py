"""Span QA with one linear layer: the architecture of HuggingFace's
`XLNetForQuestionAnsweringSimple` (start and end logits from one Dense(2) per position).

  >>> model = build_simple_qa(config.replace(mem_len=0), start_n_top=5, end_n_top=5)
  >>> model(batch)["start_logits"]          # [B, T], every position, no p_mask
  >>> model({**batch, "p_mask": p_mask})    # + the top-k outputs `squad_export` decodes

The Dense layer is named `qa_outputs` like HF's (`nn.Linear(d_model, 2)`): HF
`qa_outputs.weight` [2, D] is our `qa_outputs/kernel` [D, 2] transposed, `qa_outputs.bias`
[2] our `qa_outputs/bias`; column 0 gives the start logits, column 1 the end logits.

The start and end logits are HF's: every position, no p_mask. Called with a p_mask
(inference, e.g. the SQuAD SavedModel of `serving/squad_export.py`), the model also gives
the inference outputs of `SquadHead`, so the same span decoding applies: the log-softmax of
the masked start logits and its `start_n_top` best positions, and for every one of them the
`end_n_top` best of the masked end logits (the same ends for every start: this head's end
does not depend on the start). There is no answer class (SQuAD v1.1 only).
"""

import dataclasses
from typing import Any, ClassVar, Dict, Mapping, Optional

import tensorflow as tf
import tf_keras

from xlnet_tf.configs import XLNetConfig
from xlnet_tf.layers.initializers import normal_initializer
from xlnet_tf.layers.scoped_build import build_in_scope
from xlnet_tf.masks import large_negative
from xlnet_tf.models.encoder_model import EncoderModel
from xlnet_tf.models.head_spec import HeadSpec
from xlnet_tf.networks.xlnet_encoder import XLNetEncoder

ENCODER_INPUTS = ("input_ids", "segment_ids", "input_mask")


@tf_keras.utils.register_keras_serializable(package="xlnet_tf")
class XLNetSimpleQA(EncoderModel):
  """Encoder (content stream) [B, T, D] -> Dense(2) -> start_logits, end_logits [B, T].

  Args:
    encoder: an `XLNetEncoder` (memory off for fine-tuning: mem_len 0).
    start_n_top, end_n_top: the candidates of the inference outputs (with a p_mask).
  Call with input_ids int [B, T], segment_ids, input_mask float [B, T] (1 at padding) and,
  optionally, p_mask [B, T] (1 = cannot be an answer boundary). Returns start_logits and
  end_logits float32 [B, T]; with p_mask and not training also start_top_log_probs,
  start_top_index [B, K1] and end_top_log_probs, end_top_index [B, K1, K2] (start-major).
  """

  def __init__(self, encoder: XLNetEncoder, start_n_top: int = 5, end_n_top: int = 5,
               **kwargs):
    super().__init__(**kwargs)
    self.encoder = encoder
    self.start_n_top = start_n_top
    self.end_n_top = end_n_top
    self.qa_outputs = tf_keras.layers.Dense(
        2, kernel_initializer=normal_initializer(encoder.config.initializer_range),
        name="qa_outputs")

  def build(self, input_shape=None):
    if not self.encoder.built:
      build_in_scope(self.encoder, None)
    build_in_scope(self.qa_outputs, tf.TensorShape([None, None, self.encoder.config.d_model]))
    self.built = True

  def call(self, inputs: Mapping[str, Any], training=None) -> Dict[str, tf.Tensor]:
    content = self.encoder({k: inputs[k] for k in ENCODER_INPUTS if k in inputs},
                           training=training)["content"]                   # [B, T, D]
    logits = tf.cast(self.qa_outputs(content), tf.float32)                  # [B, T, 2]
    outputs = {"start_logits": logits[:, :, 0], "end_logits": logits[:, :, 1]}
    p_mask = inputs.get("p_mask")
    if p_mask is None or training:
      return outputs
    p_mask = tf.cast(p_mask, tf.float32)
    blocked = large_negative(tf.float32) * p_mask

    def log_probs(x):                                                      # [B, T]
      return tf.nn.log_softmax(x * (1.0 - p_mask) + blocked, axis=-1)

    start_top_log_probs, start_top_index = tf.math.top_k(
        log_probs(outputs["start_logits"]), k=self.start_n_top)            # [B, K1]
    end_log_probs, end_index = tf.math.top_k(log_probs(outputs["end_logits"]),
                                             k=self.end_n_top)             # [B, K2]
    tile = lambda x: tf.tile(x[:, None], [1, self.start_n_top, 1])          # [B, K1, K2]
    outputs.update(start_top_log_probs=start_top_log_probs, start_top_index=start_top_index,
                   end_top_log_probs=tile(end_log_probs), end_top_index=tile(end_index))
    return outputs

  def get_config(self):
    return {"encoder": tf_keras.layers.serialize(self.encoder),
            "start_n_top": self.start_n_top, "end_n_top": self.end_n_top,
            "name": self.name}


@dataclasses.dataclass(frozen=True)
class SimpleQASpec(HeadSpec):
  """A span QA model with HF's simple head (`XLNetSimpleQA`, its model directory's
  qa_simple.json): the SQuAD window settings of its export (SQuAD v1.1: the head has no
  answer class)."""
  FILE: ClassVar[str] = "qa_simple.json"
  WRITTEN_BY: ClassVar[str] = "xlnet_tf.convert"
  OPTIONAL_FIELDS: ClassVar[Mapping[str, Any]] = {"keep_accents": False}
  max_seq_length: int = 512
  max_query_length: int = 64
  doc_stride: int = 128
  start_n_top: int = 5
  end_n_top: int = 5
  uncased: bool = False
  keep_accents: bool = False

  @classmethod
  def from_values(cls, values: Mapping[str, Any], source: str = "") -> "SimpleQASpec":
    del source
    return cls(**values)

  def build_model(self, config: XLNetConfig, start_n_top: Optional[int] = None,
                  end_n_top: Optional[int] = None) -> "XLNetSimpleQA":
    """The model this spec describes; `start_n_top`/`end_n_top` override the recorded
    search."""
    return build_simple_qa(config, start_n_top or self.start_n_top,
                           end_n_top or self.end_n_top)


def build_simple_qa(config: XLNetConfig, start_n_top: int = 5,
                    end_n_top: int = 5) -> XLNetSimpleQA:
  """A simple span QA model for `config` with every weight created (random)."""
  model = XLNetSimpleQA(XLNetEncoder(config, name="transformer"), start_n_top=start_n_top,
                        end_n_top=end_n_top, name="xlnet_simple_qa")
  model.build()
  return model
