"""`run_pretraining`: records + config -> a pretrained model, under any strategy.

Builds the model, optimizer and memories in the strategy's scope, restores the newest
checkpoint of `model_dir` if there is one (weights, optimizer, step, memories; the data
position follows from the step), and runs an orbit Controller: `steps_per_loop` steps per
`tf.function` call, TensorBoard scalars in `model_dir/train`, a checkpoint every
`save_steps`. At the end the model is written with `save_pretrained` to `final_dir`,
which `xlnet_tf.load_pretrained` and fine-tuning read.

Multi-worker (MultiWorkerMirroredStrategy): every worker runs the same program. The chief
writes `model_dir` and the export; the other workers restore from the chief's newest
checkpoint, take part in every save (saving is collective) into a private
`model_dir/.worker-<type>-<id>` directory, and delete it at the end.

  >>> summary = run_pretraining(tf.distribute.get_strategy(), config, "records/",
  ...                           PretrainOptions(model_dir="run", train_steps=1000))
"""

import dataclasses
import hashlib
import json
import os
from typing import Any, Callable, Dict, Optional

from absl import logging
import tensorflow as tf
import tf_keras

from xlnet_tf import model_directory
from xlnet_tf import paths
from xlnet_tf import pretrained
from xlnet_tf.configs import XLNetConfig
from xlnet_tf.data.pretrain_reader import pretrain_dataset
from xlnet_tf.data.pretrain_reader import OBJECTIVES
from xlnet_tf.data import pretrain_records
from xlnet_tf.models.xlnet_pretrainer import build_pretrainer
from xlnet_tf.models.xlnet_pretrainer import check_attn_type
from xlnet_tf.training import optimization
from xlnet_tf.training import run_directory
from xlnet_tf.training.checkpointing import GuardedCheckpointManager
from xlnet_tf.training.checkpointing import loop_steps
from xlnet_tf.training.memory import ReplicaMemories
from xlnet_tf.training.memory import local_replica_count
from xlnet_tf.training.pretrain_trainer import PretrainTrainer
from xlnet_tf.training.trainer import run_controller

EVAL_SUMMARY_DIR = "validation"        # TensorBoard scalars of the evaluations
PRECISIONS = {"float32": "float32", "bfloat16": "mixed_bfloat16",
              "mixed_float16": "mixed_float16"}


@dataclasses.dataclass(frozen=True)
class PretrainOptions:
  """Everything about a run that is not the model's architecture or the data."""
  model_dir: str
  train_steps: int
  learning_rate: float = 4e-4
  warmup_steps: int = 0
  min_lr_ratio: float = 0.001            # the released train.py's
  weight_decay: float = 0.01
  adam_epsilon: float = 1e-6
  clip_norm: float = 1.0
  adam_bias_correction: str = "released"  # none with weight_decay > 0 (optimization.py)
  steps_per_loop: int = 1000
  save_steps: int = 10000
  max_checkpoints: int = 5
  precision: str = "float32"
  jit_compile: bool = False
  init_checkpoint: Optional[str] = None
  final_dir: Optional[str] = None        # the pretrained model directory (MODEL_DIR/final)
  seed: int = 0
  stop_at_step: Optional[int] = None     # stop (and checkpoint) early; the schedule stays
  objective: str = "plm"                 # or "mlm": the masked-LM baseline (ablations), or
                                         # "clm": causal LM (attn_type "uni"), a diagnostic

  # What may change between the runs of one model directory: it does not change the numbers.
  NOT_RUN_SETTINGS = ("model_dir", "steps_per_loop", "save_steps", "max_checkpoints",
                      "final_dir", "stop_at_step")

  def __post_init__(self):
    """Refuses impossible values (naming the flag) before anything is built."""
    optimization.check_settings(
        self.learning_rate, self.train_steps, self.warmup_steps,
        weight_decay=self.weight_decay, adam_epsilon=self.adam_epsilon,
        min_lr_ratio=self.min_lr_ratio, clip=self.clip_norm,
        adam_bias_correction=self.adam_bias_correction)
    check_loop_settings(self.steps_per_loop, self.save_steps, self.max_checkpoints,
                        self.stop_at_step)
    if self.precision not in PRECISIONS:
      raise ValueError(f"--precision must be one of {sorted(PRECISIONS)}, got "
                       f"{self.precision!r}")
    if self.objective not in OBJECTIVES:
      raise ValueError(f"--objective must be one of {OBJECTIVES}, got {self.objective!r}")

  def run_settings(self) -> Dict[str, Any]:
    return {k: v for k, v in dataclasses.asdict(self).items()
            if k not in self.NOT_RUN_SETTINGS}


class CorruptRecordsError(ValueError):
  """A record shard cannot be read (truncated or corrupt)."""


