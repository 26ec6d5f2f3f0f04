"""The released run_classifier.py's run on our driver (python -m experiments.run_classifier):
the flags as an override of the "xlnet/classification" experiment
(xlnet_tf/tasks/classification.py) that `train_lib.run` trains and evaluates; --do_eval's
results file and --do_predict's GLUE submission TSV.

Everything reads the entry point's flags from `values`, the absl FlagValues it is given
(defined by experiments/run_classifier.py with experiments/common_flags.py, and
experiments/released_flags.py; the released names are translated before `run`); the
optimization and trainer sections are `flag_translation`'s, as run_squad's and run_race's.
"""

import json
import os

from absl import app
from absl import flags
from official.core import task_factory
import tensorflow as tf

import xlnet_tf.tasks.all_tasks  # noqa: F401  (registers every task and its experiment)
from xlnet_tf import model_directory
from xlnet_tf.configs import RELEASED_KEYS
from xlnet_tf.configs import XLNetConfig
from xlnet_tf.runs.released import flag_translation
from xlnet_tf.tasks import train_lib
from xlnet_tf.training import run_directory

EXPERIMENT = "xlnet/classification"


def _final_dir(values: flags.FlagValues) -> str:
  return os.path.join(values.model_dir, train_lib.FINAL_DIR)


def _file(values, flag, name: str) -> str:
  """--FLAG, else NAME of --init_checkpoint, else (without --do_train) of MODEL_DIR/final;
  else a usage error."""
  if values[flag].value:
    return values[flag].value
  for directory in (values.init_checkpoint, None if values.do_train else _final_dir(values)):
    if directory and tf.io.gfile.exists(os.path.join(directory, name)):
      return os.path.join(directory, name)
  raise app.UsageError(f"give --{flag} (or an --init_checkpoint directory holding {name})")


def experiment_override(values: flags.FlagValues):
  """The flags as an override of the "xlnet/classification" experiment."""
  model = {"summary_type": values.summary_type, "use_proj": values.use_summ_proj,
           "dropout": values.dropout, "dropatt": values.dropatt}
  init = values.init_checkpoint or ""
  if values.model_config_path or not (init and tf.io.gfile.exists(
      os.path.join(init, model_directory.CONFIG_FILE))):
    config = XLNetConfig.from_json_file(_file(values, "model_config_path",
                                              model_directory.CONFIG_FILE))
    model.update({k: getattr(config, k) for k in RELEASED_KEYS})
  data = {"cache_dir": os.path.join(values.output_dir, "features"), "seed": values.seed,
          "spiece_model": _file(values, "spiece_model_file", model_directory.SPIECE_FILE)}
  return {
      "task": {
          "init_checkpoint": init, "task_name": values.task_name,
          "data_dir": values.data_dir or "", "max_seq_length": values.max_seq_length,
          "uncased": values.uncased, "labels": values.labels,
          "is_regression": values.is_regression,
          **{k: values[k].value for k in ("text_a_column", "text_b_column", "label_column")},
          "model": model,
          "train_data": {**data, "global_batch_size": values.train_batch_size,
                         "shuffle_buffer_size": values.shuffle_buffer_size},
          "validation_data": {**data, "split": values.eval_split,
                              "global_batch_size": values.eval_batch_size},
          "optimization": flag_translation.optimization_override(
              values, grad_accum_steps=values.grad_accum_steps,
              collapse_check_steps=values.collapse_check_steps, restarts=values.restarts)},
      "trainer": flag_translation.trainer_override(values),
      "runtime": flag_translation.runtime_override(values)}


def _check_batch(values) -> None:
  hosts, per_host = flag_translation.devices(values)
  divisor = (hosts or 1) * (per_host or 1) * values.grad_accum_steps
  if values.train_batch_size % divisor:
    raise app.UsageError(f"--train_batch_size ({values.train_batch_size}) must be "
                         f"divisible by replicas x --grad_accum_steps ({divisor})")


def _evaluate(params, values):
  """`train_lib` mode eval (the newest checkpoint), or MODEL_DIR/final when MODEL_DIR has
  no checkpoint (e.g. a model converted from the original's run); the results also go to
  OUTPUT_DIR/eval_results_<split>.json."""
  if tf.train.latest_checkpoint(values.model_dir) or not tf.io.gfile.exists(_final_dir(values)):
    results = train_lib.run(params, "eval", values.model_dir)["eval"]
  else:
    task = task_factory.get_task(params.task)
    results = task.evaluate(task.load_model_dir(_final_dir(values)))
    print(f"{values.eval_split} ({_final_dir(values)}): " + ", ".join(
        f"{k} {v:.4f}" if isinstance(v, float) else f"{k} {v}" for k, v in results.items()))
  with tf.io.gfile.GFile(os.path.join(values.output_dir,
                                      f"eval_results_{values.eval_split}.json"), "w") as f:
    f.write(json.dumps(results, indent=2) + "\n")


def _predict(params, values):
  """The test split's GLUE submission TSV, predicted with MODEL_DIR/final."""
  if not tf.io.gfile.exists(_final_dir(values)):
    raise FileNotFoundError(f"{_final_dir(values)}: no fine-tuned model to predict with; train "
                            f"first (--do_train)")
  task = task_factory.get_task(params.task)
  directory = values.predict_dir or values.output_dir
  tf.io.gfile.makedirs(directory)
  path = os.path.join(directory, f"{task.task_spec.name}_test_predictions.tsv")
  count = task.write_predictions(task.load_model_dir(_final_dir(values)), path)
  print(f"wrote {count} predictions to {path}")


@flag_translation.reporting_disk_full("run_classifier")
def run(values: flags.FlagValues) -> None:
  """Trains (--do_train), evaluates (--do_eval) and predicts (--do_predict) as the flags
  say, after checking everything checkable (one line naming the flag otherwise). The
  released flag names are translated (experiments/released_flags.py `apply`) before."""
  if not (values.do_train or values.do_eval or values.do_predict):
    raise app.UsageError("nothing to do: give --do_train, --do_eval and/or --do_predict")
  flag_translation.check_paths(
      "run_classifier",
      inputs={"init_checkpoint": "directory of pretrained weights (save_pretrained, "
                                 "xlnet_tf.convert) or a model.ckpt prefix",
              "spiece_model_file": "SentencePiece model file",
              "model_config_path": "xlnet_config.json file",
              "data_dir": "directory with the task's files"},
      outputs=("model_dir", "output_dir", "predict_dir"), flag_values=values)
  try:
    params = train_lib.parse_params(EXPERIMENT, params_override=experiment_override(values))
    if values.do_train:
      train_lib.run_options(params, values.model_dir)   # impossible values, named
  except ValueError as e:
    raise SystemExit(f"run_classifier: {e}") from None
  if values.do_train:
    _check_batch(values)
  tf.io.gfile.makedirs(values.output_dir)
  try:
    if values.do_train:
      summary = train_lib.run(params, "train", values.model_dir)["train"]
      for line in summary.get("collapse_warnings", []):
        print(line)
    if values.do_eval:
      _evaluate(params, values)
    if values.do_predict:
      _predict(params, values)
  except (train_lib.ConfigError, FileNotFoundError, FileExistsError,
          NotADirectoryError) + run_directory.RUN_STOPPED as e:
    raise SystemExit(f"run_classifier: {e}") from None

