"""Where a pretraining step's time goes: tf.profiler's per-op statistics of our step
(python -m experiments.profile_step).

For a compiled mode (xla, bf16_xla) the step is one TensorFlow op, so the table is made
from the XLA program itself: XLA:CPU traces every thunk (a dot, a fusion, a reduction) it
runs, and the optimized HLO (dumped to LOGDIR/hlo with --xla_dump_to, added to XLA_FLAGS
for this process) names each instruction's TensorFlow op (op_type / op_name metadata).
The tables give each thunk's self time summed over threads (thunks run concurrently, so
the sum can exceed the step), grouped by TensorFlow op (layers merged), by HLO kind, and
the largest instructions.

`profile` runs the training step of `xlnet_tf.benchmarks.step_speed` under
`tf.profiler.experimental`, converts the trace with TensorFlow's own profiler tools
("framework_op_stats", the table TensorBoard's profile plugin shows) and prints the op
types and ops with the largest self time. The raw trace stays in LOGDIR for TensorBoard.
"""

import collections
import glob
import json
import os
import re

import numpy as np
import tensorflow as tf
import tf_keras
from tensorflow.compiler.xla.service import hlo_pb2
from tensorflow.python.profiler.internal import _pywrap_profiler_plugin

from xlnet_tf.benchmarks import step_speed


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


def _layers_merged(op_name: str) -> str:
  """A TensorFlow op name with layer numbers and op-copy suffixes replaced, so the layers
  of a kind add up: ".../layer_3/rel_attn/MatMul_1" -> ".../layer_*/rel_attn/MatMul"."""
  return re.sub(r"_\d+(?=/|$)", "", re.sub(r"layer_\d+", "layer_*", op_name))


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
      label = meta.group(1) + " " + _layers_merged(meta.group(2))
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
  step_speed.keep_freed_memory()                   # as the trainer under XLA
  config, feed, batch, _ = step_speed.config_and_feed(name, seq_len, num_predict,
                                                      n_token)
  step = step_speed.timed_step("ours", config, feed, mode)
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


# ---- the compiled program: size, XLA's cost analysis, largest intermediates -------------

_BYTES_PER_ELEMENT = {"pred": 1, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "f16": 2, "bf16": 2,
                      "s32": 4, "u32": 4, "f32": 4, "s64": 8, "u64": 8, "f64": 8}
_ARRAY_SHAPE = re.compile(r"\b(pred|[suf]\d+|bf16)\[([\d,]*)\]")
# Instructions that move no data of their own (views, bookkeeping).
_NOT_MATERIALISED = ("parameter", "constant", "tuple", "get-tuple-element", "bitcast",
                     "while", "conditional", "after-all", "opt-barrier")
_OP_NAME = re.compile(r'metadata=\{[^}]*?op_name="([^"]+)"')


def shape_bytes(shape: str) -> int:
  """Bytes of an HLO shape string ("f32[2,512]{1,0}" or a tuple of such)."""
  total = 0
  for dtype, dims in _ARRAY_SHAPE.findall(shape):
    total += _BYTES_PER_ELEMENT[dtype] * int(np.prod([int(d) for d in dims.split(",") if d]))
  return total


def hlo_program(step, feed) -> bytes:
  """The compiled step as TensorFlow hands it to XLA: the unoptimized HloModuleProto of
  `experimental_get_compiler_ir(stage="hlo_serialized")` (traced and lowered, not run)."""
  return step.experimental_get_compiler_ir(feed)(stage="hlo_serialized")


def program_size(proto: bytes) -> dict:
  """The size of an `hlo_program`.

  program_bytes: as serialized. Most instructions' metadata names the Python file that
  made the op by its full path (TensorFlow's ops.py under this install's site-packages),
  so the size depends on where TensorFlow is installed: portable_program_bytes is the
  same program with each path cut to its part below site-packages. Also the instruction
  count and the constants: how many, how many over 64 KB, the largest (bytes of its
  literal).
  """
  module = hlo_pb2.HloModuleProto()
  module.ParseFromString(proto)
  constants = []
  for computation in module.computations:
    for instruction in computation.instructions:
      if instruction.opcode == "constant":
        constants.append(instruction.literal.ByteSize())
      path = instruction.metadata.source_file
      if "site-packages/" in path:
        instruction.metadata.source_file = path.rsplit("site-packages/", 1)[1]
  return {"program_bytes": len(proto),
          "portable_program_bytes": module.ByteSize(),
          "instructions": sum(len(c.instructions) for c in module.computations),
          "constants": len(constants),
          "constants_over_64k": sum(size > 64 * 1024 for size in constants),
          "largest_constant_bytes": max(constants, default=0)}