def check_loop_settings(steps_per_loop: int, save_steps: int, max_checkpoints: int,
                        stop_at_step: Optional[int] = None) -> None:
  """Raises ValueError (naming the flag) for loop settings below 1 (--max_checkpoints:
  below 0; 0 keeps every checkpoint)."""
  for flag, value in (("steps_per_loop", steps_per_loop), ("save_steps", save_steps)):
    if value < 1:
      raise ValueError(f"--{flag} must be >= 1, got {value}")
  if max_checkpoints < 0:
    raise ValueError(f"--max_checkpoints must be >= 1, or 0 to keep every checkpoint, got "
                     f"{max_checkpoints}")
  if stop_at_step is not None and stop_at_step < 1:
    raise ValueError(f"--stop_at_step must be >= 1, got {stop_at_step}")


def data_settings(manifest: Dict[str, Any]) -> Dict[str, Any]:
  """What identifies the records of a run (not where they are): their settings, the
  SentencePiece model and the shards (names, sizes, examples), hashed."""
  shards = [{k: shard.get(k) for k in ("file", "examples", "size", "crc32c")}
            for shard in manifest["shards"]]
  digest = hashlib.sha256(json.dumps(shards, sort_keys=True).encode()).hexdigest()[:16]
  return {"settings": manifest["settings"], "spiece_sha256": manifest["spiece"]["sha256"],
          "examples": manifest["counts"].get("examples"), "shards_sha256": digest}


def check_data(data_path: str) -> Dict[str, Any]:
  """The manifest, after checking every shard it lists is there with the size it records
  (cheap; catches truncation) and that its SentencePiece model is unchanged, before any
  model work."""
  manifest = pretrain_records.load_manifest(data_path)
  if not manifest["shards"] or manifest["counts"].get("examples", 0) == 0:
    raise ValueError(f"--train_data {data_path}: the manifest lists no examples")
  pretrain_records.check_shards(manifest, f"--train_data {data_path}")
  pretrain_records.check_spiece(manifest, f"--train_data {data_path}")
  return manifest


def check_vocabulary(n_token: int, n_token_source: str, manifest: Dict[str, Any],
                     source: str) -> None:
  """Raises ValueError (naming both numbers and where they come from) when the records'
  SentencePiece vocabulary has ids the model has no embedding for (n_token smaller)."""
  vocab = manifest["spiece"]["vocab_size"]
  if n_token < vocab:
    raise ValueError(f"{source}: the records' vocabulary has {vocab} pieces "
                     f"({manifest['spiece']['path']}), more than the model's n_token="
                     f"{n_token} ({n_token_source}); ids >= {n_token} have no embedding")


