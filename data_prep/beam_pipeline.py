r"""create_pretraining_data on Apache Beam: the same shards, stats and manifest, byte for byte.

The pipeline runs the local tool's steps (`data_prep.pipeline`):

  driver   `pipeline.plan` (every check: settings, --input_glob, --spiece_model,
           --output_dir is writable, shards of another run), then the task's lock on
           --output_dir (held until the pipeline ends) -> the (chunk, pass) jobs
  workers  Create(jobs) | Reshuffle | ParDo: `ShardJob.write_shard` for each job that is
           not finished yet (tokenize the chunk, rows of the pass with the generator seeded
           by (seed, chunk, pass), `pretrain-c{chunk}-p{pass}.tfrecord` written under a
           unique temporary name and renamed, then its `.stats.json`) -> the stats
           | ToList | Map: `pipeline.finish`, the manifest, written last
  driver   waits for the pipeline and returns the manifest

Because the per-shard work is the local tool's own code and depends only on the settings,
the SentencePiece model, the chunk and the pass, the output does not depend on the runner,
the number of workers, bundling or retries: the shards, their `.stats.json` and the
manifest are the same bytes as `python -m data_prep.create_pretraining_data` writes (the
manifest has no run-specific fields). A rerun skips finished shards, like the local tool.
A job tokenizes its chunk itself (a worker keeps the last tokenized chunk), so with
--num_passes=P a chunk is tokenized up to P times; in exchange, chunks x passes jobs can
run at once.

Files are read and written through `xlnet_tf.data.storage` (`tf.io.gfile` for URLs), so
--input_glob, --output_dir and --spiece_model may be gs:// (or other tf.io.gfile) paths;
a gs:// SentencePiece model is copied to a local temporary file once per worker process.

Runners (the workers need this repository's `data_prep` and `xlnet_tf` packages and the
packages of requirements.txt + requirements-beam.txt, at the versions of the launching
machine: build the SDK container of Dockerfile.beam (how: its header), since installing
TensorFlow at every worker start through --requirements_file is slow; see
docs/pretraining-data.md, "On a distributed engine"):

  # DirectRunner, in this process (add `-- --direct_num_workers=2
  # --direct_running_mode=multi_processing` for worker processes)
  python -m data_prep.create_pretraining_data_beam --input_glob='corpus/*.txt' \
      --spiece_model=spiece.model --output_dir=records [the data flags of
      create_pretraining_data]

  # Dataflow: every path on GCS
  python -m data_prep.create_pretraining_data_beam --runner=DataflowRunner \
      --input_glob='gs://BUCKET/corpus/*.txt' --spiece_model=gs://BUCKET/spiece.model \
      --output_dir=gs://BUCKET/records [data flags] \
      -- --project=PROJECT --region=REGION --temp_location=gs://BUCKET/tmp \
      --sdk_container_image=REGION-docker.pkg.dev/PROJECT/REPO/xlnet-tf-beam:latest \
      --sdk_location=container

  # Flink / Spark (portable runners; paths the workers can read: a shared file system
  # or gs://, hdfs:// through tf.io.gfile)
  python -m data_prep.create_pretraining_data_beam --runner=FlinkRunner ... \
      -- --flink_master=HOST:8081 --environment_type=DOCKER \
      --environment_config=xlnet-tf-beam:latest
  python -m data_prep.create_pretraining_data_beam --runner=SparkRunner ... \
      -- --spark_master_url=spark://HOST:7077 --environment_type=DOCKER \
      --environment_config=xlnet-tf-beam:latest

Beam pipeline options go after `--` or in --beam_pipeline_options (comma-separated).
"""

import dataclasses
import hashlib
import json
import os
import re
import tempfile
import uuid
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from absl import logging
import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

from data_prep import corpus
from data_prep import pipeline
from xlnet_tf.data import pretrain_records
from xlnet_tf.data import storage

DEFAULT_RUNNER = "DirectRunner"


def split_options(text: str) -> List[str]:
  """`--project=p,--region=r` -> ["--project=p", "--region=r"] (a comma inside a value,
  as in `--experiments=a,b`, stays: the list is cut only before `--`)."""
  text = text.strip()
  return [part.strip() for part in re.split(r",(?=\s*--)", text)] if text else []


