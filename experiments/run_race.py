r"""Fine-tunes, evaluates and exports XLNet on RACE (multiple choice reading comprehension).

  python -m experiments.run_race --do_train --do_eval --do_export --data_dir=RACE \
      --init_checkpoint=converted/xlnet_large --model_dir=runs/race \
      --output_dir=runs/race/out --max_seq_length=512 --max_qa_length=128 \
      --train_batch_size=8 --learning_rate=2e-5 --train_steps=12000 --warmup_steps=1000

A flag-to-config wrapper of the "xlnet/race" experiment (`xlnet_tf.tasks.race`), run by
`xlnet_tf.tasks.train_lib` (the same run as `python -m experiments.train
--experiment=xlnet/race`):
  --do_train   mode train: the common Trainer, checkpoints in MODEL_DIR every --save_steps
               (a rerun resumes exactly; a rerun with other settings is refused, naming
               them), the fine-tuned model directory in MODEL_DIR/final (xlnet_config.json,
               model.ckpt, spiece.model, race.json).
  --do_eval    mode eval: accuracy of the newest checkpoint of MODEL_DIR on --eval_split
               per subset (middle, high) and overall, in OUTPUT_DIR/eval_results_<split>.json
               (and MODEL_DIR/eval_results_<split>.json, TensorBoard MODEL_DIR/validation).
  --do_export  mode export: the raw-text SavedModel of MODEL_DIR/best (else final) in
               --export_dir (default MODEL_DIR/export); see `xlnet_tf.serving.race_export`.
The features are cached in OUTPUT_DIR/features (the released script kept its TF records in
--output_dir too).

Reads DATA_DIR/{train,dev,test}/{middle,high}/*.txt (see `xlnet_tf.data.race`). The
defaults are the released run_race.py's, and so are its flag names
(experiments/released_flags.py): --init_checkpoint is a converted directory, --max_save is
--max_checkpoints (0 keeps them all), --use_bfloat16 --precision=bfloat16, --high_only /
--middle_only --levels=high / middle, --shuffle_buffer --shuffle_buffer_size, --use_tpu
--strategy=tpu; one with no equivalent here ends the run before any work, naming what
replaced it. Without --init_checkpoint and --model_config_path, --do_eval / --do_export of
a trained run take the model sizes (and, without --spiece_model_file, the SentencePiece
model) of MODEL_DIR/final (else MODEL_DIR/best).
"""

import json
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
from xlnet_tf.data import race  # noqa: E402
from xlnet_tf.tasks import experiments  # noqa: E402
from xlnet_tf.tasks import train_lib  # noqa: E402
from xlnet_tf.training import finetuning  # noqa: E402
from xlnet_tf.training import run_directory  # noqa: E402

FLAGS = flags.FLAGS
# The released run_race.py's defaults (lr 2e-5, no layer decay, 12000 steps, batch 8;
# adam_epsilon 1e-6 is task_flags' default, as released).
task_flags.define_task_flags(learning_rate=2e-5, lr_layer_decay_rate=1.0, train_steps=12000,
                             train_batch_size=8)
flags.DEFINE_string("data_dir", None, "The RACE directory.")
flags.DEFINE_bool("do_train", False, "Fine-tune on the train split.")
flags.DEFINE_bool("do_eval", False, "Evaluate on --eval_split.")
flags.DEFINE_bool("do_export", False, "Export the raw-text SavedModel of MODEL_DIR/best "
                  "(else MODEL_DIR/final) to --export_dir.")
flags.DEFINE_string("export_dir", None, "--do_export: where the SavedModel goes (default "
                    "MODEL_DIR/export; must be new or empty).")
flags.DEFINE_string("eval_split", "dev", "dev or test.")
flags.DEFINE_list("levels", list(race.LEVELS), "Subsets: middle, high.")
flags.DEFINE_integer("max_seq_length", 512, "Pieces per (article, question+option) row.")
flags.DEFINE_integer("max_qa_length", 128, "Question+option pieces kept (the last ones).")
flags.DEFINE_integer("eval_batch_size", 32, "Questions per evaluation batch.")
flags.DEFINE_integer("iterations", 1000, "Steps per loop (tf.function call, loss log).")
flags.DEFINE_integer("save_steps", 1000, "Checkpoint interval (steps).")
flags.DEFINE_integer("max_checkpoints", 3, "Checkpoints kept (0: every one).")
flags.DEFINE_integer("grad_accum_steps", 1, "Micro-batches per update.")
flags.DEFINE_enum("precision", "float32", sorted(finetuning.PRECISIONS), "Numerics "
                  "(bfloat16: bfloat16 compute, float32 weights).")
flags.DEFINE_integer("shuffle_buffer_size", 2048, "Questions in the training shuffle "
                     "buffer.")
flags.DEFINE_string("summary_type", "last", "Sequence summary: last (<cls>), first, mean, "
                    "attn.")
flags.DEFINE_bool("use_summ_proj", True, "Dense + tanh on the summary.")
flags.DEFINE_integer("stop_at_step", None, "Stop (and checkpoint) at this step; the schedule "
                     "stays that of --train_steps, a rerun continues.")
