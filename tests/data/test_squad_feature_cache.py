"""The SQuAD window cache: records equal to `squad_windows` field by field, reused when the
settings are the same, rebuilt when they change, refused when of another format, and read
shuffled yet deterministically for training (real questions from
data_prep/sample_data/qa)."""

import dataclasses
import glob
import json
import os
import re

import numpy as np
import pytest

from xlnet_tf.data import squad
from xlnet_tf.data import squad_features as sf
from xlnet_tf.data import tagging_features
from xlnet_tf.data import text_alignment
from xlnet_tf.data import tokenization

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

QA_FILES = sorted(glob.glob(os.path.join(
    ROOT, "data_prep", "sample_data",
    "qa", "*.json")))
# Tiny windows: many per paragraph, answers both inside and outside them.
T, STRIDE, QUERY = 64, 24, 16

# cache key (dataset name) -> SquadWindow attribute (or a function of the window)
FIELDS = {"input_ids": "input_ids", "segment_ids": "segment_ids",
          "input_mask": "input_mask", "p_mask": "p_mask", "cls_index": "cls_index",
          "start_positions": "start_position", "end_positions": "end_position",
          "is_impossible": "is_impossible"}


def _examples():
  files = [f for f in QA_FILES if os.path.basename(f) in ("squad.json", "quoref_sample.json")]
  return files, [e for path in files for e in squad.read_squad(path)[0]]


def _direct_windows(spiece_model, examples, is_training, doc_stride=STRIDE):
  sp = tokenization.load_spiece(spiece_model)
  continuation = text_alignment.continuation_processor(sp)
  return [w for e in examples for w in sf.squad_windows(
      sp, e, T, doc_stride, QUERY, is_training, continuation=continuation)]


def _expected(windows, name):
  attribute = FIELDS[name]
  return np.array([getattr(w, attribute) for w in windows])


def _read_all(path, **kwargs):
  batches = list(sf.squad_dataset(path, 5, is_training=False, **kwargs))
  return batches, {k: np.concatenate([b[k].numpy() for b in batches]) for k in batches[0]}


def test_cached_windows_equal_squad_windows(spiece_model, tmp_path):
  files, examples = _examples()
  path = sf.cached_windows(examples, spiece_model, T, STRIDE, QUERY, is_training=False,
                           split="dev", input_files=files, cache_dir=str(tmp_path))
  assert os.path.basename(path).startswith(f"squad-dev-{T}-")
  windows = _direct_windows(spiece_model, examples, is_training=False)
  assert len(windows) > 3 * len(examples)                       # several windows a question

  info = json.loads(open(path + ".json").read())
  assert info["format"] == sf.FORMAT == "xlnet_tf.squad.v1"
  assert info["num_examples"] == len(windows) and info["num_questions"] == len(examples)
  assert (info["doc_stride"], info["max_query_length"], info["is_training"]) == (
      STRIDE, QUERY, False)

  batches, got = _read_all(path)
  assert [len(b["input_ids"]) for b in batches][:-1] == [5] * (len(batches) - 1)
  dtypes = {k: v.dtype.name for k, v in batches[0].items()}
  assert dtypes == {"input_ids": "int32", "segment_ids": "int32", "cls_index": "int32",
                    "start_positions": "int32", "end_positions": "int32",
                    "window_id": "int32", "input_mask": "float32", "p_mask": "float32",
                    "is_impossible": "float32"}
  assert got["input_ids"].shape == (len(windows), T)
  np.testing.assert_array_equal(got["window_id"], np.arange(len(windows)))
  for name in FIELDS:
    np.testing.assert_array_equal(got[name], _expected(windows, name), err_msg=name)
  # evaluation: every window is impossible-labelled at <cls>
  np.testing.assert_array_equal(got["start_positions"], got["cls_index"])

  # the same settings: the file is reused, not rewritten
  stamp = os.stat(path).st_mtime_ns
  assert sf.cached_windows(examples, spiece_model, T, STRIDE, QUERY, is_training=False,
                           split="dev", input_files=files, cache_dir=str(tmp_path)) == path
  assert os.stat(path).st_mtime_ns == stamp

  with pytest.raises(ValueError, match=f"max_seq_length is {2 * T}, but the cache was "
                                       f"built with {T}"):
    sf.squad_dataset(path, 4, is_training=False, max_seq_length=2 * T)


