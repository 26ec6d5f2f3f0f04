"""The released run_race.py's run on our driver (python -m experiments.run_race): the flags as
the "xlnet/race" experiment (xlnet_tf/tasks/race.py) that `train_lib.run` trains
(--do_train), evaluates (--do_eval, also written to OUTPUT_DIR/eval_results_<split>.json)
and exports (--do_export). Without --init_checkpoint and --model_config_path, eval and
export of a trained run take the model sizes (and SentencePiece model) of its model.

Everything reads the entry point's flags from `values`, the absl FlagValues it is given
(defined by experiments/run_race.py with experiments/common_flags.py, and
experiments/released_flags.py; the released names are translated before `run`). The
choices of the entry point's --levels are named here.
"""

import json
import os

from absl import app
from absl import flags
from official.core import exp_factory
import tensorflow as tf

from xlnet_tf import model_directory
from xlnet_tf.configs import RELEASED_KEYS
from xlnet_tf.configs import XLNetConfig
from xlnet_tf.data import race
from xlnet_tf.tasks import race as race_task
from xlnet_tf.runs.released import flag_translation
from xlnet_tf.tasks import train_lib
from xlnet_tf.training import run_directory

# The choices of the entry point's --levels.
LEVELS = race.LEVELS


def _trained_model_dir(values):
  """MODEL_DIR/final (else best) when it holds a fine-tuned model, else None."""
  for name in (train_lib.FINAL_DIR, train_lib.BEST_DIR):
    directory = os.path.join(values.model_dir, name)
    if tf.io.gfile.exists(os.path.join(directory, model_directory.CONFIG_FILE)):
      return directory
  return None


def experiment_params(values: flags.FlagValues):
  """The "xlnet/race" experiment with the flags' values (locked)."""
  model = {"summary_type": values.summary_type, "use_proj": values.use_summ_proj,
           "dropout": values.dropout, "dropatt": values.dropatt}
  config_path, spiece = values.model_config_path, values.spiece_model_file or ""
  trained = _trained_model_dir(values)
  if not (values.init_checkpoint or config_path) and trained:
    # Eval / export of a trained run: the sizes (and SentencePiece model) of its model.
    config_path = os.path.join(trained, model_directory.CONFIG_FILE)
    spiece = spiece or os.path.join(trained, model_directory.SPIECE_FILE)
  if config_path:                           # the sizes; checked against init_checkpoint's
    config = XLNetConfig.from_json_file(config_path)
    model.update({key: getattr(config, key) for key in RELEASED_KEYS})
  cache_dir = os.path.join(values.output_dir, "features") if values.output_dir else ""
  params = exp_factory.get_exp_config(race_task.KIND.experiment)
  params.override({
      "runtime": flag_translation.runtime_override(values),
      "task": {
          "init_checkpoint": values.init_checkpoint or "", "data_dir": values.data_dir or "",
          "levels": list(values.levels), "max_seq_length": values.max_seq_length,
          "max_qa_length": values.max_qa_length, "uncased": values.uncased, "model": model,
          "train_data": {"global_batch_size": values.train_batch_size, "seed": values.seed,
                         "spiece_model": spiece, "cache_dir": cache_dir,
                         "shuffle_buffer_size": values.shuffle_buffer_size},
          "validation_data": {"split": values.eval_split,
                              "global_batch_size": values.eval_batch_size,
                              "spiece_model": spiece, "cache_dir": cache_dir},
          "optimization": flag_translation.optimization_override(
              values, grad_accum_steps=values.grad_accum_steps)},
      "trainer": flag_translation.trainer_override(values),
  }, is_strict=True)
  params.validate()
  params.lock()
  return params


@flag_translation.reporting_disk_full("run_race")
def run(values: flags.FlagValues) -> None:
  """--do_train, --do_eval and --do_export as the flags say, after checking everything
  checkable (one line naming the flag otherwise). The released flag names are translated
  (experiments/released_flags.py `apply`) before."""
  if not (values.do_train or values.do_eval or values.do_export):
    raise app.UsageError("nothing to do: give --do_train, --do_eval and/or --do_export")
  for name in ("data_dir", "output_dir"):
    if (values.do_train or values.do_eval) and not values[name].value:
      raise app.UsageError(f"--do_train and --do_eval need --{name}")
  flag_translation.check_paths(
      "run_race",
      inputs={"init_checkpoint": "directory of pretrained weights", "spiece_model_file":
              "SentencePiece model file", "model_config_path": "xlnet_config.json file",
              "data_dir": "RACE directory (train/dev/test with high/middle)"},
      outputs=[name for name in ("model_dir", "output_dir", "export_dir")
               if values[name].value], flag_values=values)
  params = experiment_params(values)
  try:
    if values.do_export:               # before any work: a finished rerun stops here
      train_lib.check_export_dir(values.model_dir, values.export_dir)
    if values.do_train:
      summary = train_lib.run(params, "train", values.model_dir, values.stop_at_step)["train"]
      losses = summary["losses"]
      print(f"trained steps {summary['start_step']} -> {summary['step']}"
            + (f": loss {losses[0]:.3f} -> {losses[-1]:.3f}" if losses else ""))
      if summary["step"] < params.trainer.train_steps:
        print(f"stopped at step {summary['step']} of {params.trainer.train_steps}; run "
              f"again to continue")
        return
    if values.do_eval:
      results = train_lib.run(params, "eval", values.model_dir)["eval"]
      tf.io.gfile.makedirs(values.output_dir)
      with tf.io.gfile.GFile(os.path.join(
          values.output_dir, f"eval_results_{values.eval_split}.json"), "w") as f:
        f.write(json.dumps(results, indent=2) + "\n")
    if values.do_export:
      train_lib.run(params, "export", values.model_dir, export_dir=values.export_dir)
  except train_lib.ConfigError as e:
    raise SystemExit(f"run_race: {e} (flags: --init_checkpoint, --model_config_path, "
                     f"--spiece_model_file, --data_dir)") from None
  except (FileNotFoundError, FileExistsError, NotADirectoryError,
          *run_directory.RUN_STOPPED) as e:
    raise SystemExit(f"run_race: {e}") from None

