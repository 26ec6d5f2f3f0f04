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
tool.
"""

import os

from xlnet_tf import console

console.start()  # before TensorFlow is imported: the log levels of --verbosity

from absl import app  # noqa: E402
from absl import flags  # noqa: E402
from absl import logging  # noqa: E402
import tensorflow as tf  # noqa: E402

from experiments import released_flags  # noqa: E402
from experiments import strategy_flags  # noqa: E402,F401  (--strategy, --tpu, --num_gpus)
import xlnet_tf.tasks.experiments  # noqa: E402,F401  (registers the experiments)
from xlnet_tf import paths  # noqa: E402
from xlnet_tf.data.pretrain_reader import OBJECTIVES  # noqa: E402
from xlnet_tf.tasks import train_lib  # noqa: E402
from xlnet_tf.training import optimization  # noqa: E402
from xlnet_tf.training import pretraining  # noqa: E402
from xlnet_tf.training import run_directory  # noqa: E402
from xlnet_tf.training.memory import local_replica_count  # noqa: E402

EXPERIMENT = "xlnet/pretraining"
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
flags.DEFINE_enum("adam_bias_correction", "released", list(optimization.ADAM_BIAS_CORRECTIONS),
                  "released: none with --weight_decay > 0 (the released AdamWeightDecay"
                  "Optimizer), Adam's with 0 (tf.train.AdamOptimizer); always; never.")
flags.DEFINE_float("clip", 1.0, "Gradient clipping by global norm.")
flags.DEFINE_enum("precision", "float32", sorted(pretraining.PRECISIONS), "Numerics.")
flags.DEFINE_bool("jit_compile", False, "XLA-compile the forward and backward pass.")
flags.DEFINE_enum("objective", "plm", list(OBJECTIVES), "plm: XLNet's permutation LM; mlm: "
                  "the BERT-style masked-LM baseline on the same rows (for ablations); clm: "
                  "a causal LM on the same rows (attention 'uni', every next token a "
                  "target), a diagnostic baseline.")
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

_RECORDS = ("seq_len", "reuse_len", "num_predict", "bi_data", "num_core_per_host",
            "perm_size", "mask_alpha", "mask_beta", "num_passes", "uncased")


def experiment_override():
  """The flags as an override of the "xlnet/pretraining" experiment."""
  model = {name: FLAGS[name].value for name in (
      "n_layer", "d_model", "n_head", "d_head", "d_inner", "ff_activation", "untie_r",
      "n_token", "mem_len", "dropout", "dropatt", "clamp_len", "same_length", "init_std")}
  optimization_ = {name: FLAGS[name].value for name in (
      "learning_rate", "warmup_steps", "min_lr_ratio", "weight_decay", "adam_epsilon",
      "adam_bias_correction", "precision", "jit_compile", "seed", "objective")}
  return {
      "task": {"init_checkpoint": FLAGS.init_checkpoint or "",
               "model": {"model_config": FLAGS.model_config or "", **model},
               "train_data": {"input_path": FLAGS.train_data},
               "optimization": {"clip_norm": FLAGS.clip, **optimization_}},
      "trainer": {"train_steps": FLAGS.train_steps, "steps_per_loop": FLAGS.steps_per_loop,
                  "checkpoint_interval": FLAGS.save_steps,
                  "max_to_keep": FLAGS.max_checkpoints},
      "runtime": released_flags.runtime_override()}


def check_options(params) -> None:
  """ValueError naming the flag for an impossible optimisation or loop setting."""
  pretraining.PretrainOptions(
      model_dir=FLAGS.model_dir, train_steps=params.trainer.train_steps,
      steps_per_loop=params.trainer.steps_per_loop,
      save_steps=params.trainer.checkpoint_interval,
      max_checkpoints=params.trainer.max_to_keep, stop_at_step=FLAGS.stop_at_step,
      **params.task.optimization.as_dict())


def num_hosts(params) -> int:
  """The hosts (input pipelines) of the experiment's strategy (built to count them)."""
  strategy = train_lib.strategy_of(params)
  return max(1, strategy.num_replicas_in_sync // local_replica_count(strategy))


def check_flags_agree(manifest, hosts=None) -> None:
  """The record flags given equal the records' settings; with `hosts`, --num_hosts and
  --train_batch_size (bsz_per_host x hosts) too."""
  settings = manifest["settings"]
  wanted = {name: settings.get(name) for name in _RECORDS}
  if hosts is not None:
    wanted.update(num_hosts=hosts, train_batch_size=settings["bsz_per_host"] * hosts)
  for name, value in wanted.items():
    given = FLAGS[name].value
    if given is None or value is None or given == value:
      continue
    if name == "num_hosts":
      raise app.UsageError(f"--num_hosts={given} contradicts the strategy, which has "
                           f"{value} host(s); several hosts are --strategy=multi_worker "
                           f"(TF_CONFIG) or --tpu=NAME")
    hint = (f"; for {given} GPUs (train_gpu.py's meaning) give --strategy=mirrored "
            f"--num_gpus={given}" if name == "num_core_per_host" else "")
    raise app.UsageError(f"--{name}={given} contradicts the records in "
                         f"{FLAGS.train_data} ({name} = {value}, from manifest.json); "
                         f"leave it out or recreate the records{hint}")


def is_chief() -> bool:
  """Whether this process writes the model directory (no TF_CONFIG, the chief, or worker 0
  of a cluster without a chief)."""
  resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
  if not resolver.cluster_spec().jobs:
    return True
  chief = "chief" if "chief" in resolver.cluster_spec().jobs else "worker"
  return resolver.task_type == chief and resolver.task_id == 0


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  released_flags.apply("pretrain")
  try:                                             # everything checkable, before any work
    paths.check_input_path(FLAGS.init_checkpoint, "--init_checkpoint",
                           "directory written by save_pretrained / xlnet_tf.convert")
    paths.check_input_path(FLAGS.model_config, "--model_config", "xlnet_config.json file")
    paths.check_output_dir(FLAGS.model_dir, "--model_dir")
    paths.check_output_dir(FLAGS.export_dir, "--export_dir")
    if FLAGS.export_dir and tf.io.gfile.exists(FLAGS.export_dir) and \
        tf.io.gfile.listdir(FLAGS.export_dir):
      raise ValueError(f"--export_dir {FLAGS.export_dir} is not empty; give a new "
                       f"directory (an export is never overwritten)")
    params = train_lib.parse_params(EXPERIMENT, params_override=experiment_override())
    check_options(params)
    try:
      manifest = pretraining.check_data(FLAGS.train_data)
    except FileNotFoundError as e:
      raise ValueError(released_flags.original_records(FLAGS.train_data) or e) from None
  except (ValueError, OSError) as e:
    raise SystemExit(f"pretrain: {e}") from None
  given = [n for n in ("train_batch_size", "num_hosts") if FLAGS[n].value is not None]
  try:
    check_flags_agree(manifest, num_hosts(params) if given else None)
  except train_lib.ConfigError as e:               # the strategy's devices
    raise SystemExit(f"pretrain: {e}") from None
  try:
    with paths.reporting_disk_full(FLAGS.model_dir, run_directory.temporaries(FLAGS.model_dir)):
      summary = train_lib.run(params, "train", FLAGS.model_dir, FLAGS.stop_at_step)["train"]
      if FLAGS.export_dir and is_chief() and summary["step"] == params.trainer.train_steps:
        train_lib.run(params, "export", FLAGS.model_dir, export_dir=FLAGS.export_dir)
  except (train_lib.ConfigError, pretraining.CorruptRecordsError, paths.DiskFullError) + \
      run_directory.RUN_STOPPED as e:
    raise SystemExit(f"pretrain: {e}") from None
  final = os.path.join(FLAGS.model_dir, train_lib.FINAL_DIR)
  logging.info("pretrained model directory: %s", final)
  print(f"trained to step {summary['step']}; final loss "
        f"{summary['losses'][-1] if summary['losses'] else float('nan'):.4f}; "
        f"model in {final}" + (f", SavedModel in {FLAGS.export_dir}" if FLAGS.export_dir
                               else ""))


if __name__ == "__main__":
  app.run(main)
