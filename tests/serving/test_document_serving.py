"""Whole documents in serving: the in-graph document layout, the classifier export reading
any text through the memory, and the encoder's `serving_document`.

Expected values come from computations written here: the layout re-derived in numpy from
the Python tokenizer's ids, and the Python models (`read_document` on the same ids).
Tiny random models (2 layers, d_model 16, weights drawn with stddev 0.5 so that attention
moves the outputs: a bug in what the memory carries cannot hide under 1e-5) with the
tests' 4000-piece SentencePiece model, on bundled text: a State of the Union speech cut to
a few thousand characters (more than 4 segments of 32 pieces) and held-out movie reviews.
The layout tests are fast; the tests of the exports (a SavedModel each) are slow.
"""

import math
import os

import numpy as np
import pytest
import tensorflow as tf

from helpers import serve_fresh
from helpers import small_config
from xlnet_tf import model_directory
from xlnet_tf import pretrained
from xlnet_tf.data import classifier_tasks
from xlnet_tf.data import document_features
from xlnet_tf.data import layouts
from xlnet_tf.data import tokenization
from xlnet_tf.models.xlnet_classifier import ClassifierSpec
from xlnet_tf.models.xlnet_classifier import build_classifier
from xlnet_tf.models.xlnet_pretrainer import build_pretrainer
from xlnet_tf.networks.document_reader import read_document
from xlnet_tf.serving import encoder_export
from xlnet_tf.serving.classifier_export import ClassifierServing
from xlnet_tf.serving.classifier_export import export_classifier
from xlnet_tf.serving.classifier_export import reading_detail
from xlnet_tf.serving.text_encoder import XLNetTextEncoder
from xlnet_tf.serving.text_layouts import bucket_lengths
from xlnet_tf.serving.text_layouts import classifier_inputs
from xlnet_tf.serving.text_layouts import document_inputs

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPEECH = os.path.join(ROOT, "data_prep", "sample_data", "sotu", "2021_joseph_r_biden_d.txt")
SEQ = 32
TOLERANCE = 1e-5


def _speech(chars=3000):
  """The first `chars` characters of the 2021 State of the Union (cut at a space)."""
  with open(SPEECH, encoding="utf-8") as f:
    text = f.read()
  return text[:text.rindex(" ", 0, chars)]


def _reviews(count, start=0):
  task = classifier_tasks.get_task("movie_reviews")
  return [e.text_a for e in task.read(None, "dev")][start:start + count]


def _config(**overrides):
  return small_config(n_token=4000, initializer_range=0.5, **overrides)


def expected_document(ids_a, ids_b, segment_length, bucketed=False):
  """The document layout of the contract, in numpy: A, then `<sep> <cls>` or
  `<sep> B[:S-3] <sep> <cls>` (an empty B is none); left-padded to K = ceil(N / S)
  segments, then to the batch's largest K; S the bucket when every row fits one."""
  rows = []
  for k, a in enumerate(ids_a):
    b = list(ids_b[k]) if ids_b is not None else []
    ids, seg = list(a), [layouts.SEGMENT_A] * len(a)
    if b:
      b = b[:segment_length - 3]
      ids += [tokenization.SEP_ID] + b + [tokenization.SEP_ID, tokenization.CLS_ID]
      seg += [layouts.SEGMENT_A] + [layouts.SEGMENT_B] * (len(b) + 1) + [layouts.SEGMENT_CLS]
    else:
      ids += [tokenization.SEP_ID, tokenization.CLS_ID]
      seg += [layouts.SEGMENT_A, layouts.SEGMENT_CLS]
    rows.append((ids, seg))
  num_segments = max([math.ceil(len(ids) / segment_length) for ids, _ in rows] + [1])
  seg_len = segment_length
  if bucketed and num_segments == 1:
    seg_len = min(n for n in bucket_lengths(segment_length)
                  if n >= max([len(ids) for ids, _ in rows] + [1]))
  total = num_segments * seg_len
  out = {"input_ids": [], "segment_ids": [], "input_mask": []}
  for ids, seg in rows:
    pad = total - len(ids)
    out["input_ids"].append([layouts.CLASSIFIER_PAD_ID] * pad + ids)
    out["segment_ids"].append([layouts.CLASSIFIER_SEGMENT_PAD] * pad + seg)
    out["input_mask"].append([1.0] * pad + [0.0] * len(ids))
  dtypes = {"input_ids": np.int32, "segment_ids": np.int32, "input_mask": np.float32}
  return {key: np.array(value, dtypes[key]).reshape(len(rows), num_segments, seg_len)
          for key, value in out.items()}


