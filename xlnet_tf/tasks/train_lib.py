"""Runs an experiment: train, eval, train_and_eval or export, for every registered task.

  >>> params = parse_params("xlnet/classification",
  ...                       ["experiments/configs/classification_demo.yaml"],
  ...                       "trainer.train_steps=50")
  >>> run(params, "train_and_eval", "runs/demo_classifier")

The configuration is parsed by `official.core.train_utils.parse_configuration`, which
refuses any key the experiment does not have ("The key 'lerning_rate' does not exist in
..."); the final configuration is written to MODEL_DIR/params.yaml.

Modes:
  train           trains to trainer.train_steps with the common `training.trainer.Trainer`
                  (`loop.train_model`, the same for every task, pretraining included:
                  the task gives model, input, loss and memories): the model directory is
                  locked and its run
                  settings checked (a rerun with other settings is refused, naming them),
                  a checkpoint every trainer.checkpoint_interval steps (max_to_keep, never
                  a NaN one), a rerun resumes exactly (the data position skipped,
                  step-keyed dropout); the fine-tuned model directory goes to MODEL_DIR/final.
  eval            the task's metrics of the newest checkpoint, to
                  MODEL_DIR/eval_results_<split>.json and TensorBoard (MODEL_DIR/validation);
                  a model other than the one the directory's run settings record (another
                  n_layer, other labels) is refused first, naming what differs.
  train_and_eval  train, evaluating every trainer.validation_interval steps and at the end
                  (orbit's train_and_evaluate; TensorBoard MODEL_DIR/validation); the model
                  with the best task.METRIC so far is kept as a model directory in
                  MODEL_DIR/best (its metrics in MODEL_DIR/best/eval_results.json).
  export          the SavedModel of MODEL_DIR/best (else MODEL_DIR/final) to --export_dir
                  (default MODEL_DIR/export): what the task serves from raw text.

What of Model Garden is not used, and why: `official.core.base_trainer.Trainer` and
`train_lib.run_experiment`. Their train step is one forward/backward per batch with the
optimizer's own aggregation; ours (`training.trainer.Trainer`) accumulates k micro-batches
into one update normalised by the global example count, draws dropout masks from
(seed, step, replica, micro-batch) so that a resumed run repeats the same numbers, checks
the loss and gradient norm after every loop, skips the consumed data on resume and (for
pretraining) carries per-replica Transformer-XL memories in checkpointed variables. The
optimizer is ours (`optimization.build_optimizer`: the released Adam variants, layer-wise
LR decay) rather than `trainer.optimizer_config`, so task.optimization holds its settings,
and precision is task.optimization.precision (not runtime.mixed_precision_dtype).
Evaluation is a whole pass of the task's `evaluate` (SQuAD decodes answers over all
windows of a question, which per-batch `validation_step`s cannot), run as an orbit
evaluator.
"""

import dataclasses
import json
import os
from typing import Any, Dict, Optional

from absl import logging
from official.common import distribute_utils
from official.core import task_factory
from official.core import train_utils
from official.modeling.hyperparams import params_dict
import orbit
import tensorflow as tf
import yaml

from xlnet_tf import hub
from xlnet_tf import model_card
from xlnet_tf import model_directory
from xlnet_tf import paths
from xlnet_tf import presets
from xlnet_tf.configs import RELEASED_KEYS
from xlnet_tf.configs import XLNetConfig
from xlnet_tf.serving import model_dir_export
from xlnet_tf.tasks import base
from xlnet_tf.training import collapse
from xlnet_tf.training import loop
from xlnet_tf.training import run_directory

MODES = ("train", "eval", "train_and_eval", "export")
BEST_DIR = "best"
FINAL_DIR = "final"
EXPORT_DIR = "export"
RESULTS_FILE = "eval_results.json"


class ConfigError(ValueError):
  """The experiment's configuration cannot run (a missing size, checkpoint or file)."""


