"""The TFRecord feature cache of the fine-tuning tasks (`classifier_features`,
`tagging_features`): a file per (task, split, settings), named by a hash of everything that
changes its contents, written under a temporary name and renamed, with a `.json` sidecar;
and its reader (shuffled, sharded, batched, parsed).

  >>> settings = cache_settings(record_format="xlnet_tf.classifier.v1", sp_model_path=...,
  ...                           max_seq_length=128, uncased=False, label_list=labels,
  ...                           task="sst-2", split="train", input_files=files,
  ...                           examples_sha256=rows_sha256(rows))
  >>> path, built = build_cache(settings, cache_dir="cache", name="sst-2-train",
  ...                           num_examples=len(rows), records=lambda: serialized,
  ...                           what="examples")
  >>> paths, info = cache_files(path, "classifier_dataset")
  >>> ds = record_batches(paths, parse, 32, is_training=True, seed=1)

The file is `cache_dir/<name>-<max_seq_length>-<key[:16]>.tfrecord` (`name` with any
character outside [A-Za-z0-9_.-] replaced by "_"); `key` is the SHA-256 of the settings
(the SentencePiece model's SHA-256, max_seq_length, casing, labels, task, split, the input
files' sizes and modification times, a hash of the rows, and what the task adds). A cache
is used only when its sidecar exists and holds the same key. Paths may be gs://
(tf.io.gfile).
"""

import hashlib
import json
import os
import re
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from absl import logging
import numpy as np
import tensorflow as tf

from xlnet_tf import paths
from xlnet_tf import settings_record
from xlnet_tf.data import storage
from xlnet_tf.data import tokenization


# ---- the key ---------------------------------------------------------------------------------

def file_stamps(input_files: Iterable[str]) -> List[List[Any]]:
  """[path, size, modification time (ns)] of each input file; a missing one raises."""
  stamps = []
  for path in input_files:
    if not tf.io.gfile.exists(path):
      raise FileNotFoundError(f"{path}: input file of the feature cache does not exist")
    stat = tf.io.gfile.stat(path)
    stamps.append([path, int(stat.length), int(stat.mtime_nsec)])
  return stamps


def rows_sha256(rows: Iterable[Any]) -> str:
  """SHA-256 of the rows (each JSON-encoded, one a line): the cached texts' hash."""
  digest = hashlib.sha256()
  for row in rows:
    digest.update(json.dumps(row).encode("utf-8"))
    digest.update(b"\n")
  return digest.hexdigest()


def cache_settings(*, record_format: str, sp_model_path: str, max_seq_length: int,
                   uncased: bool, label_list: Optional[Sequence[str]], task: str, split: str,
                   input_files: Iterable[str], **task_settings: Any) -> Dict[str, Any]:
  """Every setting cached features depend on (`task_settings` added as given, e.g. a
  hash of the rows), and "key", the hash naming the cache."""
  settings = {
      "format": record_format,
      "spiece_sha256": tokenization.spiece_sha256(sp_model_path),
      "max_seq_length": int(max_seq_length),
      "uncased": bool(uncased),
      "label_list": None if label_list is None else [str(label) for label in label_list],
      "task": task,
      "split": split,
      "input_files": file_stamps(input_files),
      **task_settings,
  }
  settings["key"] = storage.settings_key(settings)
  return settings


# ---- the files -------------------------------------------------------------------------------

def serialize_example(ints: Dict[str, Any], floats: Dict[str, Any]) -> bytes:
  """A tf.train.Example of int64 features `ints` and float features `floats` (each value
  flattened), serialized deterministically: one cached feature record."""
  def feature(values, as_float):
    values = np.ravel(values).tolist()
    return (tf.train.Feature(float_list=tf.train.FloatList(value=values)) if as_float
            else tf.train.Feature(int64_list=tf.train.Int64List(value=values)))
  features = {**{k: feature(v, False) for k, v in ints.items()},
              **{k: feature(v, True) for k, v in floats.items()}}
  return tf.train.Example(features=tf.train.Features(feature=features)).SerializeToString(
      deterministic=True)


def read_cache_info(path: str) -> Optional[Dict[str, Any]]:
  """The sidecar of a cache file (settings, "key", "num_examples"), None if it has none."""
  sidecar = path + ".json"
  if not tf.io.gfile.exists(sidecar):
    return None
  with tf.io.gfile.GFile(sidecar, "r") as f:
    try:
      return json.loads(f.read())
    except json.JSONDecodeError as e:
      raise ValueError(f"{sidecar}: not valid JSON ({e}); delete it to rebuild the cache") \
          from None