@pytest.fixture
def text_encoder(spiece_model):
  """(Per test: the autouse seeding clears the kernel cache, and with it the SentencePiece
  resource of an encoder built before.)"""
  return XLNetTextEncoder(spiece_model)


@pytest.fixture(scope="module")
def sp(spiece_model):
  return tokenization.load_spiece(spiece_model)


def _python_ids(sp, texts):
  return [tokenization.encode_ids(sp, tokenization.normalize_text(t)) for t in texts]


# ---- the layout ----------------------------------------------------------------------------

def test_document_inputs_follow_the_layout_on_real_text(text_encoder, sp):
  speech = _speech()
  short = [r for r in _reviews(60) if len(_python_ids(sp, [r])[0]) < SEQ - 8][:3]
  assert len(short) == 3
  batches = [  # (text_a, text_b)
      ([speech, short[0], speech[:400]], None),                      # several segments
      (short, None),                                                 # all fit one
      ([speech[:700], short[1], short[2]], [short[0], "", speech]),  # pairs; an empty b; a
      (short, [short[2], short[1], ""]),                             # b cut to S - 3
      ([""], None), ([], None)]
  seen_k = set()
  for texts_a, texts_b in batches:
    ids_a = _python_ids(sp, texts_a)
    ids_b = None if texts_b is None else _python_ids(sp, texts_b)
    for bucketed in (False, True):
      got = document_inputs(
          text_encoder, tf.constant(texts_a, tf.string),
          None if texts_b is None else tf.constant(texts_b), SEQ, bucketed=bucketed,
          text_span=True)
      want = expected_document(ids_a, ids_b, SEQ, bucketed)
      for key in ("input_ids", "segment_ids", "input_mask"):
        np.testing.assert_array_equal(got[key].numpy(), want[key], err_msg=key)
      seen_k.add(want["input_ids"].shape[1])
      batch, num_segments, seg_len = got["input_ids"].shape
      flat = got["input_ids"].numpy().reshape(batch, num_segments * seg_len)
      for row, ids in enumerate(ids_a):
        start, length = int(got["text_start"][row]), int(got["text_length"][row])
        assert length == len(ids) and flat[row, start:start + length].tolist() == ids
  assert max(seen_k) > 4 and 1 in seen_k
  # A text that fits one segment: today's classification layout, fixed and bucketed.
  for bucketed in (False, True):
    document = document_inputs(text_encoder, tf.constant(short), None, SEQ, bucketed=bucketed)
    today = classifier_inputs(text_encoder, tf.constant(short), None, SEQ, bucketed=bucketed)
    for key, value in today.items():
      np.testing.assert_array_equal(document[key].numpy()[:, 0], value.numpy())
  # In a graph, K and (bucketed) S are dynamic.
  fn = tf.function(lambda t: document_inputs(text_encoder, t, None, SEQ, bucketed=True),
                   input_signature=[tf.TensorSpec([None], tf.string)])
  assert fn(tf.constant([speech]))["input_ids"].shape[1:] == (
      expected_document(_python_ids(sp, [speech]), None, SEQ)["input_ids"].shape[1], SEQ)
  assert fn(tf.constant(short[:1]))["input_ids"].shape[1:] == (1, 16)


