r"""Times create_pretraining_data (1 and 2 workers) and the reader, and compares tokens/s
with TF Model Garden's legacy preprocessing script on the same corpus and settings
(python -m experiments.benchmark_data, `make bench-data`).

The method, the settings and what the figures mean are the command's
(`experiments/benchmark_data.py`, its --help); this module holds the code it runs.
"""

import ctypes
import dataclasses
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from typing import Optional, Sequence

from absl import app
from absl import logging
import tensorflow as tf

from data_prep import pipeline
from data_prep import train_sentencepiece
from data_prep.pretraining_rows import RowSettings
from xlnet_tf.data.pretrain_reader import pretrain_dataset
from xlnet_tf.data import sample_data

# The directory holding the packages (the checkout, or site-packages): the launched
# processes import them from there.
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = sample_data.path("moby_dick", "*.txt")       # the default input: Moby-Dick


@dataclasses.dataclass(frozen=True)
class Layout:
  """The row layout and chunk size every tool is run with."""
  seq_len: int
  reuse_len: int
  bsz_per_host: int
  chunk_bytes: int


_NUM_PREDICT, _MASK_ALPHA, _MASK_BETA = 85, 6, 1

# The legacy script's own __main__, with bool arrays cast before `_int64_feature` (see the
# module docstring); run as a file so that it is the script's absl flags that parse argv.
_LEGACY_WRAPPER = """\
import numpy as np
from absl import app, logging
from official.legacy.xlnet import preprocess_pretrain_data as script
_int64_feature = script._int64_feature
def _cast_bool(values):
  if isinstance(values, np.ndarray) and values.dtype == np.bool_:
    values = values.astype(np.int64)
  return _int64_feature(values)
script._int64_feature = _cast_bool
script.define_flags()
logging.set_verbosity(logging.INFO)
app.run(script.create_data)
"""

# Runs a tool (a module, or a script ending in .py) as __main__ after importing what the
# tool imports first (`preload`: TensorFlow for Model Garden's scripts; our preprocessing
# package, which does not import TensorFlow), first writing when that was done (wall time
# and the process's CPU seconds): the start cost of that process, measured in it.
_LAUNCHER = """\
import importlib, json, resource, runpy, sys, time
stamp, preload, target = sys.argv[1:4]
sys.argv = [target] + sys.argv[4:]
importlib.import_module(preload)
usage = resource.getrusage(resource.RUSAGE_SELF)
with open(stamp, "w") as f:
  json.dump({"time": time.time(), "cpu": usage.ru_utime + usage.ru_stime}, f)
if target.endswith(".py"):
  runpy.run_path(target, run_name="__main__")
else:
  runpy.run_module(target, run_name="__main__", alter_sys=True)
"""

# What each tool's process imports before it starts work.
_PRELOAD = {"ours": "data_prep.pipeline", "legacy": "tensorflow", "nlp": "tensorflow"}

_ENTRY_MODULES = {
    "ours": "data_prep.create_pretraining_data",
    "legacy": "official.legacy.xlnet.preprocess_pretrain_data",
    "nlp": "official.nlp.data.create_xlnet_pretraining_data",
}


