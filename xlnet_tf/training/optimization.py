"""The paper's optimiser on `official.modeling.optimization`: AdamW, warmup + linear decay.

  >>> optimizer = build_optimizer(4e-4, train_steps=500_000, warmup_steps=40_000,
  ...                             weight_decay=0.01, adam_epsilon=1e-6)

Weight decay (decoupled) applies to every kernel and embedding and to the relative biases
r_w_bias, r_r_bias, r_s_bias; never to LayerNorm gains/offsets or to Dense and LM biases.
(A plain "bias" exclusion would also drop the relative biases, as Model Garden's XLNet
does by accident; they are included by name first.) Gradients are clipped by global norm
by the training loop, after the cross-replica sum, so the optimizer's own clipping is off.
"""

import numbers
import re
from typing import Any, Dict, Optional

import numpy as np
import tensorflow as tf
import tf_keras
from official.modeling import optimization
from official.modeling.optimization import legacy_adamw

DECAY_INCLUDE = (r"r_w_bias", r"r_r_bias", r"r_s_bias")
DECAY_EXCLUDE = (r"LayerNorm", r"layer_norm", r"bias")


def uses_weight_decay(variable_name: str) -> bool:
  """Whether `variable_name` gets weight decay (the selection the optimizer applies)."""
  if any(re.search(p, variable_name) for p in DECAY_INCLUDE):
    return True
  return not any(re.search(p, variable_name) for p in DECAY_EXCLUDE)


def check_settings(learning_rate: float, train_steps: int, warmup_steps: int = 0,
                   weight_decay: float = 0.0, adam_epsilon: float = 1e-6,
                   min_lr_ratio: float = 0.0, clip: float = 1.0,
                   lr_layer_decay_rate: float = 1.0, beta_1: float = 0.9,
                   beta_2: float = 0.999) -> None:
  """Raises ValueError naming every impossible optimizer setting (by its flag), before
  anything is built: a learning rate <= 0 would train by gradient ascent or not at all."""
  problems = []

  def need(ok, flag, value, expected):
    if not ok:
      problems.append(f"--{flag} must be {expected}, got {value!r}")

  finite = lambda x: isinstance(x, numbers.Real) and bool(np.isfinite(x))
  need(finite(learning_rate) and learning_rate > 0, "learning_rate", learning_rate, "> 0")
  need(isinstance(train_steps, numbers.Integral) and train_steps >= 1, "train_steps",
       train_steps, ">= 1")
  need(isinstance(warmup_steps, numbers.Integral)
       and 0 <= warmup_steps < max(train_steps, 1), "warmup_steps", warmup_steps, f">= 0 and < --train_steps ({train_steps})")
  need(finite(weight_decay) and weight_decay >= 0, "weight_decay", weight_decay, ">= 0")
  need(finite(adam_epsilon) and adam_epsilon > 0, "adam_epsilon", adam_epsilon, "> 0")
  need(finite(min_lr_ratio) and 0 <= min_lr_ratio <= 1, "min_lr_ratio", min_lr_ratio,
       "in [0, 1]")
  need(finite(clip) and clip > 0, "clip", clip, "> 0 (the global-norm clipping threshold)")
  need(finite(lr_layer_decay_rate) and lr_layer_decay_rate > 0, "lr_layer_decay_rate",
       lr_layer_decay_rate, "> 0")
  for name, beta in (("beta_1", beta_1), ("beta_2", beta_2)):
    need(finite(beta) and 0 <= beta < 1, name, beta, "in [0, 1)")
  if problems:
    raise ValueError("; ".join(problems))


def current_learning_rate(optimizer) -> float:
  """The learning rate `optimizer` applies at its current step (schedule evaluated)."""
  learning_rate = optimizer.learning_rate
  if callable(learning_rate):
    learning_rate = learning_rate(optimizer.iterations)
  return float(tf.convert_to_tensor(learning_rate).numpy())


def learning_rate_schedule(learning_rate: float, train_steps: int, warmup_steps: int,
                           min_lr_ratio: float = 0.0):
  """Linear warmup from 0 to `learning_rate` over `warmup_steps`, then linear decay to
  `learning_rate * min_lr_ratio` at `train_steps` (the decay starts after the warmup)."""
  return _factory(learning_rate, train_steps, warmup_steps, min_lr_ratio, 0.0,
                  1e-6).build_learning_rate()


def build_optimizer(learning_rate: float, train_steps: int, warmup_steps: int,
                    weight_decay: float = 0.01, adam_epsilon: float = 1e-6,
                    min_lr_ratio: float = 0.0, beta_1: float = 0.9, beta_2: float = 0.999,
                    loss_scale: bool = False,
                    lr_multipliers: Optional[Dict[str, Any]] = None
                    ) -> tf_keras.optimizers.Optimizer:
  """AdamWeightDecay with the schedule above; with `lr_multipliers` (see
  `layerwise_lr_multipliers`) the layer-wise variant; wrapped for loss scaling if
  `loss_scale`."""
  check_settings(learning_rate, train_steps, warmup_steps, weight_decay=weight_decay,
                 adam_epsilon=adam_epsilon, min_lr_ratio=min_lr_ratio, beta_1=beta_1,
                 beta_2=beta_2)
  factory = _factory(learning_rate, train_steps, warmup_steps, min_lr_ratio, weight_decay,
                     adam_epsilon, beta_1, beta_2)
  schedule = factory.build_learning_rate()
  if lr_multipliers is None:
    optimizer = factory.build_optimizer(schedule)
  else:
    optimizer = LayerwiseAdamWeightDecay(
        learning_rate=schedule, weight_decay_rate=weight_decay, beta_1=beta_1,
        beta_2=beta_2, epsilon=adam_epsilon, include_in_weight_decay=list(DECAY_INCLUDE),
        exclude_from_weight_decay=list(DECAY_EXCLUDE), gradient_clip_norm=0.0,
        lr_multipliers=lr_multipliers)
  if loss_scale:
    optimizer = tf_keras.mixed_precision.LossScaleOptimizer(optimizer)
  return optimizer