def test_served_documents_are_the_documents_training_reads(text_encoder, sp):
  """No skew between training and serving: each row of the in-graph layout (its whole
  padding segments in front left out) equals the training features of
  `document_features.document_layout` on the Python tokenizer's ids, single and pair."""
  speech, reviews = _speech(), _reviews(3)
  for texts_a, texts_b in (([speech, reviews[0], speech[:900]], None),
                           ([speech[:1500], reviews[1], reviews[2]],
                            [reviews[0], "", speech[:300]])):
    served = document_inputs(
        text_encoder, tf.constant(texts_a), None if texts_b is None else tf.constant(texts_b),
        SEQ)
    for row, text_a in enumerate(texts_a):
      ids_b = None if texts_b is None else _python_ids(sp, [texts_b[row]])[0]
      trained = document_features.document_layout(_python_ids(sp, [text_a])[0], ids_b, SEQ)
      k = trained[0].shape[0]
      for key, value in zip(("input_ids", "segment_ids", "input_mask"), trained):
        np.testing.assert_array_equal(served[key].numpy()[row, -k:], value, err_msg=key)
      assert served["input_mask"].numpy()[row, :-k].all()      # the rest is padding


# ---- the classifier export reads whole texts -----------------------------------------------

def _python_document(sp, texts_a, segment_length, texts_b=None):
  """The numpy document layout of the Python tokenizer's ids, as model inputs."""
  ids_b = None if texts_b is None else _python_ids(sp, texts_b)
  return {k: tf.constant(v) for k, v in
          expected_document(_python_ids(sp, texts_a), ids_b, segment_length).items()}


def _three_segments(sp, text, segment_length=SEQ):
  """The longest prefix of `text` (whole words) whose document takes 3 segments.

  With n_layer 2 and a memory of one segment, what the last segment reads reaches back 2
  segments (each layer's memory holds the previous segment's input of that layer, so a
  piece's influence moves one segment per layer: Transformer-XL's receptive field
  n_layer x mem_len): the first segment of a 3-segment document is the farthest the tests'
  tiny models can see, and a change there must show in the outputs."""
  words, best = text.split(" "), ""
  for n in range(1, len(words) + 1):
    prefix = " ".join(words[:n])
    if len(_python_ids(sp, [prefix])[0]) + 2 > 3 * segment_length:
      break
    best = prefix
  assert len(_python_ids(sp, [best])[0]) + 2 > 2 * segment_length + 8
  return best


def _changed_opening(text):
  """`text` with its first sentence replaced by another of about the same length."""
  first = text.index(". ") + 1
  return "The harbour froze over that winter." + text[first:]


@pytest.fixture(scope="module")
def classifier_dir(spiece_model, tmp_path_factory):
  """A tiny random classifier fine-tuned on truncated texts (mem_len 0), and its export:
  (model directory, spec, export directory)."""
  work = tmp_path_factory.mktemp("document_classifier")
  spec = ClassifierSpec(task_name="movie_reviews", labels=("negative", "positive"),
                        max_seq_length=SEQ)
  tf.keras.utils.set_random_seed(21)
  model = build_classifier(_config(), 2, dropout_rate=0.0)
  model_dir = str(work / "model")
  model_directory.save(model, model_dir, spec, spiece_model)
  return model_dir, spec, export_classifier(model_dir, str(work / "whole"))


def _truncating(model_dir, spiece_model):
  """serving_default of the released behaviour (truncation at max_seq_length), in-process."""
  model, spec = model_directory.load(model_dir, ClassifierSpec)
  assert model.encoder.config.mem_len == 0
  return ClassifierServing(model, spec, spiece_model).signatures()["serving_default"]


