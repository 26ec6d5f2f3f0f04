"""Activation recomputation (`XLNetConfig.recompute`): "layer" gives the losses, gradients
and dropout masks of "none", and XLA's compiled step keeps less memory live.

Two-layer models. The eager two-stream step, Keras' dropout and the parsers are fast; the
XLA compiles, the backpropagation through segments, the trainer and the compiled memory
are slow."""

import json

import numpy as np
import pytest
import tensorflow as tf

from helpers import pretrain_config
from helpers import small_config
from xlnet_tf import build_pretrainer
from xlnet_tf import synthetic
from xlnet_tf.benchmarks import step_memory
from xlnet_tf.configs import XLNetConfig
from xlnet_tf.data import pretrain_records
from xlnet_tf.data.pretrain_reader import pretrain_dataset
from xlnet_tf.layers.step_dropout import StepDropout
from xlnet_tf.layers.step_dropout import replaying
from xlnet_tf.layers.step_dropout import step_seed
from xlnet_tf.layers.step_dropout import training_seed
from xlnet_tf.models.losses import target_cross_entropy
from xlnet_tf.networks.document_reader import read_document
from xlnet_tf.tasks import pretraining
from xlnet_tf.training import optimization
from xlnet_tf.training.memory import ReplicaMemories
from xlnet_tf.training.trainer import Trainer

BATCH, SEQ, PREDICT, MEM = 2, 8, 3, 4


def _models(**overrides):
  """(recompute "none", recompute "layer"): the same weights, dropout on."""
  config = small_config(n_layer=2, dropout=0.1, dropatt=0.1, mem_len=MEM, **overrides)
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


# The two-stream step in a TF graph in the fast tier; under XLA (a compile each) and
# through the memory slow.
@pytest.mark.parametrize("make_step", [_pretraining_step,
                                       pytest.param(_bptt_step, marks=pytest.mark.slow)])
