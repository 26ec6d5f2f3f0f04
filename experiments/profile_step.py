r"""Where a pretraining step's time goes: tf.profiler's per-op statistics of our step.

  python -m experiments.profile_step --configs=base --modes=fp32 --profile_steps=3

Runs the training step of `experiments.benchmark_pretrain` (same flags: --configs,
--modes, --seq_len, --num_predict, --n_token; the first config and mode are used) under
`tf.profiler.experimental`, converts the trace with TensorFlow's own profiler tools
("framework_op_stats", the table TensorBoard's profile plugin shows) and prints the op
types and ops with the largest self time. The raw trace stays in --logdir for TensorBoard.
"""

import collections
import glob
import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app  # noqa: E402
from absl import flags  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow.python.profiler.internal import _pywrap_profiler_plugin  # noqa: E402

from experiments import benchmark_pretrain  # noqa: E402  (defines the model flags)

_LOGDIR = flags.DEFINE_string("logdir", "runs/profile", "Where the trace goes.")
_PROFILE_STEPS = flags.DEFINE_integer("profile_steps", 3, "Steps traced (after warm-up).")
_TOP = flags.DEFINE_integer("top", 15, "Rows printed per table.")


def op_stats(xplane_path: str):
  """Rows of the profiler's framework_op_stats table: dicts by column id."""
  data, ok = _pywrap_profiler_plugin.xspace_to_tools_data([xplane_path],
                                                         "framework_op_stats", {})
  if not ok:
    raise RuntimeError(f"{xplane_path}: the profiler could not convert the trace: {data!r}")
  table = json.loads(data)[0]
  ids = [c["id"] for c in table["cols"]]
  return [dict(zip(ids, (cell["v"] if cell else None for cell in row["c"])))
          for row in table["rows"]]


def main(argv):
  del argv
  name, mode = flags.FLAGS.configs[0], flags.FLAGS.modes[0]
  config, feed, batch, _ = benchmark_pretrain._config_and_feed(name)  # pylint: disable=protected-access
  step = benchmark_pretrain._timed_step("ours", config, feed, mode)  # pylint: disable=protected-access
  step()
  step()                                                   # traced and warm
  tf.profiler.experimental.start(_LOGDIR.value)
  for _ in range(_PROFILE_STEPS.value):
    step()
  tf.profiler.experimental.stop()
  path = max(glob.glob(os.path.join(_LOGDIR.value, "**", "*.xplane.pb"), recursive=True),
             key=os.path.getmtime)
  rows = op_stats(path)
  total = sum(r["total_self_time"] for r in rows) or 1.0
  by_type = collections.Counter()
  for r in rows:
    by_type[r["type"]] += r["total_self_time"]
  print(f"{name} ({config.n_layer} x {config.d_model}), {mode}, batch {batch}, seq "
        f"{feed['input_ids'].shape[1]}: {_PROFILE_STEPS.value} steps, "
        f"{total / 1e6 / _PROFILE_STEPS.value:.2f} s of op self time per step")
  print(f"\n{'op type':<28}{'self time %':>12}")
  for op_type, seconds in by_type.most_common(_TOP.value):
    print(f"{op_type:<28}{100 * seconds / total:>11.1f}%")
  print(f"\n{'op':<72}{'type':<20}{'count':>6}{'self %':>8}")
  for r in sorted(rows, key=lambda r: -r["total_self_time"])[:_TOP.value]:
    print(f"{r['operation'][-70:]:<72}{r['type'][:19]:<20}{int(r['occurrences']):>6}"
          f"{100 * r['total_self_time'] / total:>7.1f}%")
  print(f"\ntrace: {path} (tensorboard --logdir {_LOGDIR.value}, Profile tab)")


if __name__ == "__main__":
  app.run(main)
