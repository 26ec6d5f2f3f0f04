"""Relative multi-head attention of XLNet, for the content and the query stream.

Shapes: B batch, T current length, M memory length, K = M + T keys, P predicted targets,
R relative positions (K + T for "bi", K + 1 for "uni"), N heads, H head size, D d_model,
X = 2 with bi_data (forward and backward position encodings) else 1.

score(i, j) = [ (q_i + r_w_bias) . k_j                       content
              + (q_i + r_r_bias) . r_{i-j}                    position (via rel_shift)
              + (q_i + r_s_bias) . seg_embed[same/diff(i,j)]  segment ] / sqrt(H)

(The segment term is added as [diff(i,j)] * (seg_embed[diff] - seg_embed[same]): the
softmax over j does not change when row i gains a constant.)

Inside the layer, heads lead: queries, keys and values are [N, B, ., H] and scores
[N, B, I, K]. Every score product is then a plain batched matmul, forward and backward;
with the batch leading ([B, N, I, K], as einsum "binh,rnh->bnir" gives) TensorFlow
transposes each [B, N, I, R] score tensor and its gradient, which made the base-size
training step about 10% slower on CPU. Only the inputs and outputs ([B, ., D]) and the
returned attention maps ([B, N, I, K]) are batch-major.
"""

import tensorflow as tf
import tf_keras

from xlnet_tf import masks
from xlnet_tf.layers.initializers import normal_initializer
from xlnet_tf.layers.scoped_build import build_in_scope
from xlnet_tf.layers.step_dropout import StepDropout


def shape_list(x: tf.Tensor) -> list:
  """The dimensions of `x`: Python ints where the shape is static, scalar tensors where it
  is not. Under XLA every shape is static, so reshapes get constant shapes instead of
  the slicing and packing of `tf.shape` (each a few instructions, per use, per layer, in
  the forward and the backward pass: a sixth of the compiled base step's program)."""
  static = x.shape.as_list()
  dynamic = tf.shape(x)
  return [dim if dim is not None else dynamic[i] for i, dim in enumerate(static)]


def rel_shift(scores: tf.Tensor, klen) -> tf.Tensor:
  """Aligns position scores to keys: [N, B, T, R] -> [N, B, T, klen] (any two leading
  dimensions).

  out[..., i, j] = scores[..., i, T - i + j], i.e. the encoding of distance (M + i) - j.
  That is the Transformer-XL reshape trick: in the flattened scores, out[i, j] sits at
  i * R + T - i + j = T + i * (R - 1) + j: drop the first T values, read the rest as
  rows of R - 1 and keep the first klen columns (no gather). `tf.slice` rather than strided
  slicing: its gradient is a pad, about 5x faster on CPU than StridedSliceGrad (which
  was a tenth of a training step). For "uni" (R = K + 1) entries of future keys are
  meaningless and must be masked.
  """
  lead0, lead1, qlen, rlen = shape_list(scores)
  flat = tf.reshape(scores, [lead0, lead1, qlen * rlen])
  shifted = tf.reshape(tf.slice(flat, [0, 0, qlen], [-1, -1, -1]),
                       [lead0, lead1, qlen, rlen - 1])                 # [N, B, T, R - 1]
  return tf.slice(shifted, [0, 0, 0, 0], [-1, -1, -1, klen])


def batch_matmul(a: tf.Tensor, b: tf.Tensor, transpose_b: bool = False) -> tf.Tensor:
  """`tf.matmul` of [A, B, I, J] and [A, B, J, K] (or [A, B, K, J] with transpose_b) with
  the two batch dimensions merged: [A * B, I, J] x [A * B, J, K] -> [A, B, I, K].

  The same products. Under XLA a rank-4 operand may get a layout whose batch dimensions
  are not the most major (the heads of an einsum "bkd,dnh->nbkh" stay minor to the
  positions), which some XLA:CPU dot backends (XNNPACK) reject; the merged batch forces
  the layout every backend takes.
  """
  a_shape, b_shape = shape_list(a), shape_list(b)
  merged = a_shape[0] * a_shape[1]
  out = tf.matmul(tf.reshape(a, [merged] + a_shape[2:]),
                  tf.reshape(b, [merged] + b_shape[2:]), transpose_b=transpose_b)
  return tf.reshape(out, a_shape[:2] + shape_list(out)[1:])


