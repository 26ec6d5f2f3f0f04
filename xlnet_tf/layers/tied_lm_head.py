"""Language-model head tied to the word embedding (the original `lm_loss` scope)."""

import tensorflow as tf
import tf_keras


@tf_keras.utils.register_keras_serializable(package="xlnet_tf")
class TiedLMHead(tf_keras.layers.Layer):
  """logits = hidden . embedding^T + bias: [B, I, D] x [V, D] -> float32 [B, I, V].

  No transform before the projection (the released model has none). The matmul runs in
  the compute dtype; the bias is a float32 variable (`bias` [V], zeros) added to float32
  logits, so losses are computed in float32 under mixed precision.
  """

  def __init__(self, vocab_size: int, **kwargs):
    super().__init__(**kwargs)
    self.vocab_size = vocab_size

  def build(self, input_shape):
    self.bias = self.add_weight("bias", shape=[self.vocab_size], initializer="zeros",
                                dtype=tf.float32, experimental_autocast=False)
    super().build(input_shape)

  def call(self, hidden, embedding):
    logits = tf.einsum("bid,vd->biv", hidden, tf.cast(embedding, hidden.dtype))
    return tf.cast(logits, tf.float32) + self.bias

  def get_config(self):
    config = super().get_config()
    config.update(vocab_size=self.vocab_size)
    return config