def _computations(hlo_text: str):
  """{computation name: its instruction lines} of an HLO module's text, and the entry's
  name."""
  computations, entry, current = {}, None, None
  for line in hlo_text.splitlines():
    header = re.match(r"^(ENTRY )?%?([\w.\-]+) .*\{\s*$", line)
    if header:
      current = header.group(2)
      computations[current] = []
      entry = current if header.group(1) else entry
    elif current is not None and _HLO_LINE.match(line):
      computations[current].append(line)
  return computations, entry


def _label(line: str, opcode: str) -> str:
  meta = _OP_NAME.search(line)
  if not meta:
    return f"(XLA) {opcode}"
  return _layers_merged(meta.group(1))


def _materialised(hlo_text: str):
  """(name, shape, label, operand names) of the instructions of an optimized HLO module
  that write a buffer: those of the entry computation and of the loops' computations
  (XLA:CPU wraps each fusion in a `call` of a "parallel_..." computation; the call is the
  buffer, labelled by the TensorFlow op of the computation's root). The insides of fusions
  and reducers are never stored."""
  computations, entry = _computations(hlo_text)
  stored, queue = set(), [entry]
  while queue:                      # the entry and what it runs as loops or branches
    name = queue.pop()
    if name in stored or name not in computations:
      continue
    stored.add(name)
    for line in computations[name]:
      queue += re.findall(r"(?:body|condition|true_computation|false_computation)="
                          r"%?([\w.\-]+)", line)
      for branches in re.findall(r"branch_computations=\{([^}]*)\}", line):
        queue += re.findall(r"%?([\w.\-]+)", branches)
  root_label = {}
  for name, lines in computations.items():
    root = next((line for line in lines if line.lstrip().startswith("ROOT")), None)
    if root:
      root_label[name] = _label(root, _HLO_LINE.match(root).group(3))
  instructions = []
  for computation in stored:
    for line in computations[computation]:
      name, shape, opcode, rest = _HLO_LINE.match(line).groups()
      if opcode in _NOT_MATERIALISED:
        continue
      label = _label(line, opcode)
      callee = re.search(r"to_apply=%?([\w.\-]+)", rest)
      if opcode == "call" and callee and label.startswith("(XLA)"):
        label = root_label.get(callee.group(1), label)
      operands = re.findall(r"%([\w.\-]+)", rest.split("), ")[0])
      instructions.append((name, shape, label, operands))
  return instructions


def compiled_cost(proto: bytes) -> dict:
  """XLA's cost analysis of an `hlo_program`, and its optimized HLO text.

  TensorFlow has no Python API for XLA's HloCostAnalysis, so the step's program (the
  `hlo_serialized` stage) is compiled for this CPU by JAX's XLA client (jaxlib; the
  requirements-test.txt pin), whose `cost_analysis()` is XLA's: "flops" (multiply-adds
  count 2), "transcendentals", and "bytes accessed", the bytes every instruction of the
  optimized program reads and writes (a fusion counts its inputs and its output once).
  Fusion is the CPU backend's; a GPU's fuses more, so on a GPU the bytes are fewer.
  """
  try:
    import jax  # pylint: disable=g-import-not-at-top
    from jax._src.lib import _jax  # pylint: disable=g-import-not-at-top
    from jax._src.lib import xla_client  # pylint: disable=g-import-not-at-top
  except ImportError as e:
    raise ImportError("the cost analysis needs jax and jaxlib (pip install -r "
                      "requirements-test.txt)") from e
  device = jax.devices("cpu")[0]
  executable = device.client.compile_and_load(_jax.mlir.hlo_to_stablehlo(proto), [device],
                                              xla_client.CompileOptions())
  analysis = executable.cost_analysis()
  analysis = analysis[0] if isinstance(analysis, list) else analysis
  memory = executable.get_compiled_memory_stats()
  return {"flops": analysis["flops"], "bytes_accessed": analysis["bytes accessed"],
          "transcendentals": analysis.get("transcendentals", 0.0),
          "temp_bytes": memory.temp_size_in_bytes,
          "argument_bytes": memory.argument_size_in_bytes,
          "hlo_text": executable.hlo_modules()[0].to_string()}