def benchmark(input_glob: str, input_format: str, spiece_model: Optional[str],
              worker_counts: Sequence[str], layout: Layout, read_batches: int, copies: int,
              references: Sequence[str], processes: Sequence[str]) -> None:
  """Prints the in-process timings (at each of `worker_counts`), the reader's,
  and with `references` the comparison with Model Garden's scripts at each of the process
  counts `processes`; the artefacts stay in a temporary directory (printed)."""
  began = time.perf_counter()
  logging.set_verbosity(logging.WARNING)
  work = tempfile.mkdtemp(prefix="xlnet_bench_data_")
  spiece = spiece_model
  if not spiece:
    spiece = train_sentencepiece.train(input_glob, os.path.join(work, "spiece"), 8000,
                                       num_threads=2)
  settings = pipeline.DataSettings(
      rows=RowSettings(seq_len=layout.seq_len, reuse_len=layout.reuse_len,
                       num_predict=_NUM_PREDICT, bsz_per_host=layout.bsz_per_host,
                       num_core_per_host=1, bi_data=True, mask_alpha=_MASK_ALPHA,
                       mask_beta=_MASK_BETA, perm_size=layout.reuse_len),
      input_format=input_format, chunk_bytes=layout.chunk_bytes)
  files = sorted(glob.glob(input_glob))
  corpus = os.path.join(work, "corpus")
  os.makedirs(corpus)
  for copy in range(copies):
    for path in files:
      os.symlink(path, os.path.join(corpus, f"{copy:03d}_{os.path.basename(path)}"))
  files = sorted(glob.glob(os.path.join(corpus, "*")))
  print(f"corpus: {copies} x {input_glob} = {len(files)} files, "
        f"{sum(os.path.getsize(f) for f in files) / 1e6:.1f} MB; "
        f"rows seq {layout.seq_len} reuse {layout.reuse_len}, {layout.bsz_per_host} "
        f"streams, bi_data; "
        f"{os.cpu_count()} CPU cores, load average {_load()}")
  print(f"{'create_pretraining_data':<28}{'seconds':>9}{'tokens/s':>12}{'examples/s':>12}")
  results = {}
  for workers in (int(w) for w in worker_counts):
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

  out = os.path.join(work, f"records_{int(worker_counts[0])}")
  dataset = pretrain_dataset(out, layout.bsz_per_host, repeat=True)
  iterator = iter(dataset)
  next(iterator)                                           # build and warm up
  start = time.perf_counter()
  for _ in range(read_batches):
    batch = next(iterator)
  tf.nest.map_structure(lambda t: t.numpy(), batch)
  seconds = time.perf_counter() - start
  print(f"reader: {read_batches * layout.bsz_per_host / seconds:,.0f} examples/s "
        f"({read_batches / seconds:.1f} batches/s of {layout.bsz_per_host} with the "
        f"[{layout.seq_len}, {layout.seq_len}] perm_mask expanded)")

  if references:
    compare(work, os.path.join(corpus, "*"), spiece, [r.strip() for r in references],
            [int(p) for p in processes], layout)
  print(f"artefacts in {work}; benchmark took {time.perf_counter() - began:.0f} s")


# ---- the comparison with Model Garden ---------------------------------------------------

def compare(work, corpus_glob, spiece, references, processes, layout):
  """Runs every tool as subprocesses on `corpus_glob`; prints the Markdown tables."""
  for reference in references:
    if reference not in ("legacy", "nlp"):
      raise app.UsageError(f"--references: unknown script {reference!r}")
  print(f"\ncomparison on the same files in sentence_per_line, every tool in its own "
        f"process(es); load average {_load()}")
  if not _become_subreaper():
    print("(CPU seconds miss the pool workers of ours: not Linux)")
  with open(os.path.join(work, "launch.py"), "w") as f:
    f.write(_LAUNCHER)
  with open(os.path.join(work, "legacy_preprocess_pretrain_data.py"), "w") as f:
    f.write(_LEGACY_WRAPPER)
  runs = []
  for n in processes:                     # interleaved, so that load drifts hit every tool
    runs.append(_run_ours(work, corpus_glob, spiece, n, layout, tasks=False))
    if n > 1:
      runs.append(_run_ours(work, corpus_glob, spiece, n, layout, tasks=True))
    for reference in references:
      runs.append(_run_model_garden(reference, work, corpus_glob, spiece, n, layout))
  print(f"load average after: {_load()}\n")
  _print_table(runs)


def _run_ours(work, corpus_glob, spiece, n, layout, tasks):
  out = os.path.join(work, f"cmp_ours_{'tasks' if tasks else 'workers'}_{n}")
  common = [_ENTRY_MODULES["ours"],
            f"--input_glob={corpus_glob}", f"--spiece_model={spiece}",
            f"--output_dir={out}",
            "--input_format=sentence_per_line", f"--seq_len={layout.seq_len}",
            f"--reuse_len={layout.reuse_len}", f"--bsz_per_host={layout.bsz_per_host}",
            "--num_core_per_host=1", "--bi_data", f"--num_predict={_NUM_PREDICT}",
            f"--mask_alpha={_MASK_ALPHA}", f"--mask_beta={_MASK_BETA}", "--num_passes=1",
            f"--chunk_bytes={layout.chunk_bytes}"]
  if tasks:
    commands = [common + ["--num_workers=1", f"--task_index={i}", f"--num_tasks={n}"]
                for i in range(n)]
    tool = "ours, --num_tasks (N procs)"
  else:
    commands = [common + [f"--num_workers={n}"]]
    tool = "ours, --num_workers (1 proc + pool)"
  run = _run_concurrently(work, commands, out, _PRELOAD["ours"])
  tokens = 0
  for path in glob.glob(os.path.join(out, "manifest*.json")):
    with open(path) as f:
      tokens += json.load(f)["counts"]["tokens"]
  rows = _count_records(glob.glob(os.path.join(out, "*.tfrecord")))
  return dict(run, tool=tool, key="ours", n=n, tokens=tokens, rows=rows)


