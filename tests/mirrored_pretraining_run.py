"""Runs pretraining on one device and under MirroredStrategy on 2 logical CPUs (a process of
its own: logical devices must be set before TensorFlow runs anything). Used by
test_pretraining.py; prints one JSON line with both runs' losses and memories.

  python tests/mirrored_pretraining_run.py RECORDS_DIR INIT_DIR WORK_DIR STEPS
"""

import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

tf.config.set_logical_device_configuration(
    tf.config.list_physical_devices("CPU")[0], [tf.config.LogicalDeviceConfiguration()] * 2)

from xlnet_tf import model_directory  # noqa: E402
from xlnet_tf import pretrained  # noqa: E402
from xlnet_tf.data import pretrain_records  # noqa: E402
from xlnet_tf.data.pretrain_reader import replica_row_order  # noqa: E402
from helpers import pretrain_options  # noqa: E402
from helpers import run_pretraining  # noqa: E402


def main(records, init_dir, work, steps):
  settings = pretrain_records.load_manifest(records)["settings"]
  config = pretrained.XLNetConfig.from_json_file(
      os.path.join(init_dir, model_directory.CONFIG_FILE))
  results = {}
  for name, strategy in (("one_device", tf.distribute.OneDeviceStrategy("/cpu:0")),
                         ("mirrored", tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]))):
    options = pretrain_options(
        model_dir=os.path.join(work, name), train_steps=steps, learning_rate=1e-3,
        warmup_steps=1, steps_per_loop=1, save_steps=steps, init_checkpoint=init_dir)
    summary = run_pretraining(strategy, config, records, options)
    memory = tf.train.load_variable(tf.train.latest_checkpoint(options.model_dir),
                                    "memories/saved/.ATTRIBUTES/VARIABLE_VALUE")
    # Rows of the memory, in the order the replicas saw them -> by stream (slot) index.
    order = replica_row_order(settings["bsz_per_host"], settings["num_core_per_host"],
                              settings["bi_data"], strategy.num_replicas_in_sync)
    by_stream = memory[:, order.argsort()]
    results[name] = {"losses": summary["losses"], "memory": by_stream.tolist(),
                     "replicas": strategy.num_replicas_in_sync}
  print(json.dumps(results))


if __name__ == "__main__":
  main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]))
