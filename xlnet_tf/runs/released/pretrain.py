"""The released train.py / train_gpu.py's run on our driver (python -m experiments.pretrain):
the flags as an override of the "xlnet/pretraining" experiment (xlnet_tf/tasks/
pretraining.py), checked against the records' manifest and the strategy, trained (and the
encoder optionally exported) by `train_lib.run`.

Everything reads the entry point's flags from `values`, the absl FlagValues it is given
(defined by experiments/pretrain.py with experiments/common_flags.py, and
experiments/released_flags.py; the released names are translated before `run`). The
choices of the entry point's --objective are named here.
"""

import os

from absl import app
from absl import flags
from absl import logging
import tensorflow as tf

import xlnet_tf.tasks.all_tasks  # noqa: F401  (registers every task and its experiment)
from xlnet_tf import paths
from xlnet_tf.data import pretrain_reader
from xlnet_tf.runs.released import flag_translation
from xlnet_tf.tasks import train_lib
from xlnet_tf.data import pretrain_records
from xlnet_tf.training import run_directory
from xlnet_tf.training.memory import local_replica_count

EXPERIMENT = "xlnet/pretraining"
# The choices of the entry point's --objective.
OBJECTIVES = pretrain_reader.OBJECTIVES

_RECORDS = ("seq_len", "reuse_len", "num_predict", "bi_data", "num_core_per_host",
            "perm_size", "mask_alpha", "mask_beta", "num_passes", "uncased")


def experiment_override(values: flags.FlagValues):
  """The flags as an override of the "xlnet/pretraining" experiment."""
  model = {name: values[name].value for name in (
      "n_layer", "d_model", "n_head", "d_head", "d_inner", "ff_activation", "untie_r",
      "n_token", "mem_len", "dropout", "dropatt", "recompute", "clamp_len", "same_length")}
  model["initializer_range"] = values.init_std          # the released flag's name
  optimization_ = {name: values[name].value for name in (
      "learning_rate", "warmup_steps", "min_lr_ratio", "weight_decay", "adam_epsilon",
      "adam_bias_correction", "precision", "jit_compile", "seed", "objective")}
  return {
      "task": {"init_checkpoint": values.init_checkpoint or "",
               "model": {"model_config": values.model_config or "", **model},
               "train_data": {"input_path": values.train_data},
               "optimization": {"clip_norm": values.clip, **optimization_}},
      "trainer": {"train_steps": values.train_steps, "steps_per_loop": values.steps_per_loop,
                  "checkpoint_interval": values.save_steps,
                  "max_to_keep": values.max_checkpoints},
      "runtime": flag_translation.runtime_override(values)}


def check_options(params, values: flags.FlagValues) -> None:
  """ValueError naming the flag for an impossible optimisation or loop setting."""
  train_lib.run_options(params, values.model_dir, values.stop_at_step)


def num_hosts(params) -> int:
  """The hosts (input pipelines) of the experiment's strategy (built to count them)."""
  strategy = train_lib.strategy_of(params)
  return max(1, strategy.num_replicas_in_sync // local_replica_count(strategy))


def check_flags_agree(manifest, values: flags.FlagValues, hosts=None) -> None:
  """The record flags given equal the records' settings; with `hosts`, --num_hosts and
  --train_batch_size (bsz_per_host x hosts) too."""
  settings = manifest["settings"]
  wanted = {name: settings.get(name) for name in _RECORDS}
  if hosts is not None:
    wanted.update(num_hosts=hosts, train_batch_size=settings["bsz_per_host"] * hosts)
  for name, value in wanted.items():
    given = values[name].value
    if given is None or value is None or given == value:
      continue
    if name == "num_hosts":
      raise app.UsageError(f"--num_hosts={given} contradicts the strategy, which has "
                           f"{value} host(s); several hosts are --strategy=multi_worker "
                           f"(TF_CONFIG) or --tpu=NAME")
    hint = (f"; for {given} GPUs (train_gpu.py's meaning) give --strategy=mirrored "
            f"--num_gpus={given}" if name == "num_core_per_host" else "")
    raise app.UsageError(f"--{name}={given} contradicts the records in "
                         f"{values.train_data} ({name} = {value}, from manifest.json); "
                         f"leave it out or recreate the records{hint}")


def is_chief() -> bool:
  """Whether this process writes the model directory (no TF_CONFIG, the chief, or worker 0
  of a cluster without a chief)."""
  resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
  if not resolver.cluster_spec().jobs:
    return True
  chief = "chief" if "chief" in resolver.cluster_spec().jobs else "worker"
  return resolver.task_type == chief and resolver.task_id == 0


def run(values: flags.FlagValues) -> None:
  """Checks everything checkable before any work (one line naming the flag otherwise),
  trains to --train_steps (or --stop_at_step), exports with --export_dir, prints the
  summary. The released flag names are translated (experiments/released_flags.py `apply`) before."""
  try:                                             # everything checkable, before any work
    paths.check_input_path(values.init_checkpoint, "--init_checkpoint",
                           "directory written by save_pretrained / xlnet_tf.convert")
    paths.check_input_path(values.model_config, "--model_config", "xlnet_config.json file")
    paths.check_output_dir(values.model_dir, "--model_dir")
    paths.check_output_dir(values.export_dir, "--export_dir")
    if values.export_dir and tf.io.gfile.exists(values.export_dir) and \
        tf.io.gfile.listdir(values.export_dir):
      raise ValueError(f"--export_dir {values.export_dir} is not empty; give a new "
                       f"directory (an export is never overwritten)")
    params = train_lib.parse_params(EXPERIMENT, params_override=experiment_override(values))
    check_options(params, values)
    try:
      manifest = pretrain_records.check_data(values.train_data)
    except FileNotFoundError as e:
      raise ValueError(flag_translation.original_records(values.train_data) or e) from None
  except (ValueError, OSError) as e:
    raise SystemExit(f"pretrain: {e}") from None
  given = [n for n in ("train_batch_size", "num_hosts") if values[n].value is not None]
  try:
    check_flags_agree(manifest, values, num_hosts(params) if given else None)
  except train_lib.ConfigError as e:               # the strategy's devices
    raise SystemExit(f"pretrain: {e}") from None
  try:
    with paths.reporting_disk_full(values.model_dir, run_directory.temporaries(values.model_dir)):
      summary = train_lib.run(params, "train", values.model_dir, values.stop_at_step)["train"]
      if values.export_dir and is_chief() and summary["step"] == params.trainer.train_steps:
        train_lib.run(params, "export", values.model_dir, export_dir=values.export_dir)
  except (train_lib.ConfigError, pretrain_records.CorruptRecordsError, paths.DiskFullError) + \
      run_directory.RUN_STOPPED as e:
    raise SystemExit(f"pretrain: {e}") from None
  final = os.path.join(values.model_dir, train_lib.FINAL_DIR)
  logging.info("pretrained model directory: %s", final)
  print(f"trained to step {summary['step']}; final loss "
        f"{summary['losses'][-1] if summary['losses'] else float('nan'):.4f}; "
        f"model in {final}" + (f", SavedModel in {values.export_dir}" if values.export_dir
                               else ""))

