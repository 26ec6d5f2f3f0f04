r"""Checks every shard of a pretraining record directory against its manifest.

  python -m data_prep.verify_records records/ [--num_workers=8]

Reads every shard whole, in parallel, and checks its size and CRC-32C against the
manifest (manifests written before they were recorded: skipped), the TFRecord framing of
every record (length, its checksum, the data, its checksum) and the number of records.
Prints one line per bad shard, with the byte offset of its first bad or truncated record,
then a summary; exits with status 1 if any shard is bad (2 if the directory has no valid
manifest), 0 if all are sound.

`experiments/pretrain.py` checks only that the shards exist with their recorded sizes
before it starts (cheap); this tool is the full check, e.g. after copying records.
"""

import multiprocessing
import os
import sys
import time

from xlnet_tf import console

console.start()  # before TensorFlow is imported: the log levels of --verbosity

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from xlnet_tf.data import pretrain_records  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_integer("num_workers", max(1, min(8, os.cpu_count() or 1)),
                     "Processes reading shards at once.")


def verify(path: str, num_workers: int = 1, out=sys.stdout) -> int:
  """Checks every shard of the record directory (or manifest) `path`, printing one line
  per bad shard and a summary to `out`; returns the number of bad shards.

  Raises:
    FileNotFoundError / ValueError: no valid manifest at `path` (from `load_manifest`).
  """
  if num_workers < 1:
    raise ValueError(f"--num_workers must be >= 1, got {num_workers}")
  manifest = pretrain_records.load_manifest(path)
  shards = manifest["shards"]
  start = time.time()
  if num_workers == 1 or len(shards) <= 1:
    results = map(pretrain_records.diagnose_shard, shards)
    bad = _report(results, out)
  else:
    # A clean server process forks the workers (as in data_prep.pipeline): never a fork of
    # a process that may hold TensorFlow's runtime (a gs:// path imports it).
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([pretrain_records.__name__])
    with context.Pool(min(num_workers, len(shards))) as pool:
      bad = _report(pool.imap(pretrain_records.diagnose_shard, shards), out)
  checked_sizes = sum(shard.get("size") is not None for shard in shards)
  total = sum(shard.get("size") or 0 for shard in shards)
  note = ("" if checked_sizes == len(shards) else
          f"; {len(shards) - checked_sizes} shard(s) have no recorded size and checksum "
          f"(an older manifest): only their framing and record counts were checked")
  print(f"{path}: {len(shards)} shard(s), {total / 1e6:.1f} MB, checked in "
        f"{time.time() - start:.1f} s: "
        + (f"{bad} BAD" if bad else "all sound") + note, file=out)
  return bad


def _report(results, out) -> int:
  bad = 0
  for problem in results:
    if problem is None:
      continue
    bad += 1
    shard_path, what, offset = problem
    where = f" (first bad record at byte {offset})" if offset is not None else ""
    print(f"BAD {shard_path}: {what}{where}", file=out, flush=True)
  return bad


def main(argv):
  if len(argv) != 2:
    raise app.UsageError("usage: python -m data_prep.verify_records RECORD_DIR "
                         "[--num_workers=N]")
  try:
    bad = verify(argv[1], FLAGS.num_workers)
  except (ValueError, FileNotFoundError) as e:
    print(f"verify_records: {e}", file=sys.stderr)
    sys.exit(2)
  sys.exit(1 if bad else 0)


if __name__ == "__main__":
  app.run(main)