class _Flags:
  """What `train_utils.ExperimentParser` reads of the flags, for calls from Python."""

  def __init__(self, experiment, config_file=None, params_override=None, tpu=None):
    self.experiment, self.config_file = experiment, list(config_file or [])
    self.params_override, self.tpu, self.tf_data_service = params_override, tpu, None

  def __contains__(self, name):
    return hasattr(self, name)


def check_yaml_file(path: str, flag: str) -> None:
  """ConfigError naming `flag` and `path` unless the file holds a YAML mapping (a syntax
  error is named by its line)."""
  if not tf.io.gfile.exists(path):
    raise ConfigError(f"{flag} {path}: no such file")
  if tf.io.gfile.isdir(path):
    raise ConfigError(f"{flag} {path} is a directory; expected a YAML file")
  with tf.io.gfile.GFile(path) as f:
    text = f.read()
  try:
    values = yaml.safe_load(text)
  except yaml.YAMLError as e:
    mark = getattr(e, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
    raise ConfigError(f"{flag} {path}: not valid YAML{where}: "
                      f"{getattr(e, 'problem', None) or e}") from None
  if not isinstance(values, dict):
    held = "is empty" if values is None else f"holds a {type(values).__name__}"
    raise ConfigError(f"{flag} {path} {held}; expected a YAML mapping of the experiment's "
                      f"sections (task:, trainer:, runtime:)")


def check_params_override(override) -> None:
  """ConfigError for a --params_override string that is neither key=value pairs, a
  YAML/JSON mapping, nor an existing file (Model Garden takes any other string as a file
  name); a file is checked as --config_file is."""
  if not override or not isinstance(override, str):
    return
  try:
    params_dict.nested_csv_str_to_json_str(override)
    return
  except ValueError:
    pass
  try:
    if isinstance(yaml.safe_load(override), dict):
      return
  except yaml.YAMLError:
    pass
  if tf.io.gfile.exists(override):
    check_yaml_file(override, "--params_override")
    return
  raise ConfigError(f"--params_override {override!r} is neither key=value pairs (e.g. "
                    f"task.model.n_layer=2,trainer.train_steps=100), a YAML/JSON mapping, "
                    f"nor an existing file")


def check_experiment_files(config_files, params_override) -> None:
  """Before parsing: every --config_file a YAML mapping, --params_override readable."""
  for path in config_files or ():
    check_yaml_file(path, "--config_file")
  check_params_override(params_override)


def parse_params(experiment, config_file=None, params_override=None, tpu=None):
  """The locked `ExperimentConfig` of the flags (Model Garden's parser; unknown keys are
  a KeyError naming the key; an unreadable file or override a ConfigError naming it)."""
  check_experiment_files(config_file, params_override)
  return train_utils.parse_configuration(
      _Flags(experiment, config_file, params_override, tpu), print_return=False)


def _with_default_cache(params, model_dir):
  """task.*_data.cache_dir "" -> MODEL_DIR/features."""
  cache = os.path.join(model_dir, "features")
  override = {f"{name}_data": {"cache_dir": cache}
              for name in ("train", "validation")
              if "cache_dir" in getattr(params.task, f"{name}_data").as_dict()
              and not getattr(params.task, f"{name}_data").cache_dir}
  if override:
    params = params.replace(task=params.task.replace(**{
        key: getattr(params.task, key).replace(**value) for key, value in override.items()}))
  return params


def strategy_of(params) -> tf.distribute.Strategy:
  """The strategy of params.runtime, for every entry point. ConfigError, before anything
  is built, for more GPUs than TensorFlow sees (MirroredStrategy would wait for them
  forever) or a TPU that cannot be found."""
  runtime = params.runtime
  name = "tpu" if runtime.tpu else runtime.distribution_strategy
  if str(name).lower() in ("mirrored", "one_device"):
    gpus = tf.config.list_physical_devices("GPU")
    if runtime.num_gpus > len(gpus):
      raise ConfigError(
          f"runtime.num_gpus={runtime.num_gpus} (--num_gpus) with "
          f"runtime.distribution_strategy={name} asks for {runtime.num_gpus} GPU(s), but "
          f"TensorFlow sees {len(gpus)} on this machine"
          + (f" ({', '.join(gpu.name for gpu in gpus)})" if gpus else "")
          + f"; give --num_gpus={len(gpus)} or less")
  try:
    return distribute_utils.get_distribution_strategy(
        distribution_strategy=name, num_gpus=runtime.num_gpus, tpu_address=runtime.tpu)
  except (ValueError, OSError, tf.errors.OpError) as e:
    if name != "tpu":
      raise
    why = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    raise ConfigError(f"runtime.tpu={runtime.tpu!r} (--tpu, --use_tpu): no TPU found "
                      f"({why}); give --tpu=NAME of a Cloud TPU, or leave out --use_tpu / "
                      f"--strategy=tpu") from None


def check_model_fits(config: XLNetConfig, training: bool) -> None:
  """ConfigError when the model's float32 weights (for training with their gradients and
  Adam's two moments) need more than this machine's memory: sizes no run can allocate."""
  copies = 4 if training else 1
  needed = config.min_weight_count() * 4 * copies
  memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
  if needed > memory:
    sizes = ", ".join(f"{key}={getattr(config, key)}" for key in RELEASED_KEYS
                      if key not in ("ff_activation", "untie_r"))
    raise ConfigError(
        f"task.model: {sizes} make at least {config.min_weight_count():.3g} weights: "
        f"{needed / 2**30:.1f} GiB in float32"
        + (" with their gradients and Adam's moments" if training else "")
        + f", more than this machine's memory ({memory / 2**30:.1f} GiB); check the sizes")


def check_init_checkpoint(params) -> None:
  """task.init_checkpoint (--init_checkpoint), if given, is a model directory or model.ckpt
  prefix whose weights are all finite (`model_directory.check_checkpoint`)."""
  if params.task.init_checkpoint:
    model_directory.check_checkpoint(base.init_dir(params.task.init_checkpoint),
                                     "task.init_checkpoint (--init_checkpoint)")


def check_validation_steps(params) -> None:
  """ConfigError, before training, for a trainer.validation_steps orbit refuses."""
  steps = params.trainer.validation_steps
  if steps != -1 and steps < 1:
    raise ConfigError(f"trainer.validation_steps must be -1 (the whole split) or >= 1, "
                      f"got {steps}")


def _run_options(params, model_dir, stop_at_step) -> Dict[str, Any]:
  """The options of a run: the trainer section, the warm start (a preset name resolved:
  `resolve_init_checkpoint`) and task.optimization."""
  params = resolve_init_checkpoint(params)
  return dict(model_dir=model_dir, train_steps=params.trainer.train_steps,
              stop_at_step=stop_at_step, steps_per_loop=params.trainer.steps_per_loop,
              save_steps=params.trainer.checkpoint_interval,
              max_checkpoints=params.trainer.max_to_keep,
              init_checkpoint=base.init_dir(params.task.init_checkpoint) or None,
              **params.task.optimization.as_dict())


def run_options(params, model_dir, stop_at_step=None) -> loop.RunOptions:
  """`loop.RunOptions` of an experiment: the trainer section, the warm start and
  task.optimization (impossible values raise ValueError naming the flag)."""
  return loop.RunOptions(**_run_options(params, model_dir, stop_at_step))


class TaskEvaluator(orbit.AbstractEvaluator):
  """The task's evaluation (`task.evaluate`) as an orbit evaluator: numbers only."""

  def __init__(self, task: base.XLNetTask, model):
    self.task, self.model = task, model

  def evaluate(self, num_steps):
    results = self.task.evaluate(self.model, num_steps=num_steps)
    return {k: v for k, v in results.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool)}


