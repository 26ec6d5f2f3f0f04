"""The released run_squad.py's run on our driver (python -m experiments.run_squad): the flags
as the "xlnet/squad" experiment (xlnet_tf/tasks/squad.py) that `train_lib.run` trains
(--do_train) and exports (--do_export); --do_predict's predictions and scores with the
model of MODEL_DIR/best (else final), the settings squad.json records taken unless the
flags are given.

Everything reads the entry point's flags from `values`, the absl FlagValues it is given
(defined by experiments/run_squad.py with experiments/common_flags.py, and
experiments/released_flags.py; the released names are translated before `run`).
"""

import os

from absl import app
from absl import flags
from official.core import exp_factory
import tensorflow as tf

from xlnet_tf import model_directory
from xlnet_tf.configs import RELEASED_KEYS
from xlnet_tf.configs import XLNetConfig
from xlnet_tf.data import sample_data
from xlnet_tf.tasks import squad
from xlnet_tf.runs.released import flag_translation
from xlnet_tf.tasks import squad as squad_task
from xlnet_tf.tasks import train_lib
from xlnet_tf.training import run_directory

# The settings squad.json records that --do_predict / --do_export take from the model
# unless the flag is given.
RECORDED = squad_task.SETTING_KEYS


def _sizes(config_path):
  """task.model's sizes from an xlnet_config.json."""
  config = XLNetConfig.from_json_file(config_path)
  return {key: getattr(config, key) for key in RELEASED_KEYS}


def _params(values: flags.FlagValues, model_source=None):
  """The xlnet/squad experiment of the flags. `model_source` (a model directory): for
  --do_predict / --do_export, its network, vocabulary and recorded squad.json settings
  (the flags given explicitly win)."""
  features = os.path.join(values.model_dir, "features")
  task = {key: values[key].value for key in (
      "max_seq_length", "doc_stride", "max_query_length", "max_answer_length",
      "n_best_size", "start_n_top", "end_n_top", "uncased")}
  task.update(init_checkpoint=values.init_checkpoint or "", train_file=values.train_file or "",
              predict_file=values.predict_file or "")
  if values.null_score_diff_threshold is not None:
    task["null_score_diff_threshold"] = values.null_score_diff_threshold
  model = {"dropout": values.dropout, "dropatt": values.dropatt}
  train_data = {"global_batch_size": values.train_batch_size, "seed": values.seed,
                "cache_dir": features}
  validation_data = {"global_batch_size": values.predict_batch_size, "cache_dir": features}
  if values.shuffle_buffer_size is not None:
    train_data["shuffle_buffer_size"] = values.shuffle_buffer_size
  if values.spiece_model_file:
    train_data["spiece_model"] = validation_data["spiece_model"] = values.spiece_model_file
  if values.model_config_path:
    model.update(_sizes(values.model_config_path))
  if model_source is not None:                    # the model directory defines the model
    recorded = squad_task.read_settings(model_source)
    task.update({key: recorded[key] for key in RECORDED
                 if key in recorded and not values[key].present})
    if recorded.get("version_2_with_negative") is not None:
      task["version_2_with_negative"] = bool(recorded["version_2_with_negative"])
    task["init_checkpoint"] = ""
    model.update(_sizes(os.path.join(model_source, model_directory.CONFIG_FILE)))
    validation_data["spiece_model"] = os.path.join(model_source, model_directory.SPIECE_FILE)
  params = exp_factory.get_exp_config(squad.KIND.experiment)
  params.override({
      "task": {**task, "model": model, "train_data": train_data,
               "validation_data": validation_data,
               "optimization": flag_translation.optimization_override(values)},
      "trainer": flag_translation.trainer_override(values),
      "runtime": flag_translation.runtime_override(values)}, is_strict=True)
  params.validate()
  params.lock()
  return params


def _model_source(values):
  """MODEL_DIR/best, else MODEL_DIR/final (what train_lib exports)."""
  for name in (train_lib.BEST_DIR, train_lib.FINAL_DIR):
    source = os.path.join(values.model_dir, name)
    if tf.io.gfile.exists(os.path.join(source, model_directory.CONFIG_FILE)):
      return source
  raise SystemExit(f"run_squad: {values.model_dir}: no fine-tuned model ({train_lib.BEST_DIR}/ "
                   f"or {train_lib.FINAL_DIR}/); train first (--do_train) or point "
                   f"--model_dir at a trained run")


