"""Training parity with HuggingFace's PyTorch XLNet: gradients, clipping and the optimizer.

Both sides start from the same weights and take 20 updates on the same batches: for
pretraining, real records of the bundled corpus (perm_mask, target_mapping, two segments,
bi_data, memories carried across steps and reset where a stream starts); for the
classifier, real movie-review features. Ours runs the real drivers (`runs.pretraining.pretrain`;
`loop.build_model_and_optimizer` + `loop.train_model` with the classifier's loss: the orbit
trainer's steps with its clipping and `build_optimizer`); HuggingFace's side
(xlnet_tf/runs/hf_training.py, which experiments/hf_pretraining_steps.py runs for
hundreds of steps) computes the same loss from its logits and steps with an optimizer
written from PyTorch primitives, with the released code's semantics
(model_utils.get_train_op): linear warmup / linear decay evaluated at the step before the
update, global-norm clipping, then the released layer-wise gradient scaling, then Adam
WITHOUT bias correction + decoupled weight decay (AdamWeightDecayOptimizer, when
weight_decay > 0) or Adam with bias correction (tf.train.AdamOptimizer, weight_decay = 0),
decay selected by the released variable names. Dropout is off. Slow: 20-step runs of both
sides.
"""

import os

import numpy as np
import pytest
import tensorflow as tf
import torch
import transformers

from xlnet_tf.runs.hf_training import PretrainingSteps
from xlnet_tf.runs.hf_training import ReleasedOptimizer
from hf_reference import make_hf_model
from helpers import LOSS_TOLERANCE
from helpers import build_for_training
from helpers import pretrain_config
from helpers import pretrain_options
from helpers import run_pretraining
from helpers import train_classifier
from xlnet_tf import released_names
from xlnet_tf.configs import XLNetConfig
from xlnet_tf.convert.importer import convert
from xlnet_tf.convert.huggingface import hf_to_released
from xlnet_tf.data import classifier_features
from xlnet_tf.data import classifier_tasks
from xlnet_tf.data import pretrain_records
from xlnet_tf.data.pretrain_reader import pretrain_dataset
from xlnet_tf.models.xlnet_classifier import ClassifierSpec
from xlnet_tf.models.xlnet_pretrainer import build_pretrainer
from xlnet_tf.training import loop

STEPS = 20

pytestmark = pytest.mark.slow
WEIGHT_TOLERANCE = 2e-5       # max |weight difference| / max(1, max |weight|), any weight


def _moderate_weights(model):
  """make_hf_model's random weights, shrunk so that 20 steps train smoothly."""
  with torch.no_grad():
    for name, param in model.named_parameters():
      if "layer_norm.weight" in name:
        param.copy_(1.0 + 0.5 * (param - 1.0))
      else:
        param.mul_(0.2)


def _relative_error(actual, reference):
  actual, reference = np.asarray(actual, np.float64), np.asarray(reference, np.float64)
  return float(np.max(np.abs(actual - reference)) / max(1.0, np.max(np.abs(reference))))


def _compare_weights(ours, hf_model, config):
  """Max relative difference over every weight (released names) and the worst name."""
  state = {k: v.detach().numpy() for k, v in hf_model.state_dict().items()}
  reference = hf_to_released(state, config, "hf").arrays
  errors = {name: _relative_error(ours[name], reference[name]) for name in ours}
  worst = max(errors, key=errors.get)
  return errors[worst], worst


# ---- pretraining -------------------------------------------------------------------------

