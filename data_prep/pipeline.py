"""Corpus -> sharded pretraining TFRecords + manifest: jobs, workers, restart, progress.

One job = one chunk of the input (see `corpus`): tokenized once, then one shard per pass
(`pretrain-c{chunk}-p{pass}.tfrecord`), each with its own random generator seeded by
(seed, chunk, pass). A shard is written under a temporary name and renamed when complete,
then a `.stats.json` beside it records its counts and a fingerprint of the settings; a
rerun skips every shard that has both, so a crashed run finishes with exactly the output
of an uninterrupted one. The manifest is written last.

`plan`, `ShardJob` (one shard per call of `write_shard`) and `finish` are the steps of
`create`; `data_prep.beam_pipeline` runs the same steps on Apache Beam, so its records
are the same bytes.
"""

import dataclasses
import fnmatch
import functools
import json
import multiprocessing
import os
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

from absl import logging
import numpy as np

from data_prep import corpus
from data_prep.pretraining_rows import RowSettings
from data_prep.pretraining_rows import build_rows
from xlnet_tf import paths
from xlnet_tf.data import pretrain_records
from xlnet_tf.data import storage
from xlnet_tf.data import tokenization
from xlnet_tf.data.tfrecord_writer import TFRecordWriter
from xlnet_tf.data.tfrecord_writer import crc32c_hex
from xlnet_tf.data.tfrecord_writer import file_crc32c


@dataclasses.dataclass(frozen=True)
class DataSettings:
  """Everything that determines the records (all of it goes into the manifest)."""
  rows: RowSettings
  input_format: str = "sentence_per_line"
  uncased: bool = False
  keep_accents: bool = False
  use_eod: bool = True
  num_passes: int = 1
  seed: int = 42
  chunk_bytes: int = 64 << 20
  max_line_chars: int = 100_000

  def validate(self) -> None:
    self.rows.validate()
    if self.input_format not in corpus.INPUT_FORMATS:
      raise ValueError(f"--input_format must be one of {corpus.INPUT_FORMATS}, got "
                       f"{self.input_format!r}")
    if self.num_passes < 1:
      raise ValueError(f"--num_passes must be >= 1, got {self.num_passes}")
    if self.chunk_bytes < 1 or self.max_line_chars < 1:
      raise ValueError("--chunk_bytes and --max_line_chars must be positive")

  def to_dict(self) -> Dict[str, Any]:
    values = dataclasses.asdict(self)
    values.update(values.pop("rows"))
    return values


def shard_name(chunk_index: int, pass_index: int) -> str:
  return f"pretrain-c{chunk_index:05d}-p{pass_index:02d}.tfrecord"


def create(settings: DataSettings, input_patterns: Sequence[str], spiece_model: str,
           output_dir: str, num_workers: int = 1, task_index: int = 0, num_tasks: int = 1,
           log_every_secs: float = 10.0) -> Dict[str, Any]:
  """Writes this task's shards and manifest into `output_dir`; returns the manifest.

  Everything that can be checked is checked before any work: the settings, the task
  split, the input files, the SentencePiece model (its XLNet symbols), --output_dir. The
  task holds `lock(run)` on --output_dir while it runs: a second run of the same task into
  it fails with `paths.DirectoryLockedError` (naming the first's pid, host and command)
  instead of deleting the first's files; the lock of a killed run is taken over.
  A run that fails for too little text leaves nothing behind (see `finish`).
  """
  run = plan(settings, input_patterns, spiece_model, output_dir, task_index, num_tasks)
  if num_workers < 1:
    raise ValueError(f"--num_workers must be >= 1, got {num_workers}")
  created = not storage.exists(output_dir)
  try:
    with lock(run):
      try:
        return _create_locked(run, num_workers, log_every_secs)
      except OSError:                 # e.g. a full disk: no half-written shard stays behind
        remove_partials(run)
        raise
  except NoCompleteRowError:
    if created and not storage.is_url(output_dir):
      _remove_if_empty(output_dir)
    raise


