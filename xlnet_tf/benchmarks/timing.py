"""Timing for the benchmarks (xlnet_tf.benchmarks, experiments/benchmark_*.py): the median
of timed calls, the CPU's description and its bfloat16 instructions."""

import time

import numpy as np


def median_seconds(fn, steps: int) -> float:
  """Median seconds per call over `steps` calls, after one warm-up call (tracing, XLA)."""
  fn()
  times = []
  for _ in range(steps):
    start = time.perf_counter()
    fn()
    times.append(time.perf_counter() - start)
  return float(np.median(times))


SIMD_FLAGS = ("sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512_vnni", "avx512_bf16",
              "avx_vnni", "amx_tile", "amx_bf16", "amx_int8")


def _cpuinfo():
  """(model name, flags) of /proc/cpuinfo's first processor: (None, empty set) where there
  is none (not Linux)."""
  name, flags = None, set()
  try:
    with open("/proc/cpuinfo", encoding="utf-8") as f:
      for line in f:
        key, _, value = line.partition(":")
        if key.strip() == "model name":
          name = value.strip()
        elif key.strip() == "flags":
          flags = set(value.split())
          break
  except OSError:
    pass
  return name, flags


def cpu_description() -> str:
  """'<model name>, <n> cores, flags: avx avx2 ...' (the SIMD flags of /proc/cpuinfo that
  matter for matmul speed; Linux), or the platform's processor string elsewhere."""
  import os  # pylint: disable=g-import-not-at-top
  import platform  # pylint: disable=g-import-not-at-top
  name, flags = _cpuinfo()
  name = name or platform.processor() or "unknown CPU"
  present = [flag for flag in SIMD_FLAGS if flag in flags]
  return f"{name}, {os.cpu_count()} cores, flags: {' '.join(present) or 'n/a'}"


BF16_FLAGS = ("avx512_bf16", "amx_bf16")


def cpu_flags() -> set:
  """The flags of /proc/cpuinfo's first processor (an empty set where there is none)."""
  return _cpuinfo()[1]


def bfloat16_description(flags=None) -> str:
  """Which bfloat16 instructions this CPU has, or that bfloat16 is emulated here.

  Without avx512_bf16 or amx_bf16 a bfloat16 matmul is computed by converting to float32
  and back, so a bfloat16 step measured there says nothing about bfloat16 hardware.
  """
  flags = cpu_flags() if flags is None else set(flags)
  present = [flag for flag in BF16_FLAGS if flag in flags]
  if present:
    return f"bfloat16 instructions: {' '.join(present)}"
  return ("bfloat16 instructions: none (no avx512_bf16 or amx_bf16): bfloat16 is emulated "
          "on this CPU (converted to float32), so its bfloat16 figures are not a bfloat16 "
          "speed")
