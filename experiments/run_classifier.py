r"""Fine-tunes XLNet for classification or regression (GLUE, IMDB, movie reviews, generic):
the flags become the "xlnet/classification" experiment (xlnet_tf/tasks/classification.py)
that `train_lib.run` trains and evaluates.

  python -m experiments.run_classifier --do_train --do_eval --task_name=sst-2 \
      --data_dir=glue/SST-2 --init_checkpoint=converted/xlnet_base \
      --model_dir=runs/sst2 --output_dir=runs/sst2/out --max_seq_length=128 \
      --train_batch_size=32 --learning_rate=2e-5 --train_steps=4000 --warmup_steps=400 \
      --lr_layer_decay_rate=1.0

--init_checkpoint is a directory from pretraining (MODEL_DIR/final) or `xlnet_tf.convert`
(its xlnet_config.json and spiece.model are used unless --model_config_path /
--spiece_model_file say otherwise). --do_train trains (`train_lib` mode train) and writes the
fine-tuned model to MODEL_DIR/final (for `experiments.export_saved_model`); --do_eval
evaluates the newest checkpoint of MODEL_DIR (mode eval; MODEL_DIR/final if it has none) and
writes OUTPUT_DIR/eval_results_<split>.json; --do_predict writes the test split's GLUE
submission TSV with MODEL_DIR/final. The cached features go to OUTPUT_DIR/features. The flag
names of zihangdai/xlnet's run_classifier.py work too (experiments/released_flags.py). The
run is xlnet_tf/runs/released/run_classifier.py.
"""


from xlnet_tf import console

console.start()  # before TensorFlow is imported: the log levels of --verbosity

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from experiments import common_flags  # noqa: E402
from experiments import released_flags  # noqa: E402
from xlnet_tf.runs.released import run_classifier  # noqa: E402

FLAGS = flags.FLAGS
common_flags.define_finetuning_flags(
    learning_rate=1e-5, lr_layer_decay_rate=1.0, train_steps=1000, train_batch_size=8,
    adam_epsilon=1e-8, notes={"output_dir": "cached features, eval results, predictions"})
common_flags.define_flags(
    ("do_train", "do_eval", "do_predict", "data_dir", "eval_split", "predict_dir",
     "max_seq_length", "eval_batch_size", "iterations", "save_steps", "max_checkpoints",
     "shuffle_buffer_size", "grad_accum_steps", "summary_type", "use_summ_proj",
     "precision"),
    notes={"do_predict": "the test split: a GLUE submission TSV",
           "data_dir": "default: the task's own, e.g. the bundled movie reviews",
           "eval_split": "dev; dev_mismatched for MNLI",
           "predict_dir": "the TSV; default --output_dir",
           "max_seq_length": "A <sep> B <sep> <cls>"},
    max_seq_length=128, eval_batch_size=64, iterations=100, save_steps=1000,
    max_checkpoints=3, shuffle_buffer_size=100_000)
common_flags.define_strategy_flags()
flags.DEFINE_string("task_name", None, "sst-2, mnli, qnli, qqp, rte, mrpc, cola, sts-b, "
                    "wnli, imdb, movie_reviews or generic.")
flags.DEFINE_bool("is_regression", None, "Override the task's regression setting.")
flags.DEFINE_integer("collapse_check_steps", None, "Step at which a training loss that has "
                     "not left the labels' prior loss is reported as a collapse (default "
                     "min(200, train_steps // 2); 0: no check).")
flags.DEFINE_integer("restarts", 0, "Times a collapsed run starts again from the initial "
                     "weights with the next seed (recorded in the run settings).")
# The generic reader.
flags.DEFINE_string("text_a_column", None, "generic: column (name or index) of text A.")
flags.DEFINE_string("text_b_column", None, "generic: column of text B (pair tasks).")
flags.DEFINE_string("label_column", None, "generic: column of the label.")
common_flags.define_flags(
    ("labels",), notes={"labels": "generic; default: the sorted labels of the train split"})
flags.mark_flags_as_required(["task_name", "output_dir", "model_dir"])
released_flags.define("run_classifier.py")


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  released_flags.apply("run_classifier")
  run_classifier.run(FLAGS)


if __name__ == "__main__":
  app.run(main)