def test_pretraining_matches_huggingface_step_by_step(pretraining_records, tmp_path):
  records_dir, _ = pretraining_records
  manifest = pretrain_records.load_manifest(records_dir)
  rows = manifest["settings"]["bsz_per_host"]
  config = pretrain_config(records_dir)
  assert config.bi_data and config.mem_len and config.reuse_len

  hf_model = make_hf_model(config, seed=11)
  _moderate_weights(hf_model)
  hf_model.train()                                            # dropout is 0 anyway
  hf_model.save_pretrained(os.fspath(tmp_path / "hf"))
  convert(os.fspath(tmp_path / "hf"), os.fspath(tmp_path / "init"))

  # Ours: the real driver (orbit, the common Trainer, build_optimizer from the options).
  options = pretrain_options(
      model_dir=os.fspath(tmp_path / "run"), train_steps=30, stop_at_step=STEPS,
      learning_rate=1e-3, warmup_steps=4, steps_per_loop=1, save_steps=STEPS,
      init_checkpoint=os.fspath(tmp_path / "init"), seed=0)
  assert (options.weight_decay, options.adam_bias_correction) == (0.01, "released")
  summary = run_pretraining(tf.distribute.get_strategy(), config, records_dir, options)
  assert summary["step"] == STEPS and len(summary["losses"]) == STEPS

  # HuggingFace: the same batches (the driver's dataset, same seed), the same memories.
  tf.keras.utils.set_random_seed(options.seed)
  batches = [{k: v.numpy() for k, v in batch.items()} for batch in pretrain_dataset(
      records_dir, rows, seed=options.seed, manifest=manifest).take(STEPS)]
  optimizer = ReleasedOptimizer(
      hf_model.named_parameters(), options.learning_rate, options.train_steps,
      options.warmup_steps, options.min_lr_ratio, options.weight_decay, options.adam_epsilon,
      options.clip_norm, bias_correction=False)
  hf_steps = PretrainingSteps(hf_model, optimizer, config.mem_len, rows)
  hf_losses = [hf_steps.step(batch) for batch in batches]

  loss_errors = [abs(a - b) / max(1.0, abs(b)) for a, b in zip(summary["losses"], hf_losses)]
  # The weights after step STEPS: its checkpoint (a run stopped before train_steps writes
  # no final model directory).
  trained = build_pretrainer(config)
  tf.train.Checkpoint(model=trained).read(
      os.path.join(options.model_dir, f"ckpt-{STEPS}")).expect_partial()
  ours = {name: v.numpy() for name, v in released_names.released_variables(trained).items()}
  weight_error, worst = _compare_weights(ours, hf_model, config)
  print(f"pretraining, {STEPS} steps: losses {hf_losses[0]:.4f} -> {hf_losses[-1]:.4f}; "
        f"grad norms {min(optimizer.norms):.2f}..{max(optimizer.norms):.2f} (clip "
        f"{options.clip_norm}); max |loss diff| per step {max(loss_errors):.2e} "
        f"(absolute {max(abs(a - b) for a, b in zip(summary['losses'], hf_losses)):.2e}); "
        f"max |weight diff| at the end {weight_error:.2e} ({worst})")
  assert hf_losses[-1] < hf_losses[0] - 0.5                      # it really trains
  assert max(optimizer.norms) > options.clip_norm                  # clipping was exercised
  assert max(loss_errors) <= LOSS_TOLERANCE, list(zip(summary["losses"], hf_losses))
  assert weight_error <= WEIGHT_TOLERANCE, worst


# ---- classifier --------------------------------------------------------------------------

def _hf_classifier(config: XLNetConfig, seed: int):
  hf_config = transformers.XLNetConfig(
      **config.to_hf_dict(), num_labels=2, summary_type="last", summary_use_proj=True,
      summary_activation="tanh", summary_first_dropout=0.0, summary_last_dropout=0.0)
  torch.manual_seed(seed)
  model = transformers.XLNetForSequenceClassification(hf_config)
  generator = torch.Generator().manual_seed(seed)
  with torch.no_grad():
    for name, param in model.named_parameters():
      noise = torch.randn(param.shape, generator=generator)
      param.copy_(1.0 + 0.05 * noise if "layer_norm.weight" in name else 0.05 * noise)
  return model.train()


def _assign_from_hf(model, hf_model, config):
  state = {k: v.detach().numpy() for k, v in hf_model.state_dict().items()}
  arrays = hf_to_released(state, config, "hf").arrays
  for name, variable in released_names.encoder_variables(model.encoder).items():
    variable.assign(arrays[name])
  summary, logit = model.sequence_summary.summary, model.logit
  summary.kernel.assign(state["sequence_summary.summary.weight"].T)
  summary.bias.assign(state["sequence_summary.summary.bias"])
  logit.kernel.assign(state["logits_proj.weight"].T)
  logit.bias.assign(state["logits_proj.bias"])