def _is_better(task: base.XLNetTask, value: float, best: Optional[float]) -> bool:
  if best is None:
    return True
  return value > best if task.METRIC_HIGHER_IS_BETTER else value < best


def _read_json(path: str) -> Optional[Dict[str, Any]]:
  if not tf.io.gfile.exists(path):
    return None
  with tf.io.gfile.GFile(path) as f:
    return json.load(f)


def _best_model_action(task: base.XLNetTask, model, optimizer, model_dir: str,
                       writes: bool = True):
  """An eval action keeping the model with the best task.METRIC in MODEL_DIR/best
  (`writes` False: a worker that is not the chief, which writes nothing)."""
  best_dir = os.path.join(model_dir, BEST_DIR)

  def action(metrics):
    if not writes:
      return
    recorded = _read_json(os.path.join(best_dir, RESULTS_FILE))
    value = float(metrics[task.METRIC])
    if not _is_better(task, value, recorded and recorded.get(task.METRIC)):
      return
    results = {"step": int(optimizer.iterations.numpy()),
               **{k: float(v) for k, v in metrics.items()}}
    with paths.atomic_output(best_dir, replace=True) as staging:   # the model, its results
      task.save_model_dir(model, staging, results)
      paths.write_json(os.path.join(staging, RESULTS_FILE), results)
      task.write_evaluation_files(staging)
    logging.info("new best %s %.4f at step %d: %s", task.METRIC, value, results["step"],
                 best_dir)
  return action