def largest_intermediates(hlo_text: str, top: int):
  """The `top` largest buffers the optimized program writes: [bytes, shape, TF op, count],
  layers merged ("layer_*"): count buffers of that shape written by that op."""
  by_label = {}
  for _, shape, label, _ in _materialised(hlo_text):
    key = (label, shape)
    if key not in by_label:
      by_label[key] = [shape_bytes(shape), shape, label, 0]
    by_label[key][3] += 1
  return sorted(by_label.values(), key=lambda row: -row[0])[:top]


def traffic_by_op(hlo_text: str, top: int):
  """Bytes read and written per TF op (layers merged), estimated from the materialised
  instructions' operand and output sizes: where XLA's "bytes accessed" come from."""
  instructions = _materialised(hlo_text)
  sizes = {m.group(1): shape_bytes(m.group(2)) for m in _HLO_LINE.finditer(hlo_text)}
  traffic = collections.Counter()
  for name, _, label, operands in instructions:
    traffic[label] += sizes[name] + sum(sizes.get(o, 0) for o in operands)
  return traffic.most_common(top), sum(traffic.values())


def print_program(name: str, mode: str, batch: int, step, feed, flops_estimate: float,
                  top: int) -> dict:
  """Prints the compiled step's program size, XLA's cost analysis and its largest
  intermediates and traffic; returns the figures."""
  proto = hlo_program(step, feed)                 # lowered once for both
  size, cost = program_size(proto), compiled_cost(proto)
  print(f"{name}, {mode}, batch {batch}: program {size['program_bytes'] / 1e6:.2f} MB "
        f"({size['portable_program_bytes'] / 1e6:.2f} MB with paths below site-packages), "
        f"{size['instructions']} instructions, {size['constants_over_64k']} constants over "
        f"64 KB (largest {size['largest_constant_bytes']:,} B)")
  print(f"XLA cost analysis (XLA:CPU, jaxlib): {cost['flops'] / 1e9:,.1f} GFLOP, "
        f"{cost['bytes_accessed'] / 1e9:,.2f} GB accessed, "
        f"{cost['flops'] / cost['bytes_accessed']:.1f} FLOP/byte, "
        f"{cost['transcendentals'] / 1e6:,.1f} M transcendentals; temporaries "
        f"{cost['temp_bytes'] / 2**30:.2f} GiB; matmul FLOPs by formula "
        f"{flops_estimate / 1e9:,.1f} G")
  print(f"\n{'largest intermediates: TF op':<70}{'shape':<32}{'MB':>8}{'count':>6}")
  for size_bytes, shape, label, count in largest_intermediates(cost["hlo_text"], top):
    print(f"{label[-68:]:<70}{shape.split('{')[0][:30]:<32}{size_bytes / 1e6:>8.1f}"
          f"{count:>6}")
  rows, total = traffic_by_op(cost["hlo_text"], top)
  print(f"\n{'traffic (operands + output of stored buffers)':<70}{'GB':>8}{'share':>8}")
  for label, nbytes in rows:
    print(f"{label[-68:]:<70}{nbytes / 1e9:>8.2f}{100 * nbytes / total:>7.1f}%")
  return {**size, **{k: v for k, v in cost.items() if k != "hlo_text"}}


def program_report(name: str, mode: str, seq_len: int, num_predict: int, n_token: int,
                   batch: int, top: int, recompute: str = "none") -> dict:
  """Builds config `name`'s compiled training step in `mode` (xla or bf16_xla, with
  `recompute` "none" or "layer") without running it and prints `print_program`'s
  report."""
  if not mode.endswith("xla"):
    raise ValueError(f"--modes: the program report is of a compiled step (xla or "
                     f"bf16_xla), got {mode!r}")
  config, feed, batch, _ = step_speed.config_and_feed(name, seq_len, num_predict,
                                                      n_token, batch, recompute)
  bf16 = mode.startswith("bf16")
  policy = tf_keras.mixed_precision.global_policy()
  tf_keras.mixed_precision.set_global_policy("mixed_bfloat16" if bf16 else "float32")
  try:
    step = step_speed.compiled_train_step(config, feed, jit=True)
    print(f"{name} ({config.n_layer} x {config.d_model}), seq {seq_len}, {num_predict} "
          f"targets, recompute {recompute}; TensorFlow {tf.__version__}")
    return print_program(name, mode, batch, step, feed,
                         step_speed.step_flops(config, batch, seq_len, num_predict),
                         top)
  finally:
    tf_keras.mixed_precision.set_global_policy(policy)
