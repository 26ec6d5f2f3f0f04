"""The on-disk store of token embeddings (`data.embedding_store`): what goes in comes back
(as float16), padded batches, whole-or-nothing writes, a store of another key refused, and
damage named; the one cache key (`storage.settings_key`)."""

import os

import numpy as np
import pytest

from xlnet_tf import settings_record
from xlnet_tf.data import embedding_store
from xlnet_tf.data import storage


def _arrays():
  rng = np.random.default_rng(0)
  return {"a": rng.normal(size=(3, 4)), "b": np.zeros((0, 4)), "c": rng.normal(size=(5, 4))}


def test_round_trip_and_padding(tmp_path):
  arrays = _arrays()
  key = storage.settings_key({"model": "m", "texts": "t"})
  path = embedding_store.store_path(str(tmp_path), "documents", key)
  assert path.endswith("documents-" + key[:16])
  embedding_store.write(path, key, list(arrays), list(arrays.values()), dim=4)
  store = embedding_store.EmbeddingStore(path)
  assert store.key == key and len(store) == 3 and store.ids == ["a", "b", "c"]
  for text_id, array in arrays.items():
    np.testing.assert_array_equal(store.get(text_id), array.astype(np.float16))
  vectors, mask = store.padded(np.array([[0, 2], [1, 0]]), 4)
  assert vectors.shape == (2, 2, 4, 4) and mask.shape == (2, 2, 4)
  np.testing.assert_array_equal(vectors[0, 0, :3], arrays["a"].astype(np.float16))
  np.testing.assert_array_equal(vectors[0, 1, :4], arrays["c"][:4].astype(np.float16))
  assert mask[0, 0].tolist() == [1, 1, 1, 0] and mask[0, 1].tolist() == [1, 1, 1, 1]
  assert mask[1, 0].tolist() == [0, 0, 0, 0] and not vectors[1, 0].any()


def test_a_store_key_is_the_settings_as_canonical_json():
  assert (storage.settings_key({"layer": -1, "texts": "t"}) ==
          storage.settings_key({"texts": "t", "layer": -1}))
  assert (storage.settings_key({"layer": -1, "texts": "t"}) !=
          storage.settings_key({"layer": 0, "texts": "t"}))


def test_a_failed_write_leaves_nothing(tmp_path):
  path = str(tmp_path / "documents-x")
  with pytest.raises(ValueError, match=r"the embeddings of 'b' are not finite"):
    embedding_store.write(path, "k", ["a", "b"], [np.ones((2, 4)), np.full((1, 4), np.nan)],
                          dim=4)
  with pytest.raises(ValueError, match=r"the embeddings of 'a' have shape \(2, 3\), "
                                       r"expected \[n, 4\]"):
    embedding_store.write(path, "k", ["a"], [np.ones((2, 3))], dim=4)
  assert os.listdir(tmp_path) == []


def test_damage_is_named(tmp_path):
  path = str(tmp_path / "queries-x")
  embedding_store.write(path, "k", ["a"], [np.ones((2, 4))], dim=4)
  with open(os.path.join(path, embedding_store.VECTORS_FILE), "ab") as f:
    f.write(b"\0\0")
  with pytest.raises(ValueError, match=r"vectors.bin: 18 bytes, expected 16 \(2 rows of "
                                       r"4\); delete .* to rebuild it"):
    embedding_store.EmbeddingStore(path)
  with pytest.raises(FileNotFoundError, match="not an embedding store"):
    embedding_store.EmbeddingStore(str(tmp_path / "missing"))


def test_a_store_of_another_key_is_refused_naming_both(tmp_path):
  path = str(tmp_path / "documents-x")
  embedding_store.write(path, "k1", ["a"], [np.ones((1, 4))], dim=4)
  assert embedding_store.holds(path, "k1")
  assert not embedding_store.holds(str(tmp_path / "absent"), "k1")
  with pytest.raises(settings_record.SettingsMismatch,
                     match=r"the embedding store .*documents-x holds other embeddings .*\n"
                           r"  key: 'k1' recorded, 'k2' now\nDelete "):
    embedding_store.holds(path, "k2")