@pytest.mark.slow
def test_classifier_export_reads_a_long_text_through_the_memory(classifier_dir, sp,
                                                                spiece_model, tmp_path):
  """The whole-text export reads a speech of many segments through the memory as the Python
  classifier with that memory does (in-process and in a fresh process), the opening reaches
  the output, and a truncating export reads another text."""
  model_dir, _, whole_dir = classifier_dir
  served = tf.saved_model.load(whole_dir).signatures["serving_default"]
  # The Python classifier with the serving memory (max_seq_length positions: the model
  # was fine-tuned on truncated texts), fed the document features.
  model, _ = model_directory.load(model_dir, ClassifierSpec, mem_len=SEQ)
  assert model.encoder.config.mem_len == SEQ
  speech = _speech()
  texts = [speech, speech[:900]] + _reviews(3)
  features = _python_document(sp, texts, SEQ)
  assert features["input_ids"].shape[1] > 4                      # several segments
  want = tf.nn.softmax(model(features)["logits"]).numpy()
  got = served(text_a=tf.constant(texts))
  np.testing.assert_allclose(got["probabilities"].numpy(), want, atol=TOLERANCE, rtol=0)
  np.testing.assert_array_equal(got["label_id"].numpy(), want.argmax(-1))
  # In a fresh process with TensorFlow and tensorflow-text only.
  fresh = serve_fresh(whole_dir, {"text_a": [speech]}, tmp_path)
  np.testing.assert_allclose(np.array(fresh["probabilities"]), want[:1], atol=TOLERANCE,
                             rtol=0)
  # The memory carries the beginning: another first sentence changes the probabilities;
  # the control: the same document twice in a batch gives the same output.
  document = _three_segments(sp, speech)
  changed = _changed_opening(document)
  assert changed[-200:] == document[-200:]
  again = served(text_a=tf.constant([document, changed, document]))["probabilities"].numpy()
  np.testing.assert_array_equal(again[0], again[2])
  assert np.abs(again[1] - again[0]).max() > 1e-3
  # A truncating export reads another text (the first segment's pieces) than the whole.
  truncated = _truncating(model_dir, spiece_model)(text_a=tf.constant([speech]))
  assert np.abs(truncated["probabilities"].numpy()[0] - want[0]).max() > 1e-3


@pytest.mark.slow
def test_texts_that_fit_one_segment_are_served_as_before(classifier_dir, spiece_model, sp):
  """Texts that fit one segment get the truncating export's outputs; the card says how
  texts are read."""
  model_dir, _, whole_dir = classifier_dir
  served = tf.saved_model.load(whole_dir).signatures["serving_default"]
  truncating = _truncating(model_dir, spiece_model)
  reviews = [r for r in _reviews(300) if len(_python_ids(sp, [r])[0]) <= SEQ - 2]
  assert len(reviews) > 100
  worst = 0.0
  for start in range(0, len(reviews), 32):
    texts = tf.constant(reviews[start:start + 32])
    got, want = served(text_a=texts), truncating(text_a=texts)
    worst = max(worst, float(np.abs(got["probabilities"] - want["probabilities"]).max()))
    np.testing.assert_array_equal(got["label"], want["label"])
  for text in reviews[:40:8]:                                      # single short texts
    got, want = served(text_a=tf.constant([text])), truncating(text_a=tf.constant([text]))
    worst = max(worst, float(np.abs(got["probabilities"] - want["probabilities"]).max()))
  assert worst <= TOLERANCE
  card = open(os.path.join(whole_dir, "README.md"), encoding="utf-8").read()
  assert (f"- **Reading**: whole texts of any length, in segments of max_seq_length {SEQ} "
          f"pieces read in order through a memory of {SEQ} positions (fine-tuned on texts "
          f"truncated at max_seq_length); a batch that fits one segment is read as one "
          f"segment") in card
  assert reading_detail(SEQ, 0, 0) == (
      f"texts truncated at max_seq_length {SEQ} pieces, as released")


# ---- the encoder's serving_document --------------------------------------------------------

@pytest.fixture(scope="module")
def encoder_export_dir(spiece_model, tmp_path_factory):
  """(pretrained model directory, its encoder export with max_seq_length SEQ)."""
  work = tmp_path_factory.mktemp("document_encoder")
  tf.keras.utils.set_random_seed(5)
  model_dir = os.fspath(work / "pretrained")
  pretrained.save_pretrained(build_pretrainer(_config()), model_dir, spiece_model=spiece_model)
  return model_dir, encoder_export.export_encoder(model_dir, os.fspath(work / "export"),
                                                  max_seq_length=SEQ)


