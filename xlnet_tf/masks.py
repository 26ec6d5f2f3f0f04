"""XLNet's attention masks as pure functions.

Convention (the original code's): a mask entry True (or 1) means the query may NOT attend
to the key. Keys are always `[memory; current segment]`, so a mask over keys is
[..., qlen, mlen + qlen]; memory columns are masked only where a `memory_mask` says a
memory position holds padding (reading a document segment by segment,
`networks.document_reader`; the released code never masks memory).

Shapes: B batch, T = qlen (current segment), M = mlen (memory), K = M + T keys.

Example (the paper's factorization order 3 -> 2 -> 4 -> 1, positions 1..4 as 0..3):
  >>> ranks = ranks_from_order([2, 1, 3, 0])           # [3, 1, 0, 2]
  >>> perm = perm_mask_from_ranks(ranks, tf.ones([4], tf.bool))
  >>> query = query_attention_mask(4, 0, perm_mask=perm[None])   # query stream
  >>> content = content_attention_mask(query, 4, 0)              # content stream
"""

from typing import Optional

import numpy as np
import tensorflow as tf


def large_negative(dtype) -> float:
  """The additive bias of a masked attention score in `dtype`.

  float32/float64 use -1e30 like the released code (exp underflows to exactly 0). Half
  precision must stay finite after a score is added: float16 (max 65504) uses -3e4 and
  bfloat16 uses -1e9 (bfloat16 has float32's range but 8 bits of mantissa).
  """
  dtype = tf.as_dtype(dtype)
  if dtype == tf.float16:
    return -3.0e4
  if dtype == tf.bfloat16:
    return -1.0e9
  return -1.0e30


def causal_mask(qlen, mlen, same_length: bool = False) -> tf.Tensor:
  """Blocks the future for attn_type "uni": bool [T, K].

  Query i (absolute position mlen + i) may see keys 0..mlen+i. With `same_length`, keys
  before i are blocked too, so every query sees exactly mlen + 1 keys.
  """
  query = tf.range(qlen)[:, None]
  key = tf.range(mlen + qlen)[None, :]
  blocked = key > query + mlen
  if same_length:
    blocked = blocked | (key < query)
  return blocked


def query_attention_mask(qlen, mlen, input_mask: Optional[tf.Tensor] = None,
                         perm_mask: Optional[tf.Tensor] = None, causal: bool = False,
                         same_length: bool = False,
                         memory_mask: Optional[tf.Tensor] = None) -> Optional[tf.Tensor]:
  """The query-stream mask (the original `attn_mask`), or None.

  Bool, broadcastable to [B, T, K]: [B, 1, K] with padding only, [1, T, K] with the causal
  mask only, [B, T, K] otherwise (nothing is materialised that is not needed).

  Args:
    qlen, mlen: lengths of the current segment and of the memory.
    input_mask: [B, T], nonzero at padding (padding keys are blocked for every query).
    perm_mask: [B, T, T], nonzero where query i may not see token j.
    causal: attn_type "uni" (adds `causal_mask`).
    same_length: passed to `causal_mask`.
    memory_mask: [B, M], nonzero where a memory position is padding (blocked for every
      query); None: the memory is all visible, as released.
  Returns:
    None when nothing is masked (bidirectional, no padding, no permutation).
  """
  data = None
  if input_mask is not None:
    data = _nonzero(input_mask)[:, None, :]                         # [B, 1, T]
  if perm_mask is not None:
    perm = _nonzero(perm_mask)                                      # [B, T, T]
    data = perm if data is None else (data | perm)
  if data is not None:
    data = tf.pad(data, [[0, 0], [0, 0], [mlen, 0]])               # memory visible ...
  if memory_mask is not None:                                      # ... but its padding
    memory = tf.pad(_nonzero(memory_mask), [[0, 0], [0, qlen]])[:, None, :]   # [B, 1, K]
    data = memory if data is None else (data | memory)
  if not causal:
    return data
  blocked = causal_mask(qlen, mlen, same_length)[None]              # [1, T, K]
  return blocked if data is None else (blocked | data)


