"""Token embeddings of many texts on disk: what the ranking task computes once per (model,
collection) and reads at every step.

A store is a directory `<name>-<key16>/`:
  vectors.bin   float16, every text's token embeddings [n_i, D] one after another (row
                major), read through a memory map, so a collection larger than memory works;
  index.json    the text ids in order with their row offsets and lengths, D, and the key.
Its name carries the first 16 hex digits of a sha256 `key` of everything that changes the
vectors (the model's weights, the embedding settings, the texts): a change of model or
collection makes another store, the old one is left alone. It is written under a temporary
name and renamed when whole, so a store that exists is complete.

float16 keeps a store half the size of float32; the ranker takes cosines, and rounding a
unit vector to float16 (a relative error of at most 2^-11 per component) moves a cosine by
at most about 1e-3, typically far less (the errors of the components mostly cancel).

  >>> path = embedding_store.store_path(cache_dir, "documents", key)
  >>> if not embedding_store.holds(path, key):
  ...   embedding_store.write(path, key, ids, (vectors for each text), dim)
  >>> store = embedding_store.EmbeddingStore(path)
  >>> store.get("md-001-01")                      # float16 [n, D]
"""

import json
import os
import time
from typing import Any, Dict, Iterable, List, Optional, Sequence

import numpy as np

from xlnet_tf import paths
from xlnet_tf import settings_record

VECTORS_FILE = "vectors.bin"
INDEX_FILE = "index.json"
DTYPE = np.float16


def store_path(cache_dir: str, name: str, key: str) -> str:
  return os.path.join(cache_dir, f"{name}-{key[:16]}")


def exists(path: str) -> bool:
  return os.path.exists(os.path.join(path, INDEX_FILE))


def holds(path: str, key: str) -> bool:
  """Whether the store at `path` (its name carries `key`'s first 16 hex digits) exists and
  holds the embeddings of `key`; `settings_record.SettingsMismatch` when it holds another
  key's (the names of two keys collided, or the store was copied over)."""
  return exists(path) and settings_record.check(
      os.path.join(path, INDEX_FILE), {"key": key}, common_only=True,
      subject=f"the embedding store {path} holds other embeddings",
      remedy=f"Delete {path} to compute them again.")


def write(path: str, key: str, ids: Sequence[str], vectors: Iterable[np.ndarray],
          dim: int, info: Optional[Dict[str, Any]] = None) -> str:
  """Writes the store at `path`: `vectors` gives, in the order of `ids`, one array [n_i,
  dim] per text (n_i may be 0). Written whole (`paths.atomic_output`); an existing store of
  the same key is kept (another process wrote it first). The index records `info` and the
  seconds the writing took (computing the vectors included, when `vectors` computes them
  as it goes). Returns path."""
  start = time.perf_counter()
  try:
    with paths.atomic_output(path) as partial:
      os.makedirs(partial)
      offsets, lengths = [], []
      row = 0
      with open(os.path.join(partial, VECTORS_FILE), "wb") as f:
        for text_id, array in zip(ids, vectors):
          array = np.asarray(array, dtype=DTYPE)
          if array.ndim != 2 or array.shape[1] != dim:
            raise ValueError(f"{path}: the embeddings of {text_id!r} have shape "
                             f"{array.shape}, expected [n, {dim}]")
          if not np.all(np.isfinite(array)):
            raise ValueError(f"{path}: the embeddings of {text_id!r} are not finite")
          f.write(np.ascontiguousarray(array).tobytes())
          offsets.append(row)
          lengths.append(int(array.shape[0]))
          row += array.shape[0]
      if len(offsets) != len(ids):
        raise ValueError(f"{path}: {len(offsets)} texts embedded, {len(ids)} expected")
      paths.write_json(os.path.join(partial, INDEX_FILE), {
          "key": key, "dim": dim, "dtype": np.dtype(DTYPE).name, "rows": row,
          "ids": list(ids), "offsets": offsets, "lengths": lengths,
          "info": {**(info or {}), "seconds": round(time.perf_counter() - start, 3)}},
          indent=None)
  except OSError:
    if not exists(path):                  # not a store another process finished first
      raise
  return path


class EmbeddingStore:
  """A written store (`EmbeddingStore(path)`), read through a memory map."""

  def __init__(self, path: str):
    index_file = os.path.join(path, INDEX_FILE)
    try:
      with open(index_file) as f:
        index = json.load(f)
    except FileNotFoundError:
      raise FileNotFoundError(f"{path}: not an embedding store (no {INDEX_FILE})") from None
    except json.JSONDecodeError as e:
      raise ValueError(f"{index_file}: not valid JSON ({e}); delete {path} to rebuild "
                       f"it") from None
    self.path = path
    self.key = index["key"]
    self.dim = int(index["dim"])
    self.ids: List[str] = index["ids"]
    self.info = index.get("info", {})
    self.position = {text_id: i for i, text_id in enumerate(self.ids)}
    self.offsets = np.asarray(index["offsets"], np.int64)
    self.lengths = np.asarray(index["lengths"], np.int64)
    rows = int(index["rows"])
    vectors_file = os.path.join(path, VECTORS_FILE)
    expected = rows * self.dim * np.dtype(DTYPE).itemsize
    if os.path.getsize(vectors_file) != expected:
      raise ValueError(f"{vectors_file}: {os.path.getsize(vectors_file)} bytes, expected "
                       f"{expected} ({rows} rows of {self.dim}); delete {path} to rebuild it")
    self.vectors = (np.memmap(vectors_file, dtype=DTYPE, mode="r", shape=(rows, self.dim))
                    if rows else np.zeros((0, self.dim), DTYPE))

  def __len__(self) -> int:
    return len(self.ids)

  def get(self, text_id: str) -> np.ndarray:
    """float16 [n, D], the token embeddings of `text_id`."""
    i = self.position[text_id]
    return self.vectors[self.offsets[i]:self.offsets[i] + self.lengths[i]]

  def padded(self, positions: np.ndarray, length: int):
    """(float32 [..., length, D], float32 mask [..., length]) of the texts at `positions`
    (an int array of indices into `ids`, any shape), each cut to its first `length`
    vectors and right-padded with zeros."""
    flat = np.asarray(positions, np.int64).reshape(-1)
    out = np.zeros((flat.size, length, self.dim), np.float32)
    mask = np.zeros((flat.size, length), np.float32)
    for row, i in enumerate(flat):
      n = int(min(self.lengths[i], length))
      out[row, :n] = self.vectors[self.offsets[i]:self.offsets[i] + n]
      mask[row, :n] = 1.0
    shape = tuple(np.shape(positions))
    return out.reshape(shape + (length, self.dim)), mask.reshape(shape + (length,))
