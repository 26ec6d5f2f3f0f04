"""Token classification inputs: words -> pieces in the released classification layout, one
label per word on its FIRST piece; a TFRecord cache and its reader.

A sentence is a list of words (e.g. `brown.read_brown`). Each word is normalised and
encoded on its own (`tokenization.normalize_text`, lower-cased if `uncased`, then
`tokenization.encode_lines`, the digit-comma re-split included); a word that gives no
piece (one made only of combining marks, say) becomes one <unk>, so every word has a first
piece. The pieces of all words, in order, are the text A of the classification layout
(`classifier_features.classifier_layout`, constants in `layouts`): `pieces <sep> <cls>`,
padded on the LEFT to T, A cut to T - 2. For T = 12 and the words "The Pequod sailed"
(pieces, say, ▁The | ▁P e q u od | ▁sailed) tagged at, np, vbd (label ids 0, 5, 7):

  input_ids   0    0    0   ▁The ▁P  e    q    u   od ▁sailed <sep> <cls>
  segment_ids 4    4    4    0   0   0    0    0   0    0      0     2
  input_mask  1    1    1    0   0   0    0    0   0    0      0     0
  label_ids  -100 -100 -100  0   5  -100 -100 -100 -100  7    -100  -100

label_ids holds the tag's index in `label_list` at each word's first piece and
IGNORE_LABEL_ID (-100, PyTorch's and HuggingFace's `ignore_index`) everywhere else:
the other pieces of a word, <sep>, <cls> and the padding are not in the loss. An unlabeled
sentence (tags None) has NO_LABEL_ID (-1) at its words' first pieces, so `label_ids >= 0`
marks what is trained on and `label_ids != IGNORE_LABEL_ID` the word starts. Words whose
first piece is cut away by the truncation get no position: they are neither trained on nor
predicted (`encode_sentence` returns how many words were kept).

  >>> sp = tokenization.load_spiece("spiece.model")
  >>> features = encode_sentence(sp, sentence, 128, label_list=labels)
  >>> features["word_positions"]        # int32 [kept words]: their first pieces' positions
  >>> path = cached_features(sentences, "spiece.model", 128, label_list=labels,
  ...                        task="brown", split="train", cache_dir="cache")
  >>> ds = tagging_dataset(path, batch_size=32, is_training=True, seed=1)

The cache is the classifier's (`feature_cache`, as in `classifier_features.cached_features`:
a file `<task>-<split>-<T>-<key>.tfrecord` named by a hash of the SentencePiece model, T,
`uncased`, the label list, the input files' stamps and the sentences; a `.json` sidecar;
written under a temporary name and renamed). Records hold input_ids, segment_ids,
label_ids (int64 [T]) and input_mask (float [T]).
"""

import dataclasses
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

from absl import logging
import numpy as np
import sentencepiece as spm
import tensorflow as tf

from xlnet_tf.data import feature_cache
from xlnet_tf.data import tokenization
# The classifier's layout and unlabeled id; the cache is the classifier's (`feature_cache`).
from xlnet_tf.data.classifier_features import NO_LABEL_ID
from xlnet_tf.data.classifier_features import classifier_layout

FORMAT = "xlnet_tf.tagging.v1"
IGNORE_LABEL_ID = -100   # not in the loss: non-first pieces, <sep>, <cls>, padding
MODEL_INPUTS = ("input_ids", "segment_ids", "input_mask")


@dataclasses.dataclass(frozen=True)
class TaggedSentence:
  """One sentence of a tagging task.

  guid: unique within the corpus (Brown: "<file>:<line>").
  words: the words, raw (normalisation happens when encoding).
  tags: one tag string per word, or None (unlabeled).
  """
  guid: str
  words: Tuple[str, ...]
  tags: Optional[Tuple[str, ...]] = None

  def __post_init__(self):
    if self.tags is not None and len(self.tags) != len(self.words):
      raise ValueError(f"sentence {self.guid}: {len(self.words)} words but "
                       f"{len(self.tags)} tags")


# ---- the layout ------------------------------------------------------------------------------

def word_ids(sp: spm.SentencePieceProcessor, words: Sequence[str],
             uncased: bool = False) -> List[List[int]]:
  """The piece ids of each word, encoded on its own; a word without pieces -> [<unk>]."""
  if isinstance(words, str):
    raise TypeError("word_ids expects a list of words, got one str (split it first)")
  encoded = tokenization.encode_lines(
      sp, [tokenization.normalize_text(w, lower=uncased) for w in words])
  return [ids if ids else [tokenization.UNK_ID] for ids in encoded]


