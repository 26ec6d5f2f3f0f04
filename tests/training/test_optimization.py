"""The optimiser against a numpy re-derivation of the released code's `get_train_op`
(zihangdai/xlnet model_utils.py), written here from reading it:

- learning rate at global step s (the step BEFORE this update's increment): s / warmup * lr
  while s < warmup, else a linear (power 1) decay from lr at s = warmup to
  lr * min_lr_ratio at s = train_steps, constant after;
- gradients clipped by their global norm, then (lr_layer_decay_rate != 1) the gradient of
  every variable whose name contains "model/transformer/layer_<l>/" multiplied by
  rate^(n_layer - 1 - l), n_layer = 1 + the largest such l; nothing else is scaled;
- weight_decay == 0: tf.train.AdamOptimizer (bias correction, epsilon outside it:
  lr * sqrt(1 - b2^t) / (1 - b1^t) * m / (sqrt(v) + eps), t = 1, 2, ...);
  weight_decay > 0: AdamWeightDecayOptimizer, no bias correction:
  w -= lr * (m / (sqrt(v) + eps) + weight_decay * w), the decay only for names matching
  r_s_bias / r_r_bias / r_w_bias, or matching none of LayerNorm / layer_norm / bias.
"""

import re

import numpy as np
import pytest
import tensorflow as tf

from official.core import exp_factory

from helpers import small_config
from xlnet_tf import released_names
from xlnet_tf.models.xlnet_classifier import build_classifier
from xlnet_tf.models.xlnet_pretrainer import build_pretrainer
from xlnet_tf.tasks import pretraining
from xlnet_tf.tasks import train_lib
from xlnet_tf.training import loop
from xlnet_tf.training import optimization

BETA_1, BETA_2 = 0.9, 0.999


# ---- the released train op, in numpy -----------------------------------------------------

def released_learning_rate(step, learning_rate, warmup_steps, train_steps, min_lr_ratio):
  if step < warmup_steps:
    return step / warmup_steps * learning_rate
  end = learning_rate * min_lr_ratio
  done = min(step - warmup_steps, train_steps - warmup_steps) / (train_steps - warmup_steps)
  return (learning_rate - end) * (1.0 - done) + end


def released_decays(name, weight_decay):
  if not weight_decay:
    return False
  if any(re.search(p, name) for p in ("r_s_bias", "r_r_bias", "r_w_bias")):
    return True
  return not any(re.search(p, name) for p in ("LayerNorm", "layer_norm", "bias"))


class ReleasedTrainOp:
  """State (Adam moments, step) and one update of the released get_train_op, float64."""

  def __init__(self, learning_rate, train_steps, warmup_steps, min_lr_ratio=0.0,
               weight_decay=0.0, adam_epsilon=1e-8, clip=1.0, lr_layer_decay_rate=1.0):
    self.learning_rate, self.train_steps, self.warmup_steps = (learning_rate, train_steps,
                                                               warmup_steps)
    self.min_lr_ratio, self.weight_decay, self.adam_epsilon = (min_lr_ratio, weight_decay,
                                                               adam_epsilon)
    self.clip, self.lr_layer_decay_rate = clip, lr_layer_decay_rate
    self.m, self.v, self.step = {}, {}, 0

  def apply(self, params, grads):
    """params, grads: released name -> array. Updates `params` in place."""
    names = list(grads)
    norm = np.sqrt(sum(np.sum(np.square(grads[n])) for n in names))
    clipped = {n: grads[n] * self.clip / max(norm, self.clip) for n in names}
    if self.lr_layer_decay_rate != 1.0:
      layers = [int(m.group(1)) for n in names
                for m in [re.search(r"model/transformer/layer_(\d+?)/", n)] if m]
      n_layer = max(layers) + 1
      for n in names:
        for layer in range(n_layer):
          if f"model/transformer/layer_{layer}/" in n:
            clipped[n] = clipped[n] * self.lr_layer_decay_rate ** (n_layer - 1 - layer)
            break
    lr = released_learning_rate(self.step, self.learning_rate, self.warmup_steps,
                                self.train_steps, self.min_lr_ratio)
    t = self.step + 1
    for n in names:
      g = clipped[n]
      m = BETA_1 * self.m.get(n, 0.0) + (1 - BETA_1) * g
      v = BETA_2 * self.v.get(n, 0.0) + (1 - BETA_2) * g * g
      self.m[n], self.v[n] = m, v
      if self.weight_decay == 0:
        lr_t = lr * np.sqrt(1 - BETA_2 ** t) / (1 - BETA_1 ** t)
        params[n] = params[n] - lr_t * m / (np.sqrt(v) + self.adam_epsilon)
      else:
        update = m / (np.sqrt(v) + self.adam_epsilon)
        if released_decays(n, self.weight_decay):
          update = update + self.weight_decay * params[n]
        params[n] = params[n] - lr * update
    self.step += 1


