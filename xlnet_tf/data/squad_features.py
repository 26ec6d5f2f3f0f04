"""SQuAD examples -> model windows in the released layout: `P <sep> Q <sep> <cls>`.

Per window (doc-stride windows over the paragraph's pieces), in the SQuAD layout of
`layouts` (special tokens, segment ids, padding on the RIGHT):

  input_ids     [L]  paragraph pieces, <sep>, question pieces, <sep>, <cls>, padding
  segment_ids   [L]  the layout's
  input_mask    [L]  1 at padding (the released convention)
  p_mask        [L]  1 where no answer can start or end: question, separators, padding
                     (and a paragraph's bare "▁" pieces, which cover no character); 0 for
                     paragraph pieces and <cls> (the "no answer" position)
  cls_index          position of <cls>
  start_position, end_position: the gold answer's first and last piece in the window, or
                     cls_index when the question is impossible or the answer is not wholly
                     inside this window (is_impossible = 1 then)
  raw_spans          per position, the raw character [begin, end) in the context of a
                     paragraph piece (None elsewhere), for decoding predictions
  max_context        per position, whether this window gives the piece its most context
                     (min(left, right) + 0.01 x window length, as released)

The paragraph is aligned by `text_alignment`: training windows cut the pieces at the gold
answer's boundaries, so the gold text is recovered exactly from its piece span.

  >>> windows = squad_windows(sp, example, max_seq_length=512, doc_stride=128,
  ...                         max_query_length=64, is_training=True)
  >>> path = cached_windows(examples, "spiece.model", 512, 128, 64, is_training=True,
  ...                       split="train", input_files=["train-v2.0.json"],
  ...                       cache_dir="cache")
  >>> ds = squad_dataset(path, batch_size=32, is_training=True, seed=1)

The cache is the classifier's (`feature_cache`): a file `squad-<split>-<L>-<key>.tfrecord`
named by a hash of the SentencePiece model, L, `uncased`, doc_stride, max_query_length,
is_training, the input files' sizes and modification times and the examples (qas_id,
question, context, answers, is_impossible); a `.json` sidecar ("num_examples" = the number
of windows, "num_questions"); written under a temporary name and renamed. It holds every
window of every example, in order (the windows of `squad_windows`, paragraphs aligned with
`text_alignment.continuation_processor`, as experiments/run_squad.py makes them), one
record each: input_ids, segment_ids (int64 [L]), input_mask, p_mask (float [L]),
cls_index, start_positions, end_positions (int64 []), is_impossible (float []) and
window_id (int64 [], the window's index in the file), by which predictions are matched
back to the `SquadWindow`s (and their raw_spans and max_context, which are not cached).
`squad_dataset` reads it in batches: window_id, input_ids, segment_ids, cls_index,
start_positions, end_positions int32; input_mask, p_mask, is_impossible float32.
"""

import dataclasses
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from absl import logging
import numpy as np
import sentencepiece as spm
import tensorflow as tf

from xlnet_tf.data import feature_cache
from xlnet_tf.data import layouts
from xlnet_tf.data import text_alignment
from xlnet_tf.data import tokenization
from xlnet_tf.data.squad import SquadExample
from xlnet_tf.data.tokenization import CLS_ID
from xlnet_tf.data.tokenization import SEP_ID

FORMAT = "xlnet_tf.squad.v1"


@dataclasses.dataclass
class SquadWindow:
  qas_id: str
  window_index: int
  input_ids: List[int]
  segment_ids: List[int]
  input_mask: List[float]
  p_mask: List[float]
  cls_index: int
  start_position: int
  end_position: int
  is_impossible: bool
  raw_spans: List[Optional[Tuple[int, int]]]
  max_context: List[bool]


def window_starts(num_pieces: int, max_pieces: int, doc_stride: int) -> List[Tuple[int, int]]:
  """(start, length) of each window over `num_pieces` pieces, as released: windows of up to
  `max_pieces`, each starting `doc_stride` after the previous, until one reaches the end."""
  if max_pieces < 1:
    raise ValueError(f"no room for the paragraph: max_seq_length leaves {max_pieces} "
                     f"pieces after the question and 3 special tokens")
  if doc_stride < 1:
    raise ValueError(f"--doc_stride must be >= 1, got {doc_stride}")
  windows, start = [], 0
  while True:
    length = min(num_pieces - start, max_pieces)
    windows.append((start, length))
    if start + length >= num_pieces:
      return windows
    start += min(length, doc_stride)


def has_max_context(windows: Sequence[Tuple[int, int]], window: int, position: int) -> bool:
  """Whether `windows[window]` gives paragraph piece `position` its largest context."""
  best, best_window = None, None
  for index, (start, length) in enumerate(windows):
    if not start <= position < start + length:
      continue
    left, right = position - start, start + length - 1 - position
    score = min(left, right) + 0.01 * length
    if best is None or score > best:
      best, best_window = score, index
  return best_window == window


