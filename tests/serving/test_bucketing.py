"""Serving pads each batch to its bucket, not to max_seq_length, with the same predictions.

The reference is always the fixed-length path (padding to max_seq_length, the released
layout), which the other serving tests tie to the Python model: the bucketed classifier
export against the fixed-length one on every held-out movie review (dev + test, 2,100),
the tagger on every held-out Brown sentence, the SQuAD reader on the bundled QA samples.
Tiny random models (2 layers, d_model 16) and the tests' 4000-piece SentencePiece model.
Their weights are drawn with stddev 0.5, not 0.02: at 0.02 the attention barely moves a
tiny model's outputs, and a padding-dependent bug could hide under the 1e-5 tolerance; at
0.5 the same texts with less padding change a "first" summary's probabilities by 0.1 or
more (checked below), so equality is a real test.

The bucket ladder and the layouts are checked fast; the exports and the sweeps over every
held-out text are slow.
"""

import glob
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from helpers import small_config
from xlnet_tf import model_directory
from xlnet_tf.data import brown
from xlnet_tf.data import classifier_tasks
from xlnet_tf.data import squad
from xlnet_tf.data import tokenization
from xlnet_tf.models.xlnet_classifier import build_classifier
from xlnet_tf.models.xlnet_squad import build_squad_model
from xlnet_tf.models.xlnet_tagger import build_tagger
from xlnet_tf.serving import squad_export
from xlnet_tf.serving import squad_text
from xlnet_tf.serving.classifier_export import ClassifierServing
from xlnet_tf.serving.classifier_export import export_classifier
from xlnet_tf.serving.classifier_export import resolve_bucketed
from xlnet_tf.serving.tagger_export import TaggerServing
from xlnet_tf.serving.tagger_export import export_tagger
from xlnet_tf.serving.text_encoder import XLNetTextEncoder
from xlnet_tf.serving.text_layouts import bucket_lengths
from xlnet_tf.serving.text_layouts import classifier_inputs
from xlnet_tf.serving.text_layouts import classifier_layout
from xlnet_tf.serving.text_layouts import padded_length
from xlnet_tf.models.xlnet_classifier import ClassifierSpec
from xlnet_tf.models.xlnet_tagger import TaggerSpec

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
QA_FILES = sorted(glob.glob(os.path.join(ROOT, "data_prep", "sample_data", "qa", "*.json")))
SEQ = 64          # the classifier's and tagger's max_seq_length: buckets 16, 24, 32, 48, 64
BATCH = 32        # consecutive held-out texts per request
TOLERANCE = 1e-5


def _config():
  return small_config(n_token=4000, initializer_range=0.5)


def _held_out_reviews():
  """Every sentence of the movie_reviews held-out split (dev + test), in file order."""
  task = classifier_tasks.get_task("movie_reviews")
  return [e.text_a for split in ("dev", "test") for e in task.read(None, split)]


def _batches(items, size=BATCH):
  return [items[i:i + size] for i in range(0, len(items), size)]


# ---- the bucket ladder (pure) ------------------------------------------------------------------

def test_bucket_lengths_are_a_short_ladder_capped_at_max_seq_length():
  assert bucket_lengths(128) == (16, 24, 32, 48, 64, 96, 128)
  assert bucket_lengths(512) == (16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512)
  assert bucket_lengths(100) == (16, 24, 32, 48, 64, 96, 100)
  assert bucket_lengths(384) == (16, 24, 32, 48, 64, 96, 128, 192, 256, 384)
  assert bucket_lengths(17) == (16, 17) and bucket_lengths(16) == (16,)
  assert bucket_lengths(12) == (12,) and bucket_lengths(1) == (1,)
  for top in range(1, 1100):
    ladder = bucket_lengths(top)
    assert ladder[-1] == top and list(ladder) == sorted(set(ladder))
    assert all(n % 8 == 0 for n in ladder[:-1])
    # Past the first bucket, a row of n tokens is padded to less than 1.5 n.
    assert all(b <= 1.5 * (a + 1) for a, b in zip(ladder, ladder[1:]))
  assert len(bucket_lengths(4096)) == 17
  with pytest.raises(ValueError, match="positive"):
    bucket_lengths(0)


