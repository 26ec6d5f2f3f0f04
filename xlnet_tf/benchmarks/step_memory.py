r"""Activation memory of the compiled pretraining step, with and without recomputation:
python -m experiments.step_memory.

The step is the one of `xlnet_tf.benchmarks.step_speed` (`compiled_train_step`: encoder in
training mode, tied LM loss over the targets, clipping, AdamW; `config_and_feed`: seq 512, 85
targets, two segments + <cls>, no dropout, bi_data off), XLA-compiled but never run: its
memory is XLA's buffer assignment, which XLA writes next to the compiled program when
`--xla_dump_to` is set. "Total bytes used" there is the sum of the program's allocations:
its parameters (weights, optimizer slots, the batch), its outputs (the updated weights
and slots) and one preallocated block for every temporary, sized by XLA's heap
simulation of the schedule, i.e. the peak of the live temporaries (activations kept for
the backward pass, gradients, workspaces). That is the peak memory of the step on the
device that compiled it: XLA:CPU here. On a GPU the allocator adds fragmentation and
cuDNN/cuBLAS workspaces, and XLA:GPU's fusion and scheduling differ, so the figures are
a model of a GPU's peak, not a measurement of it.

XLA reads XLA_FLAGS once per process, so every (config, precision, recompute, batch) is
compiled in a fresh Python process (`measure`). Two batch sizes give the fit
peak(B) = fixed + B * per_sequence and the largest batch within a device's memory.
"""

import glob
import json
import os
import re
import subprocess
import sys
import tempfile
from typing import Dict, Sequence

import tensorflow as tf
import tf_keras

from xlnet_tf.benchmarks import step_speed
from xlnet_tf.benchmarks.timing import cpu_description
from xlnet_tf.configs import RECOMPUTE_MODES

CONFIG_NAMES = ("base", "large")
PRECISIONS = {"fp32": "float32", "bf16": "mixed_bfloat16"}   # name: Keras policy
# Device memories (GiB, 2**30 bytes: a "16 GB" V100 has 16 GiB) the largest batch is
# given for.
DEVICE_GIB = (16, 40, 80)
GIB = 2 ** 30

# The child process: compiles one step with the dump directory set, prints JSON.
_CHILD = ("import json, sys; from xlnet_tf.benchmarks import step_memory; "
          "print(json.dumps(step_memory.compiled_step_bytes(**json.loads(sys.argv[1]))))")
_TOTAL = re.compile(r"^Total bytes used: (\d+)", re.M)
_TEMP = re.compile(r"^allocation \d+: size (\d+), preallocated-temp", re.M)


def buffer_assignment_bytes(text: str) -> Dict[str, int]:
  """{"total": Total bytes used, "temp": the preallocated temporaries} of an XLA
  buffer-assignment dump (`*buffer-assignment.txt`)."""
  total = _TOTAL.search(text)
  if not total:
    raise ValueError("no 'Total bytes used:' line in the buffer assignment")
  return {"total": int(total.group(1)), "temp": sum(int(s) for s in _TEMP.findall(text))}


def compiled_step_bytes(name: str, batch: int, recompute: str, precision: str,
                        seq_len: int, num_predict: int, n_token: int) -> Dict[str, int]:
  """Compiles (does not run) the XLA training step of CONFIGS[name] in this process and
  returns the bytes of its buffer assignment (`buffer_assignment_bytes`).

  XLA_FLAGS must have named the dump directory (--xla_dump_to, --xla_dump_hlo_as_text)
  before XLA's first use in this process: `measure` runs this in a fresh one.
  """
  dump = re.search(r"--xla_dump_to=(\S+)", os.environ.get("XLA_FLAGS", ""))
  if not dump:
    raise ValueError("XLA_FLAGS has no --xla_dump_to: run `measure` (a fresh process)")
  policy = tf_keras.mixed_precision.global_policy()
  tf_keras.mixed_precision.set_global_policy(PRECISIONS[precision])
  try:
    config, feed, _, _ = step_speed.config_and_feed(name, seq_len, num_predict, n_token,
                                                    batch=batch, recompute=recompute)
    step = step_speed.compiled_train_step(config, feed, jit=True)
    step.experimental_get_compiler_ir(feed)(stage="optimized_hlo")   # compiles, dumps
  finally:
    tf_keras.mixed_precision.set_global_policy(policy)
  reports = glob.glob(os.path.join(dump.group(1), "*_step_*buffer-assignment.txt"))
  if not reports:
    raise RuntimeError(f"XLA wrote no buffer assignment of the step to {dump.group(1)}")
  measured = []
  for path in reports:
    with open(path, encoding="utf-8") as f:
      measured.append(buffer_assignment_bytes(f.read()))
  return max(measured, key=lambda m: m["total"])


