"""Sinusoidal relative positional encoding of Transformer-XL / XLNet."""

import tensorflow as tf
import tf_keras
from tensorflow.compiler.tf2xla.python import xla
from tensorflow.python.ops import control_flow_util


def computed_in_program(values: tf.Tensor) -> tf.Tensor:
  """`values`, kept a value the compiled program computes.

  The encodings depend only on the (static) lengths, so when a step is compiled (XLA:
  `jit_compile`, TPUs) TensorFlow folds them into literals, one [R, D] copy per use (each
  layer's projection and its gradient): 75 of the 80 MB of the base step's program. An
  XLA optimization barrier on the [R] distances stops that folding: the program holds R
  numbers and computes the sinusoids once. Outside an XLA context (graphs, eager,
  SavedModels) `values` is returned as it is: the op needs XLA.
  """
  if not control_flow_util.GraphOrParentsInXlaContext(tf.compat.v1.get_default_graph()):
    return values
  return xla.optimization_barrier(values)[0]


def relative_positions(qlen, klen, attn_type: str, backward: bool = False,
                       clamp_len: int = -1) -> tf.Tensor:
  """The relative distances encoded for one forward pass: float32 [R].

  "bi": klen, klen-1, ..., -qlen+1 (R = klen + qlen); "uni": klen, ..., 0 (R = klen + 1).
  `backward` negates the sequence (the reversed half of a bi_data batch). Entry r is the
  distance of a query at key position i to key j with r = qlen - i + j (see `rel_shift`).
  """
  end = -qlen if attn_type == "bi" else -1
  positions = tf.cast(tf.range(klen, end, -1), tf.float32)
  if backward:
    positions = -positions
  if clamp_len > 0:
    positions = tf.clip_by_value(positions, -float(clamp_len), float(clamp_len))
  return computed_in_program(positions)


def sinusoid(positions: tf.Tensor, d_model: int) -> tf.Tensor:
  """[R] -> [R, d_model]: sin block then cos block, inv_freq = 1 / 10000^(2k / d_model)."""
  inv_freq = 1.0 / tf.pow(10000.0, tf.range(0, d_model, 2.0) / d_model)
  angles = positions[:, None] * inv_freq[None, :]
  return tf.concat([tf.sin(angles), tf.cos(angles)], axis=-1)


@tf_keras.utils.register_keras_serializable(package="xlnet_tf")
class RelativePositionalEncoding(tf_keras.layers.Layer):
  """Relative positional encodings of one forward pass (no weights).

  Computed in float32 and cast to the layer's compute dtype (large positions lose
  precision if the sines are taken in half precision).

  Call arguments:
    qlen, klen: scalars (int or int tensor); klen = mlen + qlen.
  Returns:
    [X, R, d_model] where X = 2 with bi_data (forward encodings for the first half of the
    batch, backward for the second) and X = 1 otherwise; R = klen + qlen ("bi") or
    klen + 1 ("uni").

  Example:
    >>> enc = RelativePositionalEncoding(d_model=8, attn_type="bi")
    >>> enc(qlen=4, klen=6).shape
    TensorShape([1, 10, 8])
  """

  def __init__(self, d_model: int, attn_type: str = "bi", bi_data: bool = False,
               clamp_len: int = -1, **kwargs):
    super().__init__(**kwargs)
    if attn_type not in ("bi", "uni"):
      raise ValueError(f"attn_type must be 'bi' or 'uni', got {attn_type!r}")
    if d_model % 2:
      raise ValueError(f"d_model must be even for sinusoidal encodings, got {d_model}")
    self.d_model = d_model
    self.attn_type = attn_type
    self.bi_data = bi_data
    self.clamp_len = clamp_len

  def call(self, qlen, klen):
    directions = (False, True) if self.bi_data else (False,)
    encodings = [
        sinusoid(relative_positions(qlen, klen, self.attn_type, backward, self.clamp_len),
                 self.d_model)
        for backward in directions]
    return tf.cast(tf.stack(encodings, axis=0), self.compute_dtype)   # [X, R, D]

  def get_config(self):
    config = super().get_config()
    config.update(d_model=self.d_model, attn_type=self.attn_type, bi_data=self.bi_data,
                  clamp_len=self.clamp_len)
    return config
