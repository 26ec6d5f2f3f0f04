"""xlnet_tf.training.host_memory: after keep_freed_memory(), a large block freed and
allocated again is not page-faulted in again (what XLA:CPU does with its step buffers at
every step); without it, glibc maps fresh pages each time (the control)."""

import subprocess
import sys

import pytest

from xlnet_tf.training import host_memory

_FAULTS = r"""
import resource, sys
import numpy as np
if sys.argv[1] == "keep":
  from xlnet_tf.training import host_memory
  assert host_memory.keep_freed_memory()
def faults_of_one_round():
  before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
  block = np.ones(16 * 2**20, np.float32)       # 64 MB: above glibc's mmap threshold
  del block
  return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
faults_of_one_round()                             # the first time pages are always new
print(max(faults_of_one_round() for _ in range(3)))
"""


def _faults(mode: str) -> int:
  done = subprocess.run([sys.executable, "-c", _FAULTS, mode], capture_output=True,
                        text=True, check=True)
  return int(done.stdout.split()[-1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")
def test_a_freed_block_is_reused_without_page_faults():
  huge_pages = 64 * 2**20 // (2 * 2**20)          # at least one fault per 2 MB page
  assert _faults("default") >= huge_pages          # glibc unmaps it and maps it again
  assert _faults("keep") < 8                       # kept: no new pages


def test_it_is_idempotent():
  first = host_memory.keep_freed_memory()
  assert host_memory.keep_freed_memory() is first
