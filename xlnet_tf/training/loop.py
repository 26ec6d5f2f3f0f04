"""The run of every task: its options, its model and optimizer, and the loop.

`train_model` trains any model with a `config` on any task's loss: the directory is checked,
locked and claimed (`run_directory.open_run`) before anything is built, the newest
checkpoint of `model_dir` is restored (weights, optimizer, step and, with Transformer-XL
memories, the memories; the data position follows from the step), and an orbit Controller
runs the common `trainer.Trainer`: `steps_per_loop` steps per `tf.function` call,
TensorBoard scalars in `model_dir/train`, a guarded checkpoint (no NaN or infinite weight is
ever written) every `save_steps`, and with an evaluator an evaluation every interval.

Multi-worker (MultiWorkerMirroredStrategy): every worker runs the same program. The chief
writes `model_dir`; the other workers restore from the chief's newest checkpoint, take part
in every save (saving is collective) into a private `model_dir/.worker-<type>-<id>`
directory, and delete it at the end (`writing_dir`).

  >>> options = RunOptions(model_dir="runs/sst2", train_steps=1000, learning_rate=2e-5)
  >>> model, optimizer = build_model_and_optimizer(strategy, options, build_model)
  >>> summary = train_model(strategy, model, optimizer, dataset_fn, options,
  ...                       loss_fn=task.loss_fn(), input_keys=task.INPUT_KEYS,
  ...                       purpose="fine-tuning", run_settings={...})
"""

import dataclasses
import os
from typing import Any, Callable, Dict, Optional, Sequence

from absl import logging
import orbit
import tensorflow as tf
import tf_keras

from xlnet_tf.configs import XLNetConfig
from xlnet_tf.training import collapse
from xlnet_tf.training import optimization
from xlnet_tf.training import run_directory
from xlnet_tf.training.checkpointing import GuardedCheckpointManager
from xlnet_tf.training.checkpointing import loop_steps
from xlnet_tf.training.memory import ReplicaMemories
from xlnet_tf.training.trainer import LossFn
from xlnet_tf.training.trainer import NonFiniteLossError
from xlnet_tf.training.trainer import Trainer
from xlnet_tf.training.trainer import run_controller

EVAL_SUMMARY_DIR = "validation"        # TensorBoard scalars of the evaluations
PRECISIONS = {"float32": "float32", "bfloat16": "mixed_bfloat16",
              "mixed_float16": "mixed_float16"}
OBJECTIVES = ("plm", "mlm", "clm")