def _create_locked(run: "Plan", num_workers: int, log_every_secs: float) -> Dict[str, Any]:
  """The work of `create`, under the lock."""
  settings, task_index, num_tasks = run.settings, run.task_index, run.num_tasks
  prepare_output_dir(run)
  todo, done = [], {}
  for chunk in run.chunks:
    finished = [run.job.finished(chunk, p) for p in range(settings.num_passes)]
    if all(finished):
      done[chunk.index] = finished
    else:
      todo.append(chunk)
  logging.info("%d input files (%.1f MB) -> %d chunks, %d for task %d/%d; %d already done",
               len(run.files), run.total_bytes / 1e6, run.num_chunks, len(run.chunks),
               task_index, num_tasks, len(done))

  progress = _Progress(sum(c.num_bytes for c in todo), log_every_secs)
  for chunk_index, shard_stats in _run(run.job, todo, num_workers):
    done[chunk_index] = shard_stats
    progress.update(shard_stats[0])
  progress.finish()
  return finish(run, done)


class NoCompleteRowError(ValueError):
  """The corpus (this task's share) is too small for one row of the settings."""


def _remove_if_empty(directory: str) -> None:
  try:
    os.rmdir(directory)
  except OSError:
    pass


# ---- the steps of a run, shared with data_prep.beam_pipeline --------------------------

@dataclasses.dataclass(frozen=True)
class Plan:
  """A checked run: its settings, this task's chunks, and the job that writes a shard."""
  settings: DataSettings
  input_patterns: Tuple[str, ...]
  spiece_model: str                 # as recorded in the manifest
  spiece_sha: str
  vocab_size: int
  files: Tuple[str, ...]
  total_bytes: int
  num_chunks: int                   # of every task
  chunks: Tuple[corpus.Chunk, ...]  # this task's
  task_index: int
  num_tasks: int
  job: "ShardJob"

  @property
  def output_dir(self) -> str:
    return self.job.output_dir


def plan(settings: DataSettings, input_patterns: Sequence[str], spiece_model: str,
         output_dir: str, task_index: int = 0, num_tasks: int = 1) -> Plan:
  """Checks the settings, the task split, the inputs and the SentencePiece model (raising
  ValueError/FileNotFoundError naming the flag) and cuts the input into chunks; writes
  nothing."""
  settings.validate()
  paths.check_output_dir(output_dir, "--output_dir")   # a file, under a file, unwritable
  check_outputs_not_read(input_patterns, output_dir)
  if not 0 <= task_index < num_tasks:
    raise ValueError(f"--task_index ({task_index}) must be in 0..--num_tasks - 1 "
                     f"({num_tasks - 1})")
  try:
    sp = tokenization.load_spiece(spiece_model)             # fails on a wrong vocabulary
  except (ValueError, FileNotFoundError) as e:
    raise type(e)(f"--spiece_model: {e}") from None
  spiece_sha = tokenization.spiece_sha256(spiece_model)
  files = corpus.find_input_files(input_patterns)
  chunks = corpus.plan_chunks(files, settings.input_format, settings.chunk_bytes)
  total_bytes = sum(chunk.num_bytes for chunk in chunks)     # empty files make no chunk
  if total_bytes == 0:
    raise ValueError(f"--input_glob: the {len(files)} matching file(s) are all empty")
  mine = [c for c in chunks if c.index % num_tasks == task_index]
  if not mine:
    raise ValueError(f"--task_index {task_index} of --num_tasks {num_tasks} gets no input: "
                     f"the input makes only {len(chunks)} chunk(s) of --chunk_bytes "
                     f"{settings.chunk_bytes}")
  job = ShardJob(settings, spiece_model, output_dir, _fingerprint(settings, spiece_sha))
  return Plan(settings=settings, input_patterns=tuple(input_patterns),
              spiece_model=spiece_model, spiece_sha=spiece_sha,
              vocab_size=sp.get_piece_size(), files=tuple(files), total_bytes=total_bytes,
              num_chunks=len(chunks), chunks=tuple(mine), task_index=task_index,
              num_tasks=num_tasks, job=job)


def check_outputs_not_read(input_patterns: Sequence[str], output_dir: str) -> None:
  """Raises ValueError if an input glob matches the names this tool writes into
  --output_dir (shards, their stats, manifests): a rerun, or a later --task_index, would
  read them as input text, and its input would differ from the first run's."""
  outputs = (shard_name(0, 0), shard_name(0, 0) + ".stats.json",
             pretrain_records.MANIFEST_NAME, pretrain_records.manifest_name(0, 2))
  for pattern in input_patterns:
    matched = [name for name in outputs
               if _glob_matches(pattern, os.path.join(output_dir, name))]
    if matched:
      raise ValueError(
          f"--input_glob {pattern!r} matches the files this tool writes into --output_dir "
          f"{output_dir} (e.g. {matched[0]}): a rerun, or another --task_index, would read "
          f"its shards and manifests as input text. Write the records to a directory the "
          f"glob does not read, or narrow the glob to the text files (e.g. '*.txt')")