def _run_model_garden(reference, work, corpus_glob, spiece, n, layout):
  out = os.path.join(work, f"cmp_{reference}_{n}")
  if reference == "legacy":
    common = [os.path.join(work, "legacy_preprocess_pretrain_data.py"),
              f"--input_glob={corpus_glob}", f"--sp_path={spiece}",
              f"--save_dir={out}", f"--seq_len={layout.seq_len}",
              f"--reuse_len={layout.reuse_len}", f"--bsz_per_host={layout.bsz_per_host}",
              "--num_core_per_host=1", "--use_tpu=false",
              "--bi_data", f"--num_predict={_NUM_PREDICT}", f"--mask_alpha={_MASK_ALPHA}",
              f"--mask_beta={_MASK_BETA}", "--uncased=false", "--use_eod",
              "--from_raw_text", "--pass_id=0"]
    commands = [common + [f"--task={i}", f"--num_task={n}"] for i in range(n)]
    pattern, records = r"Raw data shape \((\d+), (\d+)\)", "tfrecords/*.tfrecords"
    tool = "MG legacy preprocess_pretrain_data"
  else:
    common = [_ENTRY_MODULES["nlp"], f"--input_file={corpus_glob}",
              f"--sp_model_file={spiece}", f"--save_dir={out}",
              f"--seq_length={layout.seq_len}", f"--reuse_length={layout.reuse_len}",
              f"--per_host_batch_size={layout.bsz_per_host}", "--num_cores_per_host=1",
              "--bi_data",
              "--do_lower_case=false", "--use_eod_token", "--num_passes=1"]
    commands = [common + [f"--task_id={i}", f"--num_tasks={n}"] for i in range(n)]
    pattern, records = r"Tokens shape: \((\d+), (\d+)\)", "*.tfrecord-*-of-*"
    tool = "MG nlp create_xlnet_pretraining_data"
  run = _run_concurrently(work, commands, out, _PRELOAD[reference])
  tokens = 0
  for log in glob.glob(os.path.join(out, "log.*.txt")):
    with open(log) as f:
      shape = re.search(pattern, f.read())
    if shape is None:
      raise RuntimeError(f"{log}: no {pattern!r} line, cannot count the tokens")
    # With bi_data the [bsz, steps] array is bsz/2 forward streams and their reversals.
    tokens += int(shape.group(2)) * int(shape.group(1)) // 2
  rows = _count_records([path for path in glob.glob(os.path.join(out, records))
                         if not path.endswith(".json")])
  return dict(run, tool=tool, key=reference, n=n, tokens=tokens, rows=rows)


def _run_concurrently(work, commands, out, preload):
  """Starts every command (a module or script and its flags) at once through the
  launcher, logs in `out`/log.<i>.txt. Returns {seconds: wall from the launch to the exit
  of the last one, cpu: CPU seconds (user + system) of the processes and all their
  descendants, start_seconds: mean wall until `preload` was imported in each process,
  start_cpu: their CPU seconds until then}. Raises with the end of the log if one fails."""
  os.makedirs(out, exist_ok=True)
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=_ROOT)
  before = _children()
  logs, procs, launched = [], [], []
  start = time.perf_counter()
  for i, command in enumerate(commands):
    logs.append(open(os.path.join(out, f"log.{i}.txt"), "w"))
    launched.append(time.time())
    procs.append(subprocess.Popen(
        [sys.executable, os.path.join(work, "launch.py"),
         os.path.join(out, f"started.{i}.json"), preload] + command,
        cwd=_ROOT, env=env, stdout=logs[-1], stderr=subprocess.STDOUT))
  cpu = 0.0
  for proc in procs:
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    cpu += usage.ru_utime + usage.ru_stime
  seconds = time.perf_counter() - start
  cpu += _reap_orphans(before)
  for log in logs:
    log.close()
  for i, proc in enumerate(procs):
    if proc.returncode:
      with open(os.path.join(out, f"log.{i}.txt")) as f:
        tail = f.read()[-3000:]
      raise RuntimeError(f"{' '.join(commands[i])} exited with {proc.returncode}:\n{tail}")
  started = []
  for i in range(len(commands)):
    with open(os.path.join(out, f"started.{i}.json")) as f:
      started.append(json.load(f))
  return {"seconds": seconds, "cpu": cpu,
          "start_seconds": sum(s["time"] - t for s, t in zip(started, launched))
          / len(procs),
          "start_cpu": sum(s["cpu"] for s in started)}


def _become_subreaper():
  """Makes this process inherit orphaned descendants (a pool's forkserver outlives its
  parent), so that their CPU time can be collected. Linux only; False elsewhere."""
  try:
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.prctl(36, 1, 0, 0, 0) == 0             # PR_SET_CHILD_SUBREAPER
  except (OSError, AttributeError):
    return False


