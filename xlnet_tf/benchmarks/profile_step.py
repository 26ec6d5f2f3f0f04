"""Where a pretraining step's time goes: tf.profiler's per-op statistics of our step
(python -m experiments.profile_step).

For a compiled mode (xla, bf16_xla) the step is one TensorFlow op, so the table is made
from the XLA program itself: XLA:CPU traces every thunk (a dot, a fusion, a reduction) it
runs, and the optimized HLO (dumped to LOGDIR/hlo with --xla_dump_to, added to XLA_FLAGS
for this process) names each instruction's TensorFlow op (op_type / op_name metadata).
The tables give each thunk's self time summed over threads (thunks run concurrently, so
the sum can exceed the step), grouped by TensorFlow op (layers merged), by HLO kind, and
the largest instructions.

`profile` runs the training step of `xlnet_tf.benchmarks.pretrain` under
`tf.profiler.experimental`, converts the trace with TensorFlow's own profiler tools
("framework_op_stats", the table TensorBoard's profile plugin shows) and prints the op
types and ops with the largest self time. The raw trace stays in LOGDIR for TensorBoard.
"""

import collections
import glob
import json
import os
import re

import tensorflow as tf
from tensorflow.python.profiler.internal import _pywrap_profiler_plugin

from xlnet_tf.benchmarks import pretrain as benchmark_pretrain


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


_HLO_LINE = re.compile(r"^\s*(?:ROOT )?%?([\w.\-]+) = (\([^=]*?\)|\S+) ([\w\-]+)\((.*)$",
                       re.M)
_METADATA = re.compile(r'metadata=\{op_type="(\w+)" op_name="([^"]+)"')
# Events of the trace that are not HLO instructions (the TF op, the executor, Python).
_NOT_THUNKS = ("ThunkExecutor", "ThreadpoolListener", "end: ", "step", "TFE_", "Eager",
               "__inference", "Memory", "Validate", "profile_step")


def hlo_instructions(hlo_text: str):
  """{instruction name: (shape, opcode, TF op label)} of an optimized HLO module's text.

  The label is "<op_type> <op_name>" with layer numbers replaced by * (so the layers of
  a kind add up), or "(XLA) <opcode>" for instructions XLA made up itself.
  """
  out = {}
  for match in _HLO_LINE.finditer(hlo_text):
    name, shape, opcode, rest = match.groups()
    meta = _METADATA.search(rest)
    if meta:
      label = meta.group(1) + " " + re.sub(r"_\d+(?=/|$)", "", re.sub(r"layer_\d+", "layer_*",
                                                                  meta.group(2)))
    else:
      label = f"(XLA) {opcode}"
    out[name] = (shape, opcode, label)
  return out


def thunk_self_times(xplane_path: str):
  """{HLO instruction name: (self time in ps, occurrences)} from XLA:CPU's thunk events."""
  from tensorflow.tsl.profiler.protobuf import xplane_pb2  # pylint: disable=g-import-not-at-top
  space = xplane_pb2.XSpace()
  with open(xplane_path, "rb") as f:
    space.ParseFromString(f.read())
  times, counts = collections.Counter(), collections.Counter()
  for plane in space.planes:
    if plane.name != "/host:CPU":
      continue
    names = {k: v.name for k, v in plane.event_metadata.items()}
    for line in plane.lines:
      stack = []                          # enclosing events: (name, end); self = minus children
      for event in sorted(line.events, key=lambda e: (e.offset_ps, -e.duration_ps)):
        name = names.get(event.metadata_id, "")
        if not name or name.startswith(_NOT_THUNKS):
          continue
        while stack and stack[-1][1] <= event.offset_ps:
          stack.pop()
        if stack:
          times[stack[-1][0]] -= event.duration_ps
        times[name] += event.duration_ps
        counts[name] += 1
        stack.append((name, event.offset_ps + event.duration_ps))
  return times, counts


def _hlo_kind(opcode: str, name: str) -> str:
  """dot, the fusion's name without its number (XLA names a fusion after its ops:
  "pad_bitcast_fusion"), or the opcode."""
  if opcode == "fusion":
    return re.sub(r"(\.\d+)?(\.clone)?$", "", name)
  return opcode