def plan(settings: pipeline.DataSettings, input_patterns: Sequence[str], spiece_model: str,
         output_dir: str, runner: str = DEFAULT_RUNNER, task_index: int = 0,
         num_tasks: int = 1) -> pipeline.Plan:
  """Every check before the pipeline launches; raises ValueError/FileNotFoundError (or
  NotADirectoryError/PermissionError for a local --output_dir) naming the flag. Writes
  nothing, except a probe file in a URL --output_dir (which it creates)."""
  if _is_dataflow(runner):
    local = [f"--{name}={value}" for name, value in
             [("input_glob", p) for p in input_patterns] + [("spiece_model", spiece_model),
                                                            ("output_dir", output_dir)]
             if not storage.is_url(value)]
    if local:
      raise ValueError(f"--runner={runner}: Dataflow workers cannot read or write local "
                       f"paths; use gs:// for {', '.join(local)}")
  if not storage.exists(spiece_model):
    raise FileNotFoundError(f"--spiece_model: {spiece_model!r} does not exist")
  checked = pipeline.plan(settings, input_patterns, local_spiece_model(spiece_model),
                          output_dir, task_index, num_tasks)
  # The manifest records the model as given; workers copy a gs:// model themselves.
  checked = dataclasses.replace(
      checked, spiece_model=spiece_model,
      job=dataclasses.replace(checked.job, spiece_model=spiece_model))
  if storage.is_url(output_dir):             # a local one was checked by pipeline.plan
    check_writable(output_dir)
  done = sum(checked.job.finished(chunk, p) is not None            # raises on foreign shards
             for chunk in checked.chunks for p in range(settings.num_passes))
  logging.info("%d input files (%.1f MB) -> %d chunks, %d for task %d/%d: %d shard jobs, "
               "%d already done", len(checked.files), checked.total_bytes / 1e6,
               checked.num_chunks, len(checked.chunks), task_index, num_tasks,
               len(checked.chunks) * settings.num_passes, done)
  return checked


def build(root: beam.Pipeline, checked: pipeline.Plan) -> beam.PCollection:
  """Adds the shard jobs and the manifest to `root`; the result holds the manifest."""
  jobs = [(chunk.index, p)
          for chunk in checked.chunks for p in range(checked.settings.num_passes)]
  return (root
          | "ShardJobs" >> beam.Create(jobs, reshuffle=False)
          | "Spread" >> beam.Reshuffle()
          | "WriteShards" >> beam.ParDo(WriteShardFn(checked.job, checked.chunks))
          | "AllStats" >> beam.combiners.ToList()
          | "WriteManifest" >> beam.Map(write_manifest, checked))


def run(settings: pipeline.DataSettings, input_patterns: Sequence[str], spiece_model: str,
        output_dir: str, runner: str = DEFAULT_RUNNER, beam_args: Sequence[str] = (),
        task_index: int = 0, num_tasks: int = 1) -> Dict[str, Any]:
  """Checks everything, runs the pipeline and waits for it; returns the manifest.

  Args:
    settings, input_patterns, spiece_model, output_dir, task_index, num_tasks: as for
      `pipeline.create`.
    runner: a Beam runner name (DirectRunner, DataflowRunner, FlinkRunner, SparkRunner...).
    beam_args: further Beam pipeline options, e.g. ["--project=p", "--region=r"].
  """
  checked = plan(settings, input_patterns, spiece_model, output_dir, runner, task_index,
                 num_tasks)
  # The launcher holds the task's lock on --output_dir until the pipeline has finished, as
  # the local tool does: a second run is refused before it deletes the first's files.
  with pipeline.lock(checked):
    pipeline.prepare_output_dir(checked)
    options = PipelineOptions(list(beam_args), runner=runner)
    with beam.Pipeline(options=options) as root:
      build(root, checked)
    path = os.path.join(output_dir, pretrain_records.manifest_name(task_index, num_tasks))
    with storage.open_file(path) as f:
      return json.loads(f.read())


