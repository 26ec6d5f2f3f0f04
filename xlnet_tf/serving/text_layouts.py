"""The input layouts of the serving graphs: token ids -> model inputs, as TF ops.

The graph twins of the Python layouts (`data.classifier_features.classifier_layout`,
`data.document_features.document_layout`), on the ids of `text_encoder.XLNetTextEncoder`
(`classifier_inputs` and `document_inputs` take raw strings and the encoder), built from
`tensorflow` ops only so that a SavedModel holding them needs none of this package:

  >>> features = classifier_inputs(encoder, text_a, text_b, max_seq_length=128)
  >>> features["input_ids"].shape           # [B, 128], padded on the left
  >>> classifier_inputs(encoder, text_a, text_b, 128, bucketed=True)["input_ids"].shape
  TensorShape([B, None])                    # at run time [B, the batch's bucket], e.g. 24

Classification layout (`classifier_inputs`, `classifier_layout`), as released: truncate the
longer of A and B by one token from its end (B on ties) until len(A) + len(B) <= T - 3
(A alone: T - 2); then `layouts`' classification layout (`A <sep> B <sep> <cls>` or
`A <sep> <cls>`, its segment ids, padded on the LEFT; its constants become graph constants).

Document layout (`document_inputs`, `document_layout`; the inputs of
`networks.document_reader`): every piece of A, then `<sep> <cls>`, or with a non-empty B
`<sep> B <sep> <cls>` with B cut at its end to S - 3 pieces (the tail fits one segment);
N pieces take K = ceil(N / S) segments of S, padded on the LEFT, and a batch's shorter
documents get whole padding segments in front up to its largest K: [B, K, S]. A text that
fits one segment is the classification layout at length S; bucketed, a batch that fits one
segment takes its bucket as S.

Padding to a bucket (`bucketed=True`; `bucket_lengths`, `padded_length`). Truncation is
always at max_seq_length T, as above. The rows of a batch are then padded (still on the
left) only to the batch's bucket: the smallest length of the ladder 16, 24, 32, 48, 64,
96, 128, 192, ... (powers of two from 16 and the midpoints 1.5 x 2^k: every entry a
multiple of 8, at most 1.5x the longest row once past 16) that holds the batch's longest
row, the ladder cut below T and T itself added as its top (T = 128: 16, 24, 32, 48, 64, 96,
128). The result is the fixed layout with its first T - L padding columns removed: with
left padding and relative positions, every real token keeps its distance to every other
one, padding is masked as a key, and <cls> stays last, so a model whose outputs read real
positions only (the "last", "mean" and "attn" summaries, per-token logits) gives the same
outputs for any amount of padding. The ladder keeps the shapes a server sees to a
handful per T (a graph compiled per shape, e.g. by XLA, compiles each once).
"""

from typing import Dict, Optional, Tuple

import tensorflow as tf

from xlnet_tf.data import layouts
from xlnet_tf.data import tokenization
from xlnet_tf.serving.text_encoder import XLNetTextEncoder

# The graph code has no Python control flow on tensors: autograph would only cost tracing
# time (seconds), so the functions below are marked `do_not_convert`.

# The bucket ladder: powers of two from SMALLEST_BUCKET and their 1.5x midpoints, cut
# below max_seq_length, which is the top bucket (see the module docstring).
SMALLEST_BUCKET = 16