def gather_relative(scores: tf.Tensor, positions: tf.Tensor, qlen, klen) -> tf.Tensor:
  """`rel_shift` for queries at arbitrary positions: [N, B, P, R] -> [N, B, P, klen].

  out[n, b, p, j] = scores[n, b, p, T - positions[b, p] + j] for positions [B, P]. Indices
  past R (future keys of a "uni" query, always masked) are clamped to stay in range.
  """
  shape = shape_list(scores)
  index = (qlen - tf.expand_dims(positions, -1)) + tf.range(klen)          # [B, P, K]
  index = tf.minimum(index, shape[3] - 1)
  index = tf.broadcast_to(index, [shape[0], shape[1], shape[2], klen])
  return tf.gather(scores, index, batch_dims=3)


@tf_keras.utils.register_keras_serializable(package="xlnet_tf")
class RelativeMultiHeadAttention(tf_keras.layers.Layer):
  """Two-stream relative attention with post-LayerNorm (the original `rel_attn` scope).

  Weights: q, k, v, r, o kernels [D, N, H] (no biases) and a LayerNorm, as released. The
  relative biases and segment embeddings are owned by the encoder (they may be shared by
  all layers) and passed in.

  Call arguments:
    content: [B, T, D] content stream h.
    query: [B, P, D] query stream g at the targets, or None.
    memory: [B, M, D] cached inputs of this layer, or None.
    position_encoding: [X, R, D], X dividing B (see `_position_scores`).
    r_w_bias, r_r_bias, r_s_bias: [N, H]; seg_embed: [2, N, H].
    content_mask: bool, broadcastable to [B, T, K] (True = may not attend), or None.
    content_segments: bool [B, T, K] (True = different segments), or None.
    query_positions: int [B, P] position of each target; query_valid: [B, P] 1 for real
      targets, 0 for padding rows (their attention output is zero, as in the original).
    query_mask: bool [B, P, K]; query_segments: bool [B, P, K].
  Returns:
    (content [B, T, D], query [B, P, D] or None).
  """

  def __init__(self, num_heads: int, head_size: int, dropout_rate: float = 0.0,
               attention_dropout_rate: float = 0.0, layer_norm_epsilon: float = 1e-12,
               initializer_range: float = 0.02, **kwargs):
    super().__init__(**kwargs)
    self.num_heads = num_heads
    self.head_size = head_size
    self.dropout_rate = dropout_rate
    self.attention_dropout_rate = attention_dropout_rate
    self.layer_norm_epsilon = layer_norm_epsilon
    self.initializer_range = initializer_range

  def build(self, input_shape):
    d_model = input_shape[-1]
    shape = [d_model, self.num_heads, self.head_size]
    def kernel(name):
      return self.add_weight(f"{name}/kernel", shape=shape,
                             initializer=normal_initializer(self.initializer_range))
    self.q_kernel = kernel("q")
    self.k_kernel = kernel("k")
    self.v_kernel = kernel("v")
    self.r_kernel = kernel("r")
    self.o_kernel = kernel("o")
    self.layer_norm = tf_keras.layers.LayerNormalization(
        epsilon=self.layer_norm_epsilon, dtype=self.dtype_policy, name="LayerNorm")
    build_in_scope(self.layer_norm, input_shape)
    self.attention_dropout = StepDropout(self.attention_dropout_rate)
    self.output_dropout = StepDropout(self.dropout_rate)
    super().build(input_shape)

  def call(self, content, query=None, *, position_encoding, r_w_bias, r_r_bias,
           r_s_bias=None, seg_embed=None, memory=None, content_mask=None,
           content_segments=None, query_positions=None, query_valid=None, query_mask=None,
           query_segments=None, training=None, return_attention=False):
    keys_in = content if memory is None else tf.concat([memory, content], axis=1)  # [B,K,D]
    key = tf.einsum("bkd,dnh->nbkh", keys_in, self.k_kernel)                     # [N,B,K,H]
    value = tf.einsum("bkd,dnh->nbkh", keys_in, self.v_kernel)                   # [N,B,K,H]
    position_key = tf.einsum("xrd,dnh->nxrh", position_encoding, self.r_kernel)  # [N,X,R,H]
    # The relative biases [N, H] as [N, 1, 1, H], added to queries [N, B, I, H].
    as_query = [self.num_heads, 1, 1, self.head_size]
    biases = (tf.reshape(r_w_bias, as_query), tf.reshape(r_r_bias, as_query),
              None if r_s_bias is None else tf.reshape(r_s_bias, as_query), seg_embed)

    q_content = tf.einsum("btd,dnh->nbth", content, self.q_kernel)               # [N,B,T,H]
    attended, content_probs = self.attend(q_content, key, value, position_key, biases,
                                          content_segments, content_mask, training)
    content_out = self._project_and_normalize(attended, content, training)

    query_out = query_probs = None
    if query is not None:
      q_query = tf.einsum("bpd,dnh->nbph", query, self.q_kernel)                 # [N,B,P,H]
      attended, query_probs = self.attend(
          q_query, key, value, position_key, biases, query_segments, query_mask, training,
          positions=query_positions, qlen=shape_list(content)[1])
      valid = tf.cast(query_valid, attended.dtype)                             # [B, P]
      attended *= tf.reshape(valid, [1, *shape_list(valid), 1])               # [1, B, P, 1]
      query_out = self._project_and_normalize(attended, query, training)
    if return_attention:
      batch_major = [None if p is None else tf.transpose(p, [1, 0, 2, 3])
                     for p in (content_probs, query_probs)]              # [B, N, I, K]
      return content_out, query_out, tuple(batch_major)
    return content_out, query_out

  def attend(self, q, key, value, position_key, biases, segments, mask, training,
             positions=None, qlen=None):
    """Attention of queries q [N, B, I, H] over the keys: ([N, B, I, H], probs [N, B, I, K]).

    For the query stream, `positions` [B, I] are the queries' positions in the current
    segment of length `qlen`; otherwise the queries are positions 0..T-1. Public for
    callers that keep projected keys and values themselves (`xlnet_tf.generation`).
    """
    r_w_bias, r_r_bias, r_s_bias, seg_embed = biases
    klen = shape_list(key)[2]
    content_score = batch_matmul(q + r_w_bias, key, transpose_b=True)         # [N,B,I,K]
    position_score = self._position_scores(q + r_r_bias, position_key)          # [N,B,I,R]
    if positions is None:
      position_score = rel_shift(position_score, klen)                          # [N,B,I,K]
    else:
      position_score = gather_relative(position_score, positions, qlen, klen)
    score = content_score + position_score
    if segments is not None:
      # The segment term is segment_score[same] or [different] per key. Softmax ignores
      # what a row adds to every key, so only the difference is added, at the keys of
      # the other segment: one reduction over the keys in the backward pass instead of
      # two (each as large as the scores), and no select of two broadcasts.
      same, different = tf.unstack(                                            # [N,B,I]
          tf.einsum("nbih,snh->nbis", q + r_s_bias, seg_embed), axis=-1)
      difference = tf.expand_dims(different - same, -1)                           # [N,B,I,1]
      score += tf.cast(segments, score.dtype) * difference              # [B,I,K] broadcast
    score *= 1.0 / (self.head_size ** 0.5)
    if mask is not None:
      score += tf.cast(mask, score.dtype) * masks.large_negative(score.dtype)
    probs = tf.nn.softmax(score, axis=-1)
    dropped = self.attention_dropout(probs, training=training)
    return batch_matmul(dropped, value), probs                                 # [N,B,I,H]

  @staticmethod
  def _position_scores(q, position_key):
    """[N, B, I, H] x [N, X, R, H] -> [N, B, I, R].

    X divides B: the batch is X consecutive groups, group x using encodings x (X = 1 shared,
    X = 2 the bi_data halves, X = B one per example).
    """
    shape, key_shape = shape_list(q), shape_list(position_key)
    grouped = tf.reshape(q, [shape[0], key_shape[1], -1, shape[3]])    # [N, X, B/X * I, H]
    scores = batch_matmul(grouped, position_key, transpose_b=True)     # [N, X, B/X * I, R]
    return tf.reshape(scores, [shape[0], shape[1], shape[2], key_shape[2]])

  def _project_and_normalize(self, attended, residual, training):
    out = tf.einsum("nbih,dnh->bid", attended, self.o_kernel)                   # [B,I,D]
    out = self.output_dropout(out, training=training)
    return self.layer_norm(out + residual)

  def get_config(self):
    config = super().get_config()
    config.update(num_heads=self.num_heads, head_size=self.head_size,
                  dropout_rate=self.dropout_rate,
                  attention_dropout_rate=self.attention_dropout_rate,
                  layer_norm_epsilon=self.layer_norm_epsilon,
                  initializer_range=self.initializer_range)
    return config