def test_padded_length_is_the_smallest_bucket_holding_the_longest_row():
  cases = [([3, 16, 5], 128, 0, 16), ([17], 128, 0, 24), ([24, 1], 128, 0, 24),
           ([25], 128, 0, 32), ([97, 2], 128, 0, 128), ([128], 128, 0, 128),
           ([40], 100, 0, 48), ([99], 100, 0, 100), ([5], 12, 0, 12),
           ([], 128, 0, 16),                    # an empty batch: the smallest bucket
           ([3], 128, 20, 24), ([3], 128, 200, 128)]   # a floor (a head's top-k)
  graph = tf.function(padded_length, reduce_retracing=True)
  for rows, top, floor, want in cases:
    lengths = tf.constant(rows, tf.int64)
    assert int(padded_length(lengths, top, floor)) == want, (rows, top, floor)
    assert int(graph(lengths, top, floor)) == want, (rows, top, floor)
  assert padded_length(tf.constant([7], tf.int32), 64).dtype == tf.int64


# ---- the layout --------------------------------------------------------------------------------

def test_bucketed_layout_is_the_fixed_layout_without_its_left_padding(spiece_model):
  encoder = XLNetTextEncoder(spiece_model)
  reviews = _held_out_reviews()
  ids = encoder.tokenize(tf.constant(reviews[:256]))
  ids_b = encoder.tokenize(tf.constant(reviews[256:512]))
  seen = set()
  for seq_len in (3, 9, 20, 64, 128):
    for size in (1, 5, 32, 256):
      for start in range(0, 256, max(size, 64)):
        a, b = ids[start:start + size], ids_b[start:start + size]
        for pair in (None, b):
          fixed = classifier_layout(a, pair, seq_len)
          bucketed = classifier_layout(a, pair, seq_len, bucketed=True)
          real = seq_len - fixed["input_mask"].numpy().sum(axis=1)     # tokens per row
          length = bucketed["input_ids"].shape[1]
          assert length == min(b for b in bucket_lengths(seq_len) if b >= real.max())
          seen.add((seq_len, length))
          for key in ("input_ids", "segment_ids", "input_mask"):
            np.testing.assert_array_equal(bucketed[key].numpy(),
                                          fixed[key].numpy()[:, seq_len - length:])
          assert (fixed["input_mask"].numpy()[:, :seq_len - length] == 1).all()
  assert {length for top, length in seen if top == 128} >= {32, 48, 64, 96}

  # In a graph: the length is dynamic, [B, None].
  spec = tf.TensorSpec([None], tf.string)
  inputs = tf.function(lambda t: classifier_inputs(encoder, t, None, 128, bucketed=True),
                       input_signature=[spec]).get_concrete_function()
  for value in inputs.structured_outputs.values():
    assert value.shape.as_list() == [None, None]
  assert inputs(tf.constant(["A gripping film."]))["input_ids"].shape == (1, 16)
  assert inputs(tf.constant([], tf.string))["input_ids"].shape == (0, 16)


# ---- the classifier export ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def classifier_exports(spiece_model, tmp_path_factory):
  """(spec, bucketed SavedModel, fixed-length SavedModel) of one tiny random classifier."""
  work = tmp_path_factory.mktemp("bucketing")
  spec = ClassifierSpec(task_name="movie_reviews",
                        labels=("negative", "positive"), max_seq_length=SEQ)
  tf.keras.utils.set_random_seed(7)
  model = build_classifier(_config(), 2, dropout_rate=0.0)
  model_dir = str(work / "model")
  model_directory.save(model, model_dir, spec, spiece_model)
  bucketed = export_classifier(model_dir, str(work / "bucketed"))
  # Today's fixed-length export, through the export command's --fixed_length.
  fixed = str(work / "fixed")
  run = subprocess.run([sys.executable, "-m", "experiments.export_saved_model",
                        f"--model_dir={model_dir}", f"--export_dir={fixed}", "--fixed_length"],
                       cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT), capture_output=True,
                       text=True, check=False)
  assert run.returncode == 0, run.stderr[-3000:]
  return spec, bucketed, fixed