def build_cache(settings: Dict[str, Any], *, cache_dir: str, name: str,
                num_examples: Optional[int] = None,
                records: Callable[[], Iterable[bytes]], what: str = "examples",
                summary: Callable[[], Dict[str, Any]] = dict) -> Tuple[str, bool]:
  """(path, built): the cache file of `settings` (`cache_settings`), written if needed.

  Args:
    settings: with "key" and "max_seq_length".
    cache_dir: where cache files live (created if missing).
    name: the file name's stem (see the module docstring).
    num_examples: the number of records, kept in the sidecar (None: counted as they are
      written, for records made as they stream).
    records: returns the serialized records, in order; called only when the cache is
      built, after `cache_dir` is created and before the file is opened.
    what: the records' name in the log line of a reused cache.
    summary: called after the records are written; its values join the sidecar.
  Returns:
    The path, and whether it was (re)built (False: a cache with the same key was reused).
  """
  stem = re.sub(r"[^A-Za-z0-9_.-]", "_", name)
  path = os.path.join(cache_dir,
                      f"{stem}-{settings['max_seq_length']}-{settings['key'][:16]}.tfrecord")
  if tf.io.gfile.exists(path) and settings_record.check(
      path + ".json", settings, common_only=True,
      subject=f"the feature cache {path} was built from other inputs",
      remedy=f"Delete {path} and {path}.json to build it again."):
    logging.info("reusing cached features %s (%d %s)", path,
                 read_cache_info(path)["num_examples"], what)
    return path, False

  tf.io.gfile.makedirs(cache_dir)
  serialized = records()
  written = 0
  with paths.atomic_output(path) as partial:
    with tf.io.TFRecordWriter(partial) as writer:
      for record in serialized:
        writer.write(record)
        written += 1
    if num_examples is not None and written != num_examples:
      raise ValueError(f"{path}: {written} records written, {num_examples} expected")
  # The sidecar last: a cache without one is unfinished (built again).
  settings_record.write(path + ".json", {**settings, **summary(), "num_examples": written})
  return path, True


# ---- the reader ------------------------------------------------------------------------------

def cache_files(path: Union[str, Sequence[str]], reader: str,
                record_format: Optional[str] = None,
                what: str = "features") -> Tuple[List[str], Optional[Dict[str, Any]]]:
  """(paths, the first one's sidecar or None) of one cache file or several; `reader`
  names the caller in the error of an empty list. With `record_format`, a cache whose
  sidecar names another format is refused (naming the file, its format and `what` the
  reader expected)."""
  paths = [path] if isinstance(path, str) else list(path)
  if not paths:
    raise ValueError(f"{reader}: no cache files given")
  for p in paths:
    if not tf.io.gfile.exists(p):
      raise FileNotFoundError(f"{p}: no such feature cache file (see cached_features)")
  info = read_cache_info(paths[0])
  if record_format and info is not None and info.get("format") != record_format:
    raise ValueError(f"{paths[0]}: a {info.get('format')!r} cache, not {what} "
                     f"({record_format})")
  return paths, info


def checked_setting(path: str, info: Optional[Dict[str, Any]], name: str, given: Any) -> Any:
  """`given`, checked against the cache sidecar's value; the sidecar's value if None."""
  recorded = None if info is None else info.get(name)
  if given is None:
    if recorded is None:
      raise ValueError(f"{path}: no {name} given and no cache sidecar {path}.json to take "
                       f"it from")
    return recorded
  if recorded is not None and recorded != given:
    raise ValueError(f"{path}: {name} is {given!r}, but the cache was built with "
                     f"{recorded!r} (see {path}.json)")
  return given


def classifier_cache(path: Union[str, Sequence[str]], reader: str, record_format: str,
                     what: str, max_seq_length: Optional[int],
                     is_regression: Optional[bool]) -> Tuple[List[str], int, bool]:
  """(paths, max_seq_length, is_regression) of classifier cache files (`cache_files`): the
  two settings read from the sidecar, a given value checked against it
  (`checked_setting`)."""
  paths, info = cache_files(path, reader, record_format, what)
  return (paths, int(checked_setting(paths[0], info, "max_seq_length", max_seq_length)),
          bool(checked_setting(paths[0], info, "is_regression", is_regression)))


def record_batches(paths: Sequence[str], parse: Callable[[tf.Tensor], Dict[str, tf.Tensor]],
                   batch_size: int, is_training: bool, seed: Optional[int] = None, *,
                   input_context: Optional[tf.distribute.InputContext] = None,
                   shuffle_buffer_size: int = 100_000,
                   drop_remainder: Optional[bool] = None) -> tf.data.Dataset:
  """`parse` (serialized records [B] -> a dict of tensors) of batches of the records.

  is_training: shuffle (buffer `shuffle_buffer_size`, `seed`), repeat forever and drop the
  last partial batch; otherwise one pass in file order, last batch kept. For training
  with an `input_context`, pipeline i reads records i, i + n, ... of the n pipelines.
  drop_remainder overrides the default (= is_training).
  """
  if drop_remainder is None:
    drop_remainder = is_training
  ds = tf.data.TFRecordDataset(paths)
  if is_training:
    if input_context is not None and input_context.num_input_pipelines > 1:
      ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    ds = ds.shuffle(shuffle_buffer_size, seed=seed, reshuffle_each_iteration=True).repeat()
  ds = ds.batch(batch_size, drop_remainder=drop_remainder)
  ds = ds.map(parse, num_parallel_calls=tf.data.AUTOTUNE)
  return ds.prefetch(tf.data.AUTOTUNE)