@dataclasses.dataclass(frozen=True)
class RunOptions:
  """Everything about a run that is not the model's architecture or the data: the
  optimizer (see `optimization` for the Adam and layer-decay options), the loop and the
  warm start. The defaults are the released run_classifier.py's; each task's config gives
  its own (the pretraining task the paper's)."""
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
  adam_bias_correction: str = "released"      # none with weight_decay > 0 (optimization.py)
  grad_accum_steps: int = 1
  steps_per_loop: int = 100
  save_steps: int = 1000
  max_checkpoints: int = 3
  precision: str = "float32"
  jit_compile: bool = False
  init_checkpoint: Optional[str] = None
  seed: int = 0
  stop_at_step: Optional[int] = None     # stop (and checkpoint) early; the schedule stays
  # Pretraining: "plm" (permutation LM), "mlm" (the masked-LM baseline of the ablations) or
  # "clm" (causal LM, attn_type "uni", a diagnostic).
  objective: str = "plm"
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
    optimization.check_optimizer_settings(
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
    if self.objective not in OBJECTIVES:
      raise ValueError(f"--objective must be one of {OBJECTIVES}, got {self.objective!r}")
    collapse.check_options(self.collapse_check_steps, self.restarts, self.train_steps)

  @property
  def attempt_seed(self) -> int:
    """The seed of this attempt (initialisation and dropout): seed + attempt."""
    return self.seed + self.attempt

  def run_settings(self) -> Dict[str, Any]:
    return {k: v for k, v in dataclasses.asdict(self).items()
            if k not in self.NOT_RUN_SETTINGS
            and (self.restarts or k not in self.COLLAPSE_SETTINGS)}

  @classmethod
  def recorded_defaults(cls) -> Dict[str, Any]:
    """"options.<name>" -> default, for every option: a directory written by a version
    that did not record an option ran with its default (`run_directory.record_settings`)."""
    return {f"options.{field.name}": field.default for field in dataclasses.fields(cls)
            if field.default is not dataclasses.MISSING}


def check_loop_settings(steps_per_loop: int, save_steps: int, max_checkpoints: int,
                        stop_at_step: Optional[int] = None) -> None:
  """Raises ValueError (naming the flag) for loop settings below 1 (--max_checkpoints:
  below 0; 0 keeps every checkpoint)."""
  for flag, value in (("steps_per_loop", steps_per_loop), ("save_steps", save_steps)):
    if value < 1:
      raise ValueError(f"--{flag} must be >= 1, got {value}")
  if max_checkpoints < 0:
    raise ValueError(f"--max_checkpoints must be >= 1, or 0 to keep every checkpoint, got "
                     f"{max_checkpoints}")
  if stop_at_step is not None and stop_at_step < 1:
    raise ValueError(f"--stop_at_step must be >= 1, got {stop_at_step}")


def writing_dir(strategy: tf.distribute.Strategy, model_dir: str) -> str:
  """`model_dir` for the chief (and single-worker runs), a private directory for others."""
  resolver = getattr(strategy, "cluster_resolver", None)
  if resolver is None or not resolver.task_type or strategy.extended.should_checkpoint:
    return model_dir
  return os.path.join(model_dir, f".worker-{resolver.task_type}-{resolver.task_id}")


def open_run(config: XLNetConfig, options: RunOptions, purpose: str,
             run_settings: Optional[Dict[str, Any]] = None,
             settings_defaults: Optional[Dict[str, Any]] = None):
  """Checks, locks and claims `options.model_dir` (`run_directory.open_run`) for a run of
  `purpose` ("fine-tuning", "pretraining") defined by the config, the options and
  `run_settings` (task, data, batch size, replicas); returns the lock. Call it before
  building anything. `settings_defaults` ({flattened key: value}, with the options'
  `RunOptions.recorded_defaults`) are what a directory not recording a setting ran with."""
  return run_directory.open_run(
      options.model_dir, purpose,
      {"config": config.to_dict(), "options": options.run_settings(), **(run_settings or {})},
      has_results=lambda: (tf.train.latest_checkpoint(options.model_dir)
                           or collapse.has_restarted(options.model_dir)),
      defaults={**RunOptions.recorded_defaults(), **(settings_defaults or {})})


def build_model_and_optimizer(strategy, options: RunOptions,
                              build_model: Callable[[], tf_keras.Model]):
  """(model, optimizer) of a run: the precision policy and the seed of `options` set,
  `build_model()` called in the strategy's scope, and the optimizer of `options` (schedule,
  weight decay, Adam, layer-wise decay)."""
  tf_keras.mixed_precision.set_global_policy(PRECISIONS[options.precision])
  tf_keras.utils.set_random_seed(options.attempt_seed)
  with strategy.scope():
    model = build_model()
    optimizer = optimization.build_optimizer(
        options.learning_rate, options.train_steps, options.warmup_steps,
        weight_decay=options.weight_decay, adam_epsilon=options.adam_epsilon,
        min_lr_ratio=options.min_lr_ratio, loss_scale=options.precision == "mixed_float16",
        adam_bias_correction=options.adam_bias_correction,
        **optimization.layerwise_decay(model, options.lr_layer_decay_rate,
                                       options.lr_layer_decay_mode))
  return model, optimizer


def train_model(strategy: tf.distribute.Strategy, model: tf_keras.Model, optimizer,
                dataset_fn: Callable, options: RunOptions, *, loss_fn: LossFn,
                input_keys: Sequence[str], purpose: str = "fine-tuning",
                run_settings: Optional[Dict[str, Any]] = None,
                memories: Optional[ReplicaMemories] = None,
                tokens_per_step: Optional[int] = None,
                evaluator: Optional[orbit.AbstractEvaluator] = None,
                eval_interval: Optional[int] = None,
                eval_steps: int = -1,
                eval_actions: Sequence[Callable[[Dict[str, Any]], None]] = (),
                collapse_watch: Optional[collapse.Watch] = None,
                initialize: Optional[Callable[[tf_keras.Model], None]] = None,
                claimed: bool = False,
                data_error: Optional[Callable[[Exception], Exception]] = None
                ) -> Dict[str, Any]:
  """The run of any model (with a `config`) and loss: the common `trainer.Trainer` with
  `loss_fn` (see `trainer.LossFn`) on the batch keys `input_keys`, trained to
  `train_steps` and resumed exactly from `model_dir`; returns {"step", "losses" (one per
  loop of `steps_per_loop` steps), "start_step"} (and "evals" with an `evaluator`).

  `dataset_fn(input_context, start_step)` returns per-replica MICRO-batches (the batch of
  one step divided by replicas and by `grad_accum_steps`) from step `start_step` on, the
  same sequence in every run (fixed shuffling seeds), so that a resumed run continues
  where the stopped one was.

  The model directory is checked, locked and claimed first (`open_run` with `purpose` and
  `run_settings`), unless the caller `claimed` it already (and holds its lock);
  checkpoints are guarded and every loop's loss and gradient norm checked. `memories`
  (`ReplicaMemories`) are carried from step to step and checkpointed. `initialize(model)`
  (the task's warm start from its init_checkpoint) is called when the directory has no
  checkpoint to resume from.

  With an `evaluator` (orbit), training stops every `eval_interval` steps (and at the
  end) for an evaluation: its metrics go to TensorBoard (`model_dir/validation`) and to
  every `eval_actions` callable. Evaluation reads the weights only, so it does not change
  the training's numbers. With a `collapse_watch` (`collapse.Watch`, of the attempt
  `options.attempt`) the training loss is checked at its step; a collapse with restarts
  left raises `collapse.Restart`. `data_error(error)` turns tf.data's DataLossError into
  the error that names the bad file.
  """
  write_dir = writing_dir(strategy, options.model_dir)
  lock = None
  if not claimed and write_dir == options.model_dir:    # the chief owns model_dir
    lock = open_run(model.config, options, purpose, run_settings)
  try:
    checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer,
                                     **({"memories": memories} if memories else {}))
    if write_dir != options.model_dir and tf.io.gfile.exists(write_dir):
      tf.io.gfile.rmtree(write_dir)                 # a previous run's: never restored from
    manager = GuardedCheckpointManager(
        checkpoint, write_dir, max_to_keep=options.max_checkpoints,
        step_counter=optimizer.iterations, save_steps=options.save_steps,
        variables=lambda: (model.variables + optimizer.variables() +
                           ([memories.saved] if memories else [])))
    restored = tf.train.latest_checkpoint(options.model_dir)   # the chief's, on every worker
    if restored:
      checkpoint.restore(restored)
      logging.info("resuming from %s at step %d", restored, int(optimizer.iterations.numpy()))
      if memories is not None:
        memories.from_host()
    elif initialize is not None:
      initialize(model)
    start_step = int(optimizer.iterations.numpy())
    dataset = strategy.distribute_datasets_from_function(
        lambda ctx: dataset_fn(ctx, start_step))
    trainer = Trainer(strategy, model, optimizer, dataset, input_keys=input_keys,
                      loss_fn=loss_fn, memories=memories,
                      grad_accum_steps=options.grad_accum_steps,
                      clip_norm=options.clip_norm, total_steps=options.train_steps,
                      tokens_per_step=tokens_per_step, jit_compile=options.jit_compile,
                      seed=options.attempt_seed, error=NonFiniteLossError,
                      last_checkpoint=lambda: manager.latest_checkpoint)
    stop = min(options.stop_at_step or options.train_steps, options.train_steps)
    steps = loop_steps(options.steps_per_loop, options.save_steps)
    if collapse_watch is not None:
      collapse_watch.begin(start_step, lambda: int(optimizer.iterations.numpy()))
      steps = collapse_watch.loop_steps(steps)
    try:
      ran = run_controller(
          trainer, strategy, manager, os.path.join(write_dir, "train"),
          os.path.join(write_dir, EVAL_SUMMARY_DIR), steps, start_step, stop,
          evaluator=evaluator, eval_interval=eval_interval, eval_steps=eval_steps,
          eval_actions=eval_actions,
          train_actions=[collapse_watch] if collapse_watch else ())
    except tf.errors.DataLossError as e:
      if data_error is None:
        raise
      raise data_error(e) from None
    summary = {"step": int(optimizer.iterations.numpy()), "losses": ran["losses"],
               "start_step": start_step}
    if evaluator is not None:
      summary["evals"] = ran["evals"]
    return summary
  finally:
    if lock is not None:
      lock.release()