def _glob_matches(pattern: str, path: str) -> bool:
  """Whether `storage.glob(pattern)` would match `path` if it existed (`*` does not cross
  "/"; hidden names match, as in `storage.glob`)."""
  if not storage.is_url(pattern):
    pattern, path = os.path.abspath(pattern), os.path.abspath(path)
  pattern_parts, path_parts = pattern.split("/"), path.split("/")
  return len(pattern_parts) == len(path_parts) and all(
      fnmatch.fnmatchcase(part, glob_part) for part, glob_part in zip(path_parts, pattern_parts))


def lock_name(task_index: int, num_tasks: int) -> str:
  """The lock file of one task in --output_dir: the tasks of one run share the directory,
  two runs of the same task do not."""
  return f".lock-task-{task_index:05d}-of-{num_tasks:05d}"


def lock(run: Plan) -> paths.DirectoryLock:
  """The lock of this task on --output_dir (a context manager; take it before
  `prepare_output_dir`, which deletes the temporary files of a crashed run)."""
  return paths.DirectoryLock(run.output_dir, purpose="create_pretraining_data",
                             name=lock_name(run.task_index, run.num_tasks))


def prepare_output_dir(run: Plan) -> None:
  """Creates the output directory and removes the leftovers of a crashed run (call it
  holding `lock(run)`: without it they may be the live files of another run)."""
  storage.makedirs(run.output_dir)
  remove_partials(run)                      # leftovers of a crashed run are never complete


def remove_partials(run: Plan) -> None:
  """Removes this task's temporary files: of its shards, their stats and its manifest (call
  it holding `lock(run)`)."""
  manifest = pretrain_records.manifest_name(run.task_index, run.num_tasks)
  patterns = [f"pretrain-c{chunk.index:05d}-*.partial*" for chunk in run.chunks]
  for pattern in patterns + [f"{manifest}.partial*"]:
    for partial in storage.glob(os.path.join(run.output_dir, pattern)):
      storage.remove(partial)


def finish(run: Plan, done: Dict[int, List[Dict[str, Any]]]) -> Dict[str, Any]:
  """Writes the manifest (last) from every shard's stats ({chunk: [stats of pass 0, 1, ...]});
  returns it.

  Raises NoCompleteRowError (a ValueError) if the corpus gave no complete row, after
  removing this task's shards and stats, which are all empty: they would block a retry
  with more text or other settings ("made with other settings"). Shards with rows are
  never removed.
  """
  settings = run.settings
  manifest = _manifest(run, done)
  if manifest["counts"]["examples"] == 0:
    counts = manifest["counts"]
    for stats in done.values():
      for shard in stats:
        if shard["examples"] == 0:
          path = os.path.join(run.output_dir, shard["file"])
          for name in (path + ".stats.json", path):      # stats first: never stats alone
            if storage.exists(name):
              storage.remove(name)
    raise NoCompleteRowError(
        f"--input_glob: the corpus gave no complete row ({counts['documents']} documents, "
        f"{counts['tokens']} tokens). Each chunk's tokens are cut into --bsz_per_host "
        f"({settings.rows.bsz_per_host}) streams (halved with --bi_data) and a row needs "
        f"--seq_len ({settings.rows.seq_len}) + 1 tokens of its stream: use more text, a "
        f"smaller --bsz_per_host or --seq_len, or a larger --chunk_bytes")
  paths.write_json(os.path.join(run.output_dir,
                                pretrain_records.manifest_name(run.task_index, run.num_tasks)),
                   manifest, sort_keys=True)
  return manifest


