"""Reading a document segment by segment through the memory (`networks.document_reader`).

References: one forward pass over the whole text where that is the same computation
(attn_type "uni" with a memory that holds every earlier piece), and HuggingFace's
XLNetModel fed segment by segment with its `mems` (use_mems=True), each within 1e-5.
"""

import os

import numpy as np
import pytest
import tensorflow as tf

from hf_reference import hf_forward
from hf_reference import make_hf_model
from helpers import max_rel_error
from helpers import small_config
from xlnet_tf import load_pretrained
from xlnet_tf.convert.importer import convert
from xlnet_tf.layers import step_dropout
from xlnet_tf.models.xlnet_classifier import build_classifier
from xlnet_tf.networks.document_reader import read_document
from xlnet_tf.networks.xlnet_encoder import XLNetEncoder

TOLERANCE = 1e-5
PAD_SEGMENT = 4


def _document(ids, segment_length, num_segments=None, segment_ids=None):
  """[K, S] inputs of one document: `ids` left-padded to whole segments (to
  `num_segments` of them if given), as numpy arrays."""
  ids = np.asarray(ids)
  segment_ids = np.zeros_like(ids) if segment_ids is None else np.asarray(segment_ids)
  k = num_segments or -(-len(ids) // segment_length)
  pad = k * segment_length - len(ids)
  return {"input_ids": np.concatenate([np.zeros(pad, ids.dtype), ids]).reshape(k, -1),
          "segment_ids": np.concatenate([np.full(pad, PAD_SEGMENT), segment_ids]
                                        ).reshape(k, -1),
          "input_mask": np.concatenate([np.ones(pad), np.zeros(len(ids))]
                                       ).astype(np.float32).reshape(k, -1)}


def _batch(*documents):
  return {key: np.stack([d[key] for d in documents]) for key in documents[0]}


def test_causal_reading_equals_one_pass_over_the_whole_text():
  """attn_type "uni": piece i sees pieces 0..i either way when the memory holds every
  earlier piece, so 4 segments of 6 equal one pass over 24 pieces, at every position."""
  encoder = XLNetEncoder(small_config(attn_type="uni", mem_len=18))
  ids = np.random.default_rng(0).integers(5, 50, [2, 24])
  whole = encoder({"input_ids": ids, "segment_ids": np.zeros_like(ids)})["content"]
  read = read_document(encoder, _batch(_document(ids[0], 6), _document(ids[1], 6)),
                       all_segments=True)
  np.testing.assert_allclose(read["all_content"].numpy().reshape(2, 24, -1), whole.numpy(),
                             atol=TOLERANCE)
  np.testing.assert_allclose(read["content"].numpy(), whole.numpy()[:, -6:], atol=TOLERANCE)


# mem_len 5 (one segment of memory) in the fast tier; 10 (two) slow.
@pytest.mark.parametrize("mem_len", [5, pytest.param(10, marks=pytest.mark.slow)])
def test_reading_equals_huggingface_fed_segment_by_segment(mem_len, tmp_path):
  """Bidirectional attention, the layout's segment ids (memory keys count as segment 0),
  3 segments of 5 pieces: every segment's content stream equals HF's XLNetModel fed the
  same segments with its own memory (use_mems=True, mem_len as ours)."""
  config = small_config(mem_len=mem_len)
  hf_model = make_hf_model(config, seed=3)
  hf_model.save_pretrained(os.fspath(tmp_path / "hf"))
  convert(os.fspath(tmp_path / "hf"), os.fspath(tmp_path / "ours"))
  encoder = load_pretrained(os.fspath(tmp_path / "ours")).encoder
  rng = np.random.default_rng(mem_len)
  ids = rng.integers(10, 50, [2, 15])
  ids[:, -2:] = [4, 3]                                      # ... <sep> <cls>
  segment_ids = np.zeros_like(ids)
  segment_ids[:, -1] = 2
  documents = [_document(ids[b], 5, segment_ids=segment_ids[b]) for b in range(2)]
  read = read_document(encoder, _batch(*documents), all_segments=True)["all_content"]

  hf_mems = None
  for k in range(3):
    reference = hf_forward(hf_model, {"input_ids": ids[:, 5 * k:5 * k + 5],
                                      "segment_ids": segment_ids[:, 5 * k:5 * k + 5]}, hf_mems)
    hf_mems = reference["new_mems"]
    error = max_rel_error(read[:, k], reference["content"])
    assert error <= TOLERANCE, f"segment {k}: {error}"


def test_a_document_reads_the_same_alone_and_beside_a_longer_one():
  """Padding (inside the first segment, and whole padding segments in front) is masked
  in the segments and in the memory: a 13-piece document in a batch with a 20-piece one
  (4 segments of 5) gives what it gives alone (3 segments)."""
  encoder = XLNetEncoder(small_config(mem_len=7))
  rng = np.random.default_rng(1)
  short, long = rng.integers(5, 50, 13), rng.integers(5, 50, 20)
  alone = read_document(encoder, _batch(_document(short, 5)))["content"]
  beside = read_document(encoder, _batch(_document(short, 5, num_segments=4),
                                         _document(long, 5)))["content"]
  np.testing.assert_allclose(beside.numpy()[0], alone.numpy()[0], atol=TOLERANCE)
  # a document of one segment reads as it does without any memory
  one = _document(short[-5:], 5)
  without_memory = XLNetEncoder(small_config())
  without_memory({"input_ids": one["input_ids"]})
  without_memory.set_weights(encoder.get_weights())
  np.testing.assert_allclose(
      read_document(encoder, _batch(one))["content"].numpy()[0],
      without_memory({k: v for k, v in one.items()})["content"].numpy()[0], atol=TOLERANCE)


@pytest.mark.parametrize("n_layer, reaches", [(1, False), (2, True)])
def test_the_first_segment_reaches_the_last_through_the_memory(n_layer, reaches):
  """Transformer-XL's reach grows by one segment per layer: with 3 segments, changing the
  first segment changes the last segment's states with 2 layers, and leaves them exactly
  as they were with 1 (its memory holds only the second segment's embeddings)."""
  encoder = XLNetEncoder(small_config(mem_len=5, n_layer=n_layer))
  ids = np.random.default_rng(2).integers(5, 50, 15)
  changed = ids.copy()
  changed[:5] = np.random.default_rng(9).integers(5, 50, 5)
  first = read_document(encoder, _batch(_document(ids, 5)))["content"].numpy()
  second = read_document(encoder, _batch(_document(changed, 5)))["content"].numpy()
  assert (np.abs(first - second).max() > 0) == reaches


@pytest.mark.parametrize("bptt_segments, reaches_first", [(1, False), (2, False), (3, True)])
def test_gradients_flow_through_the_last_bptt_segments_only(bptt_segments, reaches_first):
  """The word embedding of a token that occurs only in the first of 3 segments gets a
  gradient exactly when the first segment is among the last `bptt_segments`; the last
  segment's own tokens always do."""
  encoder = XLNetEncoder(small_config(mem_len=5))
  ids = np.random.default_rng(3).integers(10, 50, 15)
  ids[:5] = 5                                           # token 5: first segment only
  ids[5:] = np.where(ids[5:] == 5, 6, ids[5:])
  document = _batch(_document(ids, 5))
  with tf.GradientTape() as tape:
    content = read_document(encoder, document, bptt_segments=bptt_segments,
                            training=True)["content"]
    loss = tf.reduce_sum(content ** 2)
  gradient = tf.convert_to_tensor(tape.gradient(loss, encoder.word_embedding))
  assert (np.abs(gradient.numpy()[5]).max() > 0) == reaches_first
  assert np.abs(gradient.numpy()[ids[-1]]).max() > 0


def test_more_bptt_segments_than_the_document_has_pads_in_front():
  encoder = XLNetEncoder(small_config(mem_len=5))
  document = _batch(_document(np.random.default_rng(4).integers(5, 50, 9), 5))
  one = read_document(encoder, document)["content"]
  four = read_document(encoder, document, bptt_segments=4)["content"]
  np.testing.assert_allclose(four.numpy(), one.numpy(), atol=TOLERANCE)


def test_dropout_is_a_function_of_the_step_seed_and_differs_per_segment():
  """Under the trainers' `training_seed`, a step's dropout masks repeat exactly, and two
  segments with the same pieces draw different masks."""
  encoder = XLNetEncoder(small_config(mem_len=5, dropout=0.5))
  piece = np.random.default_rng(5).integers(5, 50, 5)
  document = _batch(_document(np.concatenate([piece, piece]), 5))

  def read(step):
    with step_dropout.training_seed(step_dropout.step_seed(seed=1, step=step)):
      return read_document(encoder, document, bptt_segments=2, training=True,
                           all_segments=True)["all_content"].numpy()
  first, again, other = read(3), read(3), read(4)
  np.testing.assert_array_equal(first, again)
  assert np.abs(first - other).max() > 1e-3
  # the same pieces, other masks: with dropout the two segments' embeddings differ in
  # where they are zeroed (the memory alone cannot zero a position)
  assert not np.array_equal(first[0, 0] == 0, first[0, 1] == 0)


def test_the_classifier_reads_documents_and_single_segments_alike():
  """A classifier with memory: [B, 1, S] documents give the [B, S] outputs; the summary
  reads the last segment of longer ones."""
  model = build_classifier(small_config(), num_classes=3, mem_len=6)
  ids = np.random.default_rng(6).integers(5, 50, [2, 6])
  ids[:, -2:] = [4, 3]
  segment_ids = np.tile([0, 0, 0, 0, 0, 2], [2, 1])
  flat = model({"input_ids": ids, "segment_ids": segment_ids,
                "input_mask": np.zeros([2, 6], np.float32)})["logits"]
  document = model({"input_ids": ids[:, None], "segment_ids": segment_ids[:, None],
                    "input_mask": np.zeros([2, 1, 6], np.float32)})["logits"]
  np.testing.assert_allclose(document.numpy(), flat.numpy(), atol=TOLERANCE)


def test_an_encoder_without_memory_cannot_read_a_document():
  document = _batch(_document(np.arange(5, 15), 5))
  with pytest.raises(ValueError, match="mem_len > 0 and reuse_len 0, got mem_len 0"):
    read_document(XLNetEncoder(small_config()), document)
  with pytest.raises(ValueError, match="bptt_segments must be >= 1, got 0"):
    read_document(XLNetEncoder(small_config(mem_len=5)), document, bptt_segments=0)


def test_hidden_states_equal_huggingfaces_layer_by_layer(tmp_path):
  """output_hidden_states: the word embeddings and every layer's content stream equal
  HuggingFace's `hidden_states` (n_layer + 1 of them); the last is the content stream."""
  config = small_config()
  hf_model = make_hf_model(config, seed=5)
  hf_model.save_pretrained(os.fspath(tmp_path / "hf"))
  convert(os.fspath(tmp_path / "hf"), os.fspath(tmp_path / "ours"))
  encoder = load_pretrained(os.fspath(tmp_path / "ours")).encoder
  ids = np.random.default_rng(5).integers(10, 50, [2, 9])
  segment_ids = np.zeros_like(ids)
  ours = encoder({"input_ids": ids, "segment_ids": segment_ids}, output_hidden_states=True)
  reference = hf_forward(hf_model, {"input_ids": ids, "segment_ids": segment_ids})
  assert len(ours["hidden_states"]) == config.n_layer + 1 == len(reference["hidden_states"])
  for layer, (mine, theirs) in enumerate(zip(ours["hidden_states"],
                                             reference["hidden_states"])):
    assert max_rel_error(mine, theirs) <= TOLERANCE, f"hidden state {layer}"
  np.testing.assert_array_equal(ours["hidden_states"][0],
                                tf.gather(encoder.word_embedding, ids))
  np.testing.assert_array_equal(ours["hidden_states"][-1], ours["content"])


@pytest.mark.parametrize("layer", [0, 1, -1])
def test_reading_a_layer_gives_that_hidden_state_of_every_segment(layer):
  """read_document(layer=k): segment by segment, the encoder's hidden_states[k] of that
  segment with its memory, as an independent loop over the encoder computes it."""
  encoder = XLNetEncoder(small_config(mem_len=6))
  ids = np.random.default_rng(7).integers(5, 50, [1, 12])
  document = _batch(_document(ids[0], 4))
  read = read_document(encoder, document, all_segments=True, layer=layer)["all_content"]
  mems, mems_mask = None, None
  for k in range(3):
    inputs = {key: document[key][:, k] for key in document}
    if mems is not None:
      inputs.update(mems=mems, mems_mask=mems_mask)
    out = encoder(inputs, output_hidden_states=True)
    np.testing.assert_allclose(read[:, k], out["hidden_states"][layer], atol=TOLERANCE)
    # the reader's memory: the last mem_len of each layer's input, its padding masked
    mems = out["new_mems"]
    previous_mask = (np.ones([1, 6], np.float32) if mems_mask is None else mems_mask)
    mems_mask = np.concatenate([previous_mask, document["input_mask"][:, k]], 1)[:, -6:]
    if k == 0:      # the reader starts from a memory of padding: pad the first one too
      mems = [np.concatenate([np.zeros([1, 2, m.shape[-1]], np.float32), m], 1)
              for m in mems]
