"""The base of the models built on an `XLNetEncoder` (pretrainer, classifier, SQuAD)."""

import tf_keras

from xlnet_tf.configs import XLNetConfig


class EncoderModel(tf_keras.Model):
  """A Keras model whose first constructor argument is its encoder (`self.encoder`):
  `config` is the encoder's, and `from_config` rebuilds the encoder from the serialized
  "encoder" entry that the subclass's `get_config` writes."""

  @property
  def config(self) -> XLNetConfig:
    return self.encoder.config

  @classmethod
  def from_config(cls, config, custom_objects=None):
    config = dict(config)
    encoder = tf_keras.layers.deserialize(config.pop("encoder"),
                                          custom_objects=custom_objects)
    return cls(encoder, **config)
