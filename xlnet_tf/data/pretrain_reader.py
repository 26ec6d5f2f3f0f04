"""`pretrain_dataset`: pretraining records -> batches of model inputs.

  >>> ds = pretrain_dataset("records/", batch_size=8)
  >>> batch = next(iter(ds))
  >>> batch["perm_mask"].shape        # [8, seq_len, seq_len]

Memory consistency: the records hold `bsz_per_host` streams; a replica always receives the
same streams, in order, so the reuse part of its row at step t + 1 follows the reuse part
of its row at step t and the memories it carries are the text just before. Shards go to
input pipelines whole, shuffling permutes whole shards (never rows), and with bi_data every
replica batch is [forward rows, the same streams reversed], as the model expects.
"""

from typing import Any, Dict, Optional

import numpy as np
import tensorflow as tf

from xlnet_tf import masks
from xlnet_tf.data import causal_lm
from xlnet_tf.data import layouts
from xlnet_tf.data import masked_lm
from xlnet_tf.data import pretrain_records

OBJECTIVES = ("plm", "mlm", "clm")


def pretrain_dataset(path: str, batch_size: int,
                     input_context: Optional[tf.distribute.InputContext] = None, *,
                     shuffle_shards: bool = True, seed: int = 0, repeat: bool = True,
                     skip_steps: int = 0,
                     manifest: Optional[Dict[str, Any]] = None,
                     objective: str = "plm") -> tf.data.Dataset:
  """A dataset of per-replica batches of pretraining inputs, static shapes.

  Args:
    path: a record directory or its manifest (see `pretrain_records.load_manifest`).
    batch_size: rows per replica batch. batch_size x (replicas per input pipeline) must
      equal the records' `bsz_per_host` (each replica keeps its own streams).
    input_context: from `distribute_datasets_from_function`; pipeline i reads shards
      i, i + n, ... of the n pipelines.
    shuffle_shards: permute the order of this pipeline's shards every epoch (with `seed`).
    repeat: cycle over the shards forever (training); otherwise one pass.
    skip_steps: resume after this many steps (the shard order is a function of `seed`, so
      skipping the records of `skip_steps` steps continues exactly where a run stopped).
    manifest: an already loaded manifest (else read from `path`).
    objective: "plm" (permutation LM, the records as made) or "mlm" (BERT-style masked LM
      on the same rows, see `masked_lm.masked_lm_inputs`; the corruption of step s is a
      function of (seed, s, pipeline), so resuming reproduces it) or "clm" (causal LM,
      the diagnostic baseline: every position predicts the row's next token, see
      `causal_lm.causal_lm_inputs`).
  Returns:
    Batches (dicts) with input_ids int32 [B, T], segment_ids int32 [B, T], input_mask
    float32 [B, T] (zeros: rows have no padding), perm_mask float32 [B, T, T],
    target_mapping float32 [B, P, T], target int32 [B, P], target_mask float32 [B, P],
    and stream_index / stream_step int32 [B] (which stream and step each row is).
    With objective "mlm" there is no perm_mask and P = round(0.15 T); with "clm" there is
    no perm_mask and no target_mapping, and target / target_mask are [B, T].
  """
  if objective not in OBJECTIVES:
    raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}")
  manifest = manifest or pretrain_records.load_manifest(path)
  settings = manifest["settings"]
  seq_len, num_predict = settings["seq_len"], settings["num_predict"]
  rows_per_step = settings["bsz_per_host"]
  num_pipelines = input_context.num_input_pipelines if input_context else 1
  pipeline_id = input_context.input_pipeline_id if input_context else 0
  replicas = input_context.num_replicas_in_sync // num_pipelines if input_context else 1

  if batch_size * replicas != rows_per_step:
    raise ValueError(
        f"{path}: batch_size {batch_size} x {replicas} replica(s) per input pipeline = "
        f"{batch_size * replicas}, but the records hold bsz_per_host = {rows_per_step} "
        f"streams per step; they must be equal so that every replica keeps its own streams "
        f"(and memories). Use batch_size {rows_per_step // max(replicas, 1)} or recreate "
        f"the records with --bsz_per_host {batch_size * replicas}")
  if settings["bi_data"] and batch_size % 2:
    raise ValueError(f"{path}: bi_data records need an even batch_size (forward and "
                     f"backward halves), got {batch_size}")
  entries = manifest["shards"][pipeline_id::num_pipelines]
  shards = [shard["path"] for shard in entries]
  if not shards:
    raise ValueError(f"{path}: {len(manifest['shards'])} shard(s) cannot feed "
                     f"{num_pipelines} input pipelines; make more shards (smaller "
                     f"--chunk_bytes) or use fewer hosts")
  pretrain_records.check_shards({"shards": entries}, path)        # missing or truncated

  order = replica_row_order(rows_per_step, settings["num_core_per_host"],
                            settings["bi_data"], replicas)
  spec = feature_spec(seq_len, num_predict)
  reuse_len = settings["reuse_len"]

  vocab_size = manifest["spiece"]["vocab_size"]

  def expand(step, serialized):                             # [rows_per_step] strings
    record = tf.io.parse_example(serialized, spec)
    record = {k: tf.gather(v, order) for k, v in record.items()}
    batch = expand_records(record, seq_len, reuse_len)
    if objective == "mlm":
      stream = tf.cast(step, tf.int32) * num_pipelines + pipeline_id
      batch = masked_lm.masked_lm_inputs(batch, tf.stack([tf.constant(seed, tf.int32), stream]),
                                         vocab_size)
    elif objective == "clm":
      batch = causal_lm.causal_lm_inputs(batch)
    return {k: tf.reshape(v, [replicas, batch_size] + v.shape[1:].as_list())
            for k, v in batch.items()}

  files = tf.data.Dataset.from_tensor_slices(shards)
  if shuffle_shards:
    files = files.shuffle(len(shards), seed=seed, reshuffle_each_iteration=True)
  if repeat:
    files = files.repeat()
  dataset = files.flat_map(lambda f: tf.data.TFRecordDataset(f, buffer_size=1 << 20))
  if skip_steps:
    dataset = dataset.skip(skip_steps * rows_per_step)           # whole steps: cheap, unparsed
  dataset = dataset.batch(rows_per_step, drop_remainder=True)       # one step, slot order
  dataset = dataset.enumerate(start=skip_steps)                     # (step, rows)
  dataset = dataset.map(expand, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
  dataset = dataset.unbatch()                                       # one batch per replica
  return dataset.prefetch(tf.data.AUTOTUNE)


def feature_spec(seq_len: int, num_predict: int) -> Dict[str, tf.io.FixedLenFeature]:
  """The parsing spec of a record: `pretrain_records.feature_shapes` and `DTYPE`."""
  dtype = tf.as_dtype(pretrain_records.DTYPE)
  return {name: tf.io.FixedLenFeature(shape, dtype)
          for name, shape in pretrain_records.feature_shapes(seq_len, num_predict).items()}


def replica_row_order(rows_per_step: int, num_core_per_host: int, bi_data: bool,
                      replicas: int) -> np.ndarray:
  """A permutation of a step's rows so that `replicas` consecutive equal groups are batches.

  Without bi_data rows stay in slot order. With bi_data the records hold, per core, its
  forward streams then their reversed copies; the groups are re-formed for `replicas`
  (which need not equal num_core_per_host) so each group is [forward streams, the same
  streams reversed].
  """
  if not bi_data:
    return np.arange(rows_per_step)
  per_core = rows_per_step // num_core_per_host
  forward = np.concatenate([np.arange(c * per_core, c * per_core + per_core // 2)
                            for c in range(num_core_per_host)])
  backward = forward + per_core // 2
  half = len(forward) // replicas
  return np.concatenate([np.concatenate([forward[r * half:(r + 1) * half],
                                         backward[r * half:(r + 1) * half]])
                         for r in range(replicas)])


def expand_records(record: Dict[str, tf.Tensor], seq_len: int,
                   reuse_len: int) -> Dict[str, tf.Tensor]:
  """Parsed compact records [N, ...] -> model inputs (the [T, T] mask, one-hot mapping)."""
  input_ids = tf.cast(record["input_ids"], tf.int32)                     # [N, T]
  positions = tf.cast(record["target_positions"], tf.int32)              # [N, P], -1 pad
  target_mapping = tf.one_hot(positions, seq_len, dtype=tf.float32)      # [N, P, T]
  is_target = tf.reduce_max(target_mapping, axis=1) > 0                  # [N, T]
  perm_mask = masks.pretraining_perm_mask(tf.cast(record["perm_rank"], tf.int32), is_target,
                                          layouts.is_functional(input_ids),
                                          reuse_len)                     # [N, T, T]
  valid = positions >= 0
  target = tf.gather(input_ids, tf.maximum(positions, 0), batch_dims=1)  # [N, P]
  return {
      "input_ids": input_ids,
      "segment_ids": tf.cast(record["segment_ids"], tf.int32),
      "input_mask": tf.zeros_like(input_ids, tf.float32),
      "perm_mask": tf.cast(perm_mask, tf.float32),
      "target_mapping": target_mapping,
      "target": tf.where(valid, target, 0),
      "target_mask": tf.cast(valid, tf.float32),
      "stream_index": tf.cast(record["stream_index"], tf.int32),
      "stream_step": tf.cast(record["stream_step"], tf.int32),
  }
