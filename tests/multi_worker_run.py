"""Pretraining on two worker processes (MultiWorkerMirroredStrategy, loopback ports only)
and the single-process run on the same global batches. Used by test_multi_worker.py.

  python tests/multi_worker_run.py worker RECORDS INIT_DIR MODEL_DIR STEPS   # TF_CONFIG set
  python tests/multi_worker_run.py reference RECORDS INIT_DIR MODEL_DIR STEPS

A worker runs `runs.pretraining.pretrain` (the driver) like `experiments/pretrain.py
--strategy=multi_worker`: its input pipeline reads shards i, i + 2, ... and feeds its one
replica `bsz_per_host` rows.
The reference trains one replica on the two pipelines' rows of every step side by side
(forward streams of both, then backward streams of both: the bi_data layout) with memories
for all of them, i.e. the same global batch. Each prints one JSON line: per-step losses and
the final weights' sum of squares per variable.
"""

import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from helpers import pretrain_options  # noqa: E402
from helpers import run_pretraining  # noqa: E402
from xlnet_tf import model_directory  # noqa: E402
from xlnet_tf import pretrained  # noqa: E402
from xlnet_tf.data.pretrain_reader import pretrain_dataset  # noqa: E402
from xlnet_tf.data import pretrain_records  # noqa: E402
from xlnet_tf.models.xlnet_pretrainer import build_pretrainer  # noqa: E402
from xlnet_tf.tasks import pretraining  # noqa: E402
from xlnet_tf.training import optimization  # noqa: E402
from xlnet_tf.training.memory import ReplicaMemories  # noqa: E402
from xlnet_tf.training.trainer import NonFiniteLossError  # noqa: E402
from xlnet_tf.training.trainer import Trainer  # noqa: E402

LEARNING_RATE = 1e-3


def _options(model_dir, steps, init_dir):
  return pretrain_options(
      model_dir=model_dir, train_steps=steps, learning_rate=LEARNING_RATE, warmup_steps=1,
      steps_per_loop=1, save_steps=steps, init_checkpoint=init_dir)


def _weights(model):
  return {v.name: float(np.sum(np.square(v.numpy().astype(np.float64))))
          for v in model.trainable_variables}


def worker(records, init_dir, model_dir, steps):
  strategy = tf.distribute.MultiWorkerMirroredStrategy()
  config = pretrained.XLNetConfig.from_json_file(os.path.join(init_dir,
                                                              model_directory.CONFIG_FILE))
  summary = run_pretraining(strategy, config, records, _options(model_dir, steps, init_dir))
  resolver = strategy.cluster_resolver
  export = pretrained.load_directory(summary["final_dir"]) if resolver.task_id == 0 else None
  print(json.dumps({"task_id": resolver.task_id, "replicas": strategy.num_replicas_in_sync,
                    "losses": summary["losses"],
                    "weights": _weights(export) if export is not None else None}))


def reference(records, init_dir, model_dir, steps):
  manifest = pretrain_records.load_manifest(records)
  settings = manifest["settings"]
  rows = settings["bsz_per_host"]
  config = pretrained.XLNetConfig.from_json_file(os.path.join(init_dir,
                                                              model_directory.CONFIG_FILE))
  tf.keras.utils.set_random_seed(0)
  strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
  with strategy.scope():
    model = build_pretrainer(config)
    options = _options(model_dir, steps, init_dir)         # the workers' optimizer settings
    optimizer = optimization.build_optimizer(
        options.learning_rate, options.train_steps, options.warmup_steps,
        weight_decay=options.weight_decay, adam_epsilon=options.adam_epsilon,
        min_lr_ratio=options.min_lr_ratio, adam_bias_correction=options.adam_bias_correction)
  pretrained.restore_weights(model, os.path.join(init_dir, model_directory.CHECKPOINT_PREFIX))
  memories = ReplicaMemories(strategy, config.n_layer, 2 * rows, config.mem_len,
                             config.d_model)
  pipelines = [pretrain_dataset(records, rows, tf.distribute.InputContext(2, i, 2),
                                seed=0, manifest=manifest) for i in range(2)]
  half = rows // 2

  def side_by_side(a, b):       # [fwd a, bwd a] + [fwd b, bwd b] -> [fwd a, fwd b, bwd a, bwd b]
    if not settings["bi_data"]:
      return {k: tf.concat([a[k], b[k]], 0) for k in a}
    return {k: tf.concat([a[k][:half], b[k][:half], a[k][half:], b[k][half:]], 0) for k in a}

  dataset = tf.data.Dataset.zip(tuple(pipelines)).map(side_by_side)
  trainer = Trainer(strategy, model, optimizer, strategy.experimental_distribute_dataset(dataset),
                    input_keys=pretraining.MODEL_INPUTS, loss_fn=pretraining.pretraining_loss,
                    memories=memories, tokens_per_step=2 * rows * settings["seq_len"],
                    clip_norm=1.0, total_steps=steps, error=NonFiniteLossError)
  losses = [float(trainer.train(tf.constant(1))["loss"]) for _ in range(steps)]
  print(json.dumps({"losses": losses, "weights": _weights(model)}))


if __name__ == "__main__":
  mode, records_dir, init, work, num_steps = sys.argv[1:6]
  {"worker": worker, "reference": reference}[mode](records_dir, init, work, int(num_steps))
