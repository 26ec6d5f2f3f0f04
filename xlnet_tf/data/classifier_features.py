"""Classification inputs in the released XLNet layout, a TFRecord cache and its reader.

One example (max_seq_length T, A and B the SentencePiece ids of the two texts) is in the
classification layout of `layouts` (the special tokens, segment ids and padding):
`A <sep> B <sep> <cls>` padded on the LEFT to T, input_mask 1.0 at padding. Without B, or
with a B that has no tokens (as released): `A <sep> <cls>`. The <cls> token, whose output
summarises the sequence, is always the last position. Too long inputs lose tokens at the
end: A alone is cut to T - 2; a pair loses one token at a time from the end of the longer
text (B when both are equally long) until len(A) + len(B) = T - 3. `classifier_layout` is
this rule on token ids (the reference for in-graph implementations), `encode_example` adds
text normalisation and SentencePiece. `read_from="end"` keeps the END of a too long text A
instead (A's last T - 2 pieces before `<sep> <cls>`; for a pair B is cut at its end to
T - 3 pieces and A keeps the last pieces that fit): the other choice of the truncating
classifier, for comparing with reading whole documents.

Documents of any length (`cached_features(..., document=True)`) are laid out in segments of
T by `document_features` and cached in its record format; `document_features.
document_dataset` reads them.

  >>> sp = tokenization.load_spiece("spiece.model")
  >>> features = encode_example(sp, example, 128, label_list=task.labels)
  >>> path = cached_features(examples, "spiece.model", 128, label_list=task.labels,
  ...                        task="sst-2", split="train", cache_dir="cache",
  ...                        input_files=task.input_files(data_dir, "train"))
  >>> ds = classifier_dataset(path, batch_size=32, is_training=True, seed=1)

The cache file (`<task>-<split>-<T>-<key>.tfrecord`; `feature_cache`, which the tagger's
features share) is named by a hash of everything that changes its contents: the
SentencePiece model's SHA-256, T, `uncased`, the label list, regression or not, task,
split, the input files' sizes and modification times and the examples themselves. It is
written under a temporary name and renamed, then its `.json` sidecar (settings and example
count) is written the same way; a cache is used only when its sidecar exists and holds the
same key. Paths may be gs:// (tf.io.gfile).

Records hold input_ids, segment_ids (int64 [T]), input_mask (float [T]) and label_id
(int64 [], or float [] for regression); unlabeled examples (label None, e.g. GLUE test
sets) have label_id NO_LABEL_ID (-1), or NaN for regression.
"""

from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from absl import logging
import numpy as np
import sentencepiece as spm
import tensorflow as tf

from xlnet_tf.data import document_features
from xlnet_tf.data import feature_cache
from xlnet_tf.data import layouts
from xlnet_tf.data import tokenization
from xlnet_tf.data.classifier_examples import InputExample

FORMAT = "xlnet_tf.classifier.v1"
NO_LABEL_ID = -1
READ_FROM = ("start", "end")     # which end of a too long text a the truncating layout keeps


# ---- the layout ------------------------------------------------------------------------------

def truncated_lengths(len_a: int, len_b: int, max_tokens: int) -> Tuple[int, int]:
  """Lengths A and B keep when a pair must fit `max_tokens` tokens.

  The same as removing one token at a time from the longer of the two (from B when they are
  equally long) until len_a + len_b <= max_tokens, in closed form: if the shorter text
  takes at most half of the room it is kept whole and the longer one gets the rest, else A
  keeps ceil(max_tokens / 2) and B floor(max_tokens / 2).
  """
  if len_a + len_b <= max_tokens:
    return len_a, len_b
  if 2 * min(len_a, len_b) <= max_tokens:
    return (len_a, max_tokens - len_a) if len_a < len_b else (max_tokens - len_b, len_b)
  return (max_tokens + 1) // 2, max_tokens // 2