# ---- on the workers --------------------------------------------------------------------------

class WriteShardFn(beam.DoFn):
  """(chunk index, pass) -> the shard's stats, writing the shard unless it is finished."""

  def __init__(self, job: pipeline.ShardJob, chunks: Iterable[corpus.Chunk]):
    super().__init__()
    self._job = job
    self._chunks = {chunk.index: chunk for chunk in chunks}
    self._written = beam.metrics.Metrics.counter("xlnet_pretraining", "shards_written")
    self._skipped = beam.metrics.Metrics.counter("xlnet_pretraining", "shards_skipped")
    self._examples = beam.metrics.Metrics.counter("xlnet_pretraining", "examples")
    self._local_job: Optional[pipeline.ShardJob] = None
    self._tokenized: Tuple[Optional[int], Any] = (None, None)

  def setup(self):
    self._local_job = dataclasses.replace(
        self._job, spiece_model=local_spiece_model(self._job.spiece_model))
    self._tokenized = (None, None)

  def process(self, element: Tuple[int, int]):
    chunk_index, pass_index = element
    chunk = self._chunks[chunk_index]
    job = self._local_job
    stats = job.finished(chunk, pass_index)
    if stats is not None:
      self._skipped.inc()
      yield stats
      return
    if self._tokenized[0] != chunk_index:
      self._tokenized = (None, None)                       # free the last one first
      self._tokenized = (chunk_index, job.tokenize(chunk))
    # Written whole under a name of its own: a retried or duplicated job never writes into
    # another's file.
    stats = job.write_shard(chunk, pass_index, self._tokenized[1])
    self._written.inc()
    self._examples.inc(stats["examples"])
    yield stats


def write_manifest(all_stats: List[Dict[str, Any]],
                   checked: pipeline.Plan) -> Dict[str, Any]:
  """Writes the manifest (after every shard) from the stats of all shards."""
  done: Dict[int, List[Dict[str, Any]]] = {}
  for stats in sorted(all_stats, key=lambda s: (s["chunk"], s["pass"])):
    done.setdefault(stats["chunk"], []).append(stats)
  expected = {chunk.index: list(range(checked.settings.num_passes))
              for chunk in checked.chunks}
  got = {index: [s["pass"] for s in stats] for index, stats in done.items()}
  if got != expected:
    raise RuntimeError(f"stats of the shards do not match the jobs: expected (chunk: passes) "
                       f"{expected}, got {got}")
  return pipeline.finish(checked, done)


# ---- helpers ---------------------------------------------------------------------------------

_LOCAL_COPIES: Dict[str, str] = {}


def local_spiece_model(path: str) -> str:
  """`path` itself if local, else a local copy (once per process) of the gs://... model,
  which SentencePiece cannot read."""
  if not storage.is_url(path):
    return path
  if path not in _LOCAL_COPIES:
    directory = tempfile.mkdtemp(prefix="spiece-")
    local = os.path.join(directory, hashlib.sha256(path.encode()).hexdigest()[:16]
                         + ".model")
    with storage.open_file(path, "rb") as source, open(local, "wb") as target:
      target.write(source.read())
    _LOCAL_COPIES[path] = local
  return _LOCAL_COPIES[path]


def check_writable(output_dir: str) -> None:
  """Creates `output_dir` and writes and removes a probe file, or raises ValueError."""
  probe = os.path.join(output_dir, f".write-probe-{uuid.uuid4().hex}")
  errors = (OSError,)
  if storage.is_url(output_dir):
    import tensorflow as tf  # pylint: disable=g-import-not-at-top  (tf.io.gfile's errors)
    errors += (tf.errors.OpError,)
  try:
    storage.makedirs(output_dir)
    with storage.open_file(probe, "w") as f:
      f.write("probe")
    storage.remove(probe)
  except errors as e:
    message = getattr(e, "message", None) or str(e)
    raise ValueError(f"--output_dir: cannot write to {output_dir!r} ({message})") from None


def _is_dataflow(runner: str) -> bool:
  name = runner.rsplit(".", 1)[-1].lower()
  return name in ("dataflow", "dataflowrunner")
