"""Fine-tunes a small model on the xlnet/squad task on one device and under MirroredStrategy
on 2 logical CPUs, from the same initial weights and the same windows (a process of its
own: logical devices must be set before TensorFlow runs anything). Used by
test_squad_training.py; prints one JSON line with both runs' losses and the largest
difference of their final weights.

Each run is what the driver's training is (`tasks.train_lib.train`): the model and
optimizer of `loop.build_model_and_optimizer` (task.build_model), trained by
`loop.train_model` (the common Trainer) on the task's windows streamed from their
TFRecord cache (task.train_dataset_fn) with the task's loss; only the strategy is given here
(runtime.distribution_strategy "mirrored" is one CPU replica when there is no GPU).

  python tests/mirrored_squad_run.py SPIECE_MODEL SQUAD_JSON WORK_DIR STEPS
"""

import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

tf.config.set_logical_device_configuration(
    tf.config.list_physical_devices("CPU")[0], [tf.config.LogicalDeviceConfiguration()] * 2)

from official.core import exp_factory  # noqa: E402
from official.core import task_factory  # noqa: E402

from xlnet_tf.tasks import squad  # noqa: E402
from xlnet_tf.tasks import train_lib  # noqa: E402
from xlnet_tf.training import loop  # noqa: E402


def squad_params(spiece_model, squad_json, cache_dir, steps):
  """xlnet/squad: the tests' small_config(n_token=4000) (2 layers, d_model 16, dropout
  off), windows of 128 pieces every 64, batches of 8, Adam 1e-3 without weight decay."""
  params = exp_factory.get_exp_config(squad.KIND.experiment)
  data = {"spiece_model": spiece_model, "cache_dir": cache_dir}
  params.override({
      "task": {
          "train_file": squad_json, "predict_file": squad_json,
          "max_seq_length": 128, "doc_stride": 64, "max_query_length": 32,
          "start_n_top": 3, "end_n_top": 3,
          "model": {"n_layer": 2, "d_model": 16, "n_head": 2, "d_head": 8, "d_inner": 32,
                    "n_token": 4000, "dropout": 0.0, "dropatt": 0.0},
          "train_data": {"global_batch_size": 8, **data},
          "validation_data": data,
          "optimization": {"learning_rate": 1e-3, "warmup_steps": 1, "weight_decay": 0.0,
                           "adam_epsilon": 1e-6, "lr_layer_decay_rate": 1.0}},
      "trainer": {"train_steps": steps, "steps_per_loop": 1,
                  "checkpoint_interval": steps}}, is_strict=True)
  return params


def main(spiece_model, squad_json, work, steps):
  params = squad_params(spiece_model, squad_json, os.path.join(work, "features"), steps)
  task = task_factory.get_task(params.task)
  task.features_path(params.task.train_data)               # cached once, before both runs
  results, weights = {}, {}
  for name, strategy in (("one_device", tf.distribute.OneDeviceStrategy("/cpu:0")),
                         ("mirrored", tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]))):
    options = train_lib.run_options(params, os.path.join(work, name))
    model, optimizer = loop.build_model_and_optimizer(strategy, options, task.build_model)
    weights[name + "_initial"] = [v.numpy() for v in model.weights]
    summary = loop.train_model(
        strategy, model, optimizer,
        task.train_dataset_fn(params.task.train_data, options.grad_accum_steps),
        options, loss_fn=task.loss_fn(), input_keys=task.INPUT_KEYS)
    assert summary["step"] == steps, summary
    weights[name] = [v.numpy() for v in model.weights]
    results[name] = {"losses": summary["losses"], "replicas": strategy.num_replicas_in_sync}
  results["max_weight_difference"] = max(
      float(np.max(np.abs(a - b))) for a, b in zip(weights["one_device"], weights["mirrored"]))
  results["max_weight_change"] = max(
      float(np.max(np.abs(a - b)))
      for a, b in zip(weights["one_device"], weights["one_device_initial"]))
  results["same_initial_weights"] = all(
      np.array_equal(a, b)
      for a, b in zip(weights["one_device_initial"], weights["mirrored_initial"]))
  print(json.dumps(results))


if __name__ == "__main__":
  main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]))
