"""Files for the preprocessing tools: local paths through Python's own file functions,
URLs (gs://, hdfs://, s3://, ...) through `tf.io.gfile`, which is imported only then.

The preprocessing tools never need TensorFlow for local files, so they start in a second
instead of the several seconds TensorFlow's import takes (in each worker process too).
"""

import glob as _glob
import hashlib
import json
import os
import shutil
import sys
from typing import IO, Any, List


def is_url(path: str) -> bool:
  return "://" in path


def _gfile():
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return tf.io.gfile


# tf.io.gfile.glob's `*` also matches names that start with a dot; so does ours.
_HIDDEN = {"include_hidden": True} if sys.version_info >= (3, 11) else {}


def glob(pattern: str) -> List[str]:
  """Paths matching the pattern (files and directories, hidden ones too), sorted."""
  if is_url(pattern):
    return sorted(_gfile().glob(pattern))
  return sorted(_glob.glob(pattern, **_HIDDEN))


def exists(path: str) -> bool:
  return _gfile().exists(path) if is_url(path) else os.path.exists(path)


def isdir(path: str) -> bool:
  return _gfile().isdir(path) if is_url(path) else os.path.isdir(path)


def size(path: str) -> int:
  """The file's length in bytes."""
  return _gfile().stat(path).length if is_url(path) else os.path.getsize(path)


def open_file(path: str, mode: str = "r") -> IO:
  """`open` for local paths, `tf.io.gfile.GFile` for URLs (modes r, rb, w, wb)."""
  if is_url(path):
    return _gfile().GFile(path, mode)
  return open(path, mode, encoding=None if "b" in mode else "utf-8")


def sha256(path: str) -> str:
  """Hex SHA-256 of the file's bytes (read in blocks)."""
  digest = hashlib.sha256()
  with open_file(path, "rb") as f:
    for block in iter(lambda: f.read(1 << 22), b""):
      digest.update(block)
  return digest.hexdigest()


def settings_key(values: Any) -> str:
  """The SHA-256 (hex) of `values` as canonical JSON (sorted keys): the one key of the
  package for what defines a cache, a shard or a stored result (file names take its first
  16 characters)."""
  return hashlib.sha256(json.dumps(values, sort_keys=True).encode("utf-8")).hexdigest()


def makedirs(path: str) -> None:
  if is_url(path):
    _gfile().makedirs(path)
  else:
    os.makedirs(path, exist_ok=True)


def remove(path: str) -> None:
  if is_url(path):
    _gfile().remove(path)
  else:
    os.remove(path)


def remove_tree(path: str) -> None:
  """Removes the directory `path` and everything below it."""
  if is_url(path):
    _gfile().rmtree(path)
  else:
    shutil.rmtree(path)


def rename(source: str, target: str) -> None:
  """Renames, replacing `target` if it exists (atomic for local files)."""
  if is_url(source) or is_url(target):
    _gfile().rename(source, target, overwrite=True)
  else:
    os.replace(source, target)
