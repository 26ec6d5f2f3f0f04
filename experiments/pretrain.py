r"""Pretrains XLNet on records from data_prep.create_pretraining_data: the flags become the
"xlnet/pretraining" experiment (xlnet_tf/tasks/pretraining.py) that `train_lib.run` trains.

  python -m experiments.pretrain --train_data=records --model_dir=run \
      --model_config=xlnet_config.json --train_steps=500000 --warmup_steps=40000 \
      --learning_rate=4e-4 --mem_len=384 --steps_per_loop=1000 --save_steps=10000

Settings of the data (seq_len, reuse_len, num_predict, bi_data, the batch layout, ...) come
from the records' manifest; passing one of those flags with another value is an error. The
model size comes from --model_config (a released xlnet_config.json) or the size flags.
Strategies: default (one device), --strategy=mirrored (GPUs), multi_worker (TF_CONFIG),
--tpu=NAME (Cloud TPU: TPUStrategy, one input pipeline per host; the paper's Large run is
experiments/flagfiles/xlnet_large_tpu.flags). Rerunning with the same --model_dir resumes
from its newest checkpoint; the pretrained model directory (xlnet_config.json, model.ckpt,
spiece.model) goes to MODEL_DIR/final, as with `python -m experiments.train
--experiment=xlnet/pretraining`. The flag names of zihangdai/xlnet's train.py and
train_gpu.py work too (experiments/released_flags.py). `--flagfile` works as in every absl
tool. The run is xlnet_tf/runs/released/pretrain.py.
"""


from xlnet_tf import console

console.start()  # before TensorFlow is imported: the log levels of --verbosity

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from experiments import released_flags  # noqa: E402
from experiments import strategy_flags  # noqa: E402,F401  (--strategy, --tpu, --num_gpus)
from xlnet_tf.runs.released import pretrain  # noqa: E402

FLAGS = flags.FLAGS
# Data and output.
flags.DEFINE_string("train_data", None, "Record directory (or its manifest.json).")
flags.DEFINE_string("model_dir", None, "Checkpoints, TensorBoard summaries, params.yaml; "
                    "the pretrained model directory in MODEL_DIR/final.")
flags.DEFINE_string("export_dir", None, "Also export a SavedModel of the pretrained "
                    "encoder here (raw text in, hidden states out; the driver's "
                    "--mode=export). The pretrained model directory is MODEL_DIR/final.")
flags.DEFINE_string("init_checkpoint", None, "Start from these weights: a directory "
                    "written by save_pretrained / `python -m xlnet_tf.convert`, or a "
                    "model.ckpt prefix.")
# Data settings that must agree with the manifest (None = take the manifest's).
flags.DEFINE_integer("seq_len", None, "Must equal the records' seq_len.")
flags.DEFINE_integer("reuse_len", None, "Must equal the records' reuse_len.")
flags.DEFINE_integer("num_predict", None, "Must equal the records' num_predict.")
flags.DEFINE_bool("bi_data", None, "Must equal the records' bi_data.")
flags.DEFINE_integer("train_batch_size", None, "Must equal the records' bsz_per_host x "
                     "the number of hosts.")
# The released train.py's record settings: they chose the record files; here they must
# agree with the records (and --num_hosts with the strategy).
for _name, _define in (("num_core_per_host", flags.DEFINE_integer),
                       ("perm_size", flags.DEFINE_integer),
                       ("mask_alpha", flags.DEFINE_integer),
                       ("mask_beta", flags.DEFINE_integer),
                       ("num_passes", flags.DEFINE_integer),
                       ("uncased", flags.DEFINE_bool)):
  _define(_name, None, f"Must equal the records' {_name}.")
flags.DEFINE_integer("num_hosts", None, "Must equal the hosts (input pipelines) of the "
                     "strategy.")
