"""Fine-tunes a small SQuAD model on one device and under MirroredStrategy on 2 logical CPUs
from the same initial weights and batches (a process of its own: logical devices must be
set before TensorFlow runs anything). Used by test_squad_training.py; prints one JSON line
with both runs' losses and the largest difference of their final weights.

  python tests/mirrored_squad_run.py SPIECE_MODEL SQUAD_JSON STEPS
"""

import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

tf.config.set_logical_device_configuration(
    tf.config.list_physical_devices("CPU")[0], [tf.config.LogicalDeviceConfiguration()] * 2)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from helpers import small_config  # noqa: E402
from xlnet_tf.data import squad  # noqa: E402
from xlnet_tf.data import squad_features  # noqa: E402
from xlnet_tf.data import tokenization  # noqa: E402
from xlnet_tf.models.xlnet_squad import build_squad_model  # noqa: E402
from xlnet_tf.training import optimization  # noqa: E402
from xlnet_tf.training.squad_training import train_squad  # noqa: E402
from xlnet_tf.training.squad_training import window_arrays  # noqa: E402


def main(spiece_model, squad_json, steps):
  sp = tokenization.load_spiece(spiece_model)
  examples, _ = squad.read_squad(squad_json)
  windows = [w for e in examples for w in squad_features.squad_windows(
      sp, e, max_seq_length=128, doc_stride=64, max_query_length=32, is_training=True)]
  arrays = window_arrays(windows)
  results, weights = {}, {}
  for name, strategy in (("one_device", tf.distribute.OneDeviceStrategy("/cpu:0")),
                         ("mirrored", tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]))):
    tf.keras.utils.set_random_seed(0)
    with strategy.scope():
      model = build_squad_model(small_config(n_token=4000), 3, 3, dropout_rate=0.0)
      optimizer = optimization.build_optimizer(1e-3, steps, 1, weight_decay=0.0)
    initial = [v.numpy() for v in model.weights]
    losses = train_squad(model, optimizer, arrays, batch_size=8, steps=steps,
                         strategy=strategy)
    weights[name] = [v.numpy() for v in model.weights]
    weights[name + "_initial"] = initial
    results[name] = {"losses": losses, "replicas": strategy.num_replicas_in_sync}
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