# ---- the figure of issue 16 ----------------------------------------------------------------

def _constant_gradient_run(steps, **options):
  variable = tf.Variable(tf.zeros([2]), name="dense/kernel")
  optimizer = optimization.build_optimizer(1e-3, 1000, 0, min_lr_ratio=1.0, **options)
  for _ in range(steps):
    optimizer.apply_gradients([(tf.ones([2]), variable)])
  return float(variable.numpy()[0])


@pytest.mark.parametrize("weight_decay", [0.01, 0.0])
def test_ten_steps_of_a_constant_gradient_move_as_far_as_in_the_released_code(weight_decay):
  """Issue 16: 10 steps of a constant gradient at lr 1e-3 move a weight -0.0553 in the
  released code with weight decay (AdamWeightDecayOptimizer: no bias correction) and
  -0.0100 without (tf.train.AdamOptimizer). Before, ours always corrected (-0.0100)."""
  reference = ReleasedTrainOp(1e-3, 1000, 0, min_lr_ratio=1.0, weight_decay=weight_decay,
                              adam_epsilon=1e-6, clip=1e9)
  params = {"model/dense/kernel": np.zeros([2])}
  for _ in range(10):
    reference.apply(params, {"model/dense/kernel": np.ones([2])})
  expected = params["model/dense/kernel"][0]
  ours = _constant_gradient_run(10, weight_decay=weight_decay, adam_epsilon=1e-6)
  print(f"weight_decay {weight_decay}: ours {ours:.6f}, released {expected:.6f}")
  assert round(expected, 4) == (-0.0553 if weight_decay else -0.0100)
  np.testing.assert_allclose(ours, expected, rtol=1e-5)
  # The option that restores the previous behaviour, and the one that never corrects.
  np.testing.assert_allclose(_constant_gradient_run(10, weight_decay=weight_decay,
                                                    adam_bias_correction="always"),
                             -0.0100, atol=5e-5)
  np.testing.assert_allclose(_constant_gradient_run(10, weight_decay=weight_decay,
                                                    adam_bias_correction="never"),
                             -0.0553, atol=5e-5)


@pytest.mark.parametrize("weight_decay, correction, warmup, warned", [
    (0.01, "released", 100, True), (0.01, "released", 0, True),
    (0.01, "released", 1000, False), (0.01, "always", 100, False),
    (0.0, "released", 100, False), (0.0, "never", 0, True)])
def test_a_short_warmup_without_bias_correction_is_warned_about(
    weight_decay, correction, warmup, warned, caplog):
  """Issue 28: the released optimizer without bias correction and a warmup shorter than
  1/(1 - beta_2) = 1000 updates stalls small models. The warning's factor is the one the
  released train op moves a weight by, per learning rate, under a constant gradient at the
  first update after the warmup (a constant schedule here, so one update's step / lr)."""
  with caplog.at_level("WARNING"):
    optimization.build_optimizer(1e-3, 5000, warmup, weight_decay=weight_decay,
                                 adam_bias_correction=correction)
  messages = [r.getMessage() for r in caplog.records if "warmup" in r.getMessage()]
  assert bool(messages) == warned
  if not warned:
    return
  # The released train op, stepped to warmup + 1 at a constant lr (min_lr_ratio 1, no
  # warmup) with a constant gradient: each update's size per lr is the factor. (A weight
  # decay > 0 selects the released optimizer without correction; 1e-300 adds nothing.)
  reference = ReleasedTrainOp(1e-3, 10_000, 0, min_lr_ratio=1.0, weight_decay=1e-300,
                              adam_epsilon=1e-12, clip=1e9)
  params = {"model/dense/kernel": np.zeros([1])}
  steps = []
  for _ in range(1000):
    before = params["model/dense/kernel"][0]
    reference.apply(params, {"model/dense/kernel": np.ones([1])})
    steps.append((before - params["model/dense/kernel"][0]) / 1e-3)
  peak = max(steps[max(warmup, 1) - 1:])
  expected = (f"--warmup_steps={warmup} < 1/(1 - beta_2) = 1000: after the warmup, "
              f"updates are up to {peak:.1f}x the learning rate")
  assert expected in messages[0], messages[0]
  assert "--adam_bias_correction=always" in messages[0]