def _predict_dir(values):
  return values.predict_dir or values.output_dir


_STOPPED = (train_lib.ConfigError, FileNotFoundError, FileExistsError,
            NotADirectoryError) + run_directory.RUN_STOPPED


@flag_translation.reporting_disk_full("run_squad")
def run(values: flags.FlagValues) -> None:
  """--do_train, --do_predict and --do_export as the flags say, after checking everything
  checkable (one line naming the flag otherwise). The released flag names are translated
  (experiments/released_flags.py `apply`) before."""
  if not (values.do_train or values.do_predict or values.do_export):
    raise app.UsageError("nothing to do: give --do_train, --do_predict and/or --do_export")
  if values.do_train and not values.train_file:
    raise app.UsageError("--do_train needs --train_file")
  if values.do_train and not (values.init_checkpoint or values.spiece_model_file):
    raise app.UsageError("give --spiece_model_file (or an --init_checkpoint directory "
                         "holding spiece.model)")
  if values.do_predict and not values.predict_file:
    raise app.UsageError("--do_predict needs --predict_file")
  if values.do_predict and not _predict_dir(values):
    raise app.UsageError("--do_predict needs --output_dir (or --predict_dir)")
  for name in ("train_file", "predict_file"):
    try:
      values[name].value = values[name].value and sample_data.resolve(values[name].value)
    except ValueError as e:
      raise app.UsageError(f"--{name}: {e}") from None
  flag_translation.check_paths(
      "run_squad",
      inputs={"init_checkpoint": "directory of pretrained weights", "spiece_model_file":
              "SentencePiece model file", "model_config_path": "xlnet_config.json file",
              "train_file": "SQuAD JSON file", "predict_file": "SQuAD JSON file"},
      outputs=("model_dir", "output_dir", "predict_dir", "export_dir"), flag_values=values)
  if values.do_export:
    try:
      train_lib.check_export_dir(values.model_dir, values.export_dir)
    except (FileExistsError, NotADirectoryError, PermissionError) as e:
      raise SystemExit(f"run_squad: {e}") from None

  if values.do_train:
    params = _params(values)
    try:
      train_lib.run_options(params, values.model_dir, values.stop_at_step)  # the flags
      summary = train_lib.run(params, "train", values.model_dir, values.stop_at_step)["train"]
    except _STOPPED + (ValueError,) as e:
      raise SystemExit(f"run_squad: {e}") from None
    losses = summary["losses"]
    final = os.path.join(values.model_dir, train_lib.FINAL_DIR)
    if not losses:
      print(f"already trained to step {summary['step']}; model in {final}")
    elif summary["step"] < values.train_steps:
      print(f"trained to step {summary['step']} of {values.train_steps} (rerun to continue): "
            f"loss {losses[0]:.3f} -> {losses[-1]:.3f}")
    else:
      print(f"trained steps {summary['start_step']}..{summary['step']}: loss "
            f"{losses[0]:.3f} -> {losses[-1]:.3f} (per loop); model in {final}")
    if summary["step"] < values.train_steps:
      return

  if values.do_predict:
    source = _model_source(values)
    try:
      task = squad_task.SquadTask(_params(values, source).task)
      model = task.load_model_dir(source)
      results = task.write_predictions(model, _predict_dir(values))
    except _STOPPED + (ValueError,) as e:
      raise SystemExit(f"run_squad: {e}") from None
    threshold = results.get(squad_task.THRESHOLD_KEY)
    if threshold is not None:
      squad_task.record_threshold(source, threshold)
    scores = {k: v for k, v in results.items() if k != squad_task.THRESHOLD_KEY}
    if scores:
      print(" ".join(f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}"
                     for k, v in results.items()))
    print(f"wrote {len(task.examples())} predictions to "
          f"{os.path.join(_predict_dir(values), squad_task.PREDICTIONS_FILE)}")

  if values.do_export:
    params = _params(values, _model_source(values))
    try:
      export_dir = train_lib.run(params, "export", values.model_dir,
                                 export_dir=values.export_dir)["export"]
    except _STOPPED as e:
      raise SystemExit(f"run_squad: {e}") from None
    print(f"exported the SavedModel (question, context -> answer) to {export_dir}")