@pytest.mark.parametrize("jit", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_layer_recomputation_gives_the_same_loss_gradients_and_masks(make_step, jit):
  """One step with "layer" gives the loss, every gradient and the next dropout mask of
  "none" (exactly in a graph for one segment; within 1e-6 relative under XLA and through
  the memory)."""
  plain, recomputing = _models()
  feed = _feed(plain.encoder.config)
  results = [tf.function(make_step(model), jit_compile=jit)(feed)
             for model in (plain, recomputing)]
  # Exactly equal in a TF graph for one segment; under XLA (fusions of the recomputed
  # block differ) and through the memory (the tape sums a variable's contributions in
  # another order) within 1e-6 relative (measured: up to 4e-7).
  _assert_same(*results, plain.trainable_variables,
               exact=make_step is _pretraining_step and not jit)


@pytest.mark.slow
def test_dropout_is_drawn_not_switched_off():
  """The masks matter (a model without dropout has another loss) and are replayed."""
  plain, recomputing = _models()
  feed = _feed(plain.encoder.config)
  no_dropout = build_pretrainer(plain.encoder.config.replace(dropout=0.0, dropatt=0.0))
  no_dropout.set_weights(plain.get_weights())
  losses = [float(tf.function(_pretraining_step(m))(feed)[0])
            for m in (plain, recomputing, no_dropout)]
  assert losses[0] == losses[1] != losses[2]


@pytest.mark.slow
def test_reading_a_document_with_backpropagation_through_segments():
  """`read_document`: 4 segments, the first two in a loop without gradient, the last two
  with gradient through the memory; dropout per segment (`folded_seed`). The same
  content and gradients (within 1e-6 relative) with "layer"."""
  plain, recomputing = _models(reuse_len=0)
  rng = np.random.default_rng(6)
  document = {"input_ids": tf.constant(rng.integers(10, 50, [2, 4, 5])),
              "segment_ids": tf.zeros([2, 4, 5], tf.int32),
              "input_mask": tf.zeros([2, 4, 5])}

  @tf.function
  def read(encoder):
    with tf.GradientTape() as tape, training_seed(step_seed(seed=2, step=9)):
      content = read_document(encoder, document, bptt_segments=2, training=True)["content"]
      loss = tf.reduce_sum(content ** 2)
    return content, tape.gradient(loss, encoder.trainable_variables)

  (content_a, grads_a), (content_b, grads_b) = (read(m.encoder) for m in (plain, recomputing))
  np.testing.assert_array_equal(content_b.numpy(), content_a.numpy())
  for variable, a, b in zip(plain.encoder.trainable_variables, grads_a, grads_b):
    assert (a is None) == (b is None), variable.name
    if a is not None:
      a, b = tf.convert_to_tensor(a).numpy(), tf.convert_to_tensor(b).numpy()
      assert np.abs(b - a).max() <= 1e-6 * np.abs(a).max(), variable.name


@pytest.mark.slow
def test_the_trainer_trains_alike(pretraining_records):
  """Three steps of the trainer (a MirroredStrategy replica thread, step-keyed dropout,
  memories carried between steps, AdamW): the same loss with "layer", and every weight
  within 1e-4 of its largest update (measured: up to 6e-6): the gradients agree to the
  last bits only (the tied word embedding's sums its contributions, LM head and lookups,
  in the tape's order, which changes where a block is one recorded op), and Adam's
  normalised updates carry such differences into every weight."""
  records_dir, _ = pretraining_records
  manifest = pretrain_records.load_manifest(records_dir)
  rows = manifest["settings"]["bsz_per_host"]
  strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
  results, initial = [], None
  for recompute in ("none", "layer"):
    config = pretrain_config(records_dir, dropout=0.1, dropatt=0.1, recompute=recompute)
    with strategy.scope():
      model = build_pretrainer(config)
      optimizer = optimization.build_optimizer(1e-3, 10, 1)
    initial = initial or model.get_weights()
    model.set_weights(initial)
    memories = ReplicaMemories(strategy, config.n_layer, rows, config.mem_len,
                               config.d_model)
    dataset = pretrain_dataset(records_dir, rows, seed=0, manifest=manifest)
    trainer = Trainer(strategy, model, optimizer,
                      strategy.experimental_distribute_dataset(dataset),
                      input_keys=pretraining.MODEL_INPUTS,
                      loss_fn=pretraining.pretraining_loss, memories=memories, seed=3)
    trainer.train(tf.constant(3))
    results.append((float(trainer.loss_metric.result()),
                    [v.numpy() for v in model.trainable_variables]))
  (loss_a, weights_a), (loss_b, weights_b) = results
  assert loss_a == loss_b
  for a, b, initial_value in zip(weights_a, weights_b, initial):
    update = np.abs(a - initial_value).max()
    assert update > 0                                                     # trained
    np.testing.assert_allclose(b, a, rtol=0, atol=1e-4 * update)


def test_keras_dropout_without_training_seed():
  """Outside `training_seed` (Keras `fit`) the recomputing encoder keys its masks on one
  seed it draws from TF's global generator: its loss and gradients are those of the
  plain model run under `training_seed` with that seed (eager, so `tf.random.set_seed`
  makes the draw repeat). `replaying` refuses a function drawing Keras' stateful
  dropout."""
  plain, recomputing = _models()
  feed = _feed(plain.encoder.config)
  inputs = {k: v for k, v in feed.items() if k not in ("target", "target_mask")}

  def loss_and_grads(model, seed=None):
    with tf.GradientTape() as tape, training_seed(seed):
      loss_sum, count = target_cross_entropy(model(inputs, training=True)["logits"],
                                             feed["target"], feed["target_mask"])
    return loss_sum / count, tape.gradient(loss_sum / count, model.trainable_variables)

  tf.random.set_seed(11)
  recomputed = loss_and_grads(recomputing)
  tf.random.set_seed(11)
  seed = tf.random.uniform([2], minval=tf.int64.min, maxval=tf.int64.max, dtype=tf.int64)
  reference = loss_and_grads(plain, seed)
  assert float(recomputed[0]) == float(reference[0])
  for variable, a, b in zip(plain.trainable_variables, reference[1], recomputed[1]):
    if a is not None:
      np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=0, atol=1e-6 * np.abs(a).max(),
                                 err_msg=variable.name)
  dropout = StepDropout(0.5)
  with pytest.raises(ValueError, match="dropout without training_seed cannot be recomputed"):
    tf.recompute_grad(replaying(lambda x: dropout(x, training=True)))(tf.ones([4]))


@pytest.mark.slow
def test_the_compiled_step_keeps_less_memory_live():
  """XLA's buffer assignment of the compiled (not run) step of a 4-layer model: with
  "layer" the temporaries' peak and the step's total are lower. XLA's CSE would merge a
  recomputation with the forward pass (and the peak would be that of "none") were it
  not for the encoder's _guarded_recompute_grad's data dependency on the incoming gradient."""
  none, layer = (step_memory.measure("small", 2, recompute, "fp32", seq_len=64,
                                     num_predict=10, n_token=500)
                 for recompute in ("none", "layer"))
  assert layer["total"] < none["total"]
  assert layer["temp"] < 0.95 * none["temp"], (layer, none)


def test_buffer_assignment_parsing():
  text = ("allocation 0: size 16384, parameter 0, shape |f32[64,64]| at ShapeIndex {}:\n"
          "allocation 9: size 16400, preallocated-temp:\n value: <7 dot.3 @0>\n\n"
          "Total bytes used: 32816 (32.0KiB)\n")
  assert step_memory.buffer_assignment_bytes(text) == {"total": 32816, "temp": 16400}
  line = step_memory.fit({1: 10 * 2 ** 30, 2: 13 * 2 ** 30})
  assert line == {"fixed": 7 * 2 ** 30, "per_sequence": 3 * 2 ** 30}
  assert step_memory.largest_batch(line["fixed"], line["per_sequence"], 16) == 3
  assert step_memory.largest_batch(line["fixed"], line["per_sequence"], 4) == 0


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
