"""The Beam pipeline of create_pretraining_data (DirectRunner) against the local tool."""

import os
import subprocess
import sys

import pytest

beam = pytest.importorskip("apache_beam")

from data_prep import beam_pipeline  # noqa: E402  pylint: disable=g-import-not-at-top
from helpers import CORPUS_GLOB  # noqa: E402  pylint: disable=g-import-not-at-top
from helpers import PRETRAIN_SETTINGS  # noqa: E402  pylint: disable=g-import-not-at-top

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DIRECT_ARGS = ["--direct_num_workers=2", "--direct_running_mode=multi_threading"]


def _files(directory):
  return {name: open(os.path.join(directory, name), "rb").read()
          for name in sorted(os.listdir(directory))}


def test_direct_runner_writes_the_local_records_byte_for_byte(pretraining_records,
                                                              spiece_model, tmp_path):
  """Same seed and settings: the same shard names and bytes, the same .stats.json and the
  same manifest (it has no run-specific fields); a rerun redoes only a missing shard."""
  local_dir, inputs = pretraining_records
  out = tmp_path / "beam"
  manifest = beam_pipeline.run(PRETRAIN_SETTINGS, inputs, spiece_model, str(out),
                               runner="DirectRunner", beam_args=DIRECT_ARGS)
  local, ours = _files(local_dir), _files(out)
  assert sorted(ours) == sorted(local)                  # shards, stats, manifest; no partials
  assert sum(name.endswith(".tfrecord") for name in ours) == 4
  for name in local:
    assert ours[name] == local[name], name
  assert manifest["counts"]["shards"] == 4 and manifest["counts"]["examples"] > 0

  shards = sorted(name for name in ours if name.endswith(".tfrecord"))
  os.remove(out / shards[-1])                              # lost with a crash
  (out / (shards[0] + ".partial-abc")).write_bytes(b"half a shard")
  os.remove(out / "manifest.json")
  kept = {name: os.stat(out / name).st_mtime_ns for name in shards[:-1]}
  beam_pipeline.run(PRETRAIN_SETTINGS, inputs, spiece_model, str(out))
  assert {name: os.stat(out / name).st_mtime_ns for name in shards[:-1]} == kept
  assert _files(out) == local


def _no_launch(*args, **kwargs):
  raise AssertionError("the pipeline was launched despite bad input")


@pytest.mark.parametrize("bad, error, message", [
    ("spiece", FileNotFoundError, r"--spiece_model: '.*missing\.model' does not exist"),
    ("glob", FileNotFoundError, r"--input_glob: no file matches '.*nothing\*'"),
    ("output", NotADirectoryError,
     r"--output_dir: .*a_file/out lies under .*a_file, which is a file"),
])
def test_bad_input_fails_before_the_pipeline_launches(bad, error, message, spiece_model,
                                                      tmp_path, monkeypatch):
  monkeypatch.setattr(beam_pipeline.beam, "Pipeline", _no_launch)
  (tmp_path / "a_file").write_text("not a directory")
  args = dict(input_patterns=[CORPUS_GLOB], spiece_model=spiece_model,
              output_dir=str(tmp_path / "out"))
  if bad == "spiece":
    args["spiece_model"] = str(tmp_path / "missing.model")
  elif bad == "glob":
    args["input_patterns"] = [str(tmp_path / "nothing*")]
  else:
    args["output_dir"] = str(tmp_path / "a_file" / "out")
  with pytest.raises(error, match=message):
    beam_pipeline.run(PRETRAIN_SETTINGS, **args)
  assert not (tmp_path / "out").exists()


def test_dataflow_needs_gcs_paths_and_options_are_split():
  with pytest.raises(ValueError, match=r"use gs:// for --input_glob=corpus/\*.txt, "
                                       r"--spiece_model=spiece.model$"):
    beam_pipeline.plan(PRETRAIN_SETTINGS, ["corpus/*.txt"], "spiece.model",
                       "gs://bucket/records", runner="DataflowRunner")
  assert beam_pipeline.split_options("--project=p, --experiments=a,b,--region=r") == [
      "--project=p", "--experiments=a,b", "--region=r"]
  assert beam_pipeline.split_options("  ") == []


@pytest.mark.slow
def test_command_line_shares_the_flags_and_names_the_bad_one(tmp_path):
  s = PRETRAIN_SETTINGS.rows
  result = subprocess.run(
      [sys.executable, "-m", "data_prep.create_pretraining_data_beam",
       f"--input_glob={CORPUS_GLOB}", f"--spiece_model={tmp_path / 'missing.model'}",
       f"--output_dir={tmp_path / 'out'}", f"--seq_len={s.seq_len}",
       f"--reuse_len={s.reuse_len}", "--", "--direct_num_workers=1"],
      cwd=ROOT, capture_output=True, text=True, timeout=300)
  assert result.returncode != 0
  assert "--spiece_model: " in result.stderr and "missing.model" in result.stderr
  assert not (tmp_path / "out").exists()
