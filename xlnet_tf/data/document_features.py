"""Documents of any length as classifier inputs: the layout in segments, its records and
the batches (bucketed by length for training, in order for evaluation).

The layout (S the task's max_seq_length; the serving side builds the same in its graph):
all pieces of text a, then the tail, which is `<sep> <cls>` for a single text and
`<sep> b <sep> <cls>` for a pair (b cut at its end to at most S - 3 pieces, so that the
tail fits in one segment; a b without pieces is no b, as released). Segment ids: a and its
`<sep>` SEGMENT_A, b and its `<sep>` SEGMENT_B, `<cls>` SEGMENT_CLS. The N = len(a) +
len(tail) pieces are LEFT-padded to K * S, K = ceil(N / S), with the classifier's padding
(CLASSIFIER_PAD_ID, CLASSIFIER_SEGMENT_PAD, input_mask 1.0) and cut into K segments of S:
the last segment ends with `<sep> <cls>`, and a text that fits one segment gets exactly
`classifier_features.classifier_layout`'s features. With `max_segments` > 0 a longer text
a is cut at its END to max_segments * S - len(tail) pieces (like the released truncation,
which keeps the start).

  >>> ids, segments, mask = document_layout(ids_a, None, max_seq_length=128)  # [K, 128]
  >>> ds = document_dataset(path, batch_size=8, is_training=True, seed=1)
  >>> next(iter(ds))["input_ids"]                       # [8, K_batch, 128]

Records (format FORMAT): input_ids, segment_ids (int64 [K * S]), input_mask (float
[K * S]), the K segments flattened in order, num_segments (int64 [] = K) and label_id as
the truncating records have it (`classifier_features`).

Batches. A batch is padded to its own longest document with whole padding SEGMENTS on the
left (each document must end in the last segment, which the classifier's summary reads):
the parser reverses the segments, `padded_batch` pads at the end, and the batch is reversed
back. Training: the shuffled, repeated records are grouped by segment count into the
buckets of `bucket_of` (1, 2, 3-4, 5-8, 9-16, ... segments; `group_by_window`), each batch
filled from one bucket, so a short document is padded at most to twice its length instead
of to the longest document of the data (`bucket_by_segments=False`, task.bucket_by_segments:
consecutive shuffled documents of any length, for data whose length and label go
together). The order is a function of the records and the
seed only, so a resumed run skipping the batches of its first steps sees the same batches
as an uninterrupted run. Evaluation and prediction: one pass in file order, each batch
padded to its longest document.
"""

import math
from typing import Any, Dict, Optional, Sequence, Tuple, Union

import numpy as np
import tensorflow as tf

from xlnet_tf.data import feature_cache
from xlnet_tf.data import layouts
from xlnet_tf.data import tokenization

FORMAT = "xlnet_tf.classifier_document.v1"
MAX_BUCKETS = 32                     # bucket_of's bit length: documents below 2**31 segments


# ---- the layout ------------------------------------------------------------------------------

def layout_tail(ids_b: Optional[Sequence[int]],
                max_seq_length: int) -> Tuple[list, list]:
  """(piece ids, segment ids) of what follows text a: `<sep> <cls>`, or `<sep> b <sep>
  <cls>` with b cut at its end to max_seq_length - 3 pieces (None or [] is no b)."""
  if ids_b is None or len(ids_b) == 0:
    return ([tokenization.SEP_ID, tokenization.CLS_ID],
            [layouts.SEGMENT_A, layouts.SEGMENT_CLS])
  ids_b = list(ids_b)[:max_seq_length - 3]
  return ([tokenization.SEP_ID] + ids_b + [tokenization.SEP_ID, tokenization.CLS_ID],
          [layouts.SEGMENT_A] + [layouts.SEGMENT_B] * (len(ids_b) + 1) +
          [layouts.SEGMENT_CLS])