def _evaluation(task: base.XLNetTask, params, model_dir: str,
                strategy: tf.distribute.Strategy):
  """(model, optimizer) -> the evaluator, interval and actions of a train_and_eval run."""
  def evaluation(model, optimizer):
    interval = params.trainer.validation_interval
    writes = strategy.extended.should_checkpoint          # the chief (multi-worker)
    return {"evaluator": TaskEvaluator(task, model),
            "eval_interval": interval if interval > 0 else None,
            "eval_steps": params.trainer.validation_steps,
            "eval_actions": [_best_model_action(task, model, optimizer, model_dir, writes)]}
  return evaluation


def train(task: base.XLNetTask, params, model_dir: str, stop_at_step=None,
          evaluate: bool = False,
          strategy: Optional[tf.distribute.Strategy] = None) -> Dict[str, Any]:
  """Trains to trainer.train_steps (resuming; stopping and checkpointing at `stop_at_step`
  if given, the schedule unchanged), evaluating at trainer.validation_interval when
  `evaluate`; returns the run's summary ("step", "start_step", "losses" per loop, "evals",
  "final_dir"). The same for every task: the task gives the model (`build_model`,
  `initialize`), the input (`train_dataset_fn`), the loss, the memories (pretraining) and
  what defines the run; `loop.train_model` trains. MODEL_DIR/final is written by the
  task's `save_model_dir` when the run reaches train_steps."""
  options = run_options(params, model_dir, stop_at_step)
  config = task.xlnet_config()
  strategy = strategy or strategy_of(params)
  run_settings = task.train_run_settings(params.task.train_data, strategy)
  check_step = collapse.check_step(options.collapse_check_steps, options.train_steps)
  reference = task.reference_loss(params.task.train_data) if check_step else None
  if reference is None and (options.restarts or options.collapse_check_steps):
    raise ConfigError(f"task.optimization.restarts / collapse_check_steps: the collapse "
                      f"check needs a classification or regression task; "
                      f"{type(task).__name__} has no reference loss")
  write_dir = loop.writing_dir(strategy, model_dir)
  chief = write_dir == model_dir
  lock = (loop.open_run(config, options, task.RUN_PURPOSE, run_settings,   # before building
                        settings_defaults=task.RUN_SETTINGS_ADDED)
          if chief else None)
  try:
    if chief:
      train_utils.serialize_config(params, model_dir)
    if evaluate:
      task.prepare_validation(params.task.validation_data)     # cached before training
    watch = None if reference is None else collapse.Watch(
        model_dir, reference, check_step, options.restarts, options.seed)
    while True:                         # the attempts: a collapse restarts with seed + 1
      attempt = dataclasses.replace(options, attempt=watch.attempt if watch else 0)
      data = params.task.train_data
      if "seed" in data.as_dict() and data.seed is not None:
        data = data.replace(seed=data.seed + attempt.attempt)
      model, optimizer = loop.build_model_and_optimizer(strategy, attempt, task.build_model)
      eval_args = (_evaluation(task, params, model_dir, strategy)(model, optimizer)
                   if evaluate else {})
      try:
        summary = loop.train_model(
            strategy, model, optimizer, task.train_dataset_fn(data, attempt.grad_accum_steps),
            attempt, loss_fn=task.loss_fn(), input_keys=task.INPUT_KEYS,
            memories=task.build_memories(strategy, config),
            tokens_per_step=task.tokens_per_step(strategy), initialize=task.initialize,
            collapse_watch=watch, claimed=True, data_error=task.data_error, **eval_args)
        break
      except collapse.Restart:
        watch.abandon()
    final = os.path.join(model_dir, FINAL_DIR)
    if summary["step"] == params.trainer.train_steps and (
        summary["start_step"] < summary["step"] or not tf.io.gfile.exists(final)):
      evals = summary.get("evals")      # a rerun of a finished run keeps its final/
      # A worker that is not the chief writes too (saving is collective), into its own
      # directory, removed with it below.
      task.save_model_dir(model, final if chief else os.path.join(write_dir, FINAL_DIR),
                          evals[-1] if evals else None)
    if watch and summary["step"] == params.trainer.train_steps and not tf.io.gfile.exists(
        os.path.join(final, model_card.CARD_FILE)):
      task.write_model_card(model, final, watch.card_details())
    if watch and watch.warnings:
      summary["collapse_warnings"] = watch.warnings
    if not chief and tf.io.gfile.exists(write_dir):
      tf.io.gfile.rmtree(write_dir)
  finally:
    if lock is not None:
      lock.release()
  summary["final_dir"] = final
  logging.info("trained to step %d (from step %d)", summary["step"], summary["start_step"])
  return summary