flags.mark_flags_as_required(["model_dir"])
released_flags.define("run_race.py")


def _trained_model_dir():
  """MODEL_DIR/final (else best) when it holds a fine-tuned model, else None."""
  for name in (train_lib.FINAL_DIR, train_lib.BEST_DIR):
    directory = os.path.join(FLAGS.model_dir, name)
    if tf.io.gfile.exists(os.path.join(directory, model_directory.CONFIG_FILE)):
      return directory
  return None


def experiment_params():
  """The "xlnet/race" experiment with the flags' values (locked)."""
  model = {"summary_type": FLAGS.summary_type, "use_proj": FLAGS.use_summ_proj,
           "dropout": FLAGS.dropout, "dropatt": FLAGS.dropatt}
  config_path, spiece = FLAGS.model_config_path, FLAGS.spiece_model_file or ""
  trained = _trained_model_dir()
  if not (FLAGS.init_checkpoint or config_path) and trained:
    # Eval / export of a trained run: the sizes (and SentencePiece model) of its model.
    config_path = os.path.join(trained, model_directory.CONFIG_FILE)
    spiece = spiece or os.path.join(trained, model_directory.SPIECE_FILE)
  if config_path:                           # the sizes; checked against init_checkpoint's
    config = XLNetConfig.from_json_file(config_path)
    model.update({key: getattr(config, key) for key in RELEASED_KEYS})
  cache_dir = os.path.join(FLAGS.output_dir, "features") if FLAGS.output_dir else ""
  params = exp_factory.get_exp_config(experiments.RACE)
  params.override({
      "runtime": released_flags.runtime_override(),
      "task": {
          "init_checkpoint": FLAGS.init_checkpoint or "", "data_dir": FLAGS.data_dir or "",
          "levels": list(FLAGS.levels), "max_seq_length": FLAGS.max_seq_length,
          "max_qa_length": FLAGS.max_qa_length, "uncased": FLAGS.uncased, "model": model,
          "train_data": {"global_batch_size": FLAGS.train_batch_size, "seed": FLAGS.seed,
                         "spiece_model": spiece, "cache_dir": cache_dir,
                         "shuffle_buffer_size": FLAGS.shuffle_buffer_size},
          "validation_data": {"split": FLAGS.eval_split,
                              "global_batch_size": FLAGS.eval_batch_size,
                              "spiece_model": spiece, "cache_dir": cache_dir},
          "optimization": task_flags.optimization_override(
              grad_accum_steps=FLAGS.grad_accum_steps)},
      "trainer": task_flags.trainer_override(),
  }, is_strict=True)
  params.validate()
  params.lock()
  return params


@task_flags.reporting_disk_full("run_race")
def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  released_flags.apply("run_race")
  if not (FLAGS.do_train or FLAGS.do_eval or FLAGS.do_export):
    raise app.UsageError("nothing to do: give --do_train, --do_eval and/or --do_export")
  for name in ("data_dir", "output_dir"):
    if (FLAGS.do_train or FLAGS.do_eval) and not FLAGS[name].value:
      raise app.UsageError(f"--do_train and --do_eval need --{name}")
  task_flags.check_paths(
      "run_race",
      inputs={"init_checkpoint": "directory of pretrained weights", "spiece_model_file":
              "SentencePiece model file", "model_config_path": "xlnet_config.json file",
              "data_dir": "RACE directory (train/dev/test with high/middle)"},
      outputs=[name for name in ("model_dir", "output_dir", "export_dir")
               if FLAGS[name].value])
  params = experiment_params()
  try:
    if FLAGS.do_export:               # before any work: a finished rerun stops here
      train_lib.check_export_dir(FLAGS.model_dir, FLAGS.export_dir)
    if FLAGS.do_train:
      summary = train_lib.run(params, "train", FLAGS.model_dir, FLAGS.stop_at_step)["train"]
      losses = summary["losses"]
      print(f"trained steps {summary['start_step']} -> {summary['step']}"
            + (f": loss {losses[0]:.3f} -> {losses[-1]:.3f}" if losses else ""))
      if summary["step"] < params.trainer.train_steps:
        print(f"stopped at step {summary['step']} of {params.trainer.train_steps}; run "
              f"again to continue")
        return
    if FLAGS.do_eval:
      results = train_lib.run(params, "eval", FLAGS.model_dir)["eval"]
      tf.io.gfile.makedirs(FLAGS.output_dir)
      with tf.io.gfile.GFile(os.path.join(
          FLAGS.output_dir, f"eval_results_{FLAGS.eval_split}.json"), "w") as f:
        f.write(json.dumps(results, indent=2) + "\n")
    if FLAGS.do_export:
      train_lib.run(params, "export", FLAGS.model_dir, export_dir=FLAGS.export_dir)
  except train_lib.ConfigError as e:
    raise SystemExit(f"run_race: {e} (flags: --init_checkpoint, --model_config_path, "
                     f"--spiece_model_file, --data_dir)") from None
  except (FileNotFoundError, FileExistsError, NotADirectoryError,
          *run_directory.RUN_STOPPED) as e:
    raise SystemExit(f"run_race: {e}") from None


if __name__ == "__main__":
  app.run(main)
