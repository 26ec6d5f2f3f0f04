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
  def from_preset(cls, preset: str, *args, **kwargs):
    """This model with the encoder weights of `preset` ("xlnet_base_cased", ... or a model
    directory) and a freshly initialised head, as fine-tuning starts; e.g.
    `XLNetClassifier.from_preset("xlnet_base_cased", num_classes=2)`. See
    `xlnet_tf.presets.from_preset` for the arguments."""
    from xlnet_tf import presets  # pylint: disable=g-import-not-at-top
    return presets.from_preset(cls, preset, *args, **kwargs)

  @classmethod
  def from_config(cls, config, custom_objects=None):
    config = dict(config)
    encoder = tf_keras.layers.deserialize(config.pop("encoder"),
                                          custom_objects=custom_objects)
    return cls(encoder, **config)
