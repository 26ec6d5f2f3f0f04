"""Timing for the benchmarks."""

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
