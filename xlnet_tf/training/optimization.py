"""The optimiser of the released code on `official.modeling.optimization`: Adam(W) with
linear warmup and linear decay, as the original `model_utils.get_train_op` builds it.

  >>> optimizer = build_optimizer(4e-4, train_steps=500_000, warmup_steps=40_000,
  ...                             weight_decay=0.01, adam_epsilon=1e-6, min_lr_ratio=0.001)

Schedule (evaluated at the number of updates already applied, s): s / warmup * lr during
the warmup, then a linear decay from lr at s = warmup to lr * min_lr_ratio at s =
train_steps, constant after.

Adam and its bias correction (`adam_bias_correction`): the released code uses its own
AdamWeightDecayOptimizer, which has NO bias correction, whenever weight_decay > 0, and
`tf.train.AdamOptimizer` (bias correction in the "epsilon hat" form: lr * sqrt(1 - b2^t) /
(1 - b1^t) * m / (sqrt(v) + eps)) when weight_decay == 0. "released" (the default) does
exactly that; "always" corrects in both cases (what Model Garden's AdamW and earlier
versions of this project do); "never" never corrects. Without correction the early updates
are larger (for a constant gradient: 3.2x the corrected one at step 1, 6.5x at step 10,
3.2x at step 100, 1.3x at step 1000; 10 steps at lr 1e-3 move a weight -0.0553 instead of
-0.0100).

Weight decay (decoupled, lr * weight_decay * w) applies to every kernel and embedding and
to the relative biases r_w_bias, r_r_bias, r_s_bias; never to LayerNorm gains/offsets or to
Dense and LM biases: the released include/exclude patterns, matched against our variable
names, which are the released names without the leading "model/" (so the same variables are
decayed; see tests/training/test_optimization.py). (A plain "bias" exclusion would also drop the
relative biases, as Model Garden's XLNet does by accident; they are included by name
first.) Gradients are clipped by global norm by the training loop, after the
cross-replica sum, so the optimizer's own clipping is off.

Layer-wise learning-rate decay for fine-tuning (`lr_layer_decay_mode`):
  "multiplier" (the default, a deliberate fix): a real per-variable learning-rate
    multiplier, rate^(L-1-l) for layer l of L, rate^L for the embeddings, per slice for
    stacked per-layer variables (`layerwise_lr_multipliers`).
  "released_gradient_scaling": what the released code does: the clipped gradient of every
    variable under model/transformer/layer_<l>/ is multiplied by rate^(L-1-l), nothing else
    (not the embeddings, seg_embed or relative biases, nor the head). Adam divides the scale
    out again (up to epsilon), so this barely changes the update; use it to rerun a
    published SQuAD/RACE recipe as it was (`layerwise_gradient_scales`).
"""

import numbers
import re
from typing import Any, Dict, Optional

from absl import logging
import numpy as np
import tensorflow as tf
import tf_keras
from official.modeling import optimization
from official.modeling.optimization import legacy_adamw

from xlnet_tf import released_names

DECAY_INCLUDE = (r"r_w_bias", r"r_r_bias", r"r_s_bias")
DECAY_EXCLUDE = (r"LayerNorm", r"layer_norm", r"bias")

# --adam_bias_correction: "released" = none with weight_decay > 0, Adam's with 0.
ADAM_BIAS_CORRECTIONS = ("released", "always", "never")
# --lr_layer_decay_mode
LR_LAYER_DECAY_MODES = ("multiplier", "released_gradient_scaling")


def uses_weight_decay(variable_name: str) -> bool:
  """Whether `variable_name` gets weight decay (the selection the optimizer applies)."""
  if any(re.search(p, variable_name) for p in DECAY_INCLUDE):
    return True
  return not any(re.search(p, variable_name) for p in DECAY_EXCLUDE)


def uses_bias_correction(adam_bias_correction: str, weight_decay: float) -> bool:
  """Whether Adam's bias correction applies under `--adam_bias_correction` (see the module
  docstring): "released" corrects only when there is no weight decay."""
  if adam_bias_correction == "released":
    return weight_decay == 0
  return adam_bias_correction == "always"