# ---- one job -----------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class ShardJob:
  """Writes the shards of a run: the same bytes in any process (a pool worker, a Beam
  worker) for the same settings, SentencePiece model, chunk and pass."""
  settings: DataSettings
  spiece_model: str
  output_dir: str
  fingerprint: str

  def __call__(self, chunk: corpus.Chunk) -> List[Dict[str, Any]]:
    """Tokenizes the chunk and writes its shards (one per pass); returns their stats."""
    tokenized = self.tokenize(chunk)
    stats = []
    for pass_index in range(self.settings.num_passes):
      existing = self.finished(chunk, pass_index)
      stats.append(existing or self.write_shard(chunk, pass_index, tokenized))
    return stats

  def tokenize(self, chunk: corpus.Chunk) -> Tuple[np.ndarray, np.ndarray, Dict[str, int]]:
    """(tokens, sent_ids, counts) of the chunk: the input of each of its passes."""
    s = self.settings
    tokens, sent_ids, counts = corpus.tokenize_chunk(
        chunk, _spiece(self.spiece_model), input_format=s.input_format, lower=s.uncased,
        keep_accents=s.keep_accents, use_eod=s.use_eod, max_line_chars=s.max_line_chars)
    counts["bytes"] = chunk.num_bytes
    return tokens, sent_ids, counts

  def finished(self, chunk: corpus.Chunk, pass_index: int) -> Optional[Dict[str, Any]]:
    """The stats of the complete shard, None if it must be (re)made; raises on foreign
    shards."""
    return _finished_stats(self.output_dir, chunk, pass_index, self.fingerprint)

  def write_shard(self, chunk: corpus.Chunk, pass_index: int, tokenized) -> Dict[str, Any]:
    """Builds the rows of one pass (generator seeded by (seed, chunk, pass)) and writes
    them whole (`paths.atomic_output`: a retried or duplicated job never writes into
    another's file), then the `.stats.json`; returns the stats."""
    tokens, sent_ids, counts = tokenized
    s = self.settings
    rng = np.random.default_rng([s.seed, chunk.index, pass_index])
    steps = build_rows(tokens, sent_ids, _start_pieces(self.spiece_model), s.rows, rng)
    name = shard_name(chunk.index, pass_index)
    path = os.path.join(self.output_dir, name)
    shapes = pretrain_records.feature_shapes(s.rows.seq_len, s.rows.num_predict)
    num_steps = num_targets = num_random_b = 0
    with paths.atomic_output(path) as partial, TFRecordWriter(partial) as writer:
      for rows in steps:
        for row in rows:
          writer.write(pretrain_records.serialize_row(row, shapes))
          num_targets += int(np.sum(row["target_positions"] >= 0))
          num_random_b += row["b_is_random"]
        num_steps += 1
    examples = num_steps * s.rows.bsz_per_host
    stats = {"file": name, "chunk": chunk.index, "pass": pass_index,
             "fingerprint": self.fingerprint, "input": chunk.describe(),
             "steps": num_steps, "examples": examples, "targets": num_targets,
             "b_is_random": num_random_b, "size": writer.size,
             "crc32c": crc32c_hex(writer.crc32c), **counts}
    paths.write_json(path + ".stats.json", stats, sort_keys=True)
    return stats


_SPIECE_CACHE: Dict[str, Any] = {}


def _spiece(path):
  """One SentencePiece processor per process."""
  if path not in _SPIECE_CACHE:
    _SPIECE_CACHE[path] = tokenization.load_spiece(path)
  return _SPIECE_CACHE[path]


@functools.lru_cache(maxsize=4)
def _start_pieces(path):
  """The word-start table of the model, once per process."""
  return tokenization.start_piece_table(_spiece(path))


def _finished_stats(output_dir, chunk, pass_index, fingerprint) -> Optional[Dict[str, Any]]:
  """The stats of a complete shard, None if it must be (re)made; raises on foreign shards."""
  path = os.path.join(output_dir, shard_name(chunk.index, pass_index))
  if not (storage.exists(path) and storage.exists(path + ".stats.json")):
    return None
  with storage.open_file(path + ".stats.json") as f:
    stats = json.loads(f.read())
  if stats.get("fingerprint") != fingerprint or stats.get("input") != chunk.describe():
    raise ValueError(
        f"{path} was made with other settings, SentencePiece model or input files; use a "
        f"new --output_dir (or delete the old records) instead of mixing two runs")
  if "size" not in stats:                  # stats written before sizes were recorded
    stats["size"], stats["crc32c"] = file_crc32c(path)
  elif storage.size(path) != stats["size"]:
    logging.warning("%s has %d bytes, its stats record %d: writing it again", path,
                    storage.size(path), stats["size"])
    return None
  return stats