def _nonzero(mask) -> tf.Tensor:
  mask = tf.convert_to_tensor(mask)
  return mask if mask.dtype == tf.bool else mask > 0


def content_attention_mask(query_mask: Optional[tf.Tensor], qlen, mlen) -> Optional[tf.Tensor]:
  """The content-stream mask: the query-stream mask, except a token always sees itself."""
  if query_mask is None:
    return None
  itself = tf.range(mlen + qlen)[None, :] == (tf.range(qlen)[:, None] + mlen)   # [T, K]
  return query_mask & ~itself[None]


def segment_mismatch(segment_ids: tf.Tensor, mlen) -> tf.Tensor:
  """bool [B, T, K]: query i and key j are in different segments.

  Memory keys count as segment id 0, as in the released code.
  """
  segment_ids = tf.convert_to_tensor(segment_ids)
  keys = tf.pad(segment_ids, [[0, 0], [mlen, 0]])                  # [B, K]
  return segment_ids[:, :, None] != keys[:, None, :]


def ranks_from_order(order) -> np.ndarray:
  """Factorization order (positions, first predicted first) -> rank of each position."""
  order = np.asarray(order)
  if sorted(order.tolist()) != list(range(len(order))):
    raise ValueError(f"a factorization order must be a permutation of 0..{len(order) - 1}, "
                     f"got {order.tolist()}")
  ranks = np.empty_like(order)
  ranks[order] = np.arange(len(order))
  return ranks


def perm_mask_from_ranks(ranks, is_target) -> tf.Tensor:
  """The released permutation mask from per-position ranks: bool [..., T, T].

  Args:
    ranks: int [..., T]; the position's place in the factorization order, or -1 for pure
      context (a token that is neither predicted nor functional: visible to every query).
    is_target: bool [..., T]; predicted positions. Ranked non-targets (e.g. <sep>, <cls>)
      take part in the order but are not predicted.
  Returns:
    mask[i, j] = True iff j is ranked and i's own rank does not come before j's, where a
    target's own rank is its rank and a non-target's is rank + 1 (it may see what shares
    its rank but is not a target). So a target never sees itself, context tokens see no
    ranked token, and every query sees all context tokens.
  """
  ranks = tf.convert_to_tensor(ranks)
  is_target = tf.convert_to_tensor(is_target, tf.bool)
  own_rank = tf.where(is_target, ranks, ranks + 1)
  ranked = ranks >= 0
  return ranked[..., None, :] & (own_rank[..., :, None] <= ranks[..., None, :])


def pretraining_perm_mask(perm_rank, is_target, is_functional, reuse_len) -> tf.Tensor:
  """The permutation mask of a pretraining row from its compact record: bool [..., T, T].

  The row's two halves (reuse part [0, reuse_len) and new part [reuse_len, T)) have their
  own factorization orders (`perm_rank`, ranks within the half). Within a half this is
  `perm_mask_from_ranks`, where only targets and functional tokens (<sep>, <cls>) are
  ranked and every other token is pure context. Across halves, the reuse half sees
  nothing of the new half and the new half sees all of the reuse half (its order comes
  first).

  Args:
    perm_rank: int [..., T]; is_target, is_functional: bool [..., T].
    reuse_len: length of the reuse half (python int or scalar tensor).
  """
  perm_rank = tf.convert_to_tensor(perm_rank)
  is_target = tf.convert_to_tensor(is_target, tf.bool)
  ranked = is_target | tf.convert_to_tensor(is_functional, tf.bool)
  within = perm_mask_from_ranks(tf.where(ranked, perm_rank, -tf.ones_like(perm_rank)),
                                is_target)
  is_new = tf.range(tf.shape(perm_rank)[-1]) >= reuse_len            # [T]
  same_half = tf.equal(is_new[:, None], is_new[None, :])               # [T, T]
  reuse_row_new_column = tf.logical_and(~is_new[:, None], is_new[None, :])
  return (within & same_half) | reuse_row_new_column
