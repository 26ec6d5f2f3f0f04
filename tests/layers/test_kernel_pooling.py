"""K-NRM's kernel pooling against a numpy re-derivation of the paper's equations (Xiong et
al. 2017, eq. 3-5, with the authors' release's floor 1e-10 and scale 0.01), written here
loop by loop, independent of the layer's vectorised code."""

import math

import numpy as np
import pytest
import tensorflow as tf

from xlnet_tf.layers.kernel_pooling import KernelPooling
from xlnet_tf.layers.kernel_pooling import knrm_kernels


def soft_tf_by_hand(query, query_mask, document, document_mask, mus, sigmas):
  """phi_k = sum over real query tokens i of 0.01 * log(max(sum over real document tokens
  j of exp(-(cos(q_i, d_j) - mu_k)^2 / (2 sigma_k^2)), 1e-10))."""
  features = []
  for mu, sigma in zip(mus, sigmas):
    total = 0.0
    for i, q in enumerate(query):
      if not query_mask[i]:
        continue
      count = 0.0
      for j, d in enumerate(document):
        if not document_mask[j]:
          continue
        cosine = float(np.dot(q, d) / (np.linalg.norm(q) * np.linalg.norm(d)))
        count += math.exp(-(cosine - mu) ** 2 / (2 * sigma ** 2))
      total += 0.01 * math.log(max(count, 1e-10))
    features.append(total)
  return np.array(features)


def test_the_papers_kernels():
  mus, sigmas = knrm_kernels(11)
  assert mus == (1.0, 0.9, 0.7, 0.5, 0.3, 0.1, -0.1, -0.3, -0.5, -0.7, -0.9)
  assert sigmas == (1e-3,) + (0.1,) * 10


def test_kernel_pooling_equals_the_numpy_derivation():
  rng = np.random.default_rng(0)
  batch, candidates, q_len, n_len, dim = 2, 3, 4, 7, 5
  query = rng.normal(size=(batch, q_len, dim)).astype(np.float32)
  document = rng.normal(size=(batch, candidates, n_len, dim)).astype(np.float32)
  document[0, 1, 2] = query[0, 0] * 3.0          # an exact match (cosine 1), scaled
  query_mask = np.ones((batch, q_len), np.float32)
  query_mask[1, 3:] = 0.0                        # a padded query position
  document_mask = np.ones((batch, candidates, n_len), np.float32)
  document_mask[0, 2, 4:] = 0.0                  # padded document positions
  document_mask[1, 0, :] = 0.0                   # an empty document: every count floored
  mus, sigmas = knrm_kernels(11)
  layer = KernelPooling(mus, sigmas)
  got = layer(tf.constant(query[:, None]), tf.constant(query_mask[:, None]),
              tf.constant(document), tf.constant(document_mask)).numpy()
  assert got.shape == (batch, candidates, 11)
  for b in range(batch):
    for c in range(candidates):
      expected = soft_tf_by_hand(query[b], query_mask[b], document[b, c],
                                 document_mask[b, c], mus, sigmas)
      np.testing.assert_allclose(got[b, c], expected, rtol=2e-4, atol=2e-6)
  # the exact-match kernel of the document holding the match: query token 0 counts 1
  # there instead of the floor, 0.01 * (log 1 - log 1e-10) = 0.23 more than elsewhere
  assert got[0, 1, 0] - got[0, 0, 0] == pytest.approx(-0.01 * math.log(1e-10), abs=0.01)
  # an empty document: every real query token contributes 0.01 * log(1e-10)
  np.testing.assert_allclose(got[1, 0], np.full(11, 3 * 0.01 * math.log(1e-10)), rtol=1e-6)


def test_padding_changes_nothing():
  rng = np.random.default_rng(1)
  query = rng.normal(size=(1, 3, 4)).astype(np.float32)
  document = rng.normal(size=(1, 1, 5, 4)).astype(np.float32)
  layer = KernelPooling(*knrm_kernels(11))
  plain = layer(query[:, None], np.ones((1, 1, 3), np.float32), document,
                np.ones((1, 1, 5), np.float32)).numpy()
  padded_query = np.concatenate([query, rng.normal(size=(1, 2, 4)).astype(np.float32)], 1)
  padded_document = np.concatenate(
      [document, rng.normal(size=(1, 1, 3, 4)).astype(np.float32)], 2)
  padded = layer(padded_query[:, None], np.array([[[1, 1, 1, 0, 0]]], np.float32),
                 padded_document, np.array([[[1, 1, 1, 1, 1, 0, 0, 0]]], np.float32)).numpy()
  np.testing.assert_allclose(padded, plain, rtol=1e-6, atol=1e-7)


def test_bad_kernels_are_refused():
  with pytest.raises(ValueError, match="one sigma per mu"):
    KernelPooling([1.0, 0.5], [0.1])
  with pytest.raises(ValueError, match="every sigma must be > 0"):
    KernelPooling([1.0], [0.0])
  with pytest.raises(ValueError, match="n_kernels must be >= 2"):
    knrm_kernels(1)


def test_serializable():
  layer = KernelPooling(*knrm_kernels(5))
  again = KernelPooling.from_config(layer.get_config())
  assert again.mus == layer.mus and again.sigmas == layer.sigmas
