"""RACE (multiple choice reading comprehension): the data layout and the model inputs.

Layout: DATA_DIR/{train,dev,test}/{middle,high}/*.txt, each file one JSON object with
`article` (str), `questions` [Q] (str), `options` [Q][4] (str) and `answers` [Q] ("A".."D").

Inputs per option, as released: `article <sep> question+option <sep> <cls>` in the
classification layout (`layouts`: padded on the LEFT). The question+option text is
the question with its "_" replaced by the option (cloze questions), else the question, a
space and the option. The QA part keeps its LAST `max_qa_length` pieces; the article is
cut at its end to fit. Four rows per question; the model's logits are reshaped to [B, 4].

  >>> examples = read_race("RACE", "dev")
  >>> features = race_features(sp, examples[0], max_seq_length=512, max_qa_length=128)

A TFRecord cache of the features (`feature_cache`, as `tagging_features.cached_features`:
a file `race-<split>-<T>-<key>.tfrecord` named by a hash of the SentencePiece model, T,
max_qa_length, `uncased`, the levels, the input files' stamps and the examples; a `.json`
sidecar; written under a temporary name and renamed) and its reader, batches of questions:

  >>> path = cached_features(examples, "spiece.model", 512, 128, split="dev",
  ...                        cache_dir="cache")
  >>> ds = race_dataset(path, batch_size=8, is_training=False)   # input_ids [B, 4, T], ...

A record is one question: input_ids, segment_ids (int64 [4*T]) and input_mask (float
[4*T]), its four rows one after the other; label (int64, -1 unlabeled) and level (int64,
the index of the question's level in LEVELS, -1 for none).
"""

import collections
import dataclasses
import glob
import json
import os
from typing import Any, Dict, Iterable, List, Optional, Sequence, Union

from absl import logging
import numpy as np
import sentencepiece as spm
import tensorflow as tf

from xlnet_tf.data import feature_cache
from xlnet_tf.data import tokenization
from xlnet_tf.data.classifier_features import classifier_layout
from xlnet_tf.data.classifier_readers import delimited

LEVELS = ("middle", "high")
NUM_OPTIONS = 4
ANSWERS = "ABCD"
FORMAT = "xlnet_tf.race.v1"
NO_LEVEL = -1            # the level index of a question read without a level


@dataclasses.dataclass(frozen=True)
class RaceExample:
  example_id: str
  article: str
  question: str
  options: Sequence[str]
  label: Optional[int]              # index of the right option; None when unlabeled
  level: str = ""


def qa_text(question: str, option: str) -> str:
  """The question with its blank filled by the option, or question + " " + option."""
  if "_" in question:
    return question.replace("_", option)
  return f"{question} {option}"


def parse_race_file(path: str, values: Dict, level: str = "") -> List[RaceExample]:
  """The questions of one RACE JSON object; errors name the file and the field."""
  for field in ("article", "questions", "options"):
    if field not in values:
      raise ValueError(f"{path}: missing field {field!r}")
  questions, options = values["questions"], values["options"]
  answers = values.get("answers")
  if len(options) != len(questions) or (answers is not None and
                                        len(answers) != len(questions)):
    raise ValueError(f"{path}: {len(questions)} questions but {len(options)} option lists"
                     f" and {len(answers) if answers is not None else 0} answers")
  base = values.get("id") or os.path.basename(path)
  out = []
  for k, question in enumerate(questions):
    if len(options[k]) != NUM_OPTIONS:
      raise ValueError(f"{path}: question {k} has {len(options[k])} options; RACE has "
                       f"{NUM_OPTIONS}")
    label = None
    if answers is not None:
      if answers[k] not in ANSWERS:
        raise ValueError(f"{path}: question {k}: answer {answers[k]!r} is not one of A-D")
      label = ANSWERS.index(answers[k])
    out.append(RaceExample(f"{base}-{k}", values["article"], question, tuple(options[k]),
                           label, level))
  return out


def read_race(data_dir: str, split: str, levels: Sequence[str] = LEVELS
              ) -> List[RaceExample]:
  examples = []
  for level in levels:
    files = sorted(glob.glob(os.path.join(data_dir, split, level, "*.txt")))
    if not files:
      raise FileNotFoundError(f"{os.path.join(data_dir, split, level)}: no *.txt files; "
                              f"expected the RACE layout {split}/{{middle,high}}/*.txt")
    for path in files:
      with open(path, encoding="utf-8") as f:
        try:
          values = json.load(f)
        except json.JSONDecodeError as error:
          raise ValueError(f"{path}: not valid JSON ({error})") from None
        except UnicodeDecodeError:
          raise delimited.utf8_error(path) from None
      examples.extend(parse_race_file(path, values, level))
  return examples


