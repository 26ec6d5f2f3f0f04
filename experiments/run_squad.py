r"""Fine-tunes and evaluates XLNet on SQuAD v1.1 / v2.0 (the original run_squad.py flags).

  python -m experiments.run_squad --do_train --do_predict \
      --train_file=squad/train-v2.0.json --predict_file=squad/dev-v2.0.json \
      --init_checkpoint=converted/xlnet_large --model_dir=runs/squad \
      --output_dir=runs/squad/out --max_seq_length=512 --doc_stride=128 \
      --max_query_length=64 --train_batch_size=48 --learning_rate=3e-5 \
      --lr_layer_decay_rate=0.75 --train_steps=8000 --warmup_steps=1000

A flag-to-config wrapper of the xlnet/squad experiment (`xlnet_tf/tasks/squad.py`, run by
`xlnet_tf/tasks/train_lib.py`, as `python -m experiments.train --experiment=xlnet/squad`):

  --do_train    train_lib mode "train": windows cached in MODEL_DIR/features, checkpoints
                every --save_steps (--max_checkpoints kept) in MODEL_DIR, a rerun resumes
                exactly (a rerun with other settings is refused, naming them), the fine-tuned
                model directory in MODEL_DIR/final (xlnet_config.json, model.ckpt,
                spiece.model, squad.json), the configuration in MODEL_DIR/params.yaml.
  --do_predict  the model of MODEL_DIR/best (else final) on --predict_file: writes
                predictions.json ({id: answer}, the official format),
                nbest_predictions.json and null_odds.json to --predict_dir (default
                --output_dir); when the predict file has answers it also scores them with
                the official EM/F1 (v2.0: HasAns/NoAns and the best null threshold, which
                is searched on that file, applied, and recorded in eval_results.json and
                in the model's squad.json for the export).
  --do_export   train_lib mode "export": a SavedModel of MODEL_DIR/best (else final) whose
                signature takes raw `question` and `context` strings and returns
                `answer_text`, `answer_start_char`, `score` (and `is_impossible` for v2.0);
                see `xlnet_tf/serving/squad_export.py`. An export directory is never
                overwritten.

--do_predict and --do_export window and decode with the settings recorded in squad.json
(max_seq_length, doc_stride, max_query_length, uncased, start_n_top, end_n_top) unless those
flags are given. Training runs under --strategy (default one device; mirrored,
multi_worker, tpu).

The flag names of zihangdai/xlnet's run_squad.py work too (experiments/released_flags.py):
--max_save is --max_checkpoints (0 keeps them all), --use_bfloat16 --precision=bfloat16,
--shuffle_buffer --shuffle_buffer_size, --use_tpu --strategy=tpu; one with no equivalent
here ends the run before any work, naming what replaced it. The windows are cached in
MODEL_DIR/features (the original's --output_dir held its TF records).
"""

import os

from xlnet_tf import console

console.start()  # before TensorFlow is imported: the log levels of --verbosity

from absl import app  # noqa: E402
from absl import flags  # noqa: E402
from official.core import exp_factory  # noqa: E402
import tensorflow as tf  # noqa: E402

from experiments import released_flags  # noqa: E402
from experiments import strategy_flags  # noqa: E402,F401  (--strategy, --tpu, --num_gpus)
from experiments import task_flags  # noqa: E402
from xlnet_tf import model_directory  # noqa: E402
from xlnet_tf.configs import RELEASED_KEYS  # noqa: E402
from xlnet_tf.configs import XLNetConfig  # noqa: E402
from xlnet_tf.data import sample_data  # noqa: E402
from xlnet_tf.tasks import experiments  # noqa: E402
from xlnet_tf.tasks import squad as squad_task  # noqa: E402
from xlnet_tf.tasks import train_lib  # noqa: E402
from xlnet_tf.training import finetuning  # noqa: E402
from xlnet_tf.training import run_directory  # noqa: E402

FLAGS = flags.FLAGS
task_flags.define_task_flags(learning_rate=3e-5, lr_layer_decay_rate=0.75, train_steps=8000,
                             train_batch_size=48)
flags.DEFINE_string("train_file", None, "SQuAD JSON to train on (or sample_data:qa/squad.json, "
                    "the bundled sample).")
flags.DEFINE_string("predict_file", None, "SQuAD JSON to predict (and score, if answered); "
                    "sample_data:PATH as for --train_file.")
