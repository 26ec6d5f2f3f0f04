"""What the permutation objective and the memory rely on, checked on the model itself."""

import numpy as np
import pytest
import tensorflow as tf

from helpers import pretraining_inputs
from helpers import small_config
from xlnet_tf import build_pretrainer
from xlnet_tf import masks

SEQ = 8


def _full_order_inputs(rng, order, targets):
  ranks = masks.ranks_from_order(order)
  is_target = np.zeros(SEQ, bool)
  is_target[targets] = True
  mapping = np.zeros([1, len(targets), SEQ], np.float32)
  mapping[0, np.arange(len(targets)), targets] = 1.0
  return {"input_ids": rng.integers(10, 50, [1, SEQ]),
          "segment_ids": np.array([[0] * 4 + [1] * 3 + [2]]),
          "perm_mask": masks.perm_mask_from_ranks(ranks, is_target).numpy()[None].astype(
              np.float32),
          "target_mapping": mapping}, ranks


def _run(model, inputs):
  out = model({k: tf.constant(v) for k, v in inputs.items()})
  return out["content"].numpy()[0], out["query"].numpy()[0]


def test_query_stream_does_not_see_its_own_token():
  """Every position but the first of the order is a target (the first has nothing before
  it to attend to: a fully masked row, uniform in the original, HF and here alike)."""
  rng = np.random.default_rng(0)
  model = build_pretrainer(small_config())
  order = rng.permutation(SEQ)
  targets = np.sort(order[1:])
  inputs, _ = _full_order_inputs(rng, order, targets)
  content, query = _run(model, inputs)
  for k, t in enumerate(targets):
    changed = {**inputs, "input_ids": inputs["input_ids"].copy()}
    changed["input_ids"][0, t] = (changed["input_ids"][0, t] + 7) % 40 + 10
    content2, query2 = _run(model, changed)
    np.testing.assert_allclose(query2[k], query[k], atol=1e-6, rtol=0)
    assert np.abs(content2[t] - content[t]).max() > 1e-3   # the content stream does see it


def test_outputs_do_not_depend_on_tokens_later_in_the_order():
  rng = np.random.default_rng(1)
  model = build_pretrainer(small_config(n_layer=3))
  order = rng.permutation(SEQ)
  targets = np.sort(order[SEQ // 2:])            # the second half of the order is predicted
  inputs, ranks = _full_order_inputs(rng, order, targets)
  content, query = _run(model, inputs)
  for k, t in enumerate(targets):
    later = np.flatnonzero(ranks > ranks[t])
    earlier = np.flatnonzero(ranks < ranks[t])
    changed = {**inputs, "input_ids": inputs["input_ids"].copy()}
    changed["input_ids"][0, later] = rng.integers(10, 50, len(later))
    content2, query2 = _run(model, changed)
    np.testing.assert_allclose(query2[k], query[k], atol=1e-6, rtol=0)
    np.testing.assert_allclose(content2[t], content[t], atol=1e-6, rtol=0)
    if len(earlier):   # and they do depend on earlier tokens
      changed["input_ids"][0, earlier] = (changed["input_ids"][0, earlier] + 3) % 40 + 10
      _, query3 = _run(model, changed)
      assert np.abs(query3[k] - query[k]).max() > 1e-3


def test_new_mems_are_layer_inputs_with_reuse_and_mem_len_and_no_gradient():
  config = small_config(mem_len=5, reuse_len=3)
  model = build_pretrainer(config)
  ids1, ids2 = np.array([[11, 12, 13, 14]]), np.array([[21, 22, 23, 24]])
  embedding = model.encoder.word_embedding.numpy()
  out1 = model({"input_ids": tf.constant(ids1)})
  np.testing.assert_array_equal(out1["new_mems"][0].numpy()[0], embedding[[11, 12, 13]])
  with tf.GradientTape() as tape:
    out2 = model({"input_ids": tf.constant(ids2), "mems": out1["new_mems"]})
    mem_sum = tf.add_n([tf.reduce_sum(m) for m in out2["new_mems"]])
  # Previous 3 reused + first 3 of this segment, the last mem_len=5 kept.
  np.testing.assert_array_equal(out2["new_mems"][0].numpy()[0],
                                embedding[[12, 13, 21, 22, 23]])
  # Layer 1's memory is layer 0's output for the first reuse_len tokens, not its input.
  assert not np.allclose(out2["new_mems"][1].numpy()[0, 2:], embedding[[21, 22, 23]])
  assert all(g is None for g in tape.gradient(mem_sum, model.trainable_variables))


def test_bi_data_needs_an_even_batch():
  model = build_pretrainer(small_config(bi_data=True))
  with pytest.raises(ValueError, match="bi_data needs an even batch size"):
    model({"input_ids": tf.constant([[11, 12, 13]] * 3)})
  run = tf.function(lambda ids: model({"input_ids": ids})["content"],
                    input_signature=[tf.TensorSpec([None, 3], tf.int32)])
  with pytest.raises(tf.errors.InvalidArgumentError, match="bi_data needs an even batch"):
    run(tf.constant([[11, 12, 13]] * 3))


def test_training_with_dropout_and_bi_data():
  """Training mode: per-example dropout of the positional encodings, bi_data halves."""
  model = build_pretrainer(small_config(bi_data=True, dropout=0.1, dropatt=0.1, mem_len=3))
  feed = {k: tf.constant(v) for k, v in pretraining_inputs(
      np.random.default_rng(0), 4, 6, num_predict=2, num_targets=2).items()}
  with tf.GradientTape() as tape:
    out = model(feed, training=True)
    loss = tf.reduce_mean(out["logits"])
  grads = tape.gradient(loss, model.trainable_variables)
  assert np.isfinite(loss.numpy())
  assert all(g is not None for g in grads)
  eval_a, eval_b = model(feed)["logits"].numpy(), model(feed)["logits"].numpy()
  np.testing.assert_array_equal(eval_a, eval_b)                  # no dropout at inference
  assert not np.allclose(model(feed, training=True)["logits"].numpy(), eval_a)


def test_mask_emb_is_initialised_as_released():
  """The released `mask_emb` [1, 1, D] is created without an initializer, so TF1's default
  applies: Glorot uniform with fan_in = 1 and fan_out = D for that shape (the receptive
  field of the leading 1 is 1), i.e. U(-sqrt(6 / (1 + D)), +sqrt(6 / (1 + D)))."""
  d_model = 512
  model = build_pretrainer(small_config(d_model=d_model, n_head=8, d_head=64, d_inner=64))
  model(pretraining_inputs(np.random.default_rng(0), 2, 8, 2, 2))
  values = model.encoder.mask_emb.numpy().ravel()
  limit = np.sqrt(6.0 / (1 + d_model))
  assert np.abs(values).max() <= limit
  assert np.abs(values).max() > 0.9 * limit                  # it fills the whole range
  np.testing.assert_allclose(values.std(), limit / np.sqrt(3.0), rtol=0.1)
