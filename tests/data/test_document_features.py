"""Documents of any length as classifier inputs (`document_features`): the layout in
segments re-derived here in plain numpy on real text (State of the Union speeches, bundled),
its cache, and the batches: bucketed by segment count for training (less padding than
padding to the longest, deterministic, resumable by skipping), in order for evaluation.
Also the truncating layout's other end (`classifier_layout(read_from="end")`)."""

import glob
import os

import numpy as np
import pytest
import tensorflow as tf

from xlnet_tf.data import classifier_features
from xlnet_tf.data import document_features
from xlnet_tf.data import tokenization
from xlnet_tf.data.classifier_tasks import InputExample

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPEECHES = sorted(glob.glob(os.path.join(ROOT, "data_prep", "sample_data", "sotu", "*_?.txt")))
SEP, CLS, UNK = 4, 3, 0               # the released ids, written out
PAD_SEGMENT, S = 4, 32


def speech_documents(count=48, first=60):
  """`count` real documents of very different lengths: n words (n = 12, 30, 60, ..., 900
  cycling) of the speeches from the `first`th on, from their 200th word (past the
  salutations, which repeat); label the party (the file name's last letter)."""
  examples = []
  for k, path in enumerate(SPEECHES[first:first + count]):
    with open(path, encoding="utf-8") as f:
      words = f.read().split()
    n = [12, 30, 60, 110, 200, 350, 600, 900][k % 8]
    examples.append(InputExample(guid=f"train-{k}", text_a=" ".join(words[200:200 + n]),
                                 text_b=None, label=path[-5]))
  return examples


