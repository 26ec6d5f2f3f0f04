"""Keep freed host memory in the process, so XLA:CPU's step buffers are not page-faulted in
again at every step.

An XLA program on the CPU gets its buffers (arguments' copies, temporaries: hundreds of MB
at base size) from TensorFlow's CPU allocator, i.e. malloc, at every execution. glibc's
malloc serves blocks above its mmap threshold (at most 32 MB) with a fresh `mmap` and
unmaps them on `free`, so each step touches those pages for the first time again: measured
on the small pretraining step under XLA (2-core AMD EPYC, 2026-11-24), 66,750 minor page
faults and about 100 ms of kernel time per step, 450 ms -> 399 ms per step with them gone.
The TensorFlow graph step reuses its buffers and is not affected.

`keep_freed_memory()` tells glibc to serve every block from its heap (`M_MMAP_MAX` = 0) and
to keep what is freed (`M_TRIM_THRESHOLD` 2 GB): the process's resident memory stays at
its peak instead of going up and down each step. The same as starting the process with
GLIBC_TUNABLES=glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=2147483647.

  >>> from xlnet_tf.training import host_memory
  >>> host_memory.keep_freed_memory()    # False where the C library is not glibc
  True
"""

import ctypes
import ctypes.util

from absl import logging

M_TRIM_THRESHOLD = -1       # <malloc.h>
M_MMAP_MAX = -4
TRIM_THRESHOLD = 2**31 - 1  # mallopt takes an int

_done = None


def keep_freed_memory() -> bool:
  """Makes glibc's malloc keep freed memory (see the module docstring); idempotent.

  Returns True if the settings are in effect, False where the C library has no `mallopt`
  (not glibc: macOS, musl), which changes nothing else.
  """
  global _done
  if _done is None:
    try:
      libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
      mallopt = libc.mallopt
    except (OSError, AttributeError):
      _done = False
    else:
      mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
      _done = bool(mallopt(M_MMAP_MAX, 0)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
      if _done:
        logging.info("malloc keeps freed memory (mmap_max 0, trim threshold 2 GB): XLA "
                     "step buffers are reused instead of page-faulted in at every step")
  return _done