def check_optimizer_settings(learning_rate: float, train_steps: int, warmup_steps: int = 0,
                             weight_decay: float = 0.0, adam_epsilon: float = 1e-6,
                             min_lr_ratio: float = 0.0, clip: float = 1.0,
                             lr_layer_decay_rate: float = 1.0, beta_1: float = 0.9,
                             beta_2: float = 0.999, adam_bias_correction: str = "released",
                             lr_layer_decay_mode: str = "multiplier") -> None:
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
       and 0 <= warmup_steps < max(train_steps, 1), "warmup_steps", warmup_steps,
       f">= 0 and < --train_steps ({train_steps})")
  need(finite(weight_decay) and weight_decay >= 0, "weight_decay", weight_decay, ">= 0")
  need(finite(adam_epsilon) and adam_epsilon > 0, "adam_epsilon", adam_epsilon, "> 0")
  need(finite(min_lr_ratio) and 0 <= min_lr_ratio <= 1, "min_lr_ratio", min_lr_ratio,
       "in [0, 1]")
  need(finite(clip) and clip > 0, "clip", clip, "> 0 (the global-norm clipping threshold)")
  need(finite(lr_layer_decay_rate) and lr_layer_decay_rate > 0, "lr_layer_decay_rate",
       lr_layer_decay_rate, "> 0")
  for name, beta in (("beta_1", beta_1), ("beta_2", beta_2)):
    need(finite(beta) and 0 <= beta < 1, name, beta, "in [0, 1)")
  need(adam_bias_correction in ADAM_BIAS_CORRECTIONS, "adam_bias_correction",
       adam_bias_correction, f"one of {', '.join(ADAM_BIAS_CORRECTIONS)}")
  need(lr_layer_decay_mode in LR_LAYER_DECAY_MODES, "lr_layer_decay_mode",
       lr_layer_decay_mode, f"one of {', '.join(LR_LAYER_DECAY_MODES)}")
  if problems:
    raise ValueError("; ".join(problems))


def uncorrected_step_factor(step: int, beta_1: float = 0.9, beta_2: float = 0.999) -> float:
  """How many times the learning rate Adam WITHOUT bias correction moves a weight at update
  `step` (1-based) under a constant gradient: (1 - beta_1^step) / sqrt(1 - beta_2^step)
  (corrected Adam: 1). 3.2 at step 1, 6.5 at 10, 3.2 at 100, 1.3 at 1000."""
  return (1 - beta_1 ** step) / np.sqrt(1 - beta_2 ** step)


def short_warmup_warning(adam_bias_correction: str, weight_decay: float, warmup_steps: int,
                         beta_1: float = 0.9, beta_2: float = 0.999) -> Optional[str]:
  """A warning when Adam runs without bias correction with a warmup shorter than its second
  moment's memory, 1 / (1 - beta_2) updates (1,000): the early updates are then several
  times the learning rate. The released recipe pairs the uncorrected optimizer with 40,000
  warmup steps; a 2 x 128 model with 100 warmup steps stalls at the unigram entropy
  (docs/small-models.md). None when there is nothing to warn about."""
  memory = int(round(1 / (1 - beta_2)))
  if uses_bias_correction(adam_bias_correction, weight_decay) or warmup_steps >= memory:
    return None
  peak = max(uncorrected_step_factor(s, beta_1, beta_2) for s in range(1, memory + 1)
             if s >= warmup_steps)
  return (f"Adam without bias correction (--adam_bias_correction={adam_bias_correction} "
          f"with --weight_decay={weight_decay:g}) and --warmup_steps={warmup_steps} < "
          f"1/(1 - beta_2) = {memory}: after the warmup, updates are up to {peak:.1f}x the "
          f"learning rate. The released recipe warms up for 40,000 steps; with a short "
          f"warmup pass --adam_bias_correction=always (a small model pretrained this way "
          f"stalls at the unigram entropy: docs/small-models.md)")


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
                    lr_multipliers: Optional[Dict[str, Any]] = None,
                    gradient_multipliers: Optional[Dict[str, float]] = None,
                    adam_bias_correction: str = "released", clip_norm: float = 0.0
                    ) -> tf_keras.optimizers.Optimizer:
  """Adam(W) with the schedule above (see the module docstring).

  Args:
    lr_multipliers: variable name -> learning-rate multiplier (`layerwise_lr_multipliers`).
    gradient_multipliers: variable name -> factor on its (clipped) gradient
      (`layerwise_gradient_scales`, the released layer-wise decay).
    adam_bias_correction: "released", "always" or "never".
    loss_scale: wrap in a LossScaleOptimizer (mixed_float16).
    clip_norm: > 0: the optimizer clips the gradients by global norm itself (for
      `model.fit`); 0 (default): the training loop clips, after the cross-replica sum.
  """
  check_optimizer_settings(learning_rate, train_steps, warmup_steps, weight_decay=weight_decay,
                           adam_epsilon=adam_epsilon, min_lr_ratio=min_lr_ratio, beta_1=beta_1,
                           beta_2=beta_2, adam_bias_correction=adam_bias_correction)
  warning = short_warmup_warning(adam_bias_correction, weight_decay, warmup_steps, beta_1,
                                 beta_2)
  if warning:
    logging.warning(warning)
  schedule = _factory(learning_rate, train_steps, warmup_steps, min_lr_ratio, weight_decay,
                      adam_epsilon, beta_1, beta_2).build_learning_rate()
  optimizer = AdamWeightDecay(
      learning_rate=schedule, weight_decay_rate=weight_decay, beta_1=beta_1,
      beta_2=beta_2, epsilon=adam_epsilon, include_in_weight_decay=list(DECAY_INCLUDE),
      exclude_from_weight_decay=list(DECAY_EXCLUDE), gradient_clip_norm=clip_norm,
      bias_correction=uses_bias_correction(adam_bias_correction, weight_decay),
      lr_multipliers=lr_multipliers, gradient_multipliers=gradient_multipliers)
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

