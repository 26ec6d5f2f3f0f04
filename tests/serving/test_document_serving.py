"""Whole documents in serving: the in-graph document layout, the classifier export reading
any text through the memory, and the encoder's `serving_document`.

Expected values come from computations written here: the layout re-derived in numpy from
the Python tokenizer's ids, and the Python models (`read_document` on the same ids).
Tiny random models (2 layers, d_model 16, weights drawn with stddev 0.5 so that attention
moves the outputs: a bug in what the memory carries cannot hide under 1e-5) with the
tests' 4000-piece SentencePiece model, on bundled text: a State of the Union speech cut to
a few thousand characters (more than 4 segments of 32 pieces) and held-out movie reviews.
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
from xlnet_tf.data import layouts
from xlnet_tf.data import tokenization
from xlnet_tf.models.xlnet_classifier import ClassifierSpec
from xlnet_tf.models.xlnet_classifier import build_classifier
from xlnet_tf.models.xlnet_pretrainer import build_pretrainer
from xlnet_tf.networks.document_reader import read_document
from xlnet_tf.serving import encoder_export
from xlnet_tf.serving.export import ClassifierServing
from xlnet_tf.serving.export import export_classifier
from xlnet_tf.serving.text_encoder import XLNetTextEncoder
from xlnet_tf.serving.text_encoder import bucket_lengths

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
      got = text_encoder.document_inputs(
          tf.constant(texts_a, tf.string), None if texts_b is None else tf.constant(texts_b),
          SEQ, bucketed=bucketed, text_span=True)
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
    document = text_encoder.document_inputs(tf.constant(short), None, SEQ, bucketed=bucketed)
    today = text_encoder.classifier_inputs(tf.constant(short), None, SEQ, bucketed=bucketed)
    for key, value in today.items():
      np.testing.assert_array_equal(document[key].numpy()[:, 0], value.numpy())
  # In a graph, K and (bucketed) S are dynamic.
  fn = tf.function(lambda t: text_encoder.document_inputs(t, None, SEQ, bucketed=True),
                   input_signature=[tf.TensorSpec([None], tf.string)])
  assert fn(tf.constant([speech]))["input_ids"].shape[1:] == (
      expected_document(_python_ids(sp, [speech]), None, SEQ)["input_ids"].shape[1], SEQ)
  assert fn(tf.constant(short[:1]))["input_ids"].shape[1:] == (1, 16)
