"""One XLNet layer: relative attention then feed-forward, applied to both streams."""

import tf_keras

from xlnet_tf.layers.feed_forward import PositionwiseFeedForward
from xlnet_tf.layers.relative_attention import RelativeMultiHeadAttention
from xlnet_tf.layers.scoped_build import build_in_scope


@tf_keras.utils.register_keras_serializable(package="xlnet_tf")
class TwoStreamBlock(tf_keras.layers.Layer):
  """Content stream h [B, T, D] and query stream g [B, P, D] through one shared layer.

  Both streams use the same attention and feed-forward weights; the query stream attends
  to the content keys ([memory; h]) only, never to itself. With `query=None` this is a
  plain Transformer-XL layer (fine-tuning, inference).

  Call arguments: `content`, `query`, and the keyword arguments of
  `RelativeMultiHeadAttention.call` (memory, position encoding, biases, masks, segments).
  Returns: (content [B, T, D], query [B, P, D] or None).
  """

  def __init__(self, num_heads: int, head_size: int, inner_size: int,
               activation: str = "gelu", dropout_rate: float = 0.0,
               attention_dropout_rate: float = 0.0, layer_norm_epsilon: float = 1e-12,
               initializer_range: float = 0.02, **kwargs):
    super().__init__(**kwargs)
    self.num_heads = num_heads
    self.head_size = head_size
    self.inner_size = inner_size
    self.activation = activation
    self.dropout_rate = dropout_rate
    self.attention_dropout_rate = attention_dropout_rate
    self.layer_norm_epsilon = layer_norm_epsilon
    self.initializer_range = initializer_range
    self.attention = RelativeMultiHeadAttention(
        num_heads, head_size, dropout_rate=dropout_rate,
        attention_dropout_rate=attention_dropout_rate, layer_norm_epsilon=layer_norm_epsilon,
        initializer_range=initializer_range, dtype=self.dtype_policy, name="rel_attn")
    self.feed_forward = PositionwiseFeedForward(
        inner_size, activation=activation, dropout_rate=dropout_rate,
        layer_norm_epsilon=layer_norm_epsilon, initializer_range=initializer_range,
        dtype=self.dtype_policy, name="ff")

  def build(self, input_shape):
    build_in_scope(self.attention, input_shape)
    build_in_scope(self.feed_forward, input_shape)
    super().build(input_shape)

  def call(self, content, query=None, training=None, return_attention=False,
           **attention_inputs):
    """(content, query), or with `return_attention` (content, query, (content-stream
    attention probabilities [B, N, T, K], query-stream ones [B, N, P, K] or None))."""
    content, query, *maps = self.attention(content, query, training=training,
                                           return_attention=return_attention,
                                           **attention_inputs)
    content = self.feed_forward(content, training=training)
    if query is not None:
      query = self.feed_forward(query, training=training)
    return (content, query, *maps)

  def get_config(self):
    config = super().get_config()
    config.update(num_heads=self.num_heads, head_size=self.head_size,
                  inner_size=self.inner_size, activation=self.activation,
                  dropout_rate=self.dropout_rate,
                  attention_dropout_rate=self.attention_dropout_rate,
                  layer_norm_epsilon=self.layer_norm_epsilon,
                  initializer_range=self.initializer_range)
    return config