def evaluate(task: base.XLNetTask, params, model_dir: str) -> Dict[str, Any]:
  """The task's metrics of the newest checkpoint: written to
  MODEL_DIR/eval_results_<split>.json and as TensorBoard scalars under MODEL_DIR/validation."""
  latest = tf.train.latest_checkpoint(model_dir)
  if latest is None:
    raise FileNotFoundError(f"{model_dir}: no checkpoint to evaluate (train first)")
  config = task.xlnet_config()
  model_settings = {"config": {key: getattr(config, key) for key in RELEASED_KEYS}}
  model_settings.update(task.model_run_settings())          # as `train` records them
  run_directory.check_model_settings(model_dir, model_settings, "evaluating")
  step = int(latest.rsplit("-", 1)[1])
  model = task.build_model()
  tf.train.Checkpoint(model=model).read(latest).expect_partial().assert_existing_objects_matched()
  results = task.evaluate(model, num_steps=params.trainer.validation_steps)
  results = {"step": step, "checkpoint": os.path.basename(latest), **results}
  # Fine-tuning data names its split; pretraining's held-out records are "validation".
  split = params.task.validation_data.get("split") or "validation"
  paths.write_json(os.path.join(model_dir, f"eval_results_{split}.json"), results)
  task.write_evaluation_files(model_dir, split)
  writer = tf.summary.create_file_writer(os.path.join(model_dir,
                                                      loop.EVAL_SUMMARY_DIR))
  train_utils.write_summary(writer, step, {k: v for k, v in results.items()
                                           if isinstance(v, (int, float)) and k != "step"})
  print(f"{split} @ step {step}: " + ", ".join(
      f"{k} {v:.4f}" if isinstance(v, float) else f"{k} {v}" for k, v in results.items()))
  return results


