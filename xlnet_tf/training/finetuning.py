"""Fine-tuning: the options of a run, the model and optimizer, and the run itself.

`build_model_and_optimizer` and `train_model` serve every fine-tuning task (the tasks of
`xlnet_tf.tasks` give their model, loss and input); the fine-tuned model is written as a
model directory by `xlnet_tf.model_directory`.
"""

import dataclasses
import functools
import os
from typing import Any, Callable, Dict, Optional, Sequence

from absl import logging
import orbit
import tensorflow as tf
import tf_keras

from xlnet_tf import pretrained
from xlnet_tf.configs import XLNetConfig
from xlnet_tf.models.xlnet_classifier import XLNetClassifier
from xlnet_tf.models.xlnet_classifier import build_classifier
from xlnet_tf.training import classifier_trainer
from xlnet_tf.training import collapse
from xlnet_tf.training import optimization
from xlnet_tf.training import run_directory
from xlnet_tf.training.checkpointing import GuardedCheckpointManager
from xlnet_tf.training.checkpointing import loop_steps
from xlnet_tf.training.pretraining import EVAL_SUMMARY_DIR
from xlnet_tf.training.pretraining import PRECISIONS
from xlnet_tf.training.pretraining import check_loop_settings
from xlnet_tf.training.trainer import ForwardFn
from xlnet_tf.training.trainer import LossFn
from xlnet_tf.training.trainer import Trainer
from xlnet_tf.training.trainer import run_controller
from xlnet_tf.models.xlnet_classifier import ClassifierSpec



@dataclasses.dataclass(frozen=True)
class FinetuneOptions:
  """The optimisation and loop of a classifier run; the defaults are the released
  run_classifier.py's (see `optimization` for the Adam and layer-decay options)."""
  model_dir: str
  train_steps: int
  learning_rate: float = 1e-5
  warmup_steps: int = 0
  weight_decay: float = 0.0
  adam_epsilon: float = 1e-8
  clip_norm: float = 1.0
  min_lr_ratio: float = 0.0
  lr_layer_decay_rate: float = 1.0
  lr_layer_decay_mode: str = "multiplier"     # or "released_gradient_scaling"
  adam_bias_correction: str = "released"
  grad_accum_steps: int = 1
  steps_per_loop: int = 100
  save_steps: int = 1000
  max_checkpoints: int = 3
  precision: str = "float32"
  init_checkpoint: Optional[str] = None
  seed: int = 0
  stop_at_step: Optional[int] = None     # stop (and checkpoint) early; the schedule stays
  # The collapse check (`collapse`): its step (None: min(200, train_steps // 2); 0: off)
  # and how many times a collapsed run restarts with the next seed.
  collapse_check_steps: Optional[int] = None
  restarts: int = 0
  attempt: int = 0                       # the attempt trained (`collapse.Watch`)

  # What may change between the runs of one model directory: it does not change the numbers.
  NOT_RUN_SETTINGS = ("model_dir", "steps_per_loop", "save_steps", "max_checkpoints",
                      "stop_at_step", "attempt")
  # Without restarts the collapse check only warns: it changes no number either.
  COLLAPSE_SETTINGS = ("collapse_check_steps", "restarts")

  def __post_init__(self):
    """Refuses impossible values (naming the flag) before anything is built."""
    optimization.check_settings(
        self.learning_rate, self.train_steps, self.warmup_steps,
        weight_decay=self.weight_decay, adam_epsilon=self.adam_epsilon, clip=self.clip_norm,
        min_lr_ratio=self.min_lr_ratio, lr_layer_decay_rate=self.lr_layer_decay_rate,
        lr_layer_decay_mode=self.lr_layer_decay_mode,
        adam_bias_correction=self.adam_bias_correction)
    check_loop_settings(self.steps_per_loop, self.save_steps, self.max_checkpoints,
                        self.stop_at_step)
    if self.grad_accum_steps < 1:
      raise ValueError(f"--grad_accum_steps must be >= 1, got {self.grad_accum_steps}")
    if self.precision not in PRECISIONS:
      raise ValueError(f"--precision must be one of {sorted(PRECISIONS)}, got "
                       f"{self.precision!r}")
    collapse.check_options(self.collapse_check_steps, self.restarts, self.train_steps)

  @property
  def attempt_seed(self) -> int:
    """The seed of this attempt (the head's initialisation and dropout): seed + attempt."""
    return self.seed + self.attempt

  def run_settings(self) -> Dict[str, Any]:
    return {k: v for k, v in dataclasses.asdict(self).items()
            if k not in self.NOT_RUN_SETTINGS
            and (self.restarts or k not in self.COLLAPSE_SETTINGS)}