def test_changed_settings_give_another_file(spiece_model, tmp_path):
  files, examples = _examples()
  kwargs = dict(split="dev", input_files=files, cache_dir=str(tmp_path))
  path = sf.cached_windows(examples, spiece_model, T, STRIDE, QUERY, False, **kwargs)
  other_stride = sf.cached_windows(examples, spiece_model, T, STRIDE + 8, QUERY, False,
                                   **kwargs)
  other_query = sf.cached_windows(examples, spiece_model, T, STRIDE, QUERY // 2, False,
                                  **kwargs)
  training = sf.cached_windows(examples, spiece_model, T, STRIDE, QUERY, True, **kwargs)
  moved = dataclasses.replace(examples[0], answers=tuple(
      squad.Answer(a.text, a.start) for a in examples[0].answers[1:]))
  other_answers = sf.cached_windows([moved] + examples[1:], spiece_model, T, STRIDE, QUERY,
                                    False, **kwargs)
  paths = [path, other_stride, other_query, training, other_answers]
  assert len(set(paths)) == len(paths)
  assert all(os.path.exists(p) and os.path.exists(p + ".json") for p in paths)

  # the other stride's file holds the other stride's windows
  windows = _direct_windows(spiece_model, examples, False, doc_stride=STRIDE + 8)
  _, got = _read_all(other_stride)
  assert len(got["window_id"]) == len(windows) != json.loads(
      open(path + ".json").read())["num_examples"]
  np.testing.assert_array_equal(got["input_ids"], _expected(windows, "input_ids"))


def test_a_cache_of_another_format_is_refused(spiece_model, tmp_path):
  sentences = [tagging_features.TaggedSentence("s0", ("Call", "me", "Ishmael"))]
  path = tagging_features.cached_features(sentences, spiece_model, T, cache_dir=str(tmp_path))
  with pytest.raises(ValueError, match=re.escape(path) + r": a 'xlnet_tf.tagging.v1' cache, "
                     r"not SQuAD windows"):
    sf.squad_dataset(path, 4, is_training=False)
  with pytest.raises(FileNotFoundError, match="no such feature cache file"):
    sf.squad_dataset(str(tmp_path / "missing.tfrecord"), 4, is_training=False)


def test_training_batches_are_shuffled_and_deterministic(spiece_model, tmp_path):
  files, examples = _examples()
  path = sf.cached_windows(examples, spiece_model, T, STRIDE, QUERY, is_training=True,
                           split="train", input_files=files, cache_dir=str(tmp_path))
  windows = _direct_windows(spiece_model, examples, is_training=True)
  n, batch = len(windows), 4

  def first_epoch(seed):
    ds = sf.squad_dataset(path, batch, is_training=True, seed=seed)
    out = []
    for b in ds.take(n // batch):
      assert b["input_ids"].shape == (batch, T)                 # static: remainder dropped
      out.append({k: v.numpy() for k, v in b.items()})
    return {k: np.concatenate([b[k] for b in out]) for k in out[0]}

  a, again, other = first_epoch(1), first_epoch(1), first_epoch(2)
  ids = a["window_id"]
  assert len(set(ids.tolist())) == len(ids)                     # an epoch's permutation
  assert not np.array_equal(ids, np.sort(ids))                  # shuffled
  for key in a:
    np.testing.assert_array_equal(a[key], again[key])           # the same for a seed
  assert not np.array_equal(ids, other["window_id"])
  # the labels follow their window: window_id matches records back to `squad_windows`
  chosen = [windows[i] for i in ids]
  for name in FIELDS:
    np.testing.assert_array_equal(a[name], _expected(chosen, name), err_msg=name)
  assert 0 < a["is_impossible"].sum() < len(ids)                # answers in some windows