def tagging_layout(ids_per_word: Sequence[Sequence[int]], word_labels: Sequence[int],
                   max_seq_length: int) -> Dict[str, np.ndarray]:
  """The layout of one sentence given its words' piece ids and one label id per word.

  Args:
    ids_per_word: n lists of piece ids, none empty (see `word_ids`).
    word_labels: n label ids (NO_LABEL_ID for an unlabeled sentence).
    max_seq_length: T, at least 2.
  Returns:
    {"input_ids" int32 [T], "segment_ids" int32 [T], "input_mask" float32 [T] (the
     classifier's `A <sep> <cls>` layout of the concatenated pieces), "label_ids" int32 [T]
     (word labels at first pieces, IGNORE_LABEL_ID elsewhere), "word_positions" int32 [k]
     (the first pieces of the k words that were kept), "num_words" n}.
  """
  if len(word_labels) != len(ids_per_word):
    raise ValueError(f"{len(ids_per_word)} words but {len(word_labels)} labels")
  flat = [i for ids in ids_per_word for i in ids]
  input_ids, segment_ids, input_mask = classifier_layout(flat, None, max_seq_length)
  kept = min(len(flat), max_seq_length - 2)
  padding = max_seq_length - kept - 2
  starts = np.cumsum([0] + [len(ids) for ids in ids_per_word])[:-1]
  keep = starts < kept
  positions = (padding + starts[keep]).astype(np.int32)
  label_ids = np.full([max_seq_length], IGNORE_LABEL_ID, np.int32)
  label_ids[positions] = np.asarray(word_labels, np.int32)[keep]
  return {"input_ids": input_ids, "segment_ids": segment_ids, "input_mask": input_mask,
          "label_ids": label_ids, "word_positions": positions,
          "num_words": len(ids_per_word)}


def word_label_ids(sentence: TaggedSentence,
                   label_list: Optional[Sequence[str]]) -> List[int]:
  """Each word's tag index in `label_list` (NO_LABEL_ID for all if tags is None)."""
  if sentence.tags is None:
    return [NO_LABEL_ID] * len(sentence.words)
  if label_list is None:
    raise ValueError(f"sentence {sentence.guid}: a tagged sentence needs label_list")
  index = {label: i for i, label in enumerate(label_list)}
  ids = []
  for k, tag in enumerate(sentence.tags):
    if tag not in index:
      raise ValueError(f"sentence {sentence.guid}: word {k} {sentence.words[k]!r} has tag "
                       f"{tag!r}, which is not in the label list ({len(index)} labels)")
    ids.append(index[tag])
  return ids


def encode_sentence(sp: spm.SentencePieceProcessor, sentence: TaggedSentence,
                    max_seq_length: int, label_list: Optional[Sequence[str]] = None,
                    uncased: bool = False) -> Dict[str, Any]:
  """The model inputs of one sentence: `tagging_layout` of `word_ids`."""
  return tagging_layout(word_ids(sp, sentence.words, uncased),
                        word_label_ids(sentence, label_list), max_seq_length)


def encode_sentences(sp: spm.SentencePieceProcessor, sentences: Sequence[TaggedSentence],
                     max_seq_length: int, label_list: Optional[Sequence[str]] = None,
                     uncased: bool = False) -> Iterator[Dict[str, Any]]:
  """`encode_sentence` of many sentences (a generator), SentencePiece run once over all
  their words."""
  ids = word_ids(sp, [w for s in sentences for w in s.words], uncased)
  start = 0
  for sentence in sentences:
    end = start + len(sentence.words)
    yield tagging_layout(ids[start:end], word_label_ids(sentence, label_list),
                         max_seq_length)
    start = end


# ---- records ---------------------------------------------------------------------------------

def feature_spec(max_seq_length: int) -> Dict[str, tf.io.FixedLenFeature]:
  """The parsing spec of a cached record."""
  return {
      "input_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
      "segment_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
      "input_mask": tf.io.FixedLenFeature([max_seq_length], tf.float32),
      "label_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
  }


def serialize_features(features: Dict[str, Any]) -> bytes:
  """The output of `encode_sentence` as a serialized tf.train.Example."""
  def ints(values):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=np.ravel(values).tolist()))
  feature = {"input_ids": ints(features["input_ids"]),
             "segment_ids": ints(features["segment_ids"]),
             "input_mask": tf.train.Feature(float_list=tf.train.FloatList(
                 value=np.ravel(features["input_mask"]).tolist())),
             "label_ids": ints(features["label_ids"])}
  return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString(
      deterministic=True)


# ---- the cache (`feature_cache`) -------------------------------------------------------------