def open_run(config: XLNetConfig, options: FinetuneOptions,
             run_settings: Optional[Dict[str, Any]] = None):
  """Checks, locks and claims `options.model_dir` (`run_directory.open_run`) for a
  fine-tuning run defined by the config, the options and `run_settings` (task, data, batch
  size); returns the lock. Call it before building anything."""
  return run_directory.open_run(
      options.model_dir, "fine-tuning",
      {"config": config.to_dict(), "options": options.run_settings(), **(run_settings or {})},
      has_results=lambda: (tf.train.latest_checkpoint(options.model_dir)
                           or collapse.has_restarted(options.model_dir)))


def build_for_training(strategy, config: XLNetConfig, spec: ClassifierSpec,
                       options: FinetuneOptions, dropout: float = 0.1):
  """(model, optimizer), in the strategy's scope, warm-started from `init_checkpoint`."""
  return build_model_and_optimizer(
      strategy, options,
      lambda: build_classifier(config, spec.num_classes, summary_type=spec.summary_type,
                               use_proj=spec.use_proj, dropout_rate=dropout,
                               is_regression=spec.is_regression))


def build_model_and_optimizer(strategy, options: FinetuneOptions,
                              build_model: Callable[[], tf_keras.Model]):
  """(model, optimizer) of a fine-tuning run, for any model with an `encoder`: the
  precision policy and the seed of `options` set, `build_model()` called in the
  strategy's scope and its encoder warm-started from `options.init_checkpoint`, and the
  optimizer of `options` (schedule, weight decay, Adam, layer-wise decay)."""
  tf_keras.mixed_precision.set_global_policy(PRECISIONS[options.precision])
  tf_keras.utils.set_random_seed(options.attempt_seed)
  with strategy.scope():
    model = build_model()
    if options.init_checkpoint:
      pretrained.restore_encoder(model.encoder, options.init_checkpoint)
    optimizer = optimization.build_optimizer(
        options.learning_rate, options.train_steps, options.warmup_steps,
        weight_decay=options.weight_decay, adam_epsilon=options.adam_epsilon,
        min_lr_ratio=options.min_lr_ratio, loss_scale=options.precision == "mixed_float16",
        adam_bias_correction=options.adam_bias_correction,
        **optimization.layerwise_decay(model, options.lr_layer_decay_rate,
                                       options.lr_layer_decay_mode))
  return model, optimizer


