"""Token classification model: XLNet encoder + dropout + a per-token logit layer.

  >>> model = build_tagger(config.replace(mem_len=0), num_labels=212)
  >>> model({"input_ids": ids, "segment_ids": seg, "input_mask": pad})["logits"]  # [B, T, 212]

The architecture of HuggingFace's `XLNetForTokenClassification`: the content stream of the
last layer (the encoder's output dropout, at `config.dropout`, included) goes through one
Dense layer to C logits per position. The Dense layer is named `classifier` like HF's
`classifier` (`nn.Linear(d_model, num_labels)`), so weights move between the two by name:
HF `classifier.weight` [C, D] is our `classifier/kernel` [D, C] transposed, `classifier.bias`
[C] our `classifier/bias`. HF has no dropout of its own in front of the head; `dropout_rate`
(default 0.0, i.e. HF's model) adds one.

Which positions carry a word's label is the data's business (`tagging_features`: each
word's first piece); the model gives logits at every position, and the loss
(`losses.token_cross_entropy`) reads only the labelled ones.
"""

import dataclasses
from typing import Any, ClassVar, Dict, Mapping, Sequence

import tensorflow as tf
import tf_keras

from xlnet_tf.configs import XLNetConfig
from xlnet_tf.layers.initializers import normal_initializer
from xlnet_tf.layers.scoped_build import build_in_scope
from xlnet_tf.layers.step_dropout import StepDropout
from xlnet_tf.models.encoder_model import EncoderModel
from xlnet_tf.models.head_spec import HeadSpec
from xlnet_tf.networks.xlnet_encoder import XLNetEncoder


@tf_keras.utils.register_keras_serializable(package="xlnet_tf")
class XLNetTagger(EncoderModel):
  """Encoder (content stream) [B, T, D] -> dropout -> logits float32 [B, T, C].

  Args:
    encoder: an `XLNetEncoder` (memory off for fine-tuning: mem_len 0).
    num_labels: C, the tags.
    dropout_rate: dropout on the content stream before the logit layer, on top of the
      encoder's own output dropout (0.0: as HF's XLNetForTokenClassification). Drawn per
      step (`StepDropout`), so resumed runs draw the same masks.
  Call with the encoder's inputs (input_ids int [B, T], segment_ids, input_mask float
  [B, T] with 1 at padding); returns {"logits": float32 [B, T, C]}.

  Example:
    >>> cfg = XLNetConfig(n_layer=2, d_model=16, n_head=2, d_head=8, d_inner=32, n_token=100)
    >>> tagger = build_tagger(cfg, num_labels=5)
    >>> tagger({"input_ids": tf.constant([[5, 6, 4, 3]])})["logits"].shape
    TensorShape([1, 4, 5])
  """

  def __init__(self, encoder: XLNetEncoder, num_labels: int, dropout_rate: float = 0.0,
               **kwargs):
    super().__init__(**kwargs)
    self.encoder = encoder
    self.num_labels = num_labels
    self.dropout_rate = dropout_rate
    self.dropout = StepDropout(dropout_rate, name="dropout")
    self.classifier = tf_keras.layers.Dense(
        num_labels, kernel_initializer=normal_initializer(encoder.config.initializer_range),
        name="classifier")

  def build(self, input_shape=None):
    if not self.encoder.built:
      build_in_scope(self.encoder, None)
    build_in_scope(self.classifier, tf.TensorShape([None, None, self.encoder.config.d_model]))
    self.built = True

  def call(self, inputs: Mapping[str, Any], training=None) -> Dict[str, tf.Tensor]:
    content = self.encoder(inputs, training=training)["content"]            # [B, T, D]
    content = self.dropout(content, training=training)
    return {"logits": tf.cast(self.classifier(content), tf.float32)}        # [B, T, C]

  def get_config(self):
    return {"encoder": tf_keras.layers.serialize(self.encoder),
            "num_labels": self.num_labels, "dropout_rate": self.dropout_rate,
            "name": self.name}


@dataclasses.dataclass(frozen=True)
class TaggerSpec(HeadSpec):
  """What a tagger predicts and how its inputs are made (its model directory's
  tagger.json)."""
  FILE: ClassVar[str] = "tagger.json"
  WRITTEN_BY: ClassVar[str] = "the xlnet/tagging task"
  OPTIONAL_FIELDS: ClassVar[Mapping[str, Any]] = {"keep_accents": False}
  task_name: str
  labels: Sequence[str]                 # tag strings in id order
  max_seq_length: int = 128
  uncased: bool = False
  scheme: str = "tags"                  # "bio": also entity-level metrics
  keep_accents: bool = False

  @property
  def num_labels(self) -> int:
    return len(self.labels)

  @classmethod
  def from_values(cls, values: Mapping[str, Any], source: str = "") -> "TaggerSpec":
    del source
    return cls(**{**values, "labels": tuple(values["labels"])})

  def build_model(self, config: XLNetConfig, **kwargs) -> "XLNetTagger":
    """The tagger this spec describes (a fresh head); `kwargs` as `build_tagger`."""
    return build_tagger(config, self.num_labels, **kwargs)


def build_tagger(config: XLNetConfig, num_labels: int, **kwargs) -> XLNetTagger:
  """A tagger for `config` with every weight created (random)."""
  model = XLNetTagger(XLNetEncoder(config, name="transformer"), num_labels,
                      name="xlnet_tagger", **kwargs)
  model.build()
  return model