def squad_windows(sp: spm.SentencePieceProcessor, example: SquadExample,
                  max_seq_length: int, doc_stride: int, max_query_length: int,
                  is_training: bool, uncased: bool = False,
                  continuation: Optional[spm.SentencePieceProcessor] = None
                  ) -> List[SquadWindow]:
  """The windows of one question (see the module docstring)."""
  answer = example.answers[0] if (is_training and example.answers) else None
  cuts = (answer.start, answer.end) if answer else ()
  aligned = text_alignment.align(sp, example.context, lower=uncased, cuts=cuts,
                                 continuation=continuation)
  raw = aligned.raw_spans
  paragraph_ids = [sp.piece_to_id(p) for p in aligned.pieces]
  # A bare "▁" (before a user-defined piece such as '"' or "(") covers no character: it
  # stays in the input, as in pretraining, but cannot start or end an answer.
  empty = [float(e <= b) for b, e in raw]
  question = tokenization.normalize_text(example.question, lower=uncased)
  query_ids = tokenization.encode_ids(sp, question)[:max_query_length]

  gold = None
  if answer is not None:
    gold = text_alignment.char_to_piece_span(raw, answer.start, answer.end)

  windows = window_starts(len(paragraph_ids), max_seq_length - len(query_ids) - 3,
                          doc_stride)
  out = []
  for index, (start, length) in enumerate(windows):
    ids = paragraph_ids[start:start + length] + [SEP_ID] + query_ids + [SEP_ID, CLS_ID]
    segments = ([layouts.SEGMENT_A] * (length + 1) + [layouts.SEGMENT_B] * (len(query_ids) + 1)
                + [layouts.SEGMENT_CLS])
    p_mask = empty[start:start + length] + [1.0] * (len(query_ids) + 2) + [0.0]
    spans = raw[start:start + length] + [None] * (len(query_ids) + 3)
    context = [has_max_context(windows, index, start + k) for k in range(length)]
    cls_index = len(ids) - 1
    pad = max_seq_length - len(ids)
    impossible = example.is_impossible
    start_position = end_position = cls_index
    if is_training and gold is not None:
      first, last = gold
      if start <= first and last < start + length:
        start_position, end_position = first - start, last - start
      else:
        impossible = True                      # the answer is not in this window
    out.append(SquadWindow(
        qas_id=example.qas_id, window_index=index,
        input_ids=ids + [layouts.SQUAD_PAD_ID] * pad,
        segment_ids=segments + [layouts.SQUAD_SEGMENT_PAD] * pad,
        input_mask=[0.0] * len(ids) + [1.0] * pad, p_mask=p_mask + [1.0] * pad,
        cls_index=cls_index, start_position=start_position, end_position=end_position,
        is_impossible=bool(impossible), raw_spans=spans + [None] * pad,
        max_context=context + [False] * (max_seq_length - length)))
  return out


# ---- records ---------------------------------------------------------------------------------

def feature_spec(max_seq_length: int) -> Dict[str, tf.io.FixedLenFeature]:
  """The parsing spec of a cached window."""
  return {
      "input_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
      "segment_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
      "input_mask": tf.io.FixedLenFeature([max_seq_length], tf.float32),
      "p_mask": tf.io.FixedLenFeature([max_seq_length], tf.float32),
      "cls_index": tf.io.FixedLenFeature([], tf.int64),
      "start_positions": tf.io.FixedLenFeature([], tf.int64),
      "end_positions": tf.io.FixedLenFeature([], tf.int64),
      "is_impossible": tf.io.FixedLenFeature([], tf.float32),
      "window_id": tf.io.FixedLenFeature([], tf.int64),
  }


def serialize_window(window: SquadWindow, window_id: int) -> bytes:
  """`window` (the `window_id`-th of its cache) as a serialized tf.train.Example."""
  def ints(values):
    return tf.train.Feature(int64_list=tf.train.Int64List(
        value=np.ravel(values).astype(np.int64).tolist()))

  def floats(values):
    return tf.train.Feature(float_list=tf.train.FloatList(
        value=np.ravel(values).astype(np.float32).tolist()))
  feature = {"input_ids": ints(window.input_ids),
             "segment_ids": ints(window.segment_ids),
             "input_mask": floats(window.input_mask),
             "p_mask": floats(window.p_mask),
             "cls_index": ints([window.cls_index]),
             "start_positions": ints([window.start_position]),
             "end_positions": ints([window.end_position]),
             "is_impossible": floats([float(window.is_impossible)]),
             "window_id": ints([window_id])}
  return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString(
      deterministic=True)


# ---- the cache (`feature_cache`) -------------------------------------------------------------

