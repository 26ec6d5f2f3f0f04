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
MODEL_DIR/features (the original's --output_dir held its TF records). The run is
xlnet_tf/runs/released/run_squad.py.
"""


from xlnet_tf import console

console.start()  # before TensorFlow is imported: the log levels of --verbosity

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from experiments import common_flags  # noqa: E402
from experiments import released_flags  # noqa: E402
from xlnet_tf.runs.released import run_squad  # noqa: E402

FLAGS = flags.FLAGS
common_flags.define_finetuning_flags(
    learning_rate=3e-5, lr_layer_decay_rate=0.75, train_steps=8000, train_batch_size=48,
    notes={"output_dir": "predictions and scores"})
common_flags.define_flags(
    ("do_train", "do_predict", "predict_dir", "max_seq_length", "doc_stride",
     "max_query_length", "start_n_top", "end_n_top", "do_export", "export_dir",
     "null_score_diff_threshold", "iterations", "save_steps", "max_checkpoints",
     "shuffle_buffer_size", "precision", "stop_at_step"),
    notes={"do_predict": "--predict_file",
           "predict_dir": "default --output_dir",
           "max_seq_length": "a window",
           "do_export": "raw question and context in, answer out",
           "export_dir": "--do_export; default MODEL_DIR/export",
           "null_score_diff_threshold": "default: the best threshold found on "
                                        "--predict_file when it has answers, else 0",
           "save_steps": "in MODEL_DIR; a rerun resumes from the newest",
           "shuffle_buffer_size": "windows; default: the xlnet/squad experiment's",
           "precision": "bfloat16: bfloat16 compute, float32 weights",
           "stop_at_step": "the schedule stays that of --train_steps"},
    max_seq_length=512, iterations=1000, save_steps=1000, max_checkpoints=5,
    shuffle_buffer_size=None)
common_flags.define_strategy_flags()
flags.DEFINE_string("train_file", None, "SQuAD JSON to train on (or sample_data:qa/squad.json, "
                    "the bundled sample).")
flags.DEFINE_string("predict_file", None, "SQuAD JSON to predict (and score, if answered); "
                    "sample_data:PATH as for --train_file.")
flags.DEFINE_integer("max_answer_length", 64, "Longest answer, in pieces.")
flags.DEFINE_integer("n_best_size", 5, "Candidates kept per question.")
flags.DEFINE_integer("predict_batch_size", 32, "Windows per prediction batch.")
flags.mark_flags_as_required(["model_dir"])
released_flags.define("run_squad.py")

def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  released_flags.apply("run_squad")
  run_squad.run(FLAGS)


if __name__ == "__main__":
  app.run(main)