def train_classifier(strategy: tf.distribute.Strategy, model: XLNetClassifier, optimizer,
                     dataset_fn: Callable, options: FinetuneOptions,
                     run_settings: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
  """Trains to `train_steps` (resuming from `model_dir`); returns {"step", "losses",
  "start_step"}.

  `dataset_fn(input_context)` returns per-replica MICRO-batches (the batch of one step
  divided by replicas and by `grad_accum_steps`), the same sequence in every run (a fixed
  shuffling seed): a resumed run skips the micro-batches of the steps already taken.
  `run_settings` (task, data, batch size) join the config and the options as what defines
  the run in `model_dir` (see `open_run`). The run is `train_model` with the classifier's
  loss (`classifier_trainer.classifier_loss`: cross-entropy, or squared error).
  """
  return train_model(strategy, model, optimizer, dataset_fn, options,
                     loss_fn=functools.partial(classifier_trainer.classifier_loss,
                                               is_regression=model.is_regression),
                     input_keys=classifier_trainer.MODEL_INPUTS, run_settings=run_settings)


def train_model(strategy: tf.distribute.Strategy, model: tf_keras.Model, optimizer,
                dataset_fn: Callable, options: FinetuneOptions, *, loss_fn: LossFn,
                input_keys: Sequence[str],
                run_settings: Optional[Dict[str, Any]] = None,
                forward_fn: Optional[ForwardFn] = None,
                evaluator: Optional[orbit.AbstractEvaluator] = None,
                eval_interval: Optional[int] = None,
                eval_steps: int = -1,
                eval_actions: Sequence[Callable[[Dict[str, Any]], None]] = (),
                collapse_watch: Optional[collapse.Watch] = None
                ) -> Dict[str, Any]:
  """The fine-tuning run of any model (with a `config`) and loss: the common
  `trainer.Trainer` with `loss_fn` (see `trainer.LossFn`) on the batch keys `input_keys`,
  trained to `train_steps` and resumed exactly from `model_dir`; returns {"step",
  "losses" (one per loop of `steps_per_loop` steps), "start_step"}.

  The model directory is checked, locked and claimed first (`open_run` with
  `run_settings`); checkpoints are guarded (no NaN weights saved) and every loop's loss and
  gradient norm checked. `dataset_fn` as for `train_classifier`; `forward_fn` as for
  `Trainer`.

  With an `evaluator` (orbit), training stops every `eval_interval` steps (and at the
  end) for an evaluation: its metrics go to TensorBoard (`model_dir/validation`) and to
  every `eval_actions` callable; the summary then has "evals" ([metrics], in order).
  Evaluation reads the weights only, so it does not change the training's numbers.

  With a `collapse_watch` (`collapse.Watch`, of the attempt `options.attempt`) the
  training loss is checked at its step; a collapse with restarts left raises
  `collapse.Restart`.
  """
  lock = open_run(model.config, options, run_settings)
  try:
    checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer)
    manager = GuardedCheckpointManager(
        checkpoint, options.model_dir, max_to_keep=options.max_checkpoints,
        step_counter=optimizer.iterations, save_steps=options.save_steps,
        variables=lambda: model.variables + optimizer.variables())
    restored = manager.restore_or_initialize()
    start_step = int(optimizer.iterations.numpy())
    if restored:
      logging.info("resuming from %s at step %d", restored, start_step)
    # A step takes k micro-batches for each replica an input pipeline feeds.
    skip = start_step * options.grad_accum_steps
    dataset = strategy.distribute_datasets_from_function(
        lambda ctx: dataset_fn(ctx).skip(
            skip * (ctx.num_replicas_in_sync // ctx.num_input_pipelines)))
    trainer = Trainer(strategy, model, optimizer, dataset, input_keys=input_keys,
                      loss_fn=loss_fn, grad_accum_steps=options.grad_accum_steps,
                      clip_norm=options.clip_norm, total_steps=options.train_steps,
                      seed=options.attempt_seed, last_checkpoint=lambda: manager.latest_checkpoint,
                      **({"forward_fn": forward_fn} if forward_fn else {}))
    stop = min(options.stop_at_step or options.train_steps, options.train_steps)
    steps = loop_steps(options.steps_per_loop, options.save_steps)
    if collapse_watch is not None:
      collapse_watch.begin(start_step, lambda: int(optimizer.iterations.numpy()))
      steps = collapse_watch.loop_steps(steps)
    ran = run_controller(
        trainer, strategy, manager, os.path.join(options.model_dir, "train"),
        os.path.join(options.model_dir, EVAL_SUMMARY_DIR), steps, start_step, stop,
        evaluator=evaluator, eval_interval=eval_interval, eval_steps=eval_steps,
        eval_actions=eval_actions, train_actions=[collapse_watch] if collapse_watch else ())
    summary = {"step": int(optimizer.iterations.numpy()), "losses": ran["losses"],
               "start_step": start_step}
    if evaluator is not None:
      summary["evals"] = ran["evals"]
    return summary
  finally:
    lock.release()
