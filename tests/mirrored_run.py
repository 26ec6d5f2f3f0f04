"""Trains the mock task (tests/mock_task.py) on one device and under MirroredStrategy on 2
logical CPUs, from the same initial weights and the same batches (a process of its own:
logical devices must be set before TensorFlow runs anything). Used by
tests/tasks/test_driver.py; prints one JSON line with both runs' losses and the largest
difference of their final weights.

Each run is what the driver's training is (`tasks.train_lib.train`): the model and
optimizer of `loop.build_model_and_optimizer` (task.build_model), trained by
`loop.train_model` (the common Trainer) on the task's micro-batches streamed from their
TFRecord cache (task.train_dataset_fn) with the task's loss; only the strategy is given
here. Dropout is off (its masks are drawn per replica).

  python tests/mirrored_run.py SPIECE_MODEL WORK_DIR STEPS
"""

import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

tf.config.set_logical_device_configuration(
    tf.config.list_physical_devices("CPU")[0], [tf.config.LogicalDeviceConfiguration()] * 2)

from official.core import task_factory  # noqa: E402

import mock_task  # noqa: E402  (tests/, the script's directory)
from xlnet_tf.tasks import train_lib  # noqa: E402
from xlnet_tf.training import loop  # noqa: E402


def main(spiece_model, work, steps):
  params = mock_task.params(spiece_model, f"task.model.dropout=0.0,task.model.dropatt=0.0,"
                                          f"trainer.train_steps={steps},"
                                          f"trainer.steps_per_loop=1,"
                                          f"trainer.checkpoint_interval={steps}")
  params = train_lib._with_default_cache(params, work)  # pylint: disable=protected-access
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
  main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
