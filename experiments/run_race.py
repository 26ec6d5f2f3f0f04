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
model) of MODEL_DIR/final (else MODEL_DIR/best). The run is xlnet_tf/runs/released/run_race.py.
"""


from xlnet_tf import console

console.start()  # before TensorFlow is imported: the log levels of --verbosity

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from experiments import released_flags  # noqa: E402
from experiments import strategy_flags  # noqa: E402,F401  (--strategy, --tpu, --num_gpus)
from experiments import task_flags  # noqa: E402
from xlnet_tf.runs.released import run_race  # noqa: E402

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
flags.DEFINE_list("levels", list(run_race.LEVELS), "Subsets: middle, high.")
flags.DEFINE_integer("max_seq_length", 512, "Pieces per (article, question+option) row.")
flags.DEFINE_integer("max_qa_length", 128, "Question+option pieces kept (the last ones).")
flags.DEFINE_integer("eval_batch_size", 32, "Questions per evaluation batch.")
flags.DEFINE_integer("iterations", 1000, "Steps per loop (tf.function call, loss log).")
flags.DEFINE_integer("save_steps", 1000, "Checkpoint interval (steps).")
flags.DEFINE_integer("max_checkpoints", 3, "Checkpoints kept (0: every one).")
flags.DEFINE_integer("grad_accum_steps", 1, "Micro-batches per update.")
flags.DEFINE_enum("precision", "float32", sorted(run_race.PRECISIONS), "Numerics "
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


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  released_flags.apply("run_race")
  run_race.run(FLAGS)


if __name__ == "__main__":
  app.run(main)