def check_export_dir(model_dir: str, export_dir: Optional[str] = None) -> str:
  """Where an export of `model_dir` goes (`export_dir`, default MODEL_DIR/export), after
  checking it is new or empty; FileExistsError otherwise, naming the path and the flag that
  chose it (an export is never overwritten). The wrappers call it before any work, so
  that a rerun of a finished run that exported stops before it predicts again."""
  chosen = export_dir or os.path.join(model_dir, EXPORT_DIR)
  flag = "--export_dir" if export_dir else f"the default of --export_dir, MODEL_DIR/{EXPORT_DIR}"
  paths.check_output_dir(chosen, "--export_dir")
  if tf.io.gfile.exists(chosen) and tf.io.gfile.listdir(chosen):
    raise FileExistsError(f"--do_export: {chosen} ({flag}) is not empty: the model was "
                          f"exported there already, and an export is never overwritten; "
                          f"give --export_dir a new directory, or leave out --do_export. "
                          f"Nothing was done")
  return chosen


def export(task: base.XLNetTask, model_dir: str, export_dir: Optional[str] = None) -> str:
  """The SavedModel of MODEL_DIR/best (else MODEL_DIR/final) to `export_dir` (default
  MODEL_DIR/export); returns export_dir."""
  export_dir = check_export_dir(model_dir, export_dir)
  for name in (BEST_DIR, FINAL_DIR):
    source = os.path.join(model_dir, name)
    if tf.io.gfile.exists(source):
      break
  else:
    raise FileNotFoundError(f"{model_dir}: neither {BEST_DIR}/ nor {FINAL_DIR}/ exists "
                            f"(train first: --mode=train or train_and_eval)")
  with paths.atomic_output(export_dir) as partial:
    task.export(source, partial)                    # whole or not at all (model_dir_export)
    model_dir_export.remove_empty_export_dir(export_dir.rstrip("/"))   # never over contents
  print(f"exported {source} to {export_dir}")
  return export_dir


def resolve_init_checkpoint(params):
  """`params` with task.init_checkpoint a local model directory: a preset's name
  ("xlnet_base_cased") becomes its cached model directory (`hub.model_dir`: downloaded and
  converted on first use). The one place the driver turns a name into a directory."""
  name = params.task.init_checkpoint
  if not name or tf.io.gfile.isdir(name) or name not in presets.preset_names():
    return params
  return params.replace(task=params.task.replace(init_checkpoint=hub.model_dir(name)))


def run(params, mode: str, model_dir: str, stop_at_step=None,
        export_dir: Optional[str] = None) -> Dict[str, Any]:
  """Runs `mode` of the experiment `params` in `model_dir`; returns what ran:
  {"train": summary, "eval": metrics, "export": export_dir}."""
  if mode not in MODES:
    raise ValueError(f"--mode must be one of {list(MODES)}, got {mode!r}")
  params = resolve_init_checkpoint(_with_default_cache(params, model_dir))
  try:                        # what the configuration lacks, before anything is built
    task = task_factory.get_task(params.task, logging_dir=model_dir)
    training = mode in ("train", "train_and_eval")
    if mode != "export":            # an export reads only the model directory
      task.check(training=training, evaluating=mode in ("eval", "train_and_eval"))
      check_model_fits(task.xlnet_config(), training)
    if mode in ("eval", "train_and_eval"):
      check_validation_steps(params)
    if training:
      paths.check_output_dir(model_dir, "--model_dir")
      check_init_checkpoint(params)
      run_options(params, model_dir, stop_at_step)        # impossible values named
  except ValueError as e:
    raise ConfigError(str(e)) from e
  out = {}
  if mode in ("train", "train_and_eval"):
    out["train"] = train(task, params, model_dir, stop_at_step,
                         evaluate=mode == "train_and_eval")
    evals = out["train"].get("evals")
    if evals:
      out["eval"] = evals[-1]
  if mode == "eval" or (mode == "train_and_eval" and "eval" not in out):
    out["eval"] = evaluate(task, params, model_dir)
  if mode == "export":
    out["export"] = export(task, model_dir, export_dir)
  return out