def _children():
  pids = set()
  for path in glob.glob(f"/proc/{os.getpid()}/task/*/children"):
    with open(path) as f:
      pids.update(int(pid) for pid in f.read().split())
  return pids


def _reap_orphans(before, timeout=60.0):
  """Waits for the descendants that were re-parented to this process; their CPU seconds."""
  cpu, deadline = 0.0, time.time() + timeout
  time.sleep(0.2)
  while time.time() < deadline:
    orphans = _children() - before
    if not orphans:
      break
    for pid in orphans:
      try:
        _, _, usage = os.wait4(pid, 0)
        cpu += usage.ru_utime + usage.ru_stime
      except ChildProcessError:
        pass
    time.sleep(0.2)
  return cpu


def _count_records(paths):
  if not paths:
    return 0
  return int(tf.data.TFRecordDataset(sorted(paths)).reduce(
      tf.constant(0, tf.int64), lambda n, _: n + 1))


def _load():
  return " ".join(f"{x:.1f}" for x in os.getloadavg())


def _print_table(runs):
  """Two Markdown tables (wall clock; CPU time). Ratios are against the legacy script at
  the same process count, scaling against the same tool at 1 process (for ours: the
  1-worker run)."""
  for r in runs:
    r["net"] = r["seconds"] - r["start_seconds"]          # the processes start in parallel
    r["net_cpu"] = r["cpu"] - r["start_cpu"]              # but each pays its own start
    r["rate"], r["net_rate"] = r["tokens"] / r["seconds"], r["tokens"] / max(r["net"], 1e-9)
    r["cpu_rate"] = r["tokens"] / r["cpu"]
    r["net_cpu_rate"] = r["tokens"] / max(r["net_cpu"], 1e-9)
  legacy = {r["n"]: r for r in runs if r["key"] == "legacy"}
  single = {r["key"]: r for r in runs if r["n"] == 1}

  def ratio(r, key):
    ref = legacy.get(r["n"]) if r["key"] == "ours" else None
    return f"{r[key] / ref[key]:.2f}×" if ref else ""

  def scaling(r, key):
    one = single.get(r["key"]) if r["n"] > 1 else None
    return f"{r[key] / one[key]:.2f}×" if one else ""

  print("wall clock (tokens/s = corpus tokens / seconds from launch to the last exit):\n")
  print("| tool | procs | tokens | rows | s | tokens/s | tokens/s/proc | ours/legacy | "
        "N vs 1 | start s | net s | net tokens/s | net ours/legacy | net N vs 1 |")
  print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
  for r in runs:
    print(f"| {r['tool']} | {r['n']} | {r['tokens']:,} | {r['rows']:,} | "
          f"{r['seconds']:.1f} | {r['rate']:,.0f} | {r['rate'] / r['n']:,.0f} | "
          f"{ratio(r, 'rate')} | {scaling(r, 'rate')} | {r['start_seconds']:.1f} | "
          f"{r['net']:.1f} | "
          f"{r['net_rate']:,.0f} | {ratio(r, 'net_rate')} | {scaling(r, 'net_rate')} |")
  print("\nCPU time (user + system of every process and its children; independent of "
        "other jobs on the machine as long as they leave the caches alone):\n")
  print("| tool | procs | CPU s | tokens/CPU-s | ours/legacy | N vs 1 | start CPU s | "
        "net CPU s | net tokens/CPU-s | net ours/legacy | net N vs 1 |")
  print("|---|---|---|---|---|---|---|---|---|---|---|")
  for r in runs:
    print(f"| {r['tool']} | {r['n']} | {r['cpu']:.1f} | {r['cpu_rate']:,.0f} | "
          f"{ratio(r, 'cpu_rate')} | {scaling(r, 'cpu_rate')} | {r['start_cpu']:.1f} | "
          f"{r['net_cpu']:.1f} | "
          f"{r['net_cpu_rate']:,.0f} | {ratio(r, 'net_cpu_rate')} | "
          f"{scaling(r, 'net_cpu_rate')} |")
  print("\ntokens: corpus tokens each tool tokenized; rows: records read back; start: "
        "interpreter + the tool's first imports (Model Garden: TensorFlow; ours: "
        "data_prep.pipeline), measured in each launched process (wall: their mean; CPU: "
        "their sum); net = total - start (a pool's forkserver and workers import "
        "data_prep.pipeline again: that stays in net). With N processes on N idle cores, N vs 1 of "
        "tokens/s is the scaling; N vs 1 of tokens/CPU-s is the share of the work that is "
        "not overhead.")

