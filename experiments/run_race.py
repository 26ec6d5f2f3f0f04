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

from experiments import common_flags  # noqa: E402
from experiments import released_flags  # noqa: E402
from xlnet_tf.runs.released import run_race  # noqa: E402

FLAGS = flags.FLAGS
# The released run_race.py's defaults (lr 2e-5, no layer decay, 12000 steps, batch 8,
# adam_epsilon 1e-6).
common_flags.define_finetuning_flags(
    learning_rate=2e-5, lr_layer_decay_rate=1.0, train_steps=12000, train_batch_size=8,
    notes={"output_dir": "cached features and eval results"})
common_flags.define_flags(
    ("data_dir", "do_train", "do_eval", "do_export", "export_dir", "eval_split",
     "max_seq_length", "eval_batch_size", "iterations", "save_steps", "max_checkpoints",
     "grad_accum_steps", "precision", "shuffle_buffer_size", "summary_type",
     "use_summ_proj", "stop_at_step"),
    notes={"data_dir": "RACE",
           "do_train": "on the train split",
           "do_export": "the raw-text SavedModel of MODEL_DIR/best, else MODEL_DIR/final",
           "export_dir": "--do_export; default MODEL_DIR/export; must be new or empty",
           "eval_split": "dev or test",
           "max_seq_length": "an (article, question+option) row",
           "eval_batch_size": "questions",
           "precision": "bfloat16: bfloat16 compute, float32 weights",
           "shuffle_buffer_size": "questions",
           "stop_at_step": "the schedule stays that of --train_steps"},
    max_seq_length=512, eval_batch_size=32, iterations=1000, save_steps=1000,
    max_checkpoints=3, shuffle_buffer_size=2048)
common_flags.define_strategy_flags()
flags.DEFINE_list("levels", list(run_race.LEVELS), "Subsets: middle, high.")
flags.DEFINE_integer("max_qa_length", 128, "Question+option pieces kept (the last ones).")
flags.mark_flags_as_required(["model_dir"])
released_flags.define("run_race.py")


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  released_flags.apply("run_race")
  run_race.run(FLAGS)


if __name__ == "__main__":
  app.run(main)