def document_layout(ids_a: Sequence[int], ids_b: Optional[Sequence[int]],
                    max_seq_length: int, max_segments: int = 0
                    ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
  """The document layout of token ids (see the module docstring).

  Args:
    ids_a: token ids of the first text (any length).
    ids_b: token ids of the second text, or None (or []) for a single text.
    max_seq_length: S, the length of a segment (at least 3 with a non-empty ids_b, 2
      without).
    max_segments: K at most (0: no cap); text a is cut at its end to fit.
  Returns:
    (input_ids int32 [K, S], segment_ids int32 [K, S], input_mask float32 [K, S]).
  """
  is_pair = ids_b is not None and len(ids_b) > 0
  reserved = 3 if is_pair else 2
  if max_seq_length < reserved:
    raise ValueError(f"max_seq_length {max_seq_length} leaves no room for the {reserved} "
                     f"special tokens of {'a pair' if is_pair else 'a text'}; expected at "
                     f"least {reserved}")
  if max_segments < 0:
    raise ValueError(f"max_segments must be >= 0 (0: no cap), got {max_segments}")
  tail_ids, tail_segments = layout_tail(ids_b, max_seq_length)
  ids_a = list(ids_a)
  if max_segments:
    ids_a = ids_a[:max_segments * max_seq_length - len(tail_ids)]
  tokens = ids_a + tail_ids
  segments = [layouts.SEGMENT_A] * len(ids_a) + tail_segments
  num_segments = max(1, math.ceil(len(tokens) / max_seq_length))
  padding = num_segments * max_seq_length - len(tokens)
  shape = [num_segments, max_seq_length]
  input_ids = np.array([layouts.CLASSIFIER_PAD_ID] * padding + tokens, np.int32)
  segment_ids = np.array([layouts.CLASSIFIER_SEGMENT_PAD] * padding + segments, np.int32)
  input_mask = np.array([1.0] * padding + [0.0] * len(tokens), np.float32)
  return input_ids.reshape(shape), segment_ids.reshape(shape), input_mask.reshape(shape)


# ---- records ---------------------------------------------------------------------------------

def serialize_document(features: Dict[str, Any], is_regression: bool) -> bytes:
  """A document's features (input_ids, segment_ids, input_mask [K, S], label_id) as a
  serialized tf.train.Example, the segments flattened, with num_segments = K."""
  label = {"label_id": [features["label_id"]]}
  return feature_cache.serialize_example(
      {"input_ids": features["input_ids"], "segment_ids": features["segment_ids"],
       "num_segments": [np.shape(features["input_ids"])[0]],
       **({} if is_regression else label)},
      {"input_mask": features["input_mask"], **(label if is_regression else {})})


def feature_spec(is_regression: bool) -> Dict[str, Any]:
  """The parsing spec of a document record."""
  return {"input_ids": tf.io.VarLenFeature(tf.int64),
          "segment_ids": tf.io.VarLenFeature(tf.int64),
          "input_mask": tf.io.VarLenFeature(tf.float32),
          "num_segments": tf.io.FixedLenFeature([], tf.int64),
          "label_id": tf.io.FixedLenFeature([], tf.float32 if is_regression else tf.int64)}


# ---- batches ---------------------------------------------------------------------------------

def bucket_of(num_segments: tf.Tensor) -> tf.Tensor:
  """The bucket of a document of K segments: the bit length of K - 1 (K = 1: 0, 2: 1,
  3-4: 2, 5-8: 3, 9-16: 4, ...), int64 []."""
  shifted = tf.bitwise.right_shift(tf.cast(num_segments, tf.int64) - 1,
                                   tf.range(MAX_BUCKETS, dtype=tf.int64))
  return tf.reduce_sum(tf.cast(shifted > 0, tf.int64))


def _padding_values(is_regression: bool) -> Dict[str, tf.Tensor]:
  return {"input_ids": tf.constant(layouts.CLASSIFIER_PAD_ID, tf.int32),
          "segment_ids": tf.constant(layouts.CLASSIFIER_SEGMENT_PAD, tf.int32),
          "input_mask": tf.constant(1.0, tf.float32),
          "num_segments": tf.constant(0, tf.int32),
          "label_id": tf.constant(0.0 if is_regression else 0,
                                  tf.float32 if is_regression else tf.int32)}


def _reverse_segments(batch: Dict[str, tf.Tensor]) -> Dict[str, tf.Tensor]:
  """The segments of a batch [B, K, S] in the other order (the padding segments, added
  at the end of the reversed documents, move to the front)."""
  return {key: tf.reverse(value, [1]) if key in ("input_ids", "segment_ids", "input_mask")
          else value for key, value in batch.items()}


def document_dataset(path: Union[str, Sequence[str]], batch_size: int, is_training: bool,
                     seed: Optional[int] = None, max_seq_length: Optional[int] = None,
                     is_regression: Optional[bool] = None, *,
                     input_context: Optional[tf.distribute.InputContext] = None,
                     shuffle_buffer_size: int = 100_000,
                     drop_remainder: Optional[bool] = None,
                     bucket_by_segments: bool = True) -> tf.data.Dataset:
  """Batches of documents from cache files (`classifier_features.cached_features` with
  `document=True`); the arguments as `classifier_features.classifier_dataset`'s.

  Training: shuffled with `seed`, repeated, and batched within the buckets of `bucket_of`
  (a batch holds documents of one bucket; `bucket_by_segments=False`: consecutive
  shuffled documents, whatever their lengths); evaluation: one pass in file order. Each batch
  is padded to its longest document with padding segments on the left (module docstring).
  Returns a dataset of dicts: input_ids int32 [B, K, S], segment_ids int32 [B, K, S],
  input_mask float32 [B, K, S] (1.0 = padding), num_segments int32 [B] (the documents'
  own K), label_id int32 [B] (or float32 [B] for regression); K is the batch's longest
  document's. B is static when the remainder is dropped (training).
  """
  if drop_remainder is None:
    drop_remainder = is_training
  paths, max_seq_length, is_regression = feature_cache.classifier_cache(
      path, "document_dataset", FORMAT, "document features", max_seq_length, is_regression)
  spec = feature_spec(is_regression)

  def parse(serialized):                  # one record -> its segments, LAST segment first
    parsed = tf.io.parse_single_example(serialized, spec)

    def segments(key, dtype):
      values = tf.cast(tf.sparse.to_dense(parsed[key]), dtype)
      return tf.reverse(tf.reshape(values, [-1, max_seq_length]), [0])     # [K, S]
    return {"input_ids": segments("input_ids", tf.int32),
            "segment_ids": segments("segment_ids", tf.int32),
            "input_mask": segments("input_mask", tf.float32),
            "num_segments": tf.cast(parsed["num_segments"], tf.int32),
            "label_id": (parsed["label_id"] if is_regression
                         else tf.cast(parsed["label_id"], tf.int32))}

  shapes = {"input_ids": [None, max_seq_length], "segment_ids": [None, max_seq_length],
            "input_mask": [None, max_seq_length], "num_segments": [], "label_id": []}
  padding = _padding_values(is_regression)

  def padded(ds):
    return ds.padded_batch(batch_size, padded_shapes=shapes, padding_values=padding,
                           drop_remainder=drop_remainder)

  ds = tf.data.TFRecordDataset(paths)
  if is_training:
    if input_context is not None and input_context.num_input_pipelines > 1:
      ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    ds = ds.shuffle(shuffle_buffer_size, seed=seed, reshuffle_each_iteration=True).repeat()
    # deterministic: the parallel map keeps the order (tf.data's default)
    ds = ds.map(parse, num_parallel_calls=tf.data.AUTOTUNE)
    if bucket_by_segments:
      ds = ds.group_by_window(
          key_func=lambda features: bucket_of(features["num_segments"]),
          reduce_func=lambda _, window: padded(window), window_size=batch_size)
    else:
      ds = padded(ds)
  else:
    ds = padded(ds.map(parse, num_parallel_calls=tf.data.AUTOTUNE))
  return ds.map(_reverse_segments).prefetch(tf.data.AUTOTUNE)