def expected_layout(ids_a, ids_b, seq_len, max_segments=0):
  """The document layout, derived here: the pieces laid out from the END of K * S slots."""
  b = [] if ids_b is None else list(ids_b)[:seq_len - 3]
  tail = [SEP, CLS] if not b else [SEP] + b + [SEP, CLS]
  tail_segments = [0, 2] if not b else [0] + [1] * (len(b) + 1) + [2]
  a = list(ids_a)
  if max_segments:
    a = a[:max(0, max_segments * seq_len - len(tail))]
  n = len(a) + len(tail)
  k = -(-n // seq_len)
  ids = np.full(k * seq_len, UNK)
  segments = np.full(k * seq_len, PAD_SEGMENT)
  mask = np.ones(k * seq_len, np.float32)
  ids[k * seq_len - n:] = a + tail
  segments[k * seq_len - n:] = [0] * len(a) + tail_segments
  mask[k * seq_len - n:] = 0.0
  return ids.reshape(k, seq_len), segments.reshape(k, seq_len), mask.reshape(k, seq_len)


@pytest.fixture(scope="module")
def speech_ids(spiece_model):
  sp = tokenization.load_spiece(spiece_model)
  return [classifier_features.encode_text(sp, e.text_a) for e in speech_documents()]


def test_document_layout_of_real_speeches_is_the_rule(speech_ids):
  lengths = sorted(len(ids) for ids in speech_ids)
  assert lengths[0] < S - 2 and lengths[-1] > 20 * S          # one segment to dozens
  for i, ids_a in enumerate(speech_ids):
    ids_b = speech_ids[(i + 1) % len(speech_ids)][:[0, 5, 40][i % 3]]    # none, short, cut
    for max_segments in (0, 3):
      got = document_features.document_layout(ids_a, ids_b or None, S, max_segments)
      want = expected_layout(ids_a, ids_b or None, S, max_segments)
      for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
      input_ids, segment_ids, input_mask = got
      assert list(input_ids[-1, -2:]) == [SEP, CLS] and segment_ids[-1, -1] == 2
      assert input_mask[0].min() == 0.0                       # no whole padding segment
      if max_segments:
        assert len(input_ids) <= max_segments
        kept = input_ids[input_mask == 0.0]
        cut = len(kept) - (min(len(ids_b), S - 3) + 3 if ids_b else 2)
        assert list(kept[:cut]) == list(ids_a[:cut])          # a keeps its start


def test_a_text_of_one_segment_is_the_classifier_layout(spiece_model):
  sp = tokenization.load_spiece(spiece_model)
  texts = ["The Congress assembles this year under the shadow of a great calamity.",
           "Call me Ishmael.", "It was a Saturday night in December."]
  ids = [classifier_features.encode_text(sp, t) for t in texts]
  assert len(ids[0]) + len(ids[1]) + 3 <= 64
  for ids_a, ids_b in ((ids[0], None), (ids[1], ids[2]), (ids[2], []), (ids[0], ids[1])):
    document = document_features.document_layout(ids_a, ids_b, 64)
    released = classifier_features.classifier_layout(ids_a, ids_b, 64)
    assert document[0].shape == (1, 64)
    for d, r in zip(document, released):
      np.testing.assert_array_equal(d[0], r)
      assert d.dtype == r.dtype


def test_read_from_end_keeps_the_last_pieces_of_text_a(speech_ids):
  ids_a, ids_b = speech_ids[7], speech_ids[1][:40]       # a long text; b longer than S - 3
  input_ids, segment_ids, input_mask = classifier_features.classifier_layout(
      ids_a, None, S, read_from="end")
  assert list(input_ids) == list(ids_a[-(S - 2):]) + [SEP, CLS]
  assert list(segment_ids) == [0] * (S - 1) + [2] and input_mask.sum() == 0
  input_ids, segment_ids, _ = classifier_features.classifier_layout(ids_a, ids_b[:10], S,
                                                                    read_from="end")
  assert list(input_ids) == list(ids_a[-(S - 13):]) + [SEP] + ids_b[:10] + [SEP, CLS]
  assert list(segment_ids) == [0] * (S - 12) + [1] * 11 + [2]
  input_ids, _, _ = classifier_features.classifier_layout(ids_a, ids_b, S, read_from="end")
  assert list(input_ids) == [SEP] + ids_b[:S - 3] + [SEP, CLS]      # b cut at its end
  short = classifier_features.classifier_layout(ids_a[:5], None, S, read_from="end")
  for e, s in zip(short, classifier_features.classifier_layout(ids_a[:5], None, S)):
    np.testing.assert_array_equal(e, s)                      # nothing cut: the same
  with pytest.raises(ValueError, match="read_from must be one of"):
    classifier_features.classifier_layout(ids_a, None, S, read_from="middle")


def _cache(spiece_model, tmp_path, examples, **mode):
  return classifier_features.cached_features(
      examples, spiece_model, S, label_list=["d", "r"], task="sotu", split="train",
      cache_dir=str(tmp_path), **mode)


def test_the_cache_key_depends_on_the_mode_and_the_released_key_is_unchanged(
    spiece_model, tmp_path):
  examples = speech_documents(count=4)
  settings = {}
  for name, mode in (("released", {}), ("end", {"read_from": "end"}),
                     ("documents", {"document": True}),
                     ("capped", {"document": True, "max_segments": 3})):
    settings[name] = classifier_features.cache_settings(
        examples, spiece_model, S, label_list=["d", "r"], task="sotu", split="train", **mode)
  assert set(settings["released"]) == {     # what the truncating cache always recorded
      "format", "spiece_sha256", "max_seq_length", "uncased", "label_list", "task", "split",
      "input_files", "is_regression", "examples_sha256", "key"}
  assert settings["released"]["format"] == "xlnet_tf.classifier.v1"
  assert settings["documents"]["format"] == "xlnet_tf.classifier_document.v1"
  assert len({s["key"] for s in settings.values()}) == 4
  paths = {name: _cache(spiece_model, tmp_path, examples, **mode) for name, mode in (
      ("released", {}), ("documents", {"document": True}),
      ("capped", {"document": True, "max_segments": 3}))}
  assert len(set(paths.values())) == 3 and "-documents-" in paths["documents"]
  with pytest.raises(ValueError, match="a .xlnet_tf.classifier.v1. cache, not document"):
    document_features.document_dataset(paths["released"], 2, is_training=False)


def _rows(batch):
  """{the document's pieces (padding left out): its row} of a batch [B, K, S]."""
  rows = {}
  for i in range(batch["input_ids"].shape[0]):
    ids, mask = batch["input_ids"][i].numpy(), batch["input_mask"][i].numpy()
    rows[tuple(ids[mask == 0.0])] = {k: batch[k][i].numpy() for k in batch}
  return rows


def test_training_batches_come_from_one_bucket_padded_to_their_own_longest(
    spiece_model, speech_ids, tmp_path):
  path = _cache(spiece_model, tmp_path, speech_documents(), document=True)
  layouts = {}
  for ids in speech_ids:
    layout = expected_layout(ids, None, S)
    layouts[tuple(layout[0][layout[2] == 0.0])] = layout
  longest = max(len(layout[0]) for layout in layouts.values())
  dataset = document_features.document_dataset(path, 4, is_training=True, seed=3)
  batches = list(dataset.take(40))
  padding, padding_to_longest, seen = 0, 0, set()
  for batch in batches:
    counts = batch["num_segments"].numpy()
    k = batch["input_ids"].shape[1]
    assert batch["input_ids"].shape == (4, k, S)
    assert k == counts.max()                                   # its own longest
    buckets = {int(n - 1).bit_length() for n in counts}        # 1, 2, 3-4, 5-8, ...
    assert len(buckets) == 1, counts
    for piece_ids, row in _rows(batch).items():
      want = layouts[piece_ids]                                # a document of the data
      n = len(want[0])
      assert row["num_segments"] == n
      for key, value in zip(("input_ids", "segment_ids", "input_mask"), want):
        np.testing.assert_array_equal(row[key][k - n:], value)          # at the end
      np.testing.assert_array_equal(row["input_mask"][:k - n], 1.0)     # padding first
      np.testing.assert_array_equal(row["segment_ids"][:k - n], PAD_SEGMENT)
      seen.add(piece_ids)
    padding += int((k - counts).sum())
    padding_to_longest += int((longest - counts).sum())
  assert len(seen) == len(layouts)                             # every document comes
  assert longest >= 25 and padding * 10 < padding_to_longest, (padding, padding_to_longest)

  # The same batches for the same seed; a resumed run skips to the same place.
  again = list(document_features.document_dataset(path, 4, is_training=True,
                                                  seed=3).skip(25).take(15))
  for ours, theirs in zip(again, batches[25:]):
    for key in ours:
      np.testing.assert_array_equal(ours[key].numpy(), theirs[key].numpy())
  other = list(document_features.document_dataset(path, 4, is_training=True,
                                                  seed=4).take(5))
  assert any(o["input_ids"].shape != b["input_ids"].shape or
             not np.array_equal(o["input_ids"].numpy(), b["input_ids"].numpy())
             for o, b in zip(other, batches))                  # another seed, other batches


def test_evaluation_reads_every_document_once_in_order(spiece_model, speech_ids, tmp_path):
  examples = speech_documents()
  path = _cache(spiece_model, tmp_path, examples, document=True, max_segments=6)
  rows = []
  for batch in document_features.document_dataset(path, 5, is_training=False):
    k = batch["input_ids"].shape[1]
    assert k == batch["num_segments"].numpy().max() <= 6
    for i in range(batch["input_ids"].shape[0]):
      n = int(batch["num_segments"][i])
      rows.append([batch[key][i, k - n:].numpy()
                   for key in ("input_ids", "segment_ids", "input_mask")] +
                  [int(batch["label_id"][i])])
  assert len(rows) == len(examples) == 48
  for row, ids, example in zip(rows, speech_ids, examples):
    for got, want in zip(row, expected_layout(ids, None, S, max_segments=6)):
      np.testing.assert_array_equal(got, want)
    assert row[3] == ["d", "r"].index(example.label)


def test_documents_shard_across_input_pipelines(spiece_model, tmp_path):
  path = _cache(spiece_model, tmp_path, speech_documents(count=16), document=True)

  def documents(pipeline):
    context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=pipeline,
                                         num_replicas_in_sync=2)
    dataset = document_features.document_dataset(path, 2, is_training=True, seed=1,
                                                 input_context=context)
    return {piece_ids for batch in dataset.take(64) for piece_ids in _rows(batch)}
  first, second = documents(0), documents(1)
  assert first and second and not first & second and len(first | second) == 16


def test_unbucketed_training_batches_mix_lengths_in_shuffled_order(spiece_model, tmp_path):
  """bucket_by_segments=False: each batch is the next 4 documents of the shuffled stream
  (the same stream as tf.data's shuffle of the records with that seed), whatever their
  lengths, padded to the batch's own longest."""
  path = _cache(spiece_model, tmp_path, speech_documents(), document=True)
  dataset = document_features.document_dataset(path, 4, is_training=True, seed=3,
                                               bucket_by_segments=False)
  batches = list(dataset.take(10))
  order = [int(c) for c in tf.data.TFRecordDataset([path]).map(
      lambda r: tf.io.parse_single_example(r, document_features.feature_spec(False))[
          "num_segments"]).shuffle(100_000, seed=3).repeat().take(40)]
  counts = np.concatenate([b["num_segments"].numpy() for b in batches])
  np.testing.assert_array_equal(counts, order)                 # the shuffled order, kept
  mixed = 0
  for batch in batches:
    k = batch["input_ids"].shape[1]
    assert k == batch["num_segments"].numpy().max()
    mixed += len({int(n - 1).bit_length() for n in batch["num_segments"].numpy()}) > 1
  assert mixed >= 3                                            # lengths are not grouped
