"""Activation recomputation (`XLNetConfig.recompute`): "layer" gives the losses, gradients
and dropout masks of "none", and XLA's compiled step keeps less memory live."""

import json

import numpy as np
import pytest
import tensorflow as tf

from helpers import small_config
from xlnet_tf import build_pretrainer
from xlnet_tf import synthetic
from xlnet_tf.configs import XLNetConfig
from xlnet_tf.layers.step_dropout import StepDropout
from xlnet_tf.layers.step_dropout import replaying
from xlnet_tf.layers.step_dropout import step_seed
from xlnet_tf.layers.step_dropout import training_seed
from xlnet_tf.models.losses import target_cross_entropy

BATCH, SEQ, PREDICT, MEM = 2, 8, 3, 4


def _models(**overrides):
  """(recompute "none", recompute "layer"): the same weights, dropout on."""
  config = small_config(n_layer=3, dropout=0.1, dropatt=0.1, mem_len=MEM, **overrides)
  plain = build_pretrainer(config)
  recomputing = build_pretrainer(config.replace(recompute="layer"))
  recomputing.set_weights(plain.get_weights())
  return plain, recomputing


def _feed(config, seed=0):
  rng = np.random.default_rng(seed)
  arrays = synthetic.random_pretraining_inputs(rng, BATCH, SEQ, PREDICT, PREDICT - 1,
                                               vocab_size=config.n_token, padding=1)
  feed = {k: tf.constant(v) for k, v in arrays.items()}
  feed["mems"] = [tf.constant(rng.normal(size=[BATCH, MEM, config.d_model]), tf.float32)
                  for _ in range(config.n_layer)]
  return feed


def _after_forward_mask():
  """The mask of the next dropout draw after the forward pass: where the count ended."""
  return StepDropout(0.5)(tf.ones([64]), training=True)


def _pretraining_step(model):
  """(loss, gradients of every trainable variable, the next dropout mask) of one
  two-stream step (perm_mask, target_mapping, segments, padding, memory) under
  `training_seed`."""
  def step(feed):
    with tf.GradientTape() as tape, training_seed(step_seed(seed=3, step=5, replica=1)):
      inputs = {k: v for k, v in feed.items() if k not in ("target", "target_mask")}
      outputs = model(inputs, training=True)
      loss_sum, count = target_cross_entropy(outputs["logits"], feed["target"],
                                             feed["target_mask"])
      loss = loss_sum / count
      after = _after_forward_mask()
    return loss, tape.gradient(loss, model.trainable_variables), after
  return step


def _bptt_step(model):
  """(loss, gradients, next mask) of two segments with `memory_gradient=True`: the second
  segment's loss reaches the first segment's layers through the memory."""
  encoder = model.encoder

  def step(feed):
    with tf.GradientTape() as tape, training_seed(step_seed(seed=4, step=1)):
      inputs = {k: feed[k] for k in ("input_ids", "segment_ids", "input_mask",
                                     "perm_mask", "target_mapping")}
      first = encoder({**inputs, "mems": feed["mems"]}, training=True,
                      memory_gradient=True)
      second = encoder({**inputs, "mems": first["new_mems"]}, training=True,
                       memory_gradient=True)
      logits = model.lm_head(second["query"], encoder.word_embedding)
      loss_sum, count = target_cross_entropy(logits, feed["target"], feed["target_mask"])
      loss = loss_sum / count
      after = _after_forward_mask()
    return loss, tape.gradient(loss, model.trainable_variables), after
  return step


def _assert_same(plain_result, recomputed_result, variables, exact=True):
  (loss_a, grads_a, after_a), (loss_b, grads_b, after_b) = plain_result, recomputed_result
  assert float(loss_a) == float(loss_b)
  np.testing.assert_array_equal(after_a.numpy(), after_b.numpy())
  assert len(grads_a) == len(grads_b) == len(variables)
  for variable, grad_a, grad_b in zip(variables, grads_a, grads_b):
    assert (grad_a is None) == (grad_b is None), variable.name
    if grad_a is not None:
      assert np.abs(grad_a.numpy()).max() > 0, variable.name
      a, b = grad_a.numpy(), grad_b.numpy()
      if exact:
        np.testing.assert_array_equal(b, a, err_msg=variable.name)
      else:
        error = np.abs(b - a).max() / np.abs(a).max()
        assert error <= 1e-6, (variable.name, error)


@pytest.mark.parametrize("make_step", [_pretraining_step, _bptt_step])
@pytest.mark.parametrize("jit", [False, True])
def test_layer_recomputation_gives_the_same_loss_gradients_and_masks(make_step, jit):
  plain, recomputing = _models()
  feed = _feed(plain.encoder.config)
  results = [tf.function(make_step(model), jit_compile=jit)(feed)
             for model in (plain, recomputing)]
  _assert_same(*results, plain.trainable_variables, exact=make_step is _pretraining_step and not jit)


def test_dropout_is_drawn_and_replayed_not_switched_off():
  """The masks matter (a model without dropout has another loss) and are replayed."""
  plain, recomputing = _models()
  feed = _feed(plain.encoder.config)
  no_dropout = build_pretrainer(plain.encoder.config.replace(dropout=0.0, dropatt=0.0))
  no_dropout.set_weights(plain.get_weights())
  losses = [float(tf.function(_pretraining_step(m))(feed)[0])
            for m in (plain, recomputing, no_dropout)]
  assert losses[0] == losses[1] != losses[2]


def test_keras_dropout_without_training_seed():
  """Outside `training_seed` (Keras `fit`) the recomputing encoder keys its masks on a seed
  of its own: forward and backward agree (the gradient is the one of its forward pass,
  checked against a finite difference along the gradient); `replaying` refuses a
  function drawing Keras' stateful dropout."""
  _, recomputing = _models()
  feed = _feed(recomputing.encoder.config)
  inputs = {k: v for k, v in feed.items() if k not in ("target", "target_mask")}
  tf.random.set_seed(11)
  with tf.GradientTape() as tape:
    outputs = recomputing(inputs, training=True)
    loss = tf.reduce_sum(outputs["logits"] ** 2)
  grads = tape.gradient(loss, recomputing.trainable_variables)
  assert all(g is not None for g in grads[:3])
  dropout = StepDropout(0.5)
  with pytest.raises(ValueError, match="dropout without training_seed cannot be recomputed"):
    tf.recompute_grad(replaying(lambda x: dropout(x, training=True)))(tf.ones([4]))


def test_config_round_trip_and_bad_value(tmp_path):
  config = small_config(recompute="layer")
  path = str(tmp_path / "xlnet_config.json")
  config.to_json_file(path)
  assert json.load(open(path))["recompute"] == "layer"
  assert XLNetConfig.from_json_file(path) == config
  assert "recompute" not in config.to_hf_dict()
  assert config.for_finetuning().recompute == "layer"
  with pytest.raises(ValueError) as error:
    small_config(recompute="full")
  assert str(error.value) == ("XLNetConfig.recompute must be one of ('none', 'layer'), got "
                              "'full'")
