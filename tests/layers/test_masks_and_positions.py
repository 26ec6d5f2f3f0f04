"""Masks, rel_shift and positional encodings against their definitions."""

import numpy as np
import pytest
import tensorflow as tf

from xlnet_tf import masks
from xlnet_tf.layers.positional_encoding import RelativePositionalEncoding
from xlnet_tf.layers.relative_attention import gather_relative
from xlnet_tf.layers.relative_attention import rel_shift
from xlnet_tf.layers.relative_attention import batch_matmul


def test_causal_mask_as_drawn_in_the_hf_docstring():
  """qlen 5, mlen 4; 1 = masked (the picture in HF's XLNetModel.create_mask)."""
  plain = [[0, 0, 0, 0, 0, 1, 1, 1, 1],
           [0, 0, 0, 0, 0, 0, 1, 1, 1],
           [0, 0, 0, 0, 0, 0, 0, 1, 1],
           [0, 0, 0, 0, 0, 0, 0, 0, 1],
           [0, 0, 0, 0, 0, 0, 0, 0, 0]]
  same_length = [[0, 0, 0, 0, 0, 1, 1, 1, 1],
                 [1, 0, 0, 0, 0, 0, 1, 1, 1],
                 [1, 1, 0, 0, 0, 0, 0, 1, 1],
                 [1, 1, 1, 0, 0, 0, 0, 0, 1],
                 [1, 1, 1, 1, 0, 0, 0, 0, 0]]
  np.testing.assert_array_equal(masks.causal_mask(5, 4).numpy(), np.array(plain, bool))
  np.testing.assert_array_equal(masks.causal_mask(5, 4, same_length=True).numpy(),
                                np.array(same_length, bool))
  # Every query sees the same number of keys with same_length.
  assert set((~masks.causal_mask(5, 4, True).numpy()).sum(1)) == {5}


def test_paper_factorization_order_3_2_4_1():
  """Figure of the paper (order 3 -> 2 -> 4 -> 1 over x1..x4): 1 = may attend."""
  content_can = np.array([[1, 1, 1, 1], [0, 1, 1, 0], [0, 0, 1, 0], [0, 1, 1, 1]], bool)
  query_can = np.array([[0, 1, 1, 1], [0, 0, 1, 0], [0, 0, 0, 0], [0, 1, 1, 0]], bool)
  ranks = masks.ranks_from_order([2, 1, 3, 0])
  np.testing.assert_array_equal(ranks, [3, 1, 0, 2])
  perm = masks.perm_mask_from_ranks(ranks, np.ones(4, bool))
  query = masks.query_attention_mask(4, 0, perm_mask=perm[None])
  content = masks.content_attention_mask(query, 4, 0)
  np.testing.assert_array_equal(~query.numpy()[0], query_can)
  np.testing.assert_array_equal(~content.numpy()[0], content_can)


def test_perm_mask_with_context_and_functional_tokens():
  """Positions: 0 context, 1 target rank 0, 2 context, 3 target rank 1, 4 <cls> rank 2.
  Context sees no ranked token; a target sees earlier ranks but not itself; a functional
  token sees earlier ranks and itself; every query sees the context tokens."""
  ranks = np.array([-1, 0, -1, 1, 2])
  is_target = np.array([False, True, False, True, False])
  expected = np.array([[0, 1, 0, 1, 1],
                       [0, 1, 0, 1, 1],
                       [0, 1, 0, 1, 1],
                       [0, 0, 0, 1, 1],
                       [0, 0, 0, 0, 0]], bool)
  np.testing.assert_array_equal(masks.perm_mask_from_ranks(ranks, is_target).numpy(),
                                expected)
  batched = masks.perm_mask_from_ranks(np.stack([ranks, ranks]), np.stack([is_target] * 2))
  assert batched.shape == (2, 5, 5)


def test_query_mask_padding_memory_and_none():
  assert masks.query_attention_mask(3, 2) is None
  assert masks.content_attention_mask(None, 3, 2) is None
  pad = np.array([[1, 0, 0]], np.float32)
  query = masks.query_attention_mask(3, 2, input_mask=pad).numpy()
  np.testing.assert_array_equal(np.broadcast_to(query, [1, 3, 5])[0],
                                [[0, 0, 1, 0, 0]] * 3)              # memory always visible
  content = masks.content_attention_mask(masks.query_attention_mask(3, 2, input_mask=pad),
                                         3, 2).numpy()
  np.testing.assert_array_equal(content[0], [[0, 0, 0, 0, 0], [0, 0, 1, 0, 0],
                                             [0, 0, 1, 0, 0]])       # the pad sees itself


def test_segment_mismatch_counts_memory_as_segment_zero():
  seg = np.array([[0, 1, 2]])
  np.testing.assert_array_equal(
      masks.segment_mismatch(seg, 2).numpy()[0],
      [[0, 0, 0, 1, 1], [1, 1, 1, 0, 1], [1, 1, 1, 1, 0]])


@pytest.mark.parametrize("dtype", [tf.float16, tf.bfloat16, tf.float32])
def test_masked_softmax_is_finite_in_every_precision(dtype):
  scores = tf.cast(tf.random.uniform([4, 6], -60.0, 60.0), dtype)
  mask = np.array([[0, 1, 0, 1, 1, 0]] * 3 + [[1] * 6], bool)   # last row fully masked
  biased = scores + tf.cast(mask, dtype) * masks.large_negative(dtype)
  probs = tf.cast(tf.nn.softmax(biased, axis=-1), tf.float32).numpy()
  assert np.all(np.isfinite(probs))
  assert np.all(probs[:3][mask[:3]] == 0.0)
  np.testing.assert_allclose(probs.sum(-1), 1.0, rtol=1e-2)
  assert masks.large_negative(tf.float16) > -65504 / 2


