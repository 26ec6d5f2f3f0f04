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
names of zihangdai/xlnet's run_classifier.py work too (experiments/released_flags.py).
"""

import json
import os

from xlnet_tf import console

console.start()  # before TensorFlow is imported: the log levels of --verbosity

from absl import app  # noqa: E402
from absl import flags  # noqa: E402
from official.core import task_factory  # noqa: E402
import tensorflow as tf  # noqa: E402

from experiments import released_flags  # noqa: E402
from experiments import strategy_flags  # noqa: E402,F401  (--strategy, --tpu, --num_gpus)
from experiments import task_flags  # noqa: E402
import xlnet_tf.tasks.experiments  # noqa: E402,F401  (registers the experiments)
from xlnet_tf import model_directory  # noqa: E402
from xlnet_tf.configs import RELEASED_KEYS  # noqa: E402
from xlnet_tf.configs import XLNetConfig  # noqa: E402
from xlnet_tf.layers.sequence_summary import SUMMARY_TYPES  # noqa: E402
from xlnet_tf.tasks import train_lib  # noqa: E402
from xlnet_tf.training import finetuning  # noqa: E402
from xlnet_tf.training import optimization  # noqa: E402
from xlnet_tf.training import run_directory  # noqa: E402

EXPERIMENT = "xlnet/classification"
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
flags.DEFINE_enum("summary_type", "last", list(SUMMARY_TYPES),
                  "How the sequence is summarised: last (<cls>), first, mean (over real "
                  "tokens), mean_with_padding (the original's mean), attn.")
flags.DEFINE_bool("use_summ_proj", True, "Dense + tanh on the summary.")
flags.DEFINE_float("dropout", 0.1, "Dropout.")
flags.DEFINE_float("dropatt", 0.1, "Attention dropout.")
flags.DEFINE_float("lr_layer_decay_rate", 1.0, "Layer m of L learns at "
                   "lr * rate^(L-1-m); the embeddings at lr * rate^L (see "
                   "--lr_layer_decay_mode).")
flags.DEFINE_enum("lr_layer_decay_mode", "multiplier", list(optimization.LR_LAYER_DECAY_MODES),
                  "multiplier: a real per-variable learning-rate multiplier. "
                  "released_gradient_scaling: as the released code, multiply the clipped "
                  "gradients of layer m by rate^(L-1-m) and nothing else (Adam mostly "
                  "cancels it); to rerun a published recipe as it was.")
flags.DEFINE_integer("grad_accum_steps", 1, "Micro-batches per update.")
flags.DEFINE_float("weight_decay", 0.0, "Decoupled weight decay.")
flags.DEFINE_float("adam_epsilon", 1e-8, "Adam epsilon.")
flags.DEFINE_enum("adam_bias_correction", "released", list(optimization.ADAM_BIAS_CORRECTIONS),
                  "released: none with --weight_decay > 0 (the released AdamWeightDecay"
                  "Optimizer), Adam's with 0 (tf.train.AdamOptimizer); always; never.")
flags.DEFINE_float("min_lr_ratio", 0.0, "Final learning rate / peak (linear decay).")
flags.DEFINE_float("clip", 1.0, "Gradient clipping by global norm.")
flags.DEFINE_enum("precision", "float32", sorted(finetuning.PRECISIONS), "Numerics.")
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


def _final_dir() -> str:
  return os.path.join(FLAGS.model_dir, train_lib.FINAL_DIR)


def _file(flag, name: str) -> str:
  """--FLAG, else NAME of --init_checkpoint, else (without --do_train) of MODEL_DIR/final;
  else a usage error."""
  if FLAGS[flag].value:
    return FLAGS[flag].value
  for directory in (FLAGS.init_checkpoint, None if FLAGS.do_train else _final_dir()):
    if directory and tf.io.gfile.exists(os.path.join(directory, name)):
      return os.path.join(directory, name)
  raise app.UsageError(f"give --{flag} (or an --init_checkpoint directory holding {name})")


def experiment_override():
  """The flags as an override of the "xlnet/classification" experiment."""
  model = {"summary_type": FLAGS.summary_type, "use_proj": FLAGS.use_summ_proj,
           "dropout": FLAGS.dropout, "dropatt": FLAGS.dropatt}
  init = FLAGS.init_checkpoint or ""
  if FLAGS.model_config_path or not (init and tf.io.gfile.exists(
      os.path.join(init, model_directory.CONFIG_FILE))):
    config = XLNetConfig.from_json_file(_file("model_config_path", model_directory.CONFIG_FILE))
    model.update({k: getattr(config, k) for k in RELEASED_KEYS})
  data = {"cache_dir": os.path.join(FLAGS.output_dir, "features"), "seed": FLAGS.seed,
          "spiece_model": _file("spiece_model_file", model_directory.SPIECE_FILE)}
  optimization_ = {name: FLAGS[name].value for name in (
      "learning_rate", "warmup_steps", "weight_decay", "adam_epsilon", "min_lr_ratio",
      "lr_layer_decay_rate", "lr_layer_decay_mode", "adam_bias_correction",
      "grad_accum_steps", "precision", "seed", "collapse_check_steps", "restarts")}
  return {
      "task": {
          "init_checkpoint": init, "task_name": FLAGS.task_name,
          "data_dir": FLAGS.data_dir or "", "max_seq_length": FLAGS.max_seq_length,
          "uncased": FLAGS.uncased, "labels": FLAGS.labels,
          "is_regression": FLAGS.is_regression,
          **{k: FLAGS[k].value for k in ("text_a_column", "text_b_column", "label_column")},
          "model": model,
          "train_data": {**data, "global_batch_size": FLAGS.train_batch_size,
                         "shuffle_buffer_size": FLAGS.shuffle_buffer_size},
          "validation_data": {**data, "split": FLAGS.eval_split,
                              "global_batch_size": FLAGS.eval_batch_size},
          "optimization": {"clip_norm": FLAGS.clip, **optimization_}},
      "trainer": {"train_steps": FLAGS.train_steps, "steps_per_loop": FLAGS.iterations,
                  "checkpoint_interval": FLAGS.save_steps,
                  "max_to_keep": FLAGS.max_checkpoints},
      "runtime": released_flags.runtime_override()}


def _check_batch() -> None:
  hosts, per_host = released_flags.devices()
  divisor = (hosts or 1) * (per_host or 1) * FLAGS.grad_accum_steps
  if FLAGS.train_batch_size % divisor:
    raise app.UsageError(f"--train_batch_size ({FLAGS.train_batch_size}) must be "
                         f"divisible by replicas x --grad_accum_steps ({divisor})")


def _evaluate(params):
  """`train_lib` mode eval (the newest checkpoint), or MODEL_DIR/final when MODEL_DIR has
  no checkpoint (e.g. a model converted from the original's run); the results also go to
  OUTPUT_DIR/eval_results_<split>.json."""
  if tf.train.latest_checkpoint(FLAGS.model_dir) or not tf.io.gfile.exists(_final_dir()):
    results = train_lib.run(params, "eval", FLAGS.model_dir)["eval"]
  else:
    task = task_factory.get_task(params.task)
    results = task.evaluate(task.load_model_dir(_final_dir()))
    print(f"{FLAGS.eval_split} ({_final_dir()}): " + ", ".join(
        f"{k} {v:.4f}" if isinstance(v, float) else f"{k} {v}" for k, v in results.items()))
  with tf.io.gfile.GFile(os.path.join(FLAGS.output_dir,
                                      f"eval_results_{FLAGS.eval_split}.json"), "w") as f:
    f.write(json.dumps(results, indent=2) + "\n")


def _predict(params):
  """The test split's GLUE submission TSV, predicted with MODEL_DIR/final."""
  if not tf.io.gfile.exists(_final_dir()):
    raise FileNotFoundError(f"{_final_dir()}: no fine-tuned model to predict with; train "
                            f"first (--do_train)")
  task = task_factory.get_task(params.task)
  directory = FLAGS.predict_dir or FLAGS.output_dir
  tf.io.gfile.makedirs(directory)
  path = os.path.join(directory, f"{task.task_spec.name}_test_predictions.tsv")
  count = task.write_predictions(task.load_model_dir(_final_dir()), path)
  print(f"wrote {count} predictions to {path}")


@task_flags.reporting_disk_full("run_classifier")
def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  released_flags.apply("run_classifier")
  if not (FLAGS.do_train or FLAGS.do_eval or FLAGS.do_predict):
    raise app.UsageError("nothing to do: give --do_train, --do_eval and/or --do_predict")
  task_flags.check_paths(
      "run_classifier",
      inputs={"init_checkpoint": "directory of pretrained weights (save_pretrained, "
                                 "xlnet_tf.convert) or a model.ckpt prefix",
              "spiece_model_file": "SentencePiece model file",
              "model_config_path": "xlnet_config.json file",
              "data_dir": "directory with the task's files"},
      outputs=("model_dir", "output_dir", "predict_dir"))
  try:
    params = train_lib.parse_params(EXPERIMENT, params_override=experiment_override())
    if FLAGS.do_train:
      train_lib.finetune_options(params, FLAGS.model_dir)   # impossible values, named
  except ValueError as e:
    raise SystemExit(f"run_classifier: {e}") from None
  if FLAGS.do_train:
    _check_batch()
  tf.io.gfile.makedirs(FLAGS.output_dir)
  try:
    if FLAGS.do_train:
      summary = train_lib.run(params, "train", FLAGS.model_dir)["train"]
      for line in summary.get("collapse_warnings", []):
        print(line)
    if FLAGS.do_eval:
      _evaluate(params)
    if FLAGS.do_predict:
      _predict(params)
  except (train_lib.ConfigError, FileNotFoundError, FileExistsError,
          NotADirectoryError) + run_directory.RUN_STOPPED as e:
    raise SystemExit(f"run_classifier: {e}") from None


if __name__ == "__main__":
  app.run(main)