def cache_settings(sentences: Sequence[TaggedSentence], sp_model_path: str,
                   max_seq_length: int, *, label_list: Optional[Sequence[str]] = None,
                   uncased: bool = False, task: str = "", split: str = "",
                   input_files: Iterable[str] = ()) -> Dict[str, Any]:
  """Every setting the cached features depend on, and "key", the hash naming the cache."""
  return feature_cache.cache_settings(
      record_format=FORMAT, sp_model_path=sp_model_path, max_seq_length=max_seq_length,
      uncased=uncased, label_list=label_list, task=task, split=split,
      input_files=input_files, sentences_sha256=feature_cache.rows_sha256(
          [s.guid, list(s.words), s.tags and list(s.tags)] for s in sentences))


def cached_features(sentences: Sequence[TaggedSentence], sp_model_path: str,
                    max_seq_length: int, *, label_list: Optional[Sequence[str]] = None,
                    uncased: bool = False, task: str = "", split: str = "",
                    input_files: Iterable[str] = (), cache_dir: str,
                    sp: Optional[spm.SentencePieceProcessor] = None) -> str:
  """The path of a TFRecord file holding the features of `sentences`, built if needed.

  Args:
    sentences: the sentences, in the order the records keep.
    sp_model_path: the SentencePiece model (checked by `tokenization.load_spiece`).
    max_seq_length, label_list, uncased: as for `encode_sentence` (label_list may be None
      only if every sentence is unlabeled).
    task, split: names, part of the key and of the file name.
    input_files: the files the sentences were read from; their sizes and modification
      times are part of the key.
    cache_dir: where cache files live (created if missing).
    sp: the already loaded model of `sp_model_path`, to skip loading it again.
  Returns:
    `cache_dir/<task>-<split>-<max_seq_length>-<key[:16]>.tfrecord`; its sidecar
    `<path>.json` holds the settings, the key, "num_examples", "num_words" and
    "num_truncated_words" (words that lost their position to truncation).
  """
  sentences = list(sentences)
  settings = cache_settings(sentences, sp_model_path, max_seq_length, label_list=label_list,
                            uncased=uncased, task=task, split=split, input_files=input_files)
  counts = {"num_words": 0, "num_truncated_words": 0}

  def records(model):
    for features in encode_sentences(model, sentences, max_seq_length, label_list, uncased):
      counts["num_words"] += features["num_words"]
      counts["num_truncated_words"] += (features["num_words"]
                                        - len(features["word_positions"]))
      yield serialize_features(features)

  path, built = feature_cache.build_cache(
      settings, cache_dir=cache_dir, name=f"{task or 'sentences'}-{split or 'all'}",
      num_examples=len(sentences), what="sentences", summary=lambda: counts,
      records=lambda: records(sp if sp is not None
                              else tokenization.load_spiece(sp_model_path)))
  if built:
    logging.info("wrote %d sentences' features to %s (%d of %d words truncated away)",
                 len(sentences), path, counts["num_truncated_words"], counts["num_words"])
  return path


# ---- the reader ------------------------------------------------------------------------------

def tagging_dataset(path: Union[str, Sequence[str]], batch_size: int, is_training: bool,
                    seed: Optional[int] = None, max_seq_length: Optional[int] = None, *,
                    input_context: Optional[tf.distribute.InputContext] = None,
                    shuffle_buffer_size: int = 100_000,
                    drop_remainder: Optional[bool] = None) -> tf.data.Dataset:
  """Batches of tagging inputs from a cache file of `cached_features`, or several with the
  same settings: `batch_size` sentences a batch (per replica with an `input_context`), read
  as `feature_cache.record_batches` reads (shuffled and repeated when `is_training`).
  `max_seq_length` None takes it from the cache sidecar; a value is checked against it.

  Returns:
    A dataset of dicts: input_ids int32 [B, T], segment_ids int32 [B, T], input_mask
    float32 [B, T] (1.0 = padding), label_ids int32 [B, T] (IGNORE_LABEL_ID off the word
    starts). B is static when the remainder is dropped.
  """
  paths, info = feature_cache.cache_files(path, "tagging_dataset", FORMAT,
                                          "tagging features")
  max_seq_length = int(feature_cache.checked_setting(paths[0], info, "max_seq_length",
                                                     max_seq_length))
  spec = feature_spec(max_seq_length)

  def parse(serialized):
    parsed = tf.io.parse_example(serialized, spec)
    return {"input_ids": tf.cast(parsed["input_ids"], tf.int32),
            "segment_ids": tf.cast(parsed["segment_ids"], tf.int32),
            "input_mask": parsed["input_mask"],
            "label_ids": tf.cast(parsed["label_ids"], tf.int32)}

  return feature_cache.record_batches(
      paths, parse, batch_size, is_training, seed, input_context=input_context,
      shuffle_buffer_size=shuffle_buffer_size, drop_remainder=drop_remainder)