flags.DEFINE_bool("do_train", False, "Fine-tune.")
flags.DEFINE_bool("do_predict", False, "Predict --predict_file.")
flags.DEFINE_string("predict_dir", None, "Where --do_predict writes (default --output_dir).")
flags.DEFINE_integer("max_seq_length", 512, "Pieces per window.")
flags.DEFINE_integer("doc_stride", 128, "Pieces between window starts.")
flags.DEFINE_integer("max_query_length", 64, "Question pieces kept.")
flags.DEFINE_integer("max_answer_length", 64, "Longest answer, in pieces.")
flags.DEFINE_integer("n_best_size", 5, "Candidates kept per question.")
flags.DEFINE_integer("start_n_top", 5, "Best starts searched.")
flags.DEFINE_integer("end_n_top", 5, "Best ends searched per start.")
flags.DEFINE_integer("predict_batch_size", 32, "Windows per prediction batch.")
flags.DEFINE_bool("do_export", False, "Export a SavedModel (raw question and context in, "
                  "answer out) to --export_dir.")
flags.DEFINE_string("export_dir", None, "Where --do_export writes (default MODEL_DIR/export).")
flags.DEFINE_float("null_score_diff_threshold", None, "v2.0: answer '' when the null score "
                   "exceeds this (default: the best threshold found on --predict_file when "
                   "it has answers, else 0).")
flags.DEFINE_integer("iterations", 1000, "Training steps per loop (one tf.function call; "
                     "the loss is logged and checked after each).")
flags.DEFINE_integer("save_steps", 1000, "Steps between checkpoints in MODEL_DIR (a rerun "
                     "resumes from the newest).")
flags.DEFINE_integer("max_checkpoints", 5, "Checkpoints kept (0: every one).")
flags.DEFINE_integer("shuffle_buffer_size", None, "Windows in the training shuffle buffer "
                     "(default: the xlnet/squad experiment's).")
flags.DEFINE_enum("precision", "float32", sorted(finetuning.PRECISIONS), "Numerics "
                  "(bfloat16: bfloat16 compute, float32 weights).")
flags.DEFINE_integer("stop_at_step", None, "Stop (and checkpoint) at this step; the schedule "
                     "stays that of --train_steps, a rerun continues.")
flags.mark_flags_as_required(["model_dir"])
released_flags.define("run_squad.py")

# The settings squad.json records that --do_predict / --do_export take from the model
# unless the flag is given.
RECORDED = squad_task.SETTING_KEYS


def _sizes(config_path):
  """task.model's sizes from an xlnet_config.json."""
  config = XLNetConfig.from_json_file(config_path)
  return {key: getattr(config, key) for key in RELEASED_KEYS}


def _params(model_source=None):
  """The xlnet/squad experiment of the flags. `model_source` (a model directory): for
  --do_predict / --do_export, its network, vocabulary and recorded squad.json settings
  (the flags given explicitly win)."""
  features = os.path.join(FLAGS.model_dir, "features")
  task = {key: FLAGS[key].value for key in (
      "max_seq_length", "doc_stride", "max_query_length", "max_answer_length",
      "n_best_size", "start_n_top", "end_n_top", "uncased")}
  task.update(init_checkpoint=FLAGS.init_checkpoint or "", train_file=FLAGS.train_file or "",
              predict_file=FLAGS.predict_file or "")
  if FLAGS.null_score_diff_threshold is not None:
    task["null_score_diff_threshold"] = FLAGS.null_score_diff_threshold
  model = {"dropout": FLAGS.dropout, "dropatt": FLAGS.dropatt}
  train_data = {"global_batch_size": FLAGS.train_batch_size, "seed": FLAGS.seed,
                "cache_dir": features}
  validation_data = {"global_batch_size": FLAGS.predict_batch_size, "cache_dir": features}
  if FLAGS.shuffle_buffer_size is not None:
    train_data["shuffle_buffer_size"] = FLAGS.shuffle_buffer_size
  if FLAGS.spiece_model_file:
    train_data["spiece_model"] = validation_data["spiece_model"] = FLAGS.spiece_model_file
  if FLAGS.model_config_path:
    model.update(_sizes(FLAGS.model_config_path))
  if model_source is not None:                    # the model directory defines the model
    recorded = squad_task.read_settings(model_source)
    task.update({key: recorded[key] for key in RECORDED
                 if key in recorded and not FLAGS[key].present})
    if recorded.get("version_2_with_negative") is not None:
      task["version_2_with_negative"] = bool(recorded["version_2_with_negative"])
    task["init_checkpoint"] = ""
    model.update(_sizes(os.path.join(model_source, model_directory.CONFIG_FILE)))
    validation_data["spiece_model"] = os.path.join(model_source, model_directory.SPIECE_FILE)
  params = exp_factory.get_exp_config(experiments.SQUAD)
  params.override({
      "task": {**task, "model": model, "train_data": train_data,
               "validation_data": validation_data,
               "optimization": task_flags.optimization_override()},
      "trainer": task_flags.trainer_override(),
      "runtime": released_flags.runtime_override()}, is_strict=True)
  params.validate()
  params.lock()
  return params