# ---- a whole run: schedule, clipping, layer decay, decay selection, dense and sparse -------

def _released_names(model, task="sst-2"):
  """Our variable name -> the released name, from the encoder's mapping and the names of
  the released run_classifier head (model/sequnece_summary/..., classification_<task>)."""
  names = {v.name: name for name, v in released_names.encoder_variables(model.encoder).items()}
  head = [(model.sequence_summary.summary.kernel, "model/sequnece_summary/summary/kernel"),
          (model.sequence_summary.summary.bias, "model/sequnece_summary/summary/bias"),
          (model.logit.kernel, f"model/classification_{task}/logit/kernel"),
          (model.logit.bias, f"model/classification_{task}/logit/bias")]
  names.update({v.name: name for v, name in head})
  assert set(names) == {v.name for v in model.trainable_variables}
  return names


@pytest.mark.parametrize("weight_decay, lr_layer_decay_rate", [
    pytest.param(0.01, 1.0, marks=pytest.mark.slow), (0.0, 1.0), (0.01, 0.75),
    pytest.param(0.0, 0.6, marks=pytest.mark.slow)])
def test_a_run_equals_the_released_train_op(weight_decay, lr_layer_decay_rate):
  """14 updates (warmup 3, decay to step 10, then constant at lr * min_lr_ratio) of a
  3-layer classifier with random gradients, some above the clipping norm and some below,
  the word embedding's as IndexedSlices on some steps. Ours: clip by
  global norm as the trainers do, then the optimizer of
  --lr_layer_decay_mode=released_gradient_scaling."""
  model = build_classifier(small_config(n_layer=3), 2)
  names = _released_names(model)
  settings = dict(learning_rate=3e-3, train_steps=10, warmup_steps=3, min_lr_ratio=0.1,
                  weight_decay=weight_decay, adam_epsilon=1e-6)
  optimizer = optimization.build_optimizer(
      **settings, **optimization.layerwise_decay(model, lr_layer_decay_rate,
                                                 "released_gradient_scaling"))
  reference = ReleasedTrainOp(**settings, clip=1.0, lr_layer_decay_rate=lr_layer_decay_rate)
  params = {names[v.name]: v.numpy().astype(np.float64) for v in model.trainable_variables}
  rng = np.random.default_rng(3)
  norms = []
  embedding = model.encoder.word_embedding
  for step in range(14):
    scale = (0.002, 0.05)[step % 2]
    grads = {v.name: (scale * rng.standard_normal(v.shape)).astype(np.float32)
             for v in model.trainable_variables}
    sparse = step % 3 == 1
    if sparse:
      rows = np.array([1, 4, 7])
      values = (scale * rng.standard_normal([3, embedding.shape[1]])).astype(np.float32)
      dense = np.zeros(embedding.shape, np.float32)
      np.add.at(dense, rows, values)
      grads[embedding.name] = dense
    norms.append(np.sqrt(sum(np.sum(np.square(g.astype(np.float64)))
                             for g in grads.values())))
    ours = [tf.IndexedSlices(tf.constant(values), tf.constant(rows), tf.constant(
        embedding.shape)) if sparse and v is embedding else tf.constant(grads[v.name])
            for v in model.trainable_variables]
    ours, _ = tf.clip_by_global_norm(ours, 1.0)
    optimizer.apply_gradients(zip(ours, model.trainable_variables))
    reference.apply(params, {names[n]: g.astype(np.float64) for n, g in grads.items()})
    for variable in model.trainable_variables:
      expected = params[names[variable.name]]
      np.testing.assert_allclose(variable.numpy(), expected, rtol=2e-5, atol=2e-6,
                                 err_msg=f"step {step}: {names[variable.name]}")
  assert min(norms) < 1.0 < max(norms)                      # clipping on some steps only