@pytest.mark.slow
def test_bucketed_classifier_export_equals_the_fixed_length_one_on_every_held_out_review(
    classifier_exports, spiece_model):
  spec, bucketed_dir, fixed_dir = classifier_exports
  bucketed = tf.saved_model.load(bucketed_dir).signatures["serving_default"]
  fixed = tf.saved_model.load(fixed_dir).signatures["serving_default"]
  encoder = XLNetTextEncoder(spiece_model)
  reviews = _held_out_reviews()
  assert len(reviews) == 2100
  # Consecutive batches of 32, then single reviews (batch 1): the shortest, the longest
  # and some between.
  singles = [min(reviews, key=len), max(reviews, key=len)] + reviews[::150]
  requests = _batches(reviews) + [[text] for text in singles]
  worst, lengths = 0.0, set()
  for texts in requests:
    texts = tf.constant(texts)
    got, want = bucketed(text_a=texts), fixed(text_a=texts)
    worst = max(worst, float(np.abs(got["probabilities"] - want["probabilities"]).max()))
    np.testing.assert_array_equal(got["label_id"], want["label_id"])
    np.testing.assert_array_equal(got["label"], want["label"])
    lengths.add(classifier_inputs(encoder, texts, None, SEQ, bucketed=True)["input_ids"]
                .shape[1])
  print(f"\n{len(reviews)} held-out reviews, padded lengths {sorted(lengths)}: max "
        f"|probability diff| {worst:.1e}")
  assert worst <= TOLERANCE
  assert lengths >= {16, 24, 32, 48, 64}              # every bucket served, and cut at T
  empty = bucketed(text_a=tf.constant([], tf.string))["probabilities"]
  assert empty.shape == (0, 2)

  # One concrete function per signature, taking any batch and any bucket.
  loaded = tf.saved_model.load(bucketed_dir)
  assert sorted(loaded.signatures) == ["serving_default", "serving_ids"]
  text_spec = loaded.signatures["serving_default"].structured_input_signature[1]
  assert text_spec["text_a"].shape.as_list() == [None]


@pytest.mark.slow
def test_serving_ids_still_takes_ids_padded_to_max_seq_length(classifier_exports):
  _, bucketed_dir, fixed_dir = classifier_exports
  for export_dir in (bucketed_dir, fixed_dir):
    ids = tf.saved_model.load(export_dir).signatures["serving_ids"]
    for name, spec in ids.structured_input_signature[1].items():
      assert spec.shape.as_list() == [None, SEQ], name
    row = [0] * (SEQ - 3) + [20, 4, 3]
    out = ids(input_ids=tf.constant([row], tf.int32),
              segment_ids=tf.constant([[4] * (SEQ - 3) + [0, 0, 2]], tf.int32),
              input_mask=tf.constant([[1.0] * (SEQ - 3) + [0.0] * 3]))
    assert out["probabilities"].shape == (1, 2)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=rf"input_ids has shape \[1, 16\]; expected \[batch, {SEQ}\]"):
      ids(input_ids=tf.constant([row[-16:]], tf.int32),
          segment_ids=tf.constant([[4] * 13 + [0, 0, 2]], tf.int32),
          input_mask=tf.constant([[1.0] * 13 + [0.0] * 3]))


@pytest.mark.slow
def test_the_model_card_says_how_the_export_pads(classifier_exports):
  _, bucketed_dir, fixed_dir = classifier_exports
  card = open(os.path.join(bucketed_dir, "README.md"), encoding="utf-8").read()
  assert ("- **Padding**: on the left, a batch that fits one segment to its bucket, the "
          "smallest of 16, 24, 32, 48, 64 that holds its longest row; a longer batch in "
          "segments of max_seq_length 64; serving_ids: ids padded to max_seq_length") in card
  card = open(os.path.join(fixed_dir, "README.md"), encoding="utf-8").read()
  assert "- **Padding**: on the left, every row to max_seq_length 64 (fixed length)" in card