def _factory(learning_rate, train_steps, warmup_steps, min_lr_ratio, weight_decay,
             adam_epsilon, beta_1=0.9, beta_2=0.999):
  config = optimization.OptimizationConfig({
      "optimizer": {"type": "adamw", "adamw": {
          "weight_decay_rate": weight_decay, "epsilon": adam_epsilon, "beta_1": beta_1,
          "beta_2": beta_2, "include_in_weight_decay": list(DECAY_INCLUDE),
          "exclude_from_weight_decay": list(DECAY_EXCLUDE), "gradient_clip_norm": 0.0}},
      "learning_rate": {"type": "polynomial", "polynomial": {
          "initial_learning_rate": learning_rate, "decay_steps": train_steps - warmup_steps,
          "end_learning_rate": learning_rate * min_lr_ratio, "power": 1.0,
          "offset": warmup_steps}},
      "warmup": {"type": "linear", "linear": {"warmup_steps": warmup_steps,
                                              "warmup_learning_rate": 0.0}},
  })
  return optimization.OptimizerFactory(config)


# ---- layer-wise learning-rate decay (fine-tuning) ---------------------------------------

def layerwise_lr_multipliers(model, decay_rate: float) -> Dict[str, Any]:
  """Variable name -> learning-rate multiplier: layer m of L gets decay_rate^(L-1-m).

  The embeddings (word embedding, mask_emb) get the lowest, decay_rate^L; per-layer
  slices of stacked variables (seg_embed [L, ...], and r_w/r_r/r_s_bias [L, ...] with
  untie_r) get their layer's rate (a multiplier array [L, 1, ...]); everything above the
  encoder (the task head) and relative biases shared by all layers get 1.
  """
  encoder = model.encoder
  n_layer = encoder.config.n_layer
  per_layer = decay_rate ** (n_layer - 1 - np.arange(n_layer))
  multipliers = {}
  for variable in model.trainable_variables:
    name = variable.name
    layer = re.search(r"/layer_(\d+)/", name)
    if layer:
      multipliers[name] = float(per_layer[int(layer.group(1))])
    elif re.search(r"word_embedding|mask_emb", name):
      multipliers[name] = float(decay_rate ** n_layer)
    elif (re.search(r"seg_embed|r_[wrs]_bias", name) and variable.shape.rank >= 3
          and variable.shape[0] == n_layer):
      multipliers[name] = per_layer.reshape([n_layer] + [1] * (variable.shape.rank - 1))
    else:
      multipliers[name] = 1.0
  return multipliers


class LayerwiseAdamWeightDecay(legacy_adamw.AdamWeightDecay):
  """AdamWeightDecay whose learning rate is multiplied per variable (`lr_multipliers`).

  A scalar multiplier scales the variable's learning rate (and so its weight decay); an
  array multiplier (stacked per-layer variables) scales the update of each slice. Adam's
  moments do not depend on the learning rate, so both are exact.
  """

  def __init__(self, *args, lr_multipliers: Optional[Dict[str, Any]] = None, **kwargs):
    super().__init__(*args, **kwargs)
    self.lr_multipliers = dict(lr_multipliers or {})

  def _scaled_apply_state(self, var, apply_state, factor):
    key = (var.device, var.dtype.base_dtype)
    apply_state = dict(apply_state or {})
    coefficients = dict(apply_state.get(key) or self._fallback_apply_state(*key))
    for name in ("lr_t", "lr"):
      coefficients[name] = coefficients[name] * factor
    apply_state[key] = coefficients
    return apply_state

  def _apply(self, apply_fn, var, apply_state):
    factor = self.lr_multipliers.get(var.name, 1.0)
    if np.ndim(factor) == 0:
      if factor == 1.0:
        return apply_fn(apply_state)
      return apply_fn(self._scaled_apply_state(var, apply_state, factor))
    old = tf.identity(var)                       # scale each slice's update after the fact
    with tf.control_dependencies([apply_fn(apply_state)]):
      factor = tf.constant(factor, var.dtype.base_dtype)
      return var.assign(old + factor * (var.read_value() - old))

  def _resource_apply_dense(self, grad, var, apply_state=None):
    parent = super()._resource_apply_dense
    return self._apply(lambda state: parent(grad, var, apply_state=state), var, apply_state)

  def _resource_apply_sparse(self, grad, var, indices, apply_state=None):
    parent = super()._resource_apply_sparse
    return self._apply(lambda state: parent(grad, var, indices, apply_state=state), var,
                       apply_state)
