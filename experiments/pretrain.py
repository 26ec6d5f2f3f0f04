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

from experiments import common_flags  # noqa: E402
from experiments import released_flags  # noqa: E402
from xlnet_tf.runs.released import pretrain  # noqa: E402

FLAGS = flags.FLAGS
# Data and output.
common_flags.define_flags(
    ("train_data", "model_dir", "export_dir", "init_checkpoint"),
    notes={"train_data": "or its manifest.json",
           "model_dir": "written: checkpoints, TensorBoard summaries, params.yaml; the "
                        "pretrained model directory in MODEL_DIR/final",
           "export_dir": "also export a SavedModel of the pretrained encoder there: raw "
                         "text in, hidden states out, as the driver's --mode=export",
           "init_checkpoint": "a directory written by save_pretrained / `python -m "
                              "xlnet_tf.convert`, or a model.ckpt prefix"})
# Data settings that must agree with the manifest (None = take the manifest's). The
# released train.py's record settings chose the record files; here they must agree with
# the records (and --num_hosts with the strategy).
_RECORDS = "must equal the records'"
common_flags.define_flags(
    ("seq_len", "reuse_len", "num_predict", "uncased", "train_batch_size"),
    notes={"seq_len": _RECORDS, "reuse_len": _RECORDS, "num_predict": _RECORDS,
           "uncased": _RECORDS,
           "train_batch_size": "must equal the records' bsz_per_host x the number of hosts"},
    seq_len=None, reuse_len=None, num_predict=None, uncased=None, train_batch_size=None)
flags.DEFINE_bool("bi_data", None, "Must equal the records' bi_data.")
for _name in ("num_core_per_host", "perm_size", "mask_alpha", "mask_beta", "num_passes"):
  flags.DEFINE_integer(_name, None, f"Must equal the records' {_name}.")
flags.DEFINE_integer("num_hosts", None, "Must equal the hosts (input pipelines) of the "
                     "strategy.")
# Model.
flags.DEFINE_string("model_config", None, "A released-format xlnet_config.json.")
common_flags.define_network_flags(
    n_layer=12, d_model=768, n_head=12, d_head=64, d_inner=3072, n_token=None, mem_len=384,
    notes={"n_layer": "without --model_config",
           "n_token": "default: the records' SentencePiece model's",
           "mem_len": "0: no memory"})
# Optimisation.
common_flags.define_optimization_flags(
    train_steps=100000, learning_rate=4e-4, min_lr_ratio=0.001, weight_decay=0.01,
    notes={"min_lr_ratio": "the released train.py's default"})
common_flags.define_flags(
    ("precision", "jit_compile", "seed"),
    notes={"seed": "the initialisation, dropout and shard order"})
flags.DEFINE_enum("objective", "plm", list(pretrain.OBJECTIVES), "plm: XLNet's "
                  "permutation LM; mlm: the BERT-style masked-LM baseline on the same rows "
                  "(for ablations); clm: a causal LM on the same rows (attention 'uni', every "
                  "next token a target), a diagnostic baseline.")
# Loop, checkpoints.
common_flags.define_flags(
    ("steps_per_loop", "save_steps", "max_checkpoints", "stop_at_step"),
    notes={"steps_per_loop": "the original `iterations`; also the summary interval",
           "stop_at_step": "e.g. to train in time slices; the schedule still ends at "
                           "--train_steps"},
    steps_per_loop=1000, save_steps=10000, max_checkpoints=5)
# Distribution.
common_flags.define_strategy_flags()
flags.mark_flags_as_required(["train_data", "model_dir"])
released_flags.define("train.py", "train_gpu.py")


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  released_flags.apply("pretrain")
  pretrain.run(FLAGS)


if __name__ == "__main__":
  app.run(main)