@pytest.mark.parametrize("weight_decay, lr_layer_decay_rate", [(0.01, 0.75), (0.0, 1.0)])
def test_classifier_matches_huggingface_step_by_step(spiece_model, tmp_path, weight_decay,
                                                     lr_layer_decay_rate):
  """weight_decay 0.01 with the released layer decay (gradient scaling, rate 0.75): the
  released AdamWeightDecayOptimizer; weight_decay 0: tf.train.AdamOptimizer."""
  config = XLNetConfig(n_layer=2, d_model=32, n_head=2, d_head=16, d_inner=64, n_token=4000,
                       dropout=0.0, dropatt=0.0)
  task = classifier_tasks.get_task("movie_reviews").configure(None)
  path = classifier_features.cached_features(
      task.read(None, "train")[:160], spiece_model, 32, label_list=task.labels,
      task=task.name, split="train", cache_dir=os.fspath(tmp_path / "features"))
  batches = [{k: v.numpy() for k, v in batch.items()} for batch in
             classifier_features.classifier_dataset(path, 8, is_training=True, seed=0,
                                                    max_seq_length=32).take(STEPS)]
  stacked = {k: np.concatenate([b[k] for b in batches]) for k in batches[0]}

  hf_model = _hf_classifier(config, seed=5)
  options = loop.RunOptions(
      model_dir=os.fspath(tmp_path / "run"), train_steps=STEPS + 4, learning_rate=2e-3,
      warmup_steps=3, min_lr_ratio=0.1, weight_decay=weight_decay, adam_epsilon=1e-6,
      lr_layer_decay_rate=lr_layer_decay_rate,
      lr_layer_decay_mode="released_gradient_scaling", stop_at_step=STEPS,
      steps_per_loop=1, save_steps=STEPS)
  spec = ClassifierSpec(task_name=task.name, labels=tuple(task.labels),
                        max_seq_length=32)
  strategy = tf.distribute.get_strategy()
  model, optimizer = build_for_training(strategy, config, spec, options, dropout=0.0)
  _assign_from_hf(model, hf_model, config)
  summary = train_classifier(
      strategy, model, optimizer,
      lambda ctx: tf.data.Dataset.from_tensor_slices(stacked).batch(8), options)
  assert summary["step"] == STEPS and len(summary["losses"]) == STEPS

  reference = ReleasedOptimizer(
      hf_model.named_parameters(), options.learning_rate, options.train_steps,
      options.warmup_steps, options.min_lr_ratio, weight_decay, options.adam_epsilon,
      options.clip_norm, lr_layer_decay_rate, bias_correction=weight_decay == 0)
  hf_losses = []
  for batch in batches:
    logits = hf_model(input_ids=torch.as_tensor(batch["input_ids"], dtype=torch.long),
                      token_type_ids=torch.as_tensor(batch["segment_ids"], dtype=torch.long),
                      input_mask=torch.as_tensor(batch["input_mask"], dtype=torch.float32),
                      return_dict=True).logits
    loss = torch.nn.functional.cross_entropy(
        logits, torch.as_tensor(batch["label_id"], dtype=torch.long))
    loss.backward()
    reference.apply()
    hf_losses.append(float(loss.detach()))

  loss_errors = [abs(a - b) / max(1.0, abs(b)) for a, b in zip(summary["losses"], hf_losses)]
  state = {k: v.detach().numpy() for k, v in hf_model.state_dict().items()}
  arrays = hf_to_released(state, config, "hf").arrays
  errors = {name: _relative_error(variable.numpy(), arrays[name]) for name, variable in
            released_names.encoder_variables(model.encoder).items()}
  summary_layer, logit = model.sequence_summary.summary, model.logit
  for name, ours, reference_value in (
      ("summary/kernel", summary_layer.kernel, state["sequence_summary.summary.weight"].T),
      ("summary/bias", summary_layer.bias, state["sequence_summary.summary.bias"]),
      ("logit/kernel", logit.kernel, state["logits_proj.weight"].T),
      ("logit/bias", logit.bias, state["logits_proj.bias"])):
    errors[name] = _relative_error(ours.numpy(), reference_value)
  worst = max(errors, key=errors.get)
  print(f"classifier (weight_decay {weight_decay}, layer decay {lr_layer_decay_rate}), "
        f"{STEPS} steps: losses {hf_losses[0]:.4f} -> {hf_losses[-1]:.4f}; grad norms "
        f"{min(reference.norms):.2f}..{max(reference.norms):.2f}; max |loss diff| per step "
        f"{max(loss_errors):.2e}; max |weight diff| at the end {errors[worst]:.2e} ({worst})")
  assert max(reference.norms) > options.clip_norm                 # clipping was exercised
  assert max(loss_errors) <= LOSS_TOLERANCE, list(zip(summary["losses"], hf_losses))
  assert errors[worst] <= WEIGHT_TOLERANCE, worst