def race_features(sp: spm.SentencePieceProcessor, example: RaceExample,
                  max_seq_length: int, max_qa_length: int,
                  uncased: bool = False) -> Dict[str, np.ndarray]:
  """input_ids, segment_ids int32 [4, T], input_mask float32 [4, T], label int32 []."""
  article = tokenization.encode_ids(sp, tokenization.normalize_text(example.article,
                                                                    lower=uncased))
  rows = []
  for option in example.options:
    qa = tokenization.encode_ids(sp, tokenization.normalize_text(
        qa_text(example.question, option), lower=uncased))[-max_qa_length:]
    context = article[:max(0, max_seq_length - 3 - len(qa))]
    rows.append(classifier_layout(context, qa, max_seq_length))
  input_ids, segment_ids, input_mask = (np.stack(parts) for parts in zip(*rows))
  return {"input_ids": input_ids, "segment_ids": segment_ids, "input_mask": input_mask,
          "label": np.int32(-1 if example.label is None else example.label)}


# ---- records ---------------------------------------------------------------------------------

def level_index(example: RaceExample) -> int:
  """The index of the example's level in LEVELS (NO_LEVEL for ""); another name raises."""
  if not example.level:
    return NO_LEVEL
  if example.level not in LEVELS:
    raise ValueError(f"question {example.example_id}: level {example.level!r} is not one of "
                     f"{list(LEVELS)}")
  return LEVELS.index(example.level)


def feature_spec(max_seq_length: int) -> Dict[str, tf.io.FixedLenFeature]:
  """The parsing spec of a cached record (one question, its four rows flattened)."""
  size = NUM_OPTIONS * max_seq_length
  return {
      "input_ids": tf.io.FixedLenFeature([size], tf.int64),
      "segment_ids": tf.io.FixedLenFeature([size], tf.int64),
      "input_mask": tf.io.FixedLenFeature([size], tf.float32),
      "label": tf.io.FixedLenFeature([], tf.int64),
      "level": tf.io.FixedLenFeature([], tf.int64),
  }


def serialize_features(features: Dict[str, Any], level: int) -> bytes:
  """The output of `race_features` and the question's `level_index` as a serialized
  tf.train.Example."""
  def ints(values):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=np.ravel(values).tolist()))
  feature = {"input_ids": ints(features["input_ids"]),
             "segment_ids": ints(features["segment_ids"]),
             "input_mask": tf.train.Feature(float_list=tf.train.FloatList(
                 value=np.ravel(features["input_mask"]).tolist())),
             "label": ints(features["label"]),
             "level": ints(level)}
  return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString(
      deterministic=True)


# ---- the cache (`feature_cache`) -------------------------------------------------------------

def _levels(examples: Sequence[RaceExample]) -> List[str]:
  """The examples' levels, each once, in LEVELS order (others, "" among them, first)."""
  return sorted({e.level for e in examples},
                key=lambda level: (LEVELS.index(level) if level in LEVELS else -1, level))


def cache_settings(examples: Sequence[RaceExample], sp_model_path: str, max_seq_length: int,
                   max_qa_length: int, *, uncased: bool = False, split: str = "",
                   input_files: Iterable[str] = ()) -> Dict[str, Any]:
  """Every setting the cached features depend on, and "key", the hash naming the cache:
  the common ones (`feature_cache.cache_settings`, task "race"), max_qa_length, "levels"
  (the examples' levels), "level_names" (LEVELS, what the records' level indices name) and
  a hash of the examples."""
  return feature_cache.cache_settings(
      record_format=FORMAT, sp_model_path=sp_model_path, max_seq_length=max_seq_length,
      uncased=uncased, label_list=list(ANSWERS), task="race", split=split,
      input_files=input_files, max_qa_length=int(max_qa_length), levels=_levels(examples),
      level_names=list(LEVELS), examples_sha256=feature_cache.rows_sha256(
          [e.example_id, e.article, e.question, list(e.options), e.label, e.level]
          for e in examples))