@pytest.mark.slow
@pytest.mark.parametrize("summary_type", ["mean", "attn"])
def test_the_other_padding_free_summaries_bucket_alike(spiece_model, summary_type):
  spec = ClassifierSpec(task_name="movie_reviews",
                        labels=("negative", "positive"), max_seq_length=SEQ,
                        summary_type=summary_type)
  model = build_classifier(_config(), 2, dropout_rate=0.0,
                           summary_type=summary_type)
  assert ClassifierServing(model, spec, spiece_model).bucketed           # the default
  bucketed = ClassifierServing(model, spec, spiece_model).signatures()["serving_default"]
  fixed = ClassifierServing(model, spec, spiece_model,
                            bucketed=False).signatures()["serving_default"]
  worst = 0.0
  for texts in _batches(_held_out_reviews()[::3]):
    got, want = bucketed(text_a=tf.constant(texts)), fixed(text_a=tf.constant(texts))
    worst = max(worst, float(np.abs(got["probabilities"] - want["probabilities"]).max()))
  assert worst <= TOLERANCE


def test_summaries_that_read_padding_stay_fixed_length(spiece_model):
  """"first" reads position 0 (padding when a row is short) and "mean_with_padding"
  averages the padding: bucketing would change their outputs, so they are not bucketed."""
  texts = tf.constant(_held_out_reviews()[:8])                     # bucket 48 of T = 64
  models = {summary_type: build_classifier(_config(), 2, dropout_rate=0.0,
                                           summary_type=summary_type)
            for summary_type in ("first", "mean_with_padding")}
  # (Built after the models: seeding TensorFlow in eager mode clears the kernel cache, and
  # with it the SentencePiece resource of an encoder built before.)
  encoder = XLNetTextEncoder(spiece_model)
  for summary_type, model in models.items():
    spec = ClassifierSpec(task_name="movie_reviews",
                          labels=("negative", "positive"),
                          max_seq_length=SEQ, summary_type=summary_type)
    assert resolve_bucketed(spec, None) is False and resolve_bucketed(spec, False) is False
    with pytest.raises(ValueError, match=f"summary_type '{summary_type}' reads padding"):
      resolve_bucketed(spec, True)
    assert not ClassifierServing(model, spec, spiece_model).bucketed
    # Why: the same texts padded less give other probabilities (by far more than the
    # tolerance: the control of the equality tests).
    short = classifier_inputs(encoder, texts, None, SEQ, bucketed=True)
    assert short["input_ids"].shape[1] == 48
    fixed = tf.nn.softmax(model(classifier_inputs(encoder, texts, None, SEQ))["logits"])
    assert np.abs(fixed - tf.nn.softmax(model(short)["logits"])).max() > 0.01
  last = ClassifierSpec(task_name="t", labels=("a", "b"))
  assert resolve_bucketed(last, None) is True and resolve_bucketed(last, False) is False


# ---- the tagger --------------------------------------------------------------------------------

@pytest.mark.slow
def test_bucketed_tagger_equals_the_fixed_length_one_on_every_held_out_sentence(
    spiece_model, tmp_path):
  sentences = brown.read_brown()
  splits = brown.split_sentences(sentences)
  held_out = [" ".join(s.words) for split in ("dev", "test") for s in splits[split]]
  assert len(held_out) == 690
  spec = TaggerSpec("brown", tuple(brown.tag_list(splits["train"])),
                    max_seq_length=SEQ)
  tf.keras.utils.set_random_seed(11)
  model = build_tagger(_config(), spec.num_labels)
  model_dir = str(tmp_path / "tagger")
  model_directory.save(model, model_dir, spec, spiece_model)
  bucketed = tf.saved_model.load(export_tagger(model_dir, str(tmp_path / "bucketed"))
                                 ).signatures["serving_default"]
  fixed = TaggerServing(model, spec, spiece_model, bucketed=False).signatures()[
      "serving_default"]
  worst, untagged = 0.0, 0
  for texts in _batches(held_out) + [[text] for text in held_out[::100]]:
    got, want = bucketed(text=tf.constant(texts)), fixed(text=tf.constant(texts))
    for key in ("tags", "tag_ids", "words", "num_words", "num_tagged"):
      np.testing.assert_array_equal(got[key], want[key], err_msg=key)
    worst = max(worst, float(np.abs(got["probabilities"] - want["probabilities"]).max()))
    untagged += int(tf.reduce_sum(want["num_words"] - want["num_tagged"]))
  print(f"\n{len(held_out)} held-out Brown sentences ({untagged} words past "
        f"max_seq_length {SEQ}): tags equal, max |probability diff| {worst:.1e}")
  assert worst <= TOLERANCE
  assert untagged > 0                                  # truncation at T exercised