def layerwise_decay(model, decay_rate: float, mode: str = "multiplier") -> Dict[str, Any]:
  """The `build_optimizer` keyword arguments of `--lr_layer_decay_rate` and
  `--lr_layer_decay_mode` for `model` (an encoder model: `model.encoder`): {} for rate 1."""
  check_optimizer_settings(1.0, 1, lr_layer_decay_rate=decay_rate, lr_layer_decay_mode=mode)
  if decay_rate == 1.0:
    return {}
  if mode == "multiplier":
    return {"lr_multipliers": layerwise_lr_multipliers(model, decay_rate)}
  return {"gradient_multipliers": layerwise_gradient_scales(model, decay_rate)}


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


def layerwise_gradient_scales(model, decay_rate: float) -> Dict[str, float]:
  """Variable name -> gradient factor of the released layer-wise decay: the variables whose
  released name is under model/transformer/layer_<l>/ get decay_rate^(L-1-l); no other
  variable is listed (the released code leaves them alone)."""
  encoder = model.encoder
  n_layer = encoder.config.n_layer
  scales = {}
  for name, variable in released_names.encoder_variables(encoder).items():
    layer = re.match(rf"{released_names.TRANSFORMER}/layer_(\d+)/", name)
    if layer:
      scales[variable.name] = float(decay_rate ** (n_layer - 1 - int(layer.group(1))))
  return scales


class AdamWeightDecay(legacy_adamw.AdamWeightDecay):
  """Model Garden's AdamWeightDecay with the released code's options.

  Args (besides legacy_adamw.AdamWeightDecay's):
    bias_correction: False: m / (sqrt(v) + eps) with the scheduled learning rate, as the
      released AdamWeightDecayOptimizer; True: Adam's correction (tf.train.AdamOptimizer).
    lr_multipliers: variable name -> learning-rate multiplier. A scalar scales the
      variable's learning rate (and so its weight decay); an array (stacked per-layer
      variables) scales the update of each slice. Adam's moments do not depend on the
      learning rate, so both are exact.
    gradient_multipliers: variable name -> factor applied to the variable's gradient
      before Adam sees it (moments included).
  """

  def __init__(self, *args, bias_correction: bool = True,
               lr_multipliers: Optional[Dict[str, Any]] = None,
               gradient_multipliers: Optional[Dict[str, float]] = None, **kwargs):
    super().__init__(*args, **kwargs)
    self.bias_correction = bias_correction
    self.lr_multipliers = dict(lr_multipliers or {})
    self.gradient_multipliers = dict(gradient_multipliers or {})

  def _prepare_local(self, var_device, var_dtype, apply_state):
    super()._prepare_local(var_device, var_dtype, apply_state)
    if not self.bias_correction:
      # The dense kernel computes lr * sqrt(1 - beta2_power) / (1 - beta1_power) itself:
      # powers of 0 make that lr; the sparse path reads "lr" directly.
      coefficients = apply_state[(var_device, var_dtype)]
      zero = tf.zeros([], var_dtype)
      coefficients.update(lr=coefficients["lr_t"], beta_1_power=zero, beta_2_power=zero)

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

  def _scaled_gradient(self, grad, var):
    factor = self.gradient_multipliers.get(var.name, 1.0)
    return grad if factor == 1.0 else grad * tf.cast(factor, grad.dtype)

  def _resource_apply_dense(self, grad, var, apply_state=None):
    grad = self._scaled_gradient(grad, var)
    parent = super()._resource_apply_dense
    return self._apply(lambda state: parent(grad, var, apply_state=state), var, apply_state)

  def _resource_apply_sparse(self, grad, var, indices, apply_state=None):
    grad = self._scaled_gradient(grad, var)
    parent = super()._resource_apply_sparse
    return self._apply(lambda state: parent(grad, var, indices, apply_state=state), var,
                       apply_state)