@pytest.mark.parametrize("mlen", [0, 3])
def test_rel_shift_definition(mlen):
  """out[i, j] = x[i, T - i + j] for "bi" (R = K + T) and, where visible, "uni" (R = K+1)."""
  qlen, rng = 4, np.random.default_rng(0)
  klen = mlen + qlen
  for rlen, uni in ((klen + qlen, False), (klen + 1, True)):
    x = rng.normal(size=[2, 3, qlen, rlen]).astype(np.float32)
    out = rel_shift(tf.constant(x), klen).numpy()
    assert out.shape == (2, 3, qlen, klen)
    for i in range(qlen):
      for j in range(klen):
        if uni and j > mlen + i:
          continue   # future keys: masked, value irrelevant
        np.testing.assert_array_equal(out[:, :, i, j], x[:, :, i, qlen - i + j])


@pytest.mark.parametrize("uni", [False, True])
def test_gather_relative_equals_rel_shift_at_the_positions(uni):
  qlen, mlen, rng = 5, 2, np.random.default_rng(1)
  klen = mlen + qlen
  rlen = klen + 1 if uni else klen + qlen
  full = rng.normal(size=[3, 2, qlen, rlen]).astype(np.float32)        # [N, B, T, R]
  positions = np.array([[4, 0, 2], [1, 1, 3]], np.int32)                # [B, P]
  rows = np.stack([full[:, b][:, positions[b]] for b in range(2)], axis=1)  # [N, B, P, R]
  got = gather_relative(tf.constant(rows), tf.constant(positions), qlen, klen).numpy()
  shifted = rel_shift(tf.constant(full), klen).numpy()
  for b in range(2):
    for p, pos in enumerate(positions[b]):
      visible = slice(0, mlen + pos + 1) if uni else slice(None)
      np.testing.assert_array_equal(got[:, b, p, visible], shifted[:, b, pos, visible])


@pytest.mark.parametrize("transpose_b", [False, True])
def test_batch_matmul_is_matmul(transpose_b):
  rng = np.random.default_rng(2)
  a = tf.constant(rng.normal(size=[3, 2, 5, 4]).astype(np.float32))
  b = tf.constant(rng.normal(size=[3, 2, 6, 4] if transpose_b else [3, 2, 4, 6])
                  .astype(np.float32))
  got = batch_matmul(a, b, transpose_b=transpose_b)
  assert got.shape == (3, 2, 5, 6)
  np.testing.assert_allclose(got, tf.matmul(a, b, transpose_b=transpose_b), rtol=1e-6,
                             atol=1e-6)


def _numpy_encoding(positions, d_model):
  inv_freq = 1.0 / 10000 ** (np.arange(0, d_model, 2) / d_model)
  angles = np.outer(positions, inv_freq)
  return np.concatenate([np.sin(angles), np.cos(angles)], axis=-1)


@pytest.mark.parametrize("attn_type, bi_data, clamp_len", [
    ("bi", False, -1), ("uni", False, -1), ("bi", True, -1), ("bi", True, 2), ("uni", True, 3)])
def test_positional_encoding_formula(attn_type, bi_data, clamp_len):
  qlen, klen, d = 3, 5, 8
  layer = RelativePositionalEncoding(d, attn_type=attn_type, bi_data=bi_data,
                                     clamp_len=clamp_len)
  got = layer(qlen, klen).numpy()
  forward = np.arange(klen, -qlen if attn_type == "bi" else -1, -1, dtype=np.float64)
  directions = [forward, -forward] if bi_data else [forward]
  if clamp_len > 0:
    directions = [np.clip(p, -clamp_len, clamp_len) for p in directions]
  expected = np.stack([_numpy_encoding(p, d) for p in directions])
  assert got.shape == expected.shape
  np.testing.assert_allclose(got, expected, atol=2e-6)


def test_position_scores_per_group_of_the_batch():
  """Encodings [X, R, D] serve X consecutive groups of the batch: X=1 shared, X=2 bi_data
  halves, X=B one per example (the training path, one dropout mask per example)."""
  from xlnet_tf.layers.relative_attention import RelativeMultiHeadAttention
  rng = np.random.default_rng(2)
  q = rng.normal(size=[2, 4, 3, 5]).astype(np.float32)             # [N, B, I, H]
  keys = rng.normal(size=[2, 2, 7, 5]).astype(np.float32)          # [N, X=2, R, H]
  scores = RelativeMultiHeadAttention._position_scores
  expected = np.stack([np.einsum("nih,nrh->nir", q[:, b], keys[:, b // 2])
                       for b in range(4)], axis=1)                  # [N, B, I, R]
  np.testing.assert_allclose(scores(tf.constant(q), tf.constant(keys)).numpy(), expected,
                             rtol=1e-5, atol=1e-5)
  per_example = np.repeat(keys, 2, axis=1)                          # [N, X=B, R, H]
  np.testing.assert_allclose(scores(tf.constant(q), tf.constant(per_example)).numpy(),
                             expected, rtol=1e-5, atol=1e-5)
  shared = scores(tf.constant(q), tf.constant(keys[:, :1])).numpy()
  np.testing.assert_allclose(shared[:, 1], np.einsum("nih,nrh->nir", q[:, 1], keys[:, 0]),
                             rtol=1e-5, atol=1e-5)
