r"""Times create_pretraining_data (1 and 2 workers) and the reader; prints tokens/s, examples/s.

On the bundled corpus (Moby-Dick) by default, at the paper's row layout (seq 512, reuse
256, 85 targets, bi_data); a SentencePiece model is trained first unless given.

  python -m experiments.benchmark_data
  python -m experiments.benchmark_data --input_glob='big/*.txt' --spiece_model=spiece.model \
      --input_format=sentence_per_line --workers=1,2,4
"""

import glob
import os
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app  # noqa: E402
from absl import flags  # noqa: E402
from absl import logging  # noqa: E402
import tensorflow as tf  # noqa: E402

from data_prep import pipeline  # noqa: E402
from data_prep import train_sentencepiece  # noqa: E402
from data_prep.pretraining_rows import RowSettings  # noqa: E402
from xlnet_tf.data import pretrain_dataset  # noqa: E402

_HERE = os.path.dirname(os.path.abspath(__file__))
_CORPUS = os.path.join(os.path.dirname(_HERE), "data_prep", "sample_data", "moby_dick",
                       "*.txt")

_INPUT = flags.DEFINE_string("input_glob", _CORPUS, "Text to preprocess.")
_FORMAT = flags.DEFINE_string("input_format", "document_per_file", "As in "
                              "create_pretraining_data.")
_SPIECE = flags.DEFINE_string("spiece_model", None, "SentencePiece model; default: train "
                              "one (vocab 8000) on --input_glob first.")
_WORKERS = flags.DEFINE_list("workers", ["1", "2"], "Worker counts to time.")
_CHUNK = flags.DEFINE_integer("chunk_bytes", 256 << 10, "Bytes per chunk (>= workers "
                              "chunks are needed to keep every worker busy).")
_SEQ = flags.DEFINE_integer("seq_len", 512, "Row length.")
_REUSE = flags.DEFINE_integer("reuse_len", 256, "Reuse length.")
_BSZ = flags.DEFINE_integer("bsz_per_host", 8, "Streams.")
_READ_STEPS = flags.DEFINE_integer("read_batches", 200, "Batches to time in the reader.")
_COPIES = flags.DEFINE_integer("copies", 8, "Preprocess this many copies of the input (the "
                               "bundled corpus is small: copies amortise the ~4 s start-up "
                               "of the worker processes).")


def main(argv):
  del argv
  logging.set_verbosity(logging.WARNING)
  work = tempfile.mkdtemp(prefix="xlnet_bench_data_")
  spiece = _SPIECE.value
  if not spiece:
    spiece = train_sentencepiece.train(_INPUT.value, os.path.join(work, "spiece"), 8000,
                                       num_threads=2)
  settings = pipeline.DataSettings(
      rows=RowSettings(seq_len=_SEQ.value, reuse_len=_REUSE.value, num_predict=85,
                       bsz_per_host=_BSZ.value, num_core_per_host=1, bi_data=True,
                       perm_size=_REUSE.value),
      input_format=_FORMAT.value, chunk_bytes=_CHUNK.value)
  files = sorted(glob.glob(_INPUT.value))
  corpus = os.path.join(work, "corpus")
  os.makedirs(corpus)
  for copy in range(_COPIES.value):
    for path in files:
      os.symlink(path, os.path.join(corpus, f"{copy:03d}_{os.path.basename(path)}"))
  files = sorted(glob.glob(os.path.join(corpus, "*")))
  print(f"corpus: {_COPIES.value} x {_INPUT.value} = {len(files)} files, {sum(os.path.getsize(f) for f in files) / 1e6:.1f} MB; "
        f"rows seq {_SEQ.value} reuse {_REUSE.value}, {_BSZ.value} streams, bi_data; "
        f"{os.cpu_count()} CPU cores")
  print(f"{'create_pretraining_data':<28}{'seconds':>9}{'tokens/s':>12}{'examples/s':>12}")
  results = {}
  for workers in (int(w) for w in _WORKERS.value):
    out = os.path.join(work, f"records_{workers}")
    start = time.perf_counter()
    manifest = pipeline.create(settings, [os.path.join(corpus, '*')], spiece, out,
                               num_workers=workers)
    seconds = time.perf_counter() - start
    counts = manifest["counts"]
    results[workers] = counts["tokens"] / seconds
    print(f"{f'{workers} worker(s)':<28}{seconds:>9.2f}{counts['tokens'] / seconds:>12,.0f}"
          f"{counts['examples'] / seconds:>12,.0f}")
  if 1 in results and len(results) > 1:
    for workers, rate in results.items():
      if workers != 1:
        print(f"scaling {workers} workers / 1 worker: {rate / results[1]:.2f}x")

  out = os.path.join(work, f"records_{int(_WORKERS.value[0])}")
  dataset = pretrain_dataset(out, _BSZ.value, repeat=True)
  iterator = iter(dataset)
  next(iterator)                                           # build and warm up
  start = time.perf_counter()
  for _ in range(_READ_STEPS.value):
    batch = next(iterator)
  tf.nest.map_structure(lambda t: t.numpy(), batch)
  seconds = time.perf_counter() - start
  print(f"reader: {_READ_STEPS.value * _BSZ.value / seconds:,.0f} examples/s "
        f"({_READ_STEPS.value / seconds:.1f} batches/s of {_BSZ.value} with the "
        f"[{_SEQ.value}, {_SEQ.value}] perm_mask expanded)")
  print(f"artefacts in {work}")


if __name__ == "__main__":
  app.run(main)