def test_weight_decay_selects_the_variables_the_released_names_select():
  """Our names are the released ones without "model/" (and the task); the released
  include/exclude patterns on the released names pick the same variables."""
  pretrainer = build_pretrainer(small_config())
  ours = {v.name: name for name, v in released_names.released_variables(pretrainer).items()}
  classifier = build_classifier(small_config(), 3)
  ours.update(_released_names(classifier))
  for name, released in ours.items():
    assert optimization.uses_weight_decay(name) == released_decays(released, 0.01), name
  assert {released for name, released in ours.items()
          if not optimization.uses_weight_decay(name)} >= {
              "model/transformer/layer_0/rel_attn/LayerNorm/gamma",
              "model/transformer/layer_1/ff/layer_2/bias", "model/lm_loss/bias",
              "model/classification_sst-2/logit/bias"}


def test_released_gradient_scaling_touches_only_the_layers():
  model = build_classifier(small_config(n_layer=3), 2)
  scales = optimization.layerwise_gradient_scales(model, 0.5)
  layer_variables = {v.name for v in model.trainable_variables
                     if re.match(r"transformer/layer_\d+/", v.name)}
  assert set(scales) == layer_variables
  for name, scale in scales.items():
    layer = int(re.match(r"transformer/layer_(\d+)/", name).group(1))
    assert scale == 0.5 ** (2 - layer), name
  assert optimization.layerwise_decay(model, 1.0, "released_gradient_scaling") == {}
  assert set(optimization.layerwise_decay(model, 0.5)) == {"lr_multipliers"}


def _pretraining_options(**optimization_changes) -> loop.RunOptions:
  """The run options of the pretraining experiment (its task.optimization defaults: the
  paper's and the released train.py's), with `optimization_changes`."""
  params = exp_factory.get_exp_config(pretraining.KIND.experiment)
  params.override({"task": {"optimization": optimization_changes},
                   "trainer": {"train_steps": 10}})
  return train_lib.run_options(params, "unused")


@pytest.mark.parametrize("changes, message", [
    ({"adam_bias_correction": "sometimes"},
     r"--adam_bias_correction must be one of released, always, never, got 'sometimes'"),
    ({"lr_layer_decay_mode": "gradient"},
     r"--lr_layer_decay_mode must be one of multiplier, released_gradient_scaling, got "
     r"'gradient'"),
])
def test_bad_optimizer_options_name_the_flag(changes, message):
  with pytest.raises(ValueError, match=message):
    loop.RunOptions(model_dir="unused", train_steps=10, **changes)
  with pytest.raises(ValueError, match=message):
    optimization.check_optimizer_settings(1e-3, 10, **changes)
  if "adam_bias_correction" in changes:
    with pytest.raises(ValueError, match=message):
      _pretraining_options(**changes)
    with pytest.raises(ValueError, match=message):
      optimization.build_optimizer(1e-3, 10, 0, **changes)
  else:
    with pytest.raises(ValueError, match=message):
      optimization.layerwise_decay(build_classifier(small_config(), 2), 0.5, **{
          "mode": changes["lr_layer_decay_mode"]})


def test_defaults_are_the_released_scripts():
  """train.py's min_lr_ratio; run_classifier.py's learning rate, epsilon, decay; the
  released Adam choice and layer decay mode are recorded in the run settings."""
  pretrain = _pretraining_options()
  assert (pretrain.min_lr_ratio, pretrain.adam_bias_correction) == (0.001, "released")
  finetune = loop.RunOptions(model_dir="unused", train_steps=10)
  assert (finetune.learning_rate, finetune.adam_epsilon, finetune.weight_decay,
          finetune.min_lr_ratio, finetune.clip_norm) == (1e-5, 1e-8, 0.0, 0.0, 1.0)
  settings = finetune.run_settings()
  assert (settings["lr_layer_decay_mode"], settings["adam_bias_correction"]) == (
      "multiplier", "released")
  assert pretrain.run_settings()["adam_bias_correction"] == "released"