def _model_source():
  """MODEL_DIR/best, else MODEL_DIR/final (what train_lib exports)."""
  for name in (train_lib.BEST_DIR, train_lib.FINAL_DIR):
    source = os.path.join(FLAGS.model_dir, name)
    if tf.io.gfile.exists(os.path.join(source, model_directory.CONFIG_FILE)):
      return source
  raise SystemExit(f"run_squad: {FLAGS.model_dir}: no fine-tuned model ({train_lib.BEST_DIR}/ "
                   f"or {train_lib.FINAL_DIR}/); train first (--do_train) or point "
                   f"--model_dir at a trained run")


def _predict_dir():
  return FLAGS.predict_dir or FLAGS.output_dir


_STOPPED = (train_lib.ConfigError, FileNotFoundError, FileExistsError,
            NotADirectoryError) + run_directory.RUN_STOPPED


@task_flags.reporting_disk_full("run_squad")
def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  released_flags.apply("run_squad")
  if not (FLAGS.do_train or FLAGS.do_predict or FLAGS.do_export):
    raise app.UsageError("nothing to do: give --do_train, --do_predict and/or --do_export")
  if FLAGS.do_train and not FLAGS.train_file:
    raise app.UsageError("--do_train needs --train_file")
  if FLAGS.do_train and not (FLAGS.init_checkpoint or FLAGS.spiece_model_file):
    raise app.UsageError("give --spiece_model_file (or an --init_checkpoint directory "
                         "holding spiece.model)")
  if FLAGS.do_predict and not FLAGS.predict_file:
    raise app.UsageError("--do_predict needs --predict_file")
  if FLAGS.do_predict and not _predict_dir():
    raise app.UsageError("--do_predict needs --output_dir (or --predict_dir)")
  for name in ("train_file", "predict_file"):
    try:
      FLAGS[name].value = FLAGS[name].value and sample_data.resolve(FLAGS[name].value)
    except ValueError as e:
      raise app.UsageError(f"--{name}: {e}") from None
  task_flags.check_paths(
      "run_squad",
      inputs={"init_checkpoint": "directory of pretrained weights", "spiece_model_file":
              "SentencePiece model file", "model_config_path": "xlnet_config.json file",
              "train_file": "SQuAD JSON file", "predict_file": "SQuAD JSON file"},
      outputs=("model_dir", "output_dir", "predict_dir", "export_dir"))
  if FLAGS.do_export:
    try:
      train_lib.check_export_dir(FLAGS.model_dir, FLAGS.export_dir)
    except (FileExistsError, NotADirectoryError, PermissionError) as e:
      raise SystemExit(f"run_squad: {e}") from None

  if FLAGS.do_train:
    params = _params()
    try:
      train_lib.finetune_options(params, FLAGS.model_dir, FLAGS.stop_at_step)  # the flags
      summary = train_lib.run(params, "train", FLAGS.model_dir, FLAGS.stop_at_step)["train"]
    except _STOPPED + (ValueError,) as e:
      raise SystemExit(f"run_squad: {e}") from None
    losses = summary["losses"]
    final = os.path.join(FLAGS.model_dir, train_lib.FINAL_DIR)
    if not losses:
      print(f"already trained to step {summary['step']}; model in {final}")
    elif summary["step"] < FLAGS.train_steps:
      print(f"trained to step {summary['step']} of {FLAGS.train_steps} (rerun to continue): "
            f"loss {losses[0]:.3f} -> {losses[-1]:.3f}")
    else:
      print(f"trained steps {summary['start_step']}..{summary['step']}: loss "
            f"{losses[0]:.3f} -> {losses[-1]:.3f} (per loop); model in {final}")
    if summary["step"] < FLAGS.train_steps:
      return

  if FLAGS.do_predict:
    source = _model_source()
    try:
      task = squad_task.SquadTask(_params(source).task)
      model = task.load_model_dir(source)
      results = task.write_predictions(model, _predict_dir())
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
          f"{os.path.join(_predict_dir(), squad_task.PREDICTIONS_FILE)}")

  if FLAGS.do_export:
    params = _params(_model_source())
    try:
      export_dir = train_lib.run(params, "export", FLAGS.model_dir,
                                 export_dir=FLAGS.export_dir)["export"]
    except _STOPPED as e:
      raise SystemExit(f"run_squad: {e}") from None
    print(f"exported the SavedModel (question, context -> answer) to {export_dir}")


if __name__ == "__main__":
  app.run(main)
