"""K-NRM's kernel pooling (Xiong et al., "End-to-End Neural Ad-hoc Ranking with Kernel
Pooling", SIGIR 2017): soft term-frequency features of a query-document pair.

With q_i the query's and d_j the document's token embeddings, M_ij = cos(q_i, d_j) is the
translation matrix. Each of K RBF kernels counts the document tokens near a similarity
level, K_k(M_i) = sum_j exp(-(M_ij - mu_k)^2 / (2 sigma_k^2)), and the feature of kernel k
is phi_k = sum_i log(max(K_k(M_i), 1e-10)) * 0.01 over the query's tokens. Padding is masked
on both sides: a padded document position adds nothing to a kernel's count, a padded query
position adds nothing to the sum. The floor 1e-10 and the scale 0.01 are those of the
authors' release (AdeDZY/K-NRM, `model_knrm.py`): the scale only rescales the ranking
layer's weights, and keeping it keeps their learning rate meaningful here.

The kernels of the paper (`knrm_kernels(11)`): mu = 1.0 with sigma = 1e-3, the exact-match
kernel, and mu = 0.9, 0.7, ..., -0.9 with sigma = 0.1 (the bin width's half).
"""

from typing import Sequence, Tuple

import tensorflow as tf
import tf_keras

LOG_FLOOR = 1e-10        # a kernel count below this is taken as this before the log
FEATURE_SCALE = 0.01     # the release's scale of the log counts


def knrm_kernels(n_kernels: int = 11, sigma: float = 0.1,
                 exact_sigma: float = 1e-3) -> Tuple[Tuple[float, ...], Tuple[float, ...]]:
  """(mus, sigmas) of K-NRM's kernels: the exact-match kernel (mu 1.0, `exact_sigma`),
  then n_kernels - 1 kernels at the centres of equal bins of [-1, 1] (width
  2 / (n_kernels - 1)), from the top down, each with `sigma`. 11 kernels: mu = 1.0, 0.9,
  0.7, ..., -0.9."""
  if n_kernels < 2:
    raise ValueError(f"n_kernels must be >= 2 (the exact-match kernel and at least one "
                     f"soft one), got {n_kernels}")
  width = 2.0 / (n_kernels - 1)
  soft = [round(1.0 - width / 2 - k * width, 10) for k in range(n_kernels - 1)]
  return (1.0, *soft), (exact_sigma,) + (sigma,) * (n_kernels - 1)


@tf_keras.utils.register_keras_serializable(package="xlnet_tf")
class KernelPooling(tf_keras.layers.Layer):
  """Query and document token embeddings -> K-NRM's soft-TF features, float32 [..., K].

  Call with (query [..., Q, D], query_mask [..., Q], document [..., N, D],
  document_mask [..., N]); the masks are 1.0 at a token and 0.0 at padding, the leading
  dimensions broadcast (a query [B, 1, Q, D] against its documents [B, C, N, D]). The
  embeddings need not be normalised: the layer takes cosines. No weights.
  """

  def __init__(self, mus: Sequence[float], sigmas: Sequence[float], **kwargs):
    super().__init__(**kwargs)
    if len(mus) != len(sigmas) or not mus:
      raise ValueError(f"KernelPooling: one sigma per mu, got {len(mus)} mus and "
                       f"{len(sigmas)} sigmas")
    if min(sigmas) <= 0:
      raise ValueError(f"KernelPooling: every sigma must be > 0, got {list(sigmas)}")
    self.mus = tuple(float(m) for m in mus)
    self.sigmas = tuple(float(s) for s in sigmas)

  def similarity(self, query, document):
    """Cosine similarity [..., Q, N] of float32 token embeddings."""
    query = tf.math.l2_normalize(tf.cast(query, tf.float32), axis=-1)
    document = tf.math.l2_normalize(tf.cast(document, tf.float32), axis=-1)
    return tf.linalg.matmul(query, document, transpose_b=True)

  def call(self, query, query_mask, document, document_mask):
    similarity = self.similarity(query, document)[..., tf.newaxis]       # [..., Q, N, 1]
    mus = tf.constant(self.mus, tf.float32)                               # [K]
    sigmas = tf.constant(self.sigmas, tf.float32)
    kernels = tf.exp(-tf.square(similarity - mus) / (2.0 * tf.square(sigmas)))
    document_mask = tf.cast(document_mask, tf.float32)[..., tf.newaxis, :, tf.newaxis]
    counts = tf.reduce_sum(kernels * document_mask, axis=-2)              # [..., Q, K]
    soft_tf = tf.math.log(tf.maximum(counts, LOG_FLOOR)) * FEATURE_SCALE
    query_mask = tf.cast(query_mask, tf.float32)[..., tf.newaxis]          # [..., Q, 1]
    return tf.reduce_sum(soft_tf * query_mask, axis=-2)                   # [..., K]

  def get_config(self):
    return {**super().get_config(), "mus": list(self.mus), "sigmas": list(self.sigmas)}