def _fingerprint(settings: DataSettings, spiece_sha: str) -> str:
  return storage.settings_key({"settings": settings.to_dict(), "spiece": spiece_sha})[:16]


def _run(job: ShardJob, chunks: List[corpus.Chunk], num_workers: int):
  """Yields (chunk index, shard stats) as jobs finish, in-process or in a process pool."""
  if num_workers == 1 or len(chunks) <= 1:
    for chunk in chunks:
      yield chunk.index, job(chunk)
    return
  # Workers are forked from a clean server process that imported this module once (without
  # TensorFlow), not from this one, which may hold TensorFlow's runtime (a gs:// path, or a
  # caller that uses TensorFlow): that runtime does not survive fork reliably.
  context = multiprocessing.get_context("forkserver")
  context.set_forkserver_preload([__name__])
  with context.Pool(min(num_workers, len(chunks))) as pool:
    for chunk, stats in zip(chunks, pool.imap(job, chunks)):
      yield chunk.index, stats


class _Progress:
  """Logs documents/s, tokens/s and an ETA (by input bytes) while the jobs run."""

  def __init__(self, total_bytes: int, every_secs: float):
    self.total_bytes, self.every_secs = total_bytes, every_secs
    self.start = self.last = time.time()
    self.bytes = self.documents = self.tokens = 0

  def update(self, stats: Dict[str, Any]) -> None:
    self.bytes += stats["bytes"]
    self.documents += stats["documents"]
    self.tokens += stats["tokens"]
    now = time.time()
    if now - self.last >= self.every_secs:
      self.last = now
      elapsed = now - self.start
      eta = elapsed * (self.total_bytes - self.bytes) / max(self.bytes, 1)
      logging.info("%5.1f%% of the input: %.0f documents/s, %.0f tokens/s, ETA %.0f s",
                   100 * self.bytes / max(self.total_bytes, 1), self.documents / elapsed,
                   self.tokens / elapsed, eta)

  def finish(self) -> None:
    elapsed = max(time.time() - self.start, 1e-9)
    logging.info("processed %d documents, %d tokens in %.1f s (%.0f tokens/s)",
                 self.documents, self.tokens, elapsed, self.tokens / elapsed)


def _manifest(run: Plan, done) -> Dict[str, Any]:
  settings = run.settings
  shards = []
  counts = {"documents": 0, "tokens": 0, "lines": 0, "bytes": 0, "undecodable_lines": 0,
            "overlong_lines": 0, "examples": 0, "steps": 0, "targets": 0, "shards": 0}
  for chunk in run.chunks:
    stats = done[chunk.index]
    for key in ("documents", "tokens", "lines", "bytes", "undecodable_lines",
                "overlong_lines"):
      counts[key] += stats[0][key]                           # once per chunk, not per pass
    for shard in stats:
      counts["examples"] += shard["examples"]
      counts["steps"] += shard["steps"]
      counts["targets"] += shard["targets"]
      counts["shards"] += 1
      shards.append({k: shard[k] for k in ("file", "chunk", "pass", "steps", "examples",
                                           "targets", "b_is_random", "size", "crc32c")})
  if counts["undecodable_lines"] or counts["overlong_lines"]:
    logging.warning("%d lines had undecodable bytes (replaced by U+FFFD), %d lines were "
                    "longer than --max_line_chars=%d (cut)", counts["undecodable_lines"],
                    counts["overlong_lines"], settings.max_line_chars)
  return {
      "format": pretrain_records.FORMAT,
      "settings": settings.to_dict(),
      "spiece": {"path": _recorded_path(run.spiece_model), "sha256": run.spiece_sha,
                 "vocab_size": run.vocab_size},
      "input": {"patterns": list(run.input_patterns), "files": len(run.files)},
      "task_index": run.task_index, "num_tasks": run.num_tasks,
      "shards": sorted(shards, key=lambda s: (s["pass"], s["chunk"])),
      "counts": counts,
  }


def _recorded_path(path: str) -> str:
  """A local path made absolute; a URL (gs://...) as it is."""
  return path if "://" in path else os.path.abspath(path)
