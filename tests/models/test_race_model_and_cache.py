"""RACE: the multiple choice model against a 1-class classifier run row by row (and their
checkpoints, either way), its config round trip and loss; the RACE feature cache against
`race_features` per question, its reuse, its key and its refusals.

The repository bundles no RACE data (data_prep/sample_data has none), so the data here is
a small RACE-layout directory written by the test: real Moby-Dick passages (the bundled
`data_prep/sample_data/moby_dick`) with questions about them written for the test.
"""

import dataclasses
import os
import re

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

import helpers
from helpers import small_config
from xlnet_tf.data import feature_cache
from xlnet_tf.data import race
from xlnet_tf.data import tagging_features
from xlnet_tf.data import tokenization
from xlnet_tf.models.xlnet_classifier import build_classifier
from xlnet_tf.models.xlnet_multiple_choice import XLNetMultipleChoice
from xlnet_tf.models.xlnet_multiple_choice import build_multiple_choice
from xlnet_tf.tasks.race import multiple_choice_loss

T, QA = 48, 12             # max_seq_length, max_qa_length of the cache tests


# ---- the model ---------------------------------------------------------------------------------

def _option_batch(rng, questions, options, length, n_token=50):
  """Random rows [B, C, T] in the classification layout's shape: left padding of varied
  length, segment A then B then <cls>."""
  ids = rng.integers(5, n_token, size=[questions, options, length]).astype(np.int32)
  segments = np.zeros_like(ids)
  mask = np.zeros(ids.shape, np.float32)
  for b in range(questions):
    for c in range(options):
      pad = int(rng.integers(0, length // 2))
      mask[b, c, :pad] = 1.0
      ids[b, c, :pad] = 0
      segments[b, c, :pad] = 4
      segments[b, c, length // 2:] = 1
      segments[b, c, -1] = 2
  return {"input_ids": ids, "segment_ids": segments, "input_mask": mask}


def test_multiple_choice_is_a_one_class_classifier_row_by_row(tmp_path):
  # Weights drawn wider than the default 0.02, so that the logits are of order 1 (not 1e-3)
  # and the 1e-6 below is a tight bound.
  config = small_config(initializer_range=0.15)
  model = build_multiple_choice(config, dropout_rate=0.0)
  assert isinstance(model, XLNetMultipleChoice) and model.num_classes == 1
  batch = _option_batch(np.random.default_rng(0), 3, 4, 10)
  got = model({k: tf.constant(v) for k, v in batch.items()}, training=False)["logits"]
  assert got.shape == (3, 4) and got.dtype == tf.float32
  assert np.ptp(got.numpy()) > 0.1

  # Its checkpoint restores into a plain 1-class classifier: every variable, both ways.
  classifier = build_classifier(config, 1, summary_type="last", dropout_rate=0.0)
  prefix = tf.train.Checkpoint(model=model).write(os.fspath(tmp_path / "mc" / "ckpt"))
  tf.train.Checkpoint(model=classifier).read(prefix).assert_consumed()
  assert len(classifier.weights) == len(model.weights)
  for ours, theirs in zip(model.weights, classifier.weights):
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())

  # The independent path: the classifier on one [1, T] row at a time, reshaped by hand.
  expected = np.zeros([3, 4], np.float32)
  for b in range(3):
    for c in range(4):
      row = {k: tf.constant(v[b, c][None]) for k, v in batch.items()}      # [1, T]
      expected[b, c] = classifier(row, training=False)["logits"].numpy()[0, 0]
  np.testing.assert_allclose(got.numpy(), expected, rtol=0, atol=1e-6)

  # A 1-class classifier's checkpoint (an existing RACE model) loads into the new class.
  other = build_classifier(config, 1, summary_type="last")
  prefix = tf.train.Checkpoint(model=other).write(os.fspath(tmp_path / "cls" / "ckpt"))
  loaded = build_multiple_choice(config)
  tf.train.Checkpoint(model=loaded).read(prefix).assert_consumed()
  for ours, theirs in zip(loaded.weights, other.weights):
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())

  # Any number of options.
  three = _option_batch(np.random.default_rng(1), 2, 3, 10)
  assert model(three, training=False)["logits"].shape == (2, 3)


def test_multiple_choice_config_round_trip():
  model = build_multiple_choice(small_config(), dropout_rate=0.2, summary_type="first",
                                use_proj=False)
  config = model.get_config()
  assert "num_classes" not in config and config["dropout_rate"] == 0.2
  clone = XLNetMultipleChoice.from_config(config)
  assert clone.get_config() == config and clone.config == model.config
  assert (clone.summary_type, clone.use_proj, clone.num_classes) == ("first", False, 1)
  clone.build()
  clone.set_weights(model.get_weights())
  feed = _option_batch(np.random.default_rng(2), 2, 4, 8)
  np.testing.assert_array_equal(clone(feed, training=False)["logits"].numpy(),
                                model(feed, training=False)["logits"].numpy())
  again = tf_keras.layers.deserialize(tf_keras.layers.serialize(model))   # registered
  assert type(again) is XLNetMultipleChoice and again.get_config() == config


def test_multiple_choice_loss_is_the_softmax_cross_entropy_over_options():
  logits = np.array([[1.0, 2.0, 0.5, -1.0], [0.0, 0.0, 3.0, 1.0]], np.float32)
  labels = np.array([1, 3], np.int32)
  total, count = multiple_choice_loss({"logits": tf.constant(logits)},
                                      {"label": tf.constant(labels)})
  log_softmax = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
  assert float(count) == 2.0
  assert float(total) == pytest.approx(-log_softmax[[0, 1], labels].sum(), rel=1e-6)


# ---- the cache ---------------------------------------------------------------------------------

def _answers():
  """The sample's answers in `read_race` order (middle files, then high; sorted names)."""
  order = sorted(helpers.RACE_SAMPLE, key=lambda s: (race.LEVELS.index(s[0]), s[1]))
  return [answer for s in order for answer in s[6]]


def test_race_cache_reads_back_race_features_in_order(spiece_model, tmp_path, monkeypatch):
  files = helpers.write_race_sample(tmp_path / "RACE")
  examples = race.read_race(os.fspath(tmp_path / "RACE"), "dev")
  assert len(examples) == 7 and {e.level for e in examples} == set(race.LEVELS)
  sp = tokenization.load_spiece(spiece_model)
  cache_dir = os.fspath(tmp_path / "cache")
  path = race.cached_features(examples, spiece_model, T, QA, split="dev", input_files=files,
                              cache_dir=cache_dir, sp=sp)
  assert re.fullmatch(rf"race-dev-{T}-[0-9a-f]{{16}}\.tfrecord", os.path.basename(path))

  batches = list(race.race_dataset(path, batch_size=3, is_training=False))
  assert [int(b["label"].shape[0]) for b in batches] == [3, 3, 1]          # file order, all
  read = {k: np.concatenate([b[k].numpy() for b in batches]) for k in batches[0]}
  assert {k: (v.dtype, v.shape) for k, v in read.items()} == {
      "input_ids": (np.int32, (7, 4, T)), "segment_ids": (np.int32, (7, 4, T)),
      "input_mask": (np.float32, (7, 4, T)), "label": (np.int32, (7,)),
      "level": (np.int32, (7,))}
  for i, example in enumerate(examples):                 # the independent path, per question
    features = race.race_features(sp, example, T, QA)
    for key in ("input_ids", "segment_ids", "input_mask"):
      np.testing.assert_array_equal(read[key][i], features[key], err_msg=f"{i} {key}")
    assert read["label"][i] == features["label"] == race.ANSWERS.index(_answers()[i]), i
    assert race.LEVELS[read["level"][i]] == example.level
  assert read["input_mask"].sum() > 0 and (read["input_mask"].sum(-1) == 0).any()  # both
  info = feature_cache.read_cache_info(path)
  assert info["format"] == race.FORMAT and info["num_examples"] == 7
  assert info["max_qa_length"] == QA and info["levels"] == ["middle", "high"]
  assert info["level_counts"] == {"middle": 4, "high": 3}

  # Training batches: [B, 4, T] with B static; the model and the loss take them as they are.
  batch = next(iter(race.race_dataset(path, 4, is_training=True, seed=1)))
  assert batch["input_ids"].shape == (4, 4, T) and batch["label"].shape == (4,)
  model = build_multiple_choice(small_config(n_token=4000))
  total, count = multiple_choice_loss(model(batch, training=False), batch)
  assert float(count) == 4.0 and np.isfinite(float(total))

  # A second call reuses the file without encoding anything.
  mtime = os.stat(path).st_mtime_ns

  def no_encoding(*args, **kwargs):
    raise AssertionError("race_features called: the cache was rebuilt")

  monkeypatch.setattr(race, "race_features", no_encoding)
  assert race.cached_features(examples, spiece_model, T, QA, split="dev", input_files=files,
                              cache_dir=cache_dir) == path
  assert os.stat(path).st_mtime_ns == mtime
  # ... but another max_qa_length is another cache (so it encodes: here, the error).
  with pytest.raises(AssertionError, match="rebuilt"):
    race.cached_features(examples, spiece_model, T, QA + 1, split="dev", input_files=files,
                         cache_dir=cache_dir)
  monkeypatch.undo()


def test_race_cache_key_and_refusals(spiece_model, tmp_path):
  helpers.write_race_sample(tmp_path / "RACE")
  examples = race.read_race(os.fspath(tmp_path / "RACE"), "dev")
  key = lambda e=examples, **kw: race.cache_settings(
      e, spiece_model, kw.pop("t", T), kw.pop("qa", QA), **kw)["key"]
  base = key()
  assert key() == base
  edited = [dataclasses.replace(examples[0], question="Who?")]
  assert len({base, key(qa=QA + 1), key(uncased=True), key(split="train"),
              key(examples[:4]), key(edited + examples[1:]), key(t=T + 8)}) == 7
  levels = race.cache_settings(examples[:4], spiece_model, T, QA)["levels"]
  assert levels == ["middle"]

  cache_dir = os.fspath(tmp_path / "cache")
  path = race.cached_features(examples[:2], spiece_model, T, QA, cache_dir=cache_dir)
  with pytest.raises(ValueError, match=rf"{re.escape(path)}: max_seq_length is {T + 1}"):
    race.race_dataset(path, 2, is_training=False, max_seq_length=T + 1)
  # A cache of another format (the tagger's) is refused, naming the file.
  other = tagging_features.cached_features(
      [tagging_features.TaggedSentence("s", ("Call", "me", "Ishmael"))], spiece_model, T,
      cache_dir=cache_dir)
  with pytest.raises(ValueError, match=rf"{re.escape(other)}: a 'xlnet_tf.tagging.v1' "
                                       rf"cache, not RACE features"):
    race.race_dataset(other, 2, is_training=False)
  with pytest.raises(ValueError, match=r"level 'elementary' is not one of"):
    race.cached_features([dataclasses.replace(examples[0], level="elementary")],
                         spiece_model, T, QA, cache_dir=cache_dir)