def cache_settings(examples: Sequence[SquadExample], sp_model_path: str, max_seq_length: int,
                   doc_stride: int, max_query_length: int, is_training: bool, *,
                   uncased: bool = False, split: str = "",
                   input_files: Iterable[str] = ()) -> Dict[str, Any]:
  """Every setting the cached windows depend on, and "key", the hash naming the cache."""
  return feature_cache.cache_settings(
      record_format=FORMAT, sp_model_path=sp_model_path, max_seq_length=max_seq_length,
      uncased=uncased, label_list=None, task="squad", split=split, input_files=input_files,
      doc_stride=int(doc_stride), max_query_length=int(max_query_length),
      is_training=bool(is_training),
      examples_sha256=feature_cache.rows_sha256(
          [e.qas_id, e.question, e.context, [[a.text, a.start] for a in e.answers],
           bool(e.is_impossible)] for e in examples))


def cached_windows(examples: Sequence[SquadExample], sp_model_path: str, max_seq_length: int,
                   doc_stride: int, max_query_length: int, is_training: bool, *,
                   uncased: bool = False, split: str = "", input_files: Iterable[str] = (),
                   cache_dir: str, sp: Optional[spm.SentencePieceProcessor] = None) -> str:
  """The path of a TFRecord file holding every window of `examples`, built if needed.

  Args:
    examples: the questions, in the order the windows keep (each question's windows in
      `squad_windows` order; window_id counts them all from 0).
    sp_model_path: the SentencePiece model (checked by `tokenization.load_spiece`).
    max_seq_length, doc_stride, max_query_length, is_training, uncased: as for
      `squad_windows`.
    split: a name, part of the key and of the file name.
    input_files: the SQuAD JSON files the examples were read from; their sizes and
      modification times are part of the key.
    cache_dir: where cache files live (created if missing).
    sp: the already loaded model of `sp_model_path`, to skip loading it again.
  Returns:
    `cache_dir/squad-<split>-<max_seq_length>-<key[:16]>.tfrecord`; its sidecar
    `<path>.json` holds the settings, the key, "num_examples" (the number of windows) and
    "num_questions".
  """
  examples = list(examples)
  settings = cache_settings(examples, sp_model_path, max_seq_length, doc_stride,
                            max_query_length, is_training, uncased=uncased, split=split,
                            input_files=input_files)
  counts = {"num_windows": 0}

  def records():               # made as they are written: no list of windows in memory
    model = sp if sp is not None else tokenization.load_spiece(sp_model_path)
    continuation = text_alignment.continuation_processor(model)
    for example in examples:
      for window in squad_windows(model, example, max_seq_length, doc_stride,
                                  max_query_length, is_training, uncased=uncased,
                                  continuation=continuation):
        yield serialize_window(window, counts["num_windows"])
        counts["num_windows"] += 1

  path, built = feature_cache.build_cache(
      settings, cache_dir=cache_dir, name=f"squad-{split or 'all'}", what="windows",
      summary=lambda: {"num_questions": len(examples)}, records=records)
  if built:
    logging.info("wrote %d windows of %d questions to %s", counts["num_windows"],
                 len(examples), path)
  return path


# ---- the reader ------------------------------------------------------------------------------

def squad_dataset(path: Union[str, Sequence[str]], batch_size: int, is_training: bool,
                  seed: Optional[int] = None, max_seq_length: Optional[int] = None, *,
                  input_context: Optional[tf.distribute.InputContext] = None,
                  shuffle_buffer_size: int = 100_000,
                  drop_remainder: Optional[bool] = None) -> tf.data.Dataset:
  """Batches of SQuAD windows from a cache file of `cached_windows`, or several with the
  same settings: `batch_size` windows a batch (per replica with an `input_context`), read
  as `feature_cache.record_batches` reads (shuffled and repeated when `is_training`; one
  pass in file order otherwise). `max_seq_length` None takes it from the cache sidecar; a
  value is checked against it.

  Returns:
    A dataset of dicts: input_ids, segment_ids int32 [B, L]; input_mask (1.0 = padding),
    p_mask float32 [B, L]; cls_index, start_positions, end_positions, window_id int32 [B];
    is_impossible float32 [B]. B is static when the remainder is dropped.
  """
  paths, info = feature_cache.cache_files(path, "squad_dataset", FORMAT, "SQuAD windows")
  max_seq_length = int(feature_cache.checked_setting(paths[0], info, "max_seq_length",
                                                     max_seq_length))
  spec = feature_spec(max_seq_length)
  as_int32 = ("input_ids", "segment_ids", "cls_index", "start_positions", "end_positions",
              "window_id")

  def parse(serialized):
    parsed = tf.io.parse_example(serialized, spec)
    return {name: tf.cast(value, tf.int32) if name in as_int32 else value
            for name, value in parsed.items()}

  return feature_cache.record_batches(
      paths, parse, batch_size, is_training, seed, input_context=input_context,
      shuffle_buffer_size=shuffle_buffer_size, drop_remainder=drop_remainder)