# ---- SQuAD -------------------------------------------------------------------------------------

def test_squad_window_is_the_fixed_window_without_its_right_padding(spiece_model):
  """The released SQuAD layout pads on the right and <cls> is the last REAL token, so the
  bucketed window is the fixed one cut after L columns (padding only)."""
  encoder = XLNetTextEncoder(spiece_model)
  examples = [e for path in QA_FILES for e in squad.read_squad(path)[0]]
  questions = tf.constant([e.question for e in examples])
  contexts = tf.constant([e.context for e in examples])
  seq_len = 384
  fixed = squad_text.squad_inputs(encoder, questions, contexts, seq_len, 64)
  for rows in (slice(0, 1), slice(0, 4), slice(4, 12), slice(None)):
    cut = squad_text.squad_inputs(encoder, questions[rows], contexts[rows], seq_len, 64,
                                  bucketed=True, min_length=5)
    length = cut["input_ids"].shape[1]
    real = fixed["cls_index"].numpy()[rows] + 1
    assert length == min(b for b in bucket_lengths(seq_len) if b >= real.max())
    for key in ("input_ids", "segment_ids", "input_mask", "p_mask", "raw_begin", "raw_end"):
      np.testing.assert_array_equal(cut[key].numpy(), fixed[key].numpy()[rows, :length],
                                    err_msg=key)
    assert (fixed["input_mask"].numpy()[rows, length:] == 1).all()
    for key in ("cls_index", "paragraph_length", "paragraph_truncated"):
      np.testing.assert_array_equal(cut[key].numpy(), fixed[key].numpy()[rows])
  ids = fixed["input_ids"].numpy()
  assert (ids[np.arange(len(ids)), fixed["cls_index"].numpy()] == tokenization.CLS_ID).all()


@pytest.mark.slow
def test_bucketed_squad_reader_answers_like_the_fixed_length_one(spiece_model):
  examples = [e for path in QA_FILES for e in squad.read_squad(path)[0]]
  questions = [e.question for e in examples] + ["Who?", "Where did the ship sail from?"]
  contexts = [e.context for e in examples] + ["", "The Pequod sailed from Nantucket."]
  tf.keras.utils.set_random_seed(3)
  model = build_squad_model(_config(), start_n_top=8, end_n_top=8,
                            dropout_rate=0.0)
  settings = dict(max_seq_length=384, max_query_length=64, max_answer_length=20,
                  null_score_diff_threshold=0.0)
  fixed = squad_export.SquadServing(model, spiece_model, **settings, bucketed=False)
  bucketed = squad_export.SquadServing(model, spiece_model, **settings)
  assert bucketed.bucketed and bucketed.min_length == 8
  # The signatures' concrete functions, as saved (test_squad_serving reloads an export).
  served = bucketed.signatures()["serving_default"]
  reference = fixed.signatures()["serving_default"]
  answered = truncated = 0
  # Batches of 1 (short windows: the smallest buckets), 4 and all at once.
  requests = [[k] for k in range(0, len(questions), 3)] + [
      list(range(k, min(k + 4, len(questions)))) for k in range(0, len(questions), 4)] + [
          list(range(len(questions)))]
  for rows in requests:
    inputs = {"question": tf.constant([questions[k] for k in rows]),
              "context": tf.constant([contexts[k] for k in rows])}
    got, want = served(**inputs), reference(**inputs)
    for key in ("answer_text", "answer_start_char", "paragraph_truncated"):
      np.testing.assert_array_equal(got[key], want[key], err_msg=key)
    for key in ("score", "is_impossible"):
      np.testing.assert_allclose(got[key], want[key], atol=TOLERANCE, rtol=0, err_msg=key)
    if len(rows) == len(questions):
      answered = int(tf.reduce_sum(tf.cast(want["answer_start_char"] >= 0, tf.int32)))
      truncated = int(tf.reduce_sum(tf.cast(want["paragraph_truncated"], tf.int32)))
  assert 0 < answered < len(questions) and 0 < truncated < len(questions)