def run_pretraining(strategy: tf.distribute.Strategy, config: XLNetConfig, data_path: str,
                    options: PretrainOptions,
                    manifest: Optional[Dict[str, Any]] = None,
                    evaluation: Optional[Callable[[Any, Any], Dict[str, Any]]] = None
                    ) -> Dict[str, Any]:
  """Trains until `options.train_steps` (resuming from `model_dir`); returns a summary.

  The returned dict has the final `step`, the per-loop `losses`, and `final_dir` (and
  "evals" with an `evaluation`: `evaluation(model, optimizer)` gives the evaluator,
  eval_interval and eval_actions of `finetuning.train_model`).
  Raises `NonFiniteLossError` (with the last good checkpoint left intact) on a NaN loss.
  """
  check_attn_type(config.attn_type, options.objective)
  manifest = manifest or check_data(data_path)
  settings = manifest["settings"]
  if settings["bi_data"] != config.bi_data or settings["reuse_len"] != config.reuse_len:
    raise ValueError(f"the model config says bi_data={config.bi_data}, reuse_len="
                     f"{config.reuse_len}; the records were made with bi_data="
                     f"{settings['bi_data']}, reuse_len={settings['reuse_len']}")
  check_vocabulary(config.n_token, "the model config", manifest, f"--train_data {data_path}")
  tf_keras.mixed_precision.set_global_policy(PRECISIONS[options.precision])
  tf_keras.utils.set_random_seed(options.seed)

  # Every input pipeline (one per host/worker) yields bsz_per_host rows per step, shared by
  # the replicas of its host.
  rows_per_step = settings["bsz_per_host"]
  local_replicas = local_replica_count(strategy)
  num_pipelines = max(1, strategy.num_replicas_in_sync // local_replicas)
  if rows_per_step % local_replicas:
    raise ValueError(f"{local_replicas} replicas per host cannot share bsz_per_host "
                     f"({rows_per_step}) streams evenly; recreate the records with a multiple")
  batch_size = rows_per_step // local_replicas                       # per replica

  write_dir = _writing_dir(strategy, options.model_dir)
  paths.check_output_dir(options.final_dir, "final_dir")
  lock = None
  if write_dir == options.model_dir:          # the chief owns model_dir: lock and claim it
    lock = run_directory.open_run(
        options.model_dir, "pretraining",
        {"config": config.to_dict(), "options": options.run_settings(),
         "data": data_settings(manifest), "replicas": strategy.num_replicas_in_sync},
        has_results=lambda: tf.train.latest_checkpoint(options.model_dir))

  try:
    return _train(strategy, config, data_path, options, manifest, write_dir, batch_size,
                  rows_per_step * num_pipelines * settings["seq_len"], evaluation)
  finally:
    if lock is not None:
      lock.release()


def _train(strategy, config, data_path, options, manifest, write_dir, batch_size,
           tokens_per_step, evaluation=None):
  """Builds, restores and trains (the directory is claimed)."""
  with strategy.scope():
    model = build_pretrainer(config, options.objective)
    optimizer = optimization.build_optimizer(
        options.learning_rate, options.train_steps, options.warmup_steps,
        weight_decay=options.weight_decay, adam_epsilon=options.adam_epsilon,
        min_lr_ratio=options.min_lr_ratio, loss_scale=options.precision == "mixed_float16",
        adam_bias_correction=options.adam_bias_correction)
  memories = None
  if config.mem_len > 0:
    memories = ReplicaMemories(strategy, config.n_layer, batch_size, config.mem_len,
                               config.d_model)

  checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer,
                                   **({"memories": memories} if memories else {}))
  if write_dir != options.model_dir and tf.io.gfile.exists(write_dir):
    tf.io.gfile.rmtree(write_dir)                   # a previous run's: never restored from
  manager = GuardedCheckpointManager(
      checkpoint, write_dir, max_to_keep=options.max_checkpoints,
      step_counter=optimizer.iterations, save_steps=options.save_steps,
      variables=lambda: (model.variables + optimizer.variables() +
                         ([memories.saved] if memories else [])))
  restored = tf.train.latest_checkpoint(options.model_dir)     # the chief's, on every worker
  if restored:
    checkpoint.restore(restored)
    logging.info("resuming from %s at step %d", restored, int(optimizer.iterations.numpy()))
    if memories is not None:
      memories.from_host()
  elif options.init_checkpoint:
    _warm_start(model, options.init_checkpoint)
  start_step = int(optimizer.iterations.numpy())

  def dataset_fn(input_context):
    return pretrain_dataset(data_path, batch_size, input_context, seed=options.seed,
                            skip_steps=start_step, manifest=manifest,
                            objective=options.objective)

  dataset = strategy.distribute_datasets_from_function(dataset_fn)
  trainer = PretrainTrainer(
      strategy, model, optimizer, dataset, memories,
      tokens_per_step=tokens_per_step,
      clip_norm=options.clip_norm, total_steps=options.train_steps,
      jit_compile=options.jit_compile, seed=options.seed,
      last_checkpoint=lambda: manager.latest_checkpoint)

  stop = min(options.stop_at_step or options.train_steps, options.train_steps)
  eval_args = evaluation(model, optimizer) if evaluation else {}
  try:
    ran = run_controller(
        trainer, strategy, manager, os.path.join(write_dir, "train"),
        os.path.join(write_dir, EVAL_SUMMARY_DIR),
        loop_steps(options.steps_per_loop, options.save_steps), start_step, stop,
        **eval_args)
  except tf.errors.DataLossError as e:
    raise _corrupt_data_error(manifest, data_path, e) from None

  final_dir = options.final_dir or os.path.join(options.model_dir, "final")
  spiece = manifest["spiece"]["path"]
  pretrained.save_pretrained(
      model, final_dir if write_dir == options.model_dir else os.path.join(write_dir, "final"),
      spiece if tf.io.gfile.exists(spiece) else None)
  if write_dir != options.model_dir:
    tf.io.gfile.rmtree(write_dir)
  summary = {"step": int(optimizer.iterations.numpy()), "losses": ran["losses"],
             "final_dir": final_dir, "start_step": start_step}
  if evaluation:
    summary["evals"] = ran["evals"]
  return summary


def _corrupt_data_error(manifest, data_path: str, error) -> Exception:
  """tf.data's DataLossError names no file: find the bad shard(s) and record offsets."""
  problems = pretrain_records.diagnose_shards(manifest)
  found = "; ".join(f"{path}: {problem}" + (f" (record at byte {offset})"
                                            if offset is not None else "")
                    for path, problem, offset in problems[:5])
  return CorruptRecordsError(
      f"--train_data {data_path}: reading the records failed ({error.message.strip()}). "
      + (f"Bad shard(s): {found}" if problems else "No shard differs from its manifest entry")
      + ". Recreate the records (or run `python -m data_prep.verify_records`)")


def _writing_dir(strategy: tf.distribute.Strategy, model_dir: str) -> str:
  """`model_dir` for the chief (and single-worker runs), a private directory for others."""
  resolver = getattr(strategy, "cluster_resolver", None)
  if resolver is None or not resolver.task_type or strategy.extended.should_checkpoint:
    return model_dir
  return os.path.join(model_dir, f".worker-{resolver.task_type}-{resolver.task_id}")


def _warm_start(model, init_checkpoint: str) -> None:
  """Loads weights from our layout (a directory from save_pretrained / convert, or a
  `model.ckpt` prefix), checked variable by variable."""
  prefix = init_checkpoint
  if tf.io.gfile.isdir(init_checkpoint):
    prefix = os.path.join(init_checkpoint, model_directory.CHECKPOINT_PREFIX)
  pretrained.restore_weights(model, prefix)
  logging.info("initialised from %s", prefix)