def measure(name: str, batch: int, recompute: str, precision: str, seq_len: int = 512,
            num_predict: int = 85, n_token: int = 32000) -> Dict[str, int]:
  """`compiled_step_bytes` in a fresh Python process with its own XLA dump directory."""
  with tempfile.TemporaryDirectory() as dump:
    # LLVM's optimization level does not change the buffer assignment (decided on the
    # HLO before code generation; the same bytes at levels 0 and 3); 0 compiles faster.
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2",
               XLA_FLAGS=f"{os.environ.get('XLA_FLAGS', '')} --xla_dump_to={dump} "
                         f"--xla_dump_hlo_as_text --xla_dump_hlo_module_re=.*_step_.* "
                         f"--xla_backend_optimization_level=0")
    args = dict(name=name, batch=batch, recompute=recompute, precision=precision,
                seq_len=seq_len, num_predict=num_predict, n_token=n_token)
    result = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(args)], env=env,
                            capture_output=True, text=True, check=False)
  if result.returncode:
    raise RuntimeError(f"compiling the step {args} failed:\n{result.stderr[-3000:]}")
  return json.loads(result.stdout.strip().splitlines()[-1])


def fit(peaks: Dict[int, int]) -> Dict[str, float]:
  """peak(B) = fixed + B * per_sequence through the two smallest batch sizes measured."""
  (b1, p1), (b2, p2) = sorted(peaks.items())[:2]
  per_sequence = (p2 - p1) / (b2 - b1)
  return {"fixed": p1 - b1 * per_sequence, "per_sequence": per_sequence}


def largest_batch(fixed: float, per_sequence: float, device_gib: float) -> int:
  """The largest B with fixed + B * per_sequence within `device_gib` GiB (0: none)."""
  if per_sequence <= 0:
    raise ValueError(f"per_sequence must be positive (the peak must grow with the batch), "
                     f"got {per_sequence} bytes")
  return max(int((device_gib * GIB - fixed) // per_sequence), 0)


def benchmark(configs: Sequence[str], precisions: Sequence[str], batches: Sequence[int],
              seq_len: int, num_predict: int, n_token: int,
              device_gib: Sequence[float] = DEVICE_GIB) -> None:
  """Prints the machine, then per (config, precision, recompute) XLA's peak at each batch
  size, the fit and the largest batch per device memory (a markdown table)."""
  print(f"{cpu_description()}; TensorFlow {tf.__version__}; XLA_FLAGS="
        f"{os.environ.get('XLA_FLAGS', '')!r}")
  print(f"XLA:CPU's buffer assignment of the compiled, not run, pretraining step (seq "
        f"{seq_len}, {num_predict} targets, vocabulary {n_token}, AdamW); GiB = 2**30 "
        f"bytes. On a GPU the allocator adds fragmentation and cuDNN/cuBLAS workspace.")
  peak_columns = " | ".join(f"peak B={b} GiB" for b in batches)
  fit_columns = " | ".join(f"max B in {g:g} GiB" for g in device_gib)
  print(f"| config | precision | recompute | {peak_columns} | fixed GiB | per sequence GiB | "
        f"{fit_columns} |")
  print("|" + "---|" * (5 + len(batches) + len(device_gib)))
  for name in configs:
    for precision in precisions:
      for recompute in RECOMPUTE_MODES:
        peaks = {b: measure(name, b, recompute, precision, seq_len, num_predict,
                            n_token)["total"] for b in batches}
        line = fit(peaks)
        fits = " | ".join(str(largest_batch(line["fixed"], line["per_sequence"], g))
                          for g in device_gib)
        print(f"| {name} | {precision} | {recompute} | "
              + " | ".join(f"{peaks[b] / GIB:.2f}" for b in batches)
              + f" | {line['fixed'] / GIB:.2f} | {line['per_sequence'] / GIB:.3f} | {fits} |",
              flush=True)