def print_xla_stats(xplane_path: str, hlo_dir: str, steps: int, top: int):
  """The XLA program's breakdown: by TF op, by HLO kind, largest instructions."""
  modules = [p for p in glob.glob(os.path.join(hlo_dir, "*cpu_after_optimizations.txt"))
             if "inference_step" in p]
  if not modules:
    raise RuntimeError(f"no optimized HLO of the step in {hlo_dir} (was XLA_FLAGS set "
                       "before TensorFlow compiled the step?)")
  with open(max(modules, key=os.path.getmtime)) as f:
    instructions = hlo_instructions(f.read())
  times, counts = thunk_self_times(xplane_path)
  def info(name):
    return (instructions.get(name) or instructions.get(name.replace(".clone", ""))
            or ("?", "?", "(not in HLO) " + name))
  total = sum(times.values()) or 1
  by_op, by_kind = collections.Counter(), collections.Counter()
  for name, ps in times.items():
    shape, opcode, label = info(name)
    by_op[label] += ps
    by_kind[_hlo_kind(opcode, name)] += ps
  print(f"XLA thunks: {total / 1e9 / steps:.0f} ms of self time per step (summed over "
        f"threads), {sum(counts.values()) // steps} thunks per step")
  print(f"\n{'by TensorFlow op (layers merged)':<84}{'self %':>7}{'ms/step':>9}")
  for label, ps in by_op.most_common(top):
    print(f"{label[-82:]:<84}{100 * ps / total:>6.1f}%{ps / 1e9 / steps:>9.1f}")
  print(f"\n{'by HLO kind':<40}{'self %':>7}{'ms/step':>9}")
  for kind, ps in by_kind.most_common(top):
    print(f"{kind[:38]:<40}{100 * ps / total:>6.1f}%{ps / 1e9 / steps:>9.1f}")
  print(f"\n{'HLO instruction':<34}{'shape':<28}{'self %':>7}{'ms/step':>9}  TF op")
  for name, ps in times.most_common(top):
    shape, _, label = info(name)
    print(f"{name[:32]:<34}{shape[:26]:<28}{100 * ps / total:>6.1f}%{ps / 1e9 / steps:>9.1f}"
          f"  {label[-60:]}")


def profile(name: str, mode: str, seq_len: int, num_predict: int, n_token: int,
            logdir: str, profile_steps: int, top: int) -> None:
  """Traces `profile_steps` training steps of config `name` in `mode` (after two warm-up
  steps) into `logdir` and prints the tables of the `top` rows."""
  hlo_dir = os.path.join(logdir, "hlo")
  if mode.endswith("xla"):     # read when XLA first compiles, i.e. at the first step below
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                               f" --xla_dump_to={hlo_dir} --xla_dump_hlo_as_text").strip()
  benchmark_pretrain.keep_freed_memory()                   # as the trainer under XLA
  config, feed, batch, _ = benchmark_pretrain.config_and_feed(name, seq_len, num_predict,
                                                              n_token)
  step = benchmark_pretrain.timed_step("ours", config, feed, mode)
  step()
  step()                                                   # traced and warm
  tf.profiler.experimental.start(logdir)
  for _ in range(profile_steps):
    step()
  tf.profiler.experimental.stop()
  path = max(glob.glob(os.path.join(logdir, "**", "*.xplane.pb"), recursive=True),
             key=os.path.getmtime)
  if mode.endswith("xla"):
    print(f"{name} ({config.n_layer} x {config.d_model}), {mode}, batch {batch}, seq "
          f"{feed['input_ids'].shape[1]}: {profile_steps} steps; XLA_FLAGS="
          f"{os.environ.get('XLA_FLAGS')}")
    print_xla_stats(path, hlo_dir, profile_steps, top)
    print(f"\ntrace: {path}; HLO: {hlo_dir}")
    return
  rows = op_stats(path)
  total = sum(r["total_self_time"] for r in rows) or 1.0
  by_type = collections.Counter()
  for r in rows:
    by_type[r["type"]] += r["total_self_time"]
  print(f"{name} ({config.n_layer} x {config.d_model}), {mode}, batch {batch}, seq "
        f"{feed['input_ids'].shape[1]}: {profile_steps} steps, "
        f"{total / 1e6 / profile_steps:.2f} s of op self time per step")
  print(f"\n{'op type':<28}{'self time %':>12}")
  for op_type, seconds in by_type.most_common(top):
    print(f"{op_type:<28}{100 * seconds / total:>11.1f}%")
  print(f"\n{'op':<72}{'type':<20}{'count':>6}{'self %':>8}")
  for r in sorted(rows, key=lambda r: -r["total_self_time"])[:top]:
    print(f"{r['operation'][-70:]:<72}{r['type'][:19]:<20}{int(r['occurrences']):>6}"
          f"{100 * r['total_self_time'] / total:>7.1f}%")
  print(f"\ntrace: {path} (tensorboard --logdir {logdir}, Profile tab)")