def bucket_lengths(max_seq_length: int) -> Tuple[int, ...]:
  """The padded lengths a bucketed batch can have, ascending; the last is max_seq_length.

  >>> bucket_lengths(128)
  (16, 24, 32, 48, 64, 96, 128)
  >>> bucket_lengths(100), bucket_lengths(12)
  ((16, 24, 32, 48, 64, 96, 100), (12,))
  """
  top = int(max_seq_length)
  if top < 1:
    raise ValueError(f"max_seq_length must be positive, got {max_seq_length}")
  ladder, power = [], SMALLEST_BUCKET
  while power < top:
    ladder.extend(length for length in (power, power * 3 // 2) if length < top)
    power *= 2
  return tuple(ladder) + (top,)


@tf.autograph.experimental.do_not_convert
def padded_length(row_lengths, max_seq_length: int, min_length: int = 0) -> tf.Tensor:
  """The length a batch is padded to: the smallest of `bucket_lengths(max_seq_length)` that
  is >= every row's length and >= `min_length` (max_seq_length if none is).

  Args:
    row_lengths: int [B], each row's length with its special tokens, after truncation
      (<= max_seq_length). An empty batch gets the smallest bucket.
    max_seq_length: T, a Python int: the top bucket.
    min_length: a Python int floor (e.g. a top-k head's k).
  Returns:
    int64 scalar.
  """
  ladder = tf.constant(bucket_lengths(max_seq_length), tf.int64)          # [L]
  row_lengths = tf.cast(tf.reshape(row_lengths, [-1]), tf.int64)          # [B]
  longest = tf.reduce_max(tf.concat([row_lengths, [int(min_length)]], axis=0))
  index = tf.searchsorted(ladder, longest[tf.newaxis], side="left", out_type=tf.int64)[0]
  return tf.gather(ladder, tf.minimum(index, tf.size(ladder, out_type=tf.int64) - 1))


def _checked_ids(ids_a: tf.RaggedTensor, ids_b: Optional[tf.RaggedTensor], length: int,
                 name: str):
  """(length as an int, ids_a, ids_b) with the ids int32 ragged (int64 row splits);
  raises ValueError naming `name` when `length` leaves no room for the special tokens
  (`A <sep> <cls>`, or `A <sep> B <sep> <cls>` with ids_b)."""
  reserved = 2 if ids_b is None else 3
  if int(length) < reserved:
    raise ValueError(f"{name} must be at least {reserved} "
                     f"({'A <sep> B <sep> <cls>' if ids_b is not None else 'A <sep> <cls>'}),"
                     f" got {length}")
  def cast(ids):
    return None if ids is None else tf.cast(ids, tf.int32).with_row_splits_dtype(tf.int64)
  return int(length), cast(ids_a), cast(ids_b)


@tf.autograph.experimental.do_not_convert
def classifier_inputs(encoder: XLNetTextEncoder, text_a, text_b=None,
                      max_seq_length: int = 128, bucketed: bool = False
                      ) -> Dict[str, tf.Tensor]:
  """Classification inputs of raw text pairs (or single texts), in the released layout.

  Args:
    encoder: the text encoder (`XLNetTextEncoder.tokenize`).
    text_a: string [B], the first texts.
    text_b: string [B], the second texts, or None for single-text tasks.
    max_seq_length: T, a Python int (at least 3 with `text_b`, 2 without).
    bucketed: pad to the batch's bucket L <= T instead of T (`padded_length`).

  Returns:
    dict with `input_ids` int32 [B, T], `segment_ids` int32 [B, T] (0 A, 1 B, 2 <cls>,
    4 padding) and `input_mask` float32 [B, T] (1.0 at padding): see the module docstring.
    Bucketed: [B, L] each, static shape [B, None].
  """
  return classifier_layout(encoder.tokenize(text_a),
                           None if text_b is None else encoder.tokenize(text_b),
                           max_seq_length, bucketed=bucketed)


@tf.autograph.experimental.do_not_convert
def classifier_layout(ids_a: tf.RaggedTensor, ids_b: Optional[tf.RaggedTensor],
                      max_seq_length: int, bucketed: bool = False) -> Dict[str, tf.Tensor]:
  """The classification layout of token ids: ragged int [B, (na)] and [B, (nb)] or None
  -> the dict of `classifier_inputs` (truncation at max_seq_length, special ids, left
  padding to max_seq_length or, `bucketed`, to the batch's bucket)."""
  max_len, ids_a, ids_b = _checked_ids(ids_a, ids_b, max_seq_length, "max_seq_length")
  len_a = ids_a.row_lengths()
  if ids_b is None:
    len_b = tf.zeros_like(len_a)
  else:
    len_b = ids_b.row_lengths()
  # As released, a second text without tokens is no second text: `A <sep> <cls>`.
  has_b = len_b > 0                                                # [B]
  row_reserved = 2 + tf.cast(has_b, tf.int64)                      # [B]
  budget = max_len - row_reserved                                  # [B]
  # Closed form of "pop from the longer (B on ties) until the pair fits": the longer
  # one shrinks to budget - shorter, unless both must shrink, which ends at
  # (ceil(budget / 2), floor(budget / 2)). Without B it is A cut to the budget.
  fits = len_a + len_b <= budget
  both = budget < 2 * tf.minimum(len_a, len_b)
  half_b = budget // 2
  keep_a = tf.where(fits, len_a, tf.where(
      both, budget - half_b, tf.where(len_a > len_b, budget - len_b, len_a)))
  keep_b = tf.where(fits, len_b, tf.where(
      both, half_b, tf.where(len_a > len_b, len_b, budget - len_a)))
  # The padded length: T, or the bucket of the longest row (a scalar tensor).
  used = row_reserved + keep_a + keep_b                            # [B], <= T
  seq_len = padded_length(used, max_len) if bucketed else max_len
  outputs = _assemble(ids_a, ids_b, keep_a, keep_b, has_b, seq_len)
  static_batch = ids_a.shape[0]
  for value in outputs.values():
    value.set_shape([static_batch, None if bucketed else max_len])
  return outputs


@tf.autograph.experimental.do_not_convert
def document_inputs(encoder: XLNetTextEncoder, text_a, text_b=None,
                    segment_length: int = 128, bucketed: bool = False,
                    text_span: bool = False) -> Dict[str, tf.Tensor]:
  """Inputs of raw texts of any length as documents: K segments of S pieces, [B, K, S].

  Args:
    encoder: the text encoder (`XLNetTextEncoder.tokenize`).
    text_a: string [B], the texts (read whole).
    text_b: string [B] or None: second texts, cut at their end to segment_length - 3
      pieces (the tail `<sep> B <sep> <cls>` fits one segment); an empty one is none.
    segment_length: S, a Python int (the model's max_seq_length).
    bucketed: a batch whose documents all fit one segment is padded to its bucket
      (`padded_length`: S becomes the bucket, as `classifier_inputs`); otherwise S.
    text_span: also return where text_a's pieces are (see `document_layout`).
  Returns `document_layout`'s dict.
  """
  return document_layout(encoder.tokenize(text_a),
                         None if text_b is None else encoder.tokenize(text_b),
                         segment_length, bucketed=bucketed, text_span=text_span)


@tf.autograph.experimental.do_not_convert
def document_layout(ids_a: tf.RaggedTensor, ids_b: Optional[tf.RaggedTensor],
                    segment_length: int, bucketed: bool = False,
                    text_span: bool = False) -> Dict[str, tf.Tensor]:
  """The document layout of token ids (the one `networks.document_reader` reads).

  A row is every piece of A, then the tail: `<sep> <cls>` (segment ids 0, 2), or with a
  non-empty B `<sep> B[:S-3] <sep> <cls>` (0, 1..., 1, 2). With N its length, it takes
  K = ceil(N / S) segments and is padded on the LEFT to K * S (`CLASSIFIER_PAD_ID`,
  segment `CLASSIFIER_SEGMENT_PAD`, input_mask 1.0); every row of a batch is then padded
  on the left with whole padding segments to the batch's largest K, and reshaped to
  [B, K, S]. A row that fits one segment is the classification layout at length S
  (`classifier_layout`, which would not truncate it).

  Args:
    ids_a, ids_b: int ragged [B, (na)], [B, (nb)] or None.
    segment_length: S, a Python int (at least 3 with ids_b, 2 without).
    bucketed: when every row of the batch fits one segment, S is the batch's bucket
      (`padded_length(N, segment_length)`) instead of segment_length.
    text_span: also return `text_start` int64 [B], the position of A's first piece in
      the row flattened to K * S, and `text_length` int64 [B], A's number of pieces.
  Returns:
    `input_ids` int32, `segment_ids` int32, `input_mask` float32, each [B, K, S] (K >= 1;
    static shape [B, None, S], or [B, None, None] bucketed).
  """
  max_len, ids_a, ids_b = _checked_ids(ids_a, ids_b, segment_length, "segment_length")
  keep_a = ids_a.row_lengths()                                     # [B], all of A
  if ids_b is None:
    len_b = tf.zeros_like(keep_a)
  else:
    len_b = ids_b.row_lengths()
  has_b = len_b > 0                                                # [B]
  keep_b = tf.minimum(len_b, max_len - 3)                          # the tail fits S
  used = 2 + tf.cast(has_b, tf.int64) + keep_a + keep_b            # [B], N
  # The batch's segment count (at least 1, also for an empty batch) and length.
  longest = tf.reduce_max(tf.concat([used, [1]], axis=0))
  num_segments = (longest + max_len - 1) // max_len                # K
  if bucketed:
    seg_len = tf.where(num_segments > 1, tf.constant(max_len, tf.int64),
                       padded_length(used, max_len))
  else:
    seg_len = tf.constant(max_len, tf.int64)
  flat = _assemble(ids_a, ids_b, keep_a, keep_b, has_b,
                   num_segments * seg_len)                         # each [B, K * S]
  batch = tf.shape(keep_a, out_type=tf.int64)[0]
  static_batch = ids_a.shape[0]
  outputs = {}
  for key, value in flat.items():
    value = tf.reshape(value, tf.stack([batch, num_segments, seg_len]))
    value.set_shape([static_batch, None, None if bucketed else max_len])
    outputs[key] = value                                           # [B, K, S]
  if text_span:
    outputs["text_start"] = num_segments * seg_len - used          # [B]
    outputs["text_length"] = keep_a                                # [B]
  return outputs


@tf.autograph.experimental.do_not_convert
def _assemble(ids_a: tf.RaggedTensor, ids_b: Optional[tf.RaggedTensor], keep_a: tf.Tensor,
              keep_b: tf.Tensor, has_b: tf.Tensor, seq_len) -> Dict[str, tf.Tensor]:
  """The rows `A[:keep_a] <sep> (B[:keep_b] <sep>) <cls>` padded on the LEFT to `seq_len`.

  Args:
    ids_a, ids_b: int32 ragged [B, (n)] with int64 row splits (ids_b None: single texts).
    keep_a, keep_b, has_b: int64 [B], int64 [B], bool [B]: the pieces of each text kept
      (from the start) and whether the row has a second text.
    seq_len: the row length (a Python int or an int64 scalar), >= every row's length.
  Returns the dict of `classifier_inputs`, each [B, seq_len].
  """
  used = 2 + tf.cast(has_b, tf.int64) + keep_a + keep_b            # [B]
  # Dense assembly: position j of a row holds, after `pad` padding positions, A[0:keep_a],
  # <sep>, then (pairs) B[0:keep_b], <sep>, and <cls> last.
  pad = seq_len - used                                             # [B]
  rel = tf.range(seq_len, dtype=tf.int64)[tf.newaxis, :] - pad[:, tf.newaxis]  # [B, T]
  in_a = (rel >= 0) & (rel < keep_a[:, tf.newaxis])
  sep_a = tf.equal(rel, keep_a[:, tf.newaxis])
  rel_b = rel - keep_a[:, tf.newaxis] - 1
  in_b = (rel_b >= 0) & (rel_b < keep_b[:, tf.newaxis])
  sep_b = tf.equal(rel_b, keep_b[:, tf.newaxis]) & has_b[:, tf.newaxis]
  is_cls = tf.equal(rel, seq_len - 1 - pad[:, tf.newaxis])

  def gather(ids, offsets, inside):
    values = tf.concat([ids.flat_values, tf.zeros([1], tf.int32)], axis=0)  # never empty
    index = tf.where(inside, ids.row_splits[:-1, tf.newaxis] + offsets, 0)
    return tf.gather(values, index)

  input_ids = tf.where(in_a, gather(ids_a, rel, in_a), layouts.CLASSIFIER_PAD_ID)
  segment_ids = tf.where(in_a | sep_a, layouts.SEGMENT_A, layouts.CLASSIFIER_SEGMENT_PAD)
  if ids_b is not None:
    input_ids = tf.where(in_b, gather(ids_b, rel_b, in_b), input_ids)
    segment_ids = tf.where(in_b | sep_b, layouts.SEGMENT_B, segment_ids)
  input_ids = tf.where(sep_a | sep_b, tokenization.SEP_ID, input_ids)
  input_ids = tf.where(is_cls, tokenization.CLS_ID, input_ids)
  segment_ids = tf.where(is_cls, layouts.SEGMENT_CLS, segment_ids)
  input_mask = tf.cast(rel < 0, tf.float32)
  return {"input_ids": tf.cast(input_ids, tf.int32),                 # [B, seq_len]
          "segment_ids": tf.cast(segment_ids, tf.int32), "input_mask": input_mask}