# Model.
flags.DEFINE_string("model_config", None, "A released-format xlnet_config.json.")
flags.DEFINE_integer("n_layer", 12, "Layers (without --model_config).")
flags.DEFINE_integer("d_model", 768, "Hidden size.")
flags.DEFINE_integer("n_head", 12, "Heads.")
flags.DEFINE_integer("d_head", 64, "Head size.")
flags.DEFINE_integer("d_inner", 3072, "Feed-forward size.")
flags.DEFINE_string("ff_activation", "gelu", "gelu (tanh form, as released), gelu_exact "
                    "or relu.")
flags.DEFINE_bool("untie_r", True, "Per-layer relative biases.")
flags.DEFINE_integer("n_token", None, "Vocabulary size (default: the records' "
                     "SentencePiece model's).")
flags.DEFINE_integer("mem_len", 384, "Memory length (0: no memory).")
flags.DEFINE_float("dropout", 0.1, "Dropout.")
flags.DEFINE_float("dropatt", 0.1, "Attention dropout.")
flags.DEFINE_enum("recompute", "none", list(pretrain.RECOMPUTE_MODES),
                  "Activation recomputation: layer keeps only each layer's inputs for the "
                  "backward pass and computes the layer again there (less activation "
                  "memory, about a third more compute; the same losses and gradients).")
flags.DEFINE_integer("clamp_len", -1, "Clip relative distances (-1: off).")
flags.DEFINE_bool("same_length", False, "Same-length attention.")
flags.DEFINE_float("init_std", 0.02, "Initializer stddev.")
# Optimisation.
flags.DEFINE_integer("train_steps", 100000, "Total steps.")
flags.DEFINE_integer("warmup_steps", 0, "Linear warmup steps.")
flags.DEFINE_float("learning_rate", 4e-4, "Peak learning rate.")
flags.DEFINE_float("min_lr_ratio", 0.001, "Final learning rate / peak (the released "
                   "train.py's default).")
flags.DEFINE_float("weight_decay", 0.01, "Decoupled weight decay.")
flags.DEFINE_float("adam_epsilon", 1e-6, "Adam epsilon.")
flags.DEFINE_enum("adam_bias_correction", "released", list(pretrain.ADAM_BIAS_CORRECTIONS),
                  "released: none with --weight_decay > 0 (the released AdamWeightDecay"
                  "Optimizer), Adam's with 0 (tf.train.AdamOptimizer); always; never.")
flags.DEFINE_float("clip", 1.0, "Gradient clipping by global norm.")
flags.DEFINE_enum("precision", "float32", sorted(pretrain.PRECISIONS), "Numerics.")
flags.DEFINE_bool("jit_compile", False, "XLA-compile the forward and backward pass.")
flags.DEFINE_enum("objective", "plm", list(pretrain.OBJECTIVES), "plm: XLNet's "
                  "permutation LM; mlm: the BERT-style masked-LM baseline on the same rows "
                  "(for ablations); clm: a causal LM on the same rows (attention 'uni', every "
                  "next token a target), a diagnostic baseline.")
flags.DEFINE_integer("seed", 0, "Seed of the initialisation, dropout and shard order.")
# Loop, checkpoints.
flags.DEFINE_integer("steps_per_loop", 1000, "Steps per tf.function call (the original "
                     "`iterations`); also the logging and summary interval.")
flags.DEFINE_integer("save_steps", 10000, "Checkpoint interval.")
flags.DEFINE_integer("max_checkpoints", 5, "Checkpoints kept (0: every one).")
flags.DEFINE_integer("stop_at_step", None, "Stop (with a checkpoint) at this step, e.g. to "
                     "train in time slices; rerun to continue. The schedule still ends at "
                     "--train_steps.")
# Distribution: see experiments/strategy_flags.py (--strategy, --tpu, --num_gpus).
flags.mark_flags_as_required(["train_data", "model_dir"])
released_flags.define("train.py", "train_gpu.py")


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  released_flags.apply("pretrain")
  pretrain.run(FLAGS)


if __name__ == "__main__":
  app.run(main)
