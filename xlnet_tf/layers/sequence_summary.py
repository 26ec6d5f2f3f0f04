"""Sequence summary for classification heads (the original `sequnece_summary` scope).

  >>> summary = SequenceSummary(summary_type="last", use_proj=True)
  >>> summary(tf.zeros([2, 7, 16]), input_mask=tf.zeros([2, 7])).shape
  TensorShape([2, 16])
"""

from typing import Optional

import tensorflow as tf
import tf_keras

from xlnet_tf import masks
from xlnet_tf.layers.initializers import normal_initializer
from xlnet_tf.layers.scoped_build import build_in_scope
from xlnet_tf.layers.step_dropout import StepDropout

SUMMARY_TYPES = ("last", "first", "mean", "mean_with_padding", "attn")
# The summaries that read real tokens only: the same left-padded text gets the same summary
# whatever its padding (so serving may pad a batch to its bucket rather than to T). "first"
# reads a padding position and "mean_with_padding" averages over padding.
PADDING_INVARIANT_TYPES = ("last", "mean", "attn")
# The activations the summary can end with ("gelu" is the tanh approximation, as in
# `feed_forward.ACTIVATIONS`; "gelu_exact" the erf form; "linear" none).
ACTIVATIONS = {
    "tanh": tf.tanh,
    "linear": tf.identity,
    "relu": tf.nn.relu,
    "gelu": lambda x: tf.nn.gelu(x, approximate=True),
    "gelu_exact": lambda x: tf.nn.gelu(x, approximate=False),
    "sigmoid": tf.sigmoid,
    "silu": tf.nn.silu,
}


def resolve_activation(activation: Optional[str], use_proj: bool) -> str:
  """The summary's activation: None is the released one (tanh on the projection, none
  without it)."""
  if activation is None:
    return "tanh" if use_proj else "linear"
  if activation not in ACTIVATIONS:
    raise ValueError(f"summary activation must be one of {sorted(ACTIVATIONS)} or None, got "
                     f"{activation!r}")
  return activation