def cached_features(examples: Sequence[RaceExample], sp_model_path: str,
                    max_seq_length: int, max_qa_length: int, *, uncased: bool = False,
                    split: str = "", input_files: Iterable[str] = (), cache_dir: str,
                    sp: Optional[spm.SentencePieceProcessor] = None) -> str:
  """The path of a TFRecord file holding the features of `examples`, built if needed.

  Args:
    examples: the questions (`read_race`), in the order the records keep.
    sp_model_path: the SentencePiece model (checked by `tokenization.load_spiece`).
    max_seq_length, max_qa_length, uncased: as for `race_features`.
    split: a name, part of the key and of the file name.
    input_files: the files the examples were read from; their sizes and modification
      times are part of the key.
    cache_dir: where cache files live (created if missing).
    sp: the already loaded model of `sp_model_path`, to skip loading it again.
  Returns:
    `cache_dir/race-<split>-<max_seq_length>-<key[:16]>.tfrecord`; its sidecar
    `<path>.json` holds the settings, the key, "num_examples" and "level_counts" (questions
    per level; "" for none).
  """
  examples = list(examples)
  levels = [level_index(e) for e in examples]       # unknown levels fail before any work
  settings = cache_settings(examples, sp_model_path, max_seq_length, max_qa_length,
                            uncased=uncased, split=split, input_files=input_files)

  def records():
    model = sp if sp is not None else tokenization.load_spiece(sp_model_path)
    for example, level in zip(examples, levels):
      yield serialize_features(
          race_features(model, example, max_seq_length, max_qa_length, uncased), level)

  path, built = feature_cache.build_cache(
      settings, cache_dir=cache_dir, name=f"race-{split or 'all'}",
      num_examples=len(examples), what="questions", records=records,
      summary=lambda: {"level_counts": dict(collections.Counter(e.level for e in examples))})
  if built:
    logging.info("wrote %d questions' features to %s", len(examples), path)
  return path


# ---- the reader ------------------------------------------------------------------------------

def race_dataset(path: Union[str, Sequence[str]], batch_size: int, is_training: bool,
                 seed: Optional[int] = None, max_seq_length: Optional[int] = None, *,
                 input_context: Optional[tf.distribute.InputContext] = None,
                 shuffle_buffer_size: int = 100_000,
                 drop_remainder: Optional[bool] = None) -> tf.data.Dataset:
  """Batches of questions from a cache file of `cached_features`, or several with the same
  settings: `batch_size` questions a batch (per replica with an `input_context`), read as
  `feature_cache.record_batches` reads (shuffled and repeated when `is_training`; otherwise
  one pass in file order). `max_seq_length` None takes it from the cache sidecar; a value
  is checked against it.

  Returns:
    A dataset of dicts: input_ids int32 [B, 4, T], segment_ids int32 [B, 4, T], input_mask
    float32 [B, 4, T] (1.0 = padding), label int32 [B] (-1 unlabeled), level int32 [B] (the
    index in LEVELS, NO_LEVEL for none). B is static when the remainder is dropped.
  Raises:
    ValueError naming the file: a cache of another format, or whose level indices name
    other levels than LEVELS; a max_seq_length other than the cache's.
  """
  paths, info = feature_cache.cache_files(path, "race_dataset", FORMAT, "RACE features")
  if info is not None and info.get("level_names") != list(LEVELS):
    raise ValueError(f"{paths[0]}: its level indices name {info.get('level_names')}, not "
                     f"{list(LEVELS)} (see {paths[0]}.json); rebuild the cache")
  max_seq_length = int(feature_cache.checked_setting(paths[0], info, "max_seq_length",
                                                     max_seq_length))
  spec = feature_spec(max_seq_length)

  def parse(serialized):
    parsed = tf.io.parse_example(serialized, spec)
    rows = lambda x: tf.reshape(x, [-1, NUM_OPTIONS, max_seq_length])     # [B, 4, T]
    return {"input_ids": tf.cast(rows(parsed["input_ids"]), tf.int32),
            "segment_ids": tf.cast(rows(parsed["segment_ids"]), tf.int32),
            "input_mask": rows(parsed["input_mask"]),
            "label": tf.cast(parsed["label"], tf.int32),
            "level": tf.cast(parsed["level"], tf.int32)}

  return feature_cache.record_batches(
      paths, parse, batch_size, is_training, seed, input_context=input_context,
      shuffle_buffer_size=shuffle_buffer_size, drop_remainder=drop_remainder)