def classifier_layout(ids_a: Sequence[int], ids_b: Optional[Sequence[int]],
                      max_seq_length: int, read_from: str = "start"
                      ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
  """The released classification layout of token ids (see the module docstring).

  Args:
    ids_a: token ids of the first text (any length; cut to fit).
    ids_b: token ids of the second text, or None for a single text. As released, a
      second text without tokens ([]) is no second text: `A <sep> <cls>`.
    max_seq_length: T, at least 3 with a non-empty ids_b, 2 without.
    read_from: "start" (released) or "end": keep A's last pieces (module docstring).
  Returns:
    (input_ids int32 [T], segment_ids int32 [T], input_mask float32 [T]).
  """
  if read_from not in READ_FROM:
    raise ValueError(f"read_from must be one of {READ_FROM}, got {read_from!r}")
  if ids_b is not None and len(ids_b) == 0:
    ids_b = None
  reserved = 2 if ids_b is None else 3
  if max_seq_length < reserved:
    raise ValueError(f"max_seq_length {max_seq_length} leaves no room for the {reserved} "
                     f"special tokens of {'a pair' if ids_b is not None else 'a text'}; "
                     f"expected at least {reserved}")
  if read_from == "end":               # a's end and the whole tail, in one segment
    tail_ids, _ = document_features.layout_tail(ids_b, max_seq_length)
    kept = max_seq_length - len(tail_ids)
    ids_a = list(ids_a)[len(ids_a) - kept:] if len(ids_a) > kept else list(ids_a)
    return tuple(array[0] for array in document_features.document_layout(
        ids_a, ids_b, max_seq_length))
  ids_a = list(ids_a)
  if ids_b is None:
    ids_a = ids_a[:max_seq_length - reserved]
    tokens = ids_a + [tokenization.SEP_ID, tokenization.CLS_ID]
    segments = [layouts.SEGMENT_A] * (len(ids_a) + 1) + [layouts.SEGMENT_CLS]
  else:
    ids_b = list(ids_b)
    len_a, len_b = truncated_lengths(len(ids_a), len(ids_b), max_seq_length - reserved)
    ids_a, ids_b = ids_a[:len_a], ids_b[:len_b]
    tokens = (ids_a + [tokenization.SEP_ID] + ids_b
              + [tokenization.SEP_ID, tokenization.CLS_ID])
    segments = ([layouts.SEGMENT_A] * (len_a + 1) + [layouts.SEGMENT_B] * (len_b + 1)
                + [layouts.SEGMENT_CLS])
  padding = max_seq_length - len(tokens)
  input_ids = np.array([layouts.CLASSIFIER_PAD_ID] * padding + tokens, np.int32)
  segment_ids = np.array([layouts.CLASSIFIER_SEGMENT_PAD] * padding + segments, np.int32)
  input_mask = np.array([1.0] * padding + [0.0] * len(tokens), np.float32)
  return input_ids, segment_ids, input_mask


def encode_text(sp: spm.SentencePieceProcessor, text: str, uncased: bool = False) -> List[int]:
  """Token ids of raw `text`: `normalize_text` (lower-cased if `uncased`) + `encode_ids`."""
  return tokenization.encode_ids(sp, tokenization.normalize_text(text, lower=uncased))


def label_id(example: InputExample, label_list: Optional[Sequence[str]] = None,
             is_regression: bool = False) -> Union[int, float]:
  """The label of `example` as the model sees it: its index in `label_list`, or a float.

  Unlabeled examples give NO_LABEL_ID (classification) or NaN (regression).
  """
  if is_regression:
    return float("nan") if example.label is None else float(example.label)
  if example.label is None:
    return NO_LABEL_ID
  if label_list is None:
    raise ValueError(f"example {example.guid}: a classification example needs label_list")
  try:
    return list(label_list).index(example.label)
  except ValueError:
    raise ValueError(f"example {example.guid}: label {example.label!r} is not in the label "
                     f"list {list(label_list)}") from None


def encode_example(sp: spm.SentencePieceProcessor, example: InputExample,
                   max_seq_length: int, label_list: Optional[Sequence[str]] = None,
                   is_regression: bool = False, uncased: bool = False) -> Dict[str, Any]:
  """The model inputs of one example.

  The texts are normalised (`tokenization.normalize_text`, lower-cased if `uncased`) and
  encoded (`tokenization.encode_ids`); `text_b` None, or one without tokens, makes a
  single-text example (as released). Labels as in `label_id`.

  Returns:
    {"input_ids": int32 [T], "segment_ids": int32 [T], "input_mask": float32 [T],
     "label_id": int (index in label_list) or float (regression)}.
  """
  ids_a = encode_text(sp, example.text_a, uncased)
  ids_b = None if example.text_b is None else encode_text(sp, example.text_b, uncased)
  input_ids, segment_ids, input_mask = classifier_layout(ids_a, ids_b, max_seq_length)
  return {"input_ids": input_ids, "segment_ids": segment_ids, "input_mask": input_mask,
          "label_id": label_id(example, label_list, is_regression)}


def _encode_all(sp, examples, max_seq_length, label_list, is_regression, uncased,
                layout=classifier_layout):
  """`encode_example` for many examples, SentencePiece run in batches (`encode_lines`);
  `layout(ids_a, ids_b, max_seq_length)` lays out the ids."""
  def normalized(texts):
    return [tokenization.normalize_text(t, lower=uncased) for t in texts]
  ids_a = tokenization.encode_lines(sp, normalized(e.text_a for e in examples))
  pairs = [k for k, e in enumerate(examples) if e.text_b is not None]
  ids_b = dict(zip(pairs, tokenization.encode_lines(
      sp, normalized(examples[k].text_b for k in pairs)))) if pairs else {}
  for k, example in enumerate(examples):
    input_ids, segment_ids, input_mask = layout(ids_a[k], ids_b.get(k), max_seq_length)
    yield {"input_ids": input_ids, "segment_ids": segment_ids, "input_mask": input_mask,
           "label_id": label_id(example, label_list, is_regression)}


# ---- records ---------------------------------------------------------------------------------

def feature_spec(max_seq_length: int, is_regression: bool) -> Dict[str, tf.io.FixedLenFeature]:
  """The parsing spec of a cached record."""
  return {
      "input_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
      "segment_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
      "input_mask": tf.io.FixedLenFeature([max_seq_length], tf.float32),
      "label_id": tf.io.FixedLenFeature([], tf.float32 if is_regression else tf.int64),
  }


def serialize_features(features: Dict[str, Any], is_regression: bool) -> bytes:
  """The output of `encode_example` as a serialized tf.train.Example."""
  label = {"label_id": [features["label_id"]]}
  return feature_cache.serialize_example(
      {"input_ids": features["input_ids"], "segment_ids": features["segment_ids"],
       **({} if is_regression else label)},
      {"input_mask": features["input_mask"], **(label if is_regression else {})})


# ---- the cache (`feature_cache`) -------------------------------------------------------------

def cache_settings(examples: Sequence[InputExample], sp_model_path: str, max_seq_length: int,
                   *, label_list: Optional[Sequence[str]] = None, is_regression: bool = False,
                   uncased: bool = False, task: str = "", split: str = "",
                   input_files: Iterable[str] = (), document: bool = False,
                   max_segments: int = 0, read_from: str = "start") -> Dict[str, Any]:
  """Every setting the cached features depend on, and "key", the hash naming the cache.
  The mode is part of them: documents (`document`, with `max_segments`) have their own
  record format; `read_from` "end" is recorded (the released "start" adds nothing, so the
  truncating caches keep their keys)."""
  mode = ({"max_segments": int(max_segments)} if document else
          {"read_from": read_from} if read_from != "start" else {})
  return feature_cache.cache_settings(
      record_format=document_features.FORMAT if document else FORMAT,
      sp_model_path=sp_model_path, max_seq_length=max_seq_length,
      uncased=uncased, label_list=label_list, task=task, split=split,
      input_files=input_files, is_regression=bool(is_regression),
      examples_sha256=feature_cache.rows_sha256(
          [e.guid, e.text_a, e.text_b, e.label] for e in examples), **mode)


def cached_features(examples: Sequence[InputExample], sp_model_path: str,
                    max_seq_length: int, *, label_list: Optional[Sequence[str]] = None,
                    is_regression: bool = False, uncased: bool = False, task: str = "",
                    split: str = "", input_files: Iterable[str] = (), cache_dir: str,
                    sp: Optional[spm.SentencePieceProcessor] = None,
                    document: bool = False, max_segments: int = 0,
                    read_from: str = "start") -> str:
  """The path of a TFRecord file holding the features of `examples`, built if needed.

  Args:
    examples: the examples, in the order the records keep.
    sp_model_path: the SentencePiece model (checked by `tokenization.load_spiece`).
    max_seq_length, label_list, is_regression, uncased: as for `encode_example`.
    task, split: names, part of the key and of the file name.
    input_files: the files the examples were read from (`TaskSpec.input_files`); their
      sizes and modification times are part of the key.
    cache_dir: where cache files live (created if missing).
    sp: the already loaded model of `sp_model_path`, to skip loading it again.
    document: whole documents in segments of max_seq_length
      (`document_features.document_layout`, at most `max_segments` segments, 0: no cap),
      read by `document_features.document_dataset`; False: the truncating layout
      (`classifier_layout` with `read_from`), read by `classifier_dataset`.
  Returns:
    `cache_dir/<task>-<split>[-documents|-end]-<max_seq_length>-<key[:16]>.tfrecord`; its
    sidecar `<path>.json` holds the settings, the key and "num_examples".
  """
  if not is_regression and label_list is None:
    raise ValueError(f"cached_features({task!r}, {split!r}): classification needs "
                     f"label_list")
  if read_from not in READ_FROM:
    raise ValueError(f"cached_features: read_from must be one of {READ_FROM}, got "
                     f"{read_from!r}")
  if document and read_from != "start":
    raise ValueError("cached_features: read_from applies to the truncating layout; a "
                     "document is read whole (max_segments cuts its end)")
  examples = list(examples)
  settings = cache_settings(examples, sp_model_path, max_seq_length, label_list=label_list,
                            is_regression=is_regression, uncased=uncased, task=task,
                            split=split, input_files=input_files, document=document,
                            max_segments=max_segments, read_from=read_from)
  if document:
    serialize = document_features.serialize_document

    def layout(ids_a, ids_b, length):
      return document_features.document_layout(ids_a, ids_b, length, max_segments)
  else:
    serialize = serialize_features

    def layout(ids_a, ids_b, length):
      return classifier_layout(ids_a, ids_b, length, read_from)

  def records():
    model = sp if sp is not None else tokenization.load_spiece(sp_model_path)
    return (serialize(features, is_regression) for features in _encode_all(
        model, examples, max_seq_length, label_list, is_regression, uncased, layout))

  name = f"{task or 'examples'}-{split or 'all'}"
  name += "-documents" if document else "-end" if read_from == "end" else ""
  path, built = feature_cache.build_cache(
      settings, cache_dir=cache_dir, name=name, num_examples=len(examples),
      records=records)
  if built:
    logging.info("wrote %d examples' features to %s", len(examples), path)
  return path


# ---- the reader ------------------------------------------------------------------------------

def classifier_dataset(path: Union[str, Sequence[str]], batch_size: int, is_training: bool,
                       seed: Optional[int] = None, max_seq_length: Optional[int] = None,
                       is_regression: Optional[bool] = None, *,
                       input_context: Optional[tf.distribute.InputContext] = None,
                       shuffle_buffer_size: int = 100_000,
                       drop_remainder: Optional[bool] = None) -> tf.data.Dataset:
  """Batches of classifier inputs from cache files (`cached_features`).

  Args:
    path: a cache file, or several with the same settings.
    batch_size: examples per batch (per replica when used with `input_context`).
    is_training: shuffle (buffer `shuffle_buffer_size`, `seed`), repeat forever and drop
      the last partial batch; otherwise one pass in file order, last batch kept.
    seed: the shuffling seed (None: a different order every run).
    max_seq_length, is_regression: None takes them from the cache sidecar, a value is
      checked against it.
    input_context: from `distribute_datasets_from_function`; for training, pipeline i
      reads records i, i + n, ... of the n pipelines (evaluation reads everything).
    drop_remainder: override of the default (= is_training).
  Returns:
    A dataset of dicts: input_ids int32 [B, T], segment_ids int32 [B, T], input_mask
    float32 [B, T] (1.0 = padding), label_id int32 [B] (or float32 [B] for regression).
    B is static when the remainder is dropped.
  """
  paths, max_seq_length, is_regression = feature_cache.classifier_cache(
      path, "classifier_dataset", FORMAT, "classifier features", max_seq_length, is_regression)
  spec = feature_spec(max_seq_length, is_regression)

  def parse(serialized):
    parsed = tf.io.parse_example(serialized, spec)
    return {"input_ids": tf.cast(parsed["input_ids"], tf.int32),
            "segment_ids": tf.cast(parsed["segment_ids"], tf.int32),
            "input_mask": parsed["input_mask"],
            "label_id": (parsed["label_id"] if is_regression
                         else tf.cast(parsed["label_id"], tf.int32))}

  return feature_cache.record_batches(
      paths, parse, batch_size, is_training, seed, input_context=input_context,
      shuffle_buffer_size=shuffle_buffer_size, drop_remainder=drop_remainder)