@tf_keras.utils.register_keras_serializable(package="xlnet_tf")
class SequenceSummary(tf_keras.layers.Layer):
  """[B, T, D] hidden states -> [B, D] summary.

  summary_type:
    last   the last position: <cls> in the released (left-padded) layout. The default.
    first  position 0 (with left padding, a padding position unless the row is full).
    mean   the mean over real tokens (input_mask 0): the same text gets the same summary
           however much padding its row has.
    mean_with_padding  the mean over all T positions, padding included: the released
           code's (and HuggingFace's) "mean", which depends on the amount of padding.
    attn   one learned query (`summary_bias` [D]) attends over the real tokens with
           n_head heads of size d_head (no residual, then LayerNorm), as released.
  Then, with `use_proj`, Dense(D) named `summary` (released:
  model/sequnece_summary/summary/{kernel,bias}), the `activation` (one of `ACTIVATIONS`;
  None: tanh with the projection and none without, as released; HuggingFace applies its
  `summary_activation` with or without the projection), and dropout. As released, `attn` drops
  attention probabilities at `attention_dropout_rate` (dropatt) and its output at
  `dropout_rate`; None takes `dropout_rate` for both (layers saved before the distinction).
  """

  def __init__(self, summary_type: str = "last", use_proj: bool = True,
               dropout_rate: float = 0.0, num_heads: int = 1, head_size: int = 64,
               initializer_range: float = 0.02, layer_norm_epsilon: float = 1e-12,
               attention_dropout_rate: Optional[float] = None,
               activation: Optional[str] = None, **kwargs):
    super().__init__(**kwargs)
    if summary_type not in SUMMARY_TYPES:
      raise ValueError(f"summary_type must be one of {SUMMARY_TYPES}, got {summary_type!r}")
    self.summary_type = summary_type
    self.use_proj = use_proj
    self.activation = resolve_activation(activation, use_proj)
    self.dropout_rate = dropout_rate
    self.attention_dropout_rate = (dropout_rate if attention_dropout_rate is None
                                   else attention_dropout_rate)
    self.num_heads = num_heads
    self.head_size = head_size
    self.initializer_range = initializer_range
    self.layer_norm_epsilon = layer_norm_epsilon

  def build(self, input_shape):
    d_model = int(input_shape[-1])
    init = lambda: normal_initializer(self.initializer_range)
    if self.summary_type == "attn":
      shape = [d_model, self.num_heads, self.head_size]
      self.summary_bias = self.add_weight("summary_bias", shape=[d_model], initializer=init())
      self.q_kernel = self.add_weight("q/kernel", shape=shape, initializer=init())
      self.k_kernel = self.add_weight("k/kernel", shape=shape, initializer=init())
      self.v_kernel = self.add_weight("v/kernel", shape=shape, initializer=init())
      self.o_kernel = self.add_weight("o/kernel", shape=shape, initializer=init())
      self.attn_layer_norm = tf_keras.layers.LayerNormalization(
          epsilon=self.layer_norm_epsilon, dtype=self.dtype_policy, name="LayerNorm")
      build_in_scope(self.attn_layer_norm, [None, d_model])
    if self.use_proj:
      self.summary = tf_keras.layers.Dense(d_model, kernel_initializer=init(),
                                           dtype=self.dtype_policy, name="summary")
      build_in_scope(self.summary, [None, d_model])
    self.dropout = StepDropout(self.dropout_rate)
    if self.summary_type == "attn":       # the other summaries have no attention to drop
      self.attention_dropout = StepDropout(self.attention_dropout_rate)
    super().build(input_shape)

  def call(self, hidden, input_mask=None, training=None):
    """hidden [B, T, D]; input_mask [B, T], 1 at padding (optional). Returns [B, D]."""
    if self.summary_type == "last":
      summary = hidden[:, -1]
    elif self.summary_type == "first":
      summary = hidden[:, 0]
    elif self.summary_type == "mean_with_padding":
      summary = tf.reduce_mean(hidden, axis=1)
    elif self.summary_type == "mean":
      real = tf.ones_like(hidden[:, :, 0]) if input_mask is None else (
          1.0 - tf.cast(input_mask, hidden.dtype))                       # [B, T]
      summary = (tf.einsum("btd,bt->bd", hidden, real) /
                 tf.maximum(tf.reduce_sum(real, axis=1, keepdims=True), 1.0))
    else:
      summary = self._attend(hidden, input_mask, training)
    if self.use_proj:
      summary = self.summary(summary)                                     # [B, D]
    summary = ACTIVATIONS[self.activation](summary)
    return self.dropout(summary, training=training)

  def _attend(self, hidden, input_mask, training):
    query = tf.einsum("d,dnh->nh", tf.cast(self.summary_bias, hidden.dtype), self.q_kernel)
    key = tf.einsum("btd,dnh->btnh", hidden, self.k_kernel)                # [B, T, N, H]
    value = tf.einsum("btd,dnh->btnh", hidden, self.v_kernel)
    score = tf.einsum("nh,btnh->bnt", query, key) / (self.head_size ** 0.5)  # [B, N, T]
    if input_mask is not None:
      blocked = tf.cast(input_mask, score.dtype)[:, None, :]
      score += blocked * masks.large_negative(score.dtype)
    probs = self.attention_dropout(tf.nn.softmax(score, axis=-1), training=training)
    attended = tf.einsum("bnt,btnh->bnh", probs, value)
    out = tf.einsum("bnh,dnh->bd", attended, self.o_kernel)
    return self.attn_layer_norm(self.dropout(out, training=training))

  def get_config(self):
    config = super().get_config()
    config.update(summary_type=self.summary_type, use_proj=self.use_proj,
                  dropout_rate=self.dropout_rate, num_heads=self.num_heads,
                  head_size=self.head_size, initializer_range=self.initializer_range,
                  layer_norm_epsilon=self.layer_norm_epsilon,
                  attention_dropout_rate=self.attention_dropout_rate,
                  activation=self.activation)
    return config
