"""Position-wise feed-forward sublayer of an XLNet block (the original `ff` scope)."""

import tensorflow as tf
import tf_keras

from xlnet_tf.layers.initializers import normal_initializer
from xlnet_tf.layers.scoped_build import build_in_scope
from xlnet_tf.layers.step_dropout import StepDropout

# "gelu" is the tanh approximation the released checkpoints use (HF "gelu_new");
# "gelu_exact" is the erf form (HF "gelu").
ACTIVATIONS = {
    "gelu": lambda x: tf.nn.gelu(x, approximate=True),
    "gelu_exact": lambda x: tf.nn.gelu(x, approximate=False),
    "relu": tf.nn.relu,
}


@tf_keras.utils.register_keras_serializable(package="xlnet_tf")
class PositionwiseFeedForward(tf_keras.layers.Layer):
  """LayerNorm(x + Dropout(Dense_2(Dropout(act(Dense_1(x)))))): [B, T, D] -> [B, T, D].

  Weights as released: layer_1 kernel [D, inner] + bias, layer_2 kernel [inner, D] + bias,
  LayerNorm gamma/beta.

  Example:
    >>> ff = PositionwiseFeedForward(inner_size=32, activation="gelu")
    >>> ff(tf.zeros([2, 5, 8])).shape
    TensorShape([2, 5, 8])
  """

  def __init__(self, inner_size: int, activation: str = "gelu", dropout_rate: float = 0.0,
               layer_norm_epsilon: float = 1e-12, initializer_range: float = 0.02, **kwargs):
    super().__init__(**kwargs)
    if activation not in ACTIVATIONS:
      raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}, got {activation!r}")
    self.inner_size = inner_size
    self.activation = activation
    self.dropout_rate = dropout_rate
    self.layer_norm_epsilon = layer_norm_epsilon
    self.initializer_range = initializer_range

  def build(self, input_shape):
    d_model = input_shape[-1]
    self.layer_1 = tf_keras.layers.Dense(self.inner_size,
                                         kernel_initializer=normal_initializer(
                                             self.initializer_range),
                                         dtype=self.dtype_policy, name="layer_1")
    self.layer_2 = tf_keras.layers.Dense(d_model,
                                         kernel_initializer=normal_initializer(
                                             self.initializer_range),
                                         dtype=self.dtype_policy, name="layer_2")
    self.layer_norm = tf_keras.layers.LayerNormalization(
        epsilon=self.layer_norm_epsilon, dtype=self.dtype_policy, name="LayerNorm")
    build_in_scope(self.layer_1, input_shape)
    build_in_scope(self.layer_2, list(input_shape[:-1]) + [self.inner_size])
    build_in_scope(self.layer_norm, input_shape)
    self.dropout = StepDropout(self.dropout_rate)
    super().build(input_shape)

  def call(self, inputs, training=None):
    hidden = ACTIVATIONS[self.activation](self.layer_1(inputs))      # [B, T, inner]
    hidden = self.dropout(hidden, training=training)
    output = self.dropout(self.layer_2(hidden), training=training)   # [B, T, D]
    return self.layer_norm(output + inputs)

  def get_config(self):
    config = super().get_config()
    config.update(inner_size=self.inner_size, activation=self.activation,
                  dropout_rate=self.dropout_rate, layer_norm_epsilon=self.layer_norm_epsilon,
                  initializer_range=self.initializer_range)
    return config