def python_document_outputs(encoder, sp, texts):
  """serving_document's outputs from the Python encoder: `read_document(all_segments=True)`
  on the numpy document layout, the text's pieces picked out in numpy."""
  ids = _python_ids(sp, texts)
  features = _python_document(sp, texts, SEQ)
  batch, num_segments, seg_len = features["input_ids"].shape
  content = read_document(encoder, features, all_segments=True)["all_content"].numpy()
  flat = content.reshape(batch, num_segments * seg_len, -1)
  longest = max(len(row) for row in ids)
  tokens = np.zeros([batch, longest, flat.shape[-1]], np.float32)
  mask = np.zeros([batch, longest], np.float32)
  for row, pieces in enumerate(ids):
    start = num_segments * seg_len - len(pieces) - 2
    tokens[row, :len(pieces)] = flat[row, start:start + len(pieces)]
    mask[row, :len(pieces)] = 1.0
  return {"embedding": flat[:, -1], "token_embeddings": tokens, "token_mask": mask,
          "token_ids": np.array([row + [0] * (longest - len(row)) for row in ids], np.int32)}


@pytest.mark.slow
def test_serving_document_equals_the_python_encoder_reading_the_document(
    encoder_export_dir, sp):
  """serving_document's embedding, token embeddings, mask and ids equal the Python encoder
  reading the document segment by segment; an empty batch works; the card describes it."""
  model_dir, export_dir = encoder_export_dir
  loaded = tf.saved_model.load(export_dir)
  assert sorted(loaded.signatures) == ["serving_default", "serving_document"]
  document = loaded.signatures["serving_document"]
  encoder = pretrained.load_directory(model_dir, mem_len=SEQ, reuse_len=0).encoder
  speech = _speech()
  batches = [[speech, speech[:500], _reviews(1)[0], ""],          # 20+ segments
             _reviews(4, start=10) + [""]]                         # one segment (bucketed)
  for texts in batches:
    got = document(text=tf.constant(texts))
    want = python_document_outputs(encoder, sp, texts)
    for key in ("token_mask", "token_ids"):
      np.testing.assert_array_equal(got[key].numpy(), want[key], err_msg=key)
    for key in ("embedding", "token_embeddings"):
      np.testing.assert_allclose(got[key].numpy(), want[key], atol=TOLERANCE, rtol=0,
                                 err_msg=key)
  assert _python_document(sp, [speech], SEQ)["input_ids"].shape[1] > 4
  empty = document(text=tf.constant([], tf.string))
  assert empty["embedding"].shape == (0, 16) and empty["token_mask"].shape == (0, 0)
  card = open(os.path.join(export_dir, "README.md"), encoding="utf-8").read()
  assert (f"- **serving_document**: whole texts of any length -> embedding (at the final "
          f"<cls>), token_embeddings, token_mask, token_ids; read in segments of {SEQ} "
          f"pieces through a memory of {SEQ} positions") in card


@pytest.mark.slow
def test_the_memory_carries_the_opening_into_the_embedding(encoder_export_dir, sp):
  """Another first sentence changes the embedding and the last pieces' embeddings of a
  three-segment text (2 layers: the memory of the last segment carries the first)."""
  _, export_dir = encoder_export_dir
  document = tf.saved_model.load(export_dir).signatures["serving_document"]
  text = _three_segments(sp, _speech())
  changed = _changed_opening(text)
  got = document(text=tf.constant([text, changed, text]))
  embedding = got["embedding"].numpy()
  np.testing.assert_array_equal(embedding[0], embedding[2])       # the control
  assert np.abs(embedding[1] - embedding[0]).max() > 1e-3
  # The last pieces are the same text in both, read after another opening.
  tokens, mask = got["token_embeddings"].numpy(), got["token_mask"].numpy()
  last_0 = tokens[0, int(mask[0].sum()) - 1]
  last_1 = tokens[1, int(mask[1].sum()) - 1]
  assert np.abs(last_0 - last_1).max() > 1e-3
