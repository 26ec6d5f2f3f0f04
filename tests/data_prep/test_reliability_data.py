"""The preprocessing tools under bad input, two runs at once, kills and corrupt records.

One test per case of issue 15 that concerns data/preprocessing: two runs into one
--output_dir (5), shard sizes and checksums, the verify command and locating a bad record
(7), bad output locations (8), a run that fails for too little text (9), an overlong line
for SentencePiece (10/11), brackets in an input glob (15).

The checks are made in-process (fast); the tools' command lines (their one-line refusals,
exit statuses, runs in other processes, kills) are slow.
"""

import dataclasses
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest
import tensorflow as tf

from data_prep import corpus
from data_prep import pipeline
from data_prep import train_sentencepiece
from helpers import CORPUS_GLOB
from helpers import PRETRAIN_SETTINGS
from helpers import pretrain_data_flags
from xlnet_tf import paths
from xlnet_tf.data import pretrain_records
from xlnet_tf.data import tfrecord_writer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _tool(*args, env=None, timeout=300):
  return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True,
                        text=True, timeout=timeout, env=env)


def _shard_bytes(directory):
  return {name: open(os.path.join(directory, name), "rb").read()
          for name in sorted(os.listdir(directory)) if name.endswith(".tfrecord")}


# ---- 5: two runs into one --output_dir --------------------------------------------------------

@pytest.mark.slow
def test_second_run_into_a_live_output_dir_is_refused_and_a_killed_run_is_taken_over(
    pretraining_records, spiece_model, tmp_path):
  """Run 1 is paused (SIGSTOP) while it writes its first shard: a second run into the same
  directory must fail naming run 1, without touching run 1's `.partial` file. After kill
  -9 of run 1, a rerun takes over its stale lock and writes the uninterrupted bytes."""
  records_dir, inputs = pretraining_records
  out = tmp_path / "records"
  command = ["data_prep.create_pretraining_data", *pretrain_data_flags(inputs, spiece_model, out)]
  first = subprocess.Popen([sys.executable, "-m", *command], cwd=ROOT,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
  try:
    deadline = time.time() + 120
    while not glob.glob(str(out / "*.partial*")) and time.time() < deadline:
      assert first.poll() is None, "run 1 ended before it wrote a shard"
      time.sleep(0.01)
    first.send_signal(signal.SIGSTOP)
    partials = glob.glob(str(out / "*.partial*"))
    assert partials

    second = _tool(*command)
    assert second.returncode != 0
    assert f"{out} is in use by another run: pid {first.pid}" in second.stderr
    assert "Traceback" not in second.stderr
    assert all(os.path.exists(p) for p in partials)      # run 1's live file is untouched
    assert not (out / "manifest.json").exists()
  finally:
    first.send_signal(signal.SIGKILL)
    first.wait()

  rerun = _tool(*command)
  assert rerun.returncode == 0, rerun.stderr
  assert "taking over the stale lock of pid" in rerun.stderr
  assert _shard_bytes(out) == _shard_bytes(records_dir)
  assert not glob.glob(str(out / ".lock*")) and not glob.glob(str(out / "*.partial*"))


def test_tasks_of_one_run_lock_their_own_name(pretraining_records, spiece_model, tmp_path):
  """--task_index/--num_tasks runs share the directory: each locks only its own task."""
  _, inputs = pretraining_records
  run = pipeline.plan(PRETRAIN_SETTINGS, inputs, spiece_model, str(tmp_path), 1, 2)
  with pipeline.lock(run):
    assert os.listdir(tmp_path) == [".lock-task-00001-of-00002"]
    manifest = pipeline.create(PRETRAIN_SETTINGS, inputs, spiece_model, str(tmp_path),
                               task_index=0, num_tasks=2)
  assert manifest["task_index"] == 0 and not glob.glob(str(tmp_path / ".lock*"))


# ---- 7: sizes and checksums, verify, the offset of a bad record ------------------------------

def _damage(manifest):
  """Truncates shard 1 by 100 bytes and flips a byte of shard 2 at offset 5000; returns
  (the truncated shard, the flipped one)."""
  truncated, flipped = manifest["shards"][1], manifest["shards"][2]
  with open(truncated["path"], "r+b") as f:
    f.truncate(truncated["size"] - 100)
  with open(flipped["path"], "r+b") as f:
    f.seek(5000)
    byte = f.read(1)
    f.seek(5000)
    f.write(bytes([byte[0] ^ 0xFF]))
  return truncated, flipped


def test_shards_record_size_and_checksum_and_bad_shards_are_found(pretraining_records,
                                                                  tmp_path):
  """The manifest and each shard's stats record its size and CRC-32C; a truncated shard is
  found at start by its size, with the offset tf.data reports, and a flipped byte by the
  checksum and the record framing; a manifest written before sizes and checksums loads.
  (The verify command: the slow test below.)"""
  records_dir, _ = pretraining_records
  out = tmp_path / "records"
  shutil.copytree(records_dir, out)
  manifest = pretrain_records.load_manifest(str(out))
  for shard in manifest["shards"]:
    size, crc = tfrecord_writer.file_crc32c(shard["path"])
    assert (shard["size"], shard["crc32c"]) == (size, crc) and re.fullmatch("[0-9a-f]{8}", crc)
    stats = json.loads(open(shard["path"] + ".stats.json").read())
    assert (stats["size"], stats["crc32c"]) == (size, crc)
  pretrain_records.check_shards(manifest, "--train_data x")
  assert pretrain_records.diagnose_shards(manifest) == []

  # A truncated shard: found at start by its size; the offset is the one tf.data reports.
  # A flipped byte: the size is right, the checksum and the record framing are not.
  truncated, flipped = _damage(manifest)
  with pytest.raises(ValueError, match=re.escape(
      f"{truncated['path']}: {truncated['size'] - 100} bytes, the manifest records "
      f"{truncated['size']} (truncated)")):
    pretrain_records.check_shards(manifest, "--train_data x")
  with pytest.raises(tf.errors.DataLossError) as error:
    for _ in tf.data.TFRecordDataset(truncated["path"]):
      pass
  tf_offset = int(re.search(r"truncated record at (\d+)", error.value.message).group(1))
  problems = pretrain_records.diagnose_shards(manifest)
  assert [(p, o) for p, _, o in problems] == [(truncated["path"], tf_offset),
                                              (flipped["path"], problems[1][2])]
  assert "truncated record" in problems[0][1]
  assert "CRC-32C" in problems[1][1] and "corrupt record" in problems[1][1]
  assert problems[1][2] < 5000

  # A manifest written before sizes and checksums: it loads; framing is still checked.
  for name in glob.glob(str(out / "manifest*.json")):
    old = json.loads(open(name).read())
    for shard in old["shards"]:
      del shard["size"], shard["crc32c"]
    paths.write_json(name, old, sort_keys=True)
  old_manifest = pretrain_records.load_manifest(str(out))
  pretrain_records.check_shards(old_manifest, "--train_data x")     # existence only
  assert [p for p, _, _ in pretrain_records.diagnose_shards(old_manifest)] == [
      truncated["path"], flipped["path"]]


@pytest.mark.slow
def test_verify_finds_the_bad_shards_without_tensorflow(pretraining_records, tmp_path):
  """`python -m data_prep.verify_records --num_workers=2`, where TensorFlow cannot be
  imported: sound records are "all sound" (4 shards); after `_damage`, status 1 and one
  BAD line per bad shard with the problem and offset `diagnose_shards` gives."""
  records_dir, _ = pretraining_records
  out = tmp_path / "records"
  shutil.copytree(records_dir, out)
  blocker = tmp_path / "no_tensorflow" / "tensorflow"
  blocker.mkdir(parents=True)
  (blocker / "__init__.py").write_text("raise ImportError('verify imported tensorflow')\n")
  env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(blocker.parent), ROOT])}
  verified = _tool("data_prep.verify_records", str(out), "--num_workers=2", env=env)
  assert verified.returncode == 0, verified.stderr
  assert "4 shard(s)" in verified.stdout and "all sound" in verified.stdout

  manifest = pretrain_records.load_manifest(str(out))
  _damage(manifest)
  problems = pretrain_records.diagnose_shards(manifest)
  assert len(problems) == 2
  verified = _tool("data_prep.verify_records", str(out), "--num_workers=2", env=env)
  assert verified.returncode == 1
  bad = [line for line in verified.stdout.splitlines() if line.startswith("BAD ")]
  assert bad == [f"BAD {path}: {problem} (first bad record at byte {offset})"
                 for path, problem, offset in problems]
  assert "2 BAD" in verified.stdout


# ---- 8: bad output locations ------------------------------------------------------------------

def _unwritable_dir(tmp_path):
  """A directory this process cannot create files in (root ignores permissions: then a
  kernel file system that refuses new files, if there is one)."""
  if os.geteuid() != 0:
    directory = tmp_path / "read_only"
    directory.mkdir()
    directory.chmod(0o555)
    return str(directory)
  for candidate in ("/sys", "/proc"):
    try:
      handle, probe = tempfile.mkstemp(dir=candidate)
    except OSError:
      return candidate
    os.close(handle)
    os.remove(probe)
  pytest.skip("no unwritable directory for root")


def _bad_output_dirs(tmp_path):
  """(a file, an unwritable directory, [(--output_dir, the message naming it)] for the
  file, a path under it and the unwritable directory)."""
  a_file = tmp_path / "a_file"
  a_file.write_text("not a directory")
  unwritable = _unwritable_dir(tmp_path)
  return a_file, unwritable, [
      (a_file, f"--output_dir: {a_file} is a file"),
      (a_file / "out", f"--output_dir: {a_file}/out lies under {a_file}, which is a file"),
      (f"{unwritable}/out", f"--output_dir: cannot write to {unwritable}/out")]


def test_bad_output_locations_fail_before_any_work_naming_the_flag(pretraining_records,
                                                                   spiece_model, tmp_path,
                                                                   monkeypatch):
  """A bad --output_dir is refused by the plan, and a bad --model_prefix by
  train_sentencepiece before it trains, each naming the flag. (The command lines: the slow
  test below.)"""
  _, inputs = pretraining_records
  a_file, unwritable, cases = _bad_output_dirs(tmp_path)
  for output_dir, message in cases:
    with pytest.raises(OSError, match=re.escape(message)):
      pipeline.plan(PRETRAIN_SETTINGS, inputs[:2], spiece_model, str(output_dir))

  # train_sentencepiece checks --model_prefix before it trains (it used to train, then
  # fail to save).
  monkeypatch.setattr(train_sentencepiece, "_run_trainer", pytest.fail)
  (tmp_path / "a_dir.model").mkdir()
  for prefix, error, message in [
      (a_file / "spiece", NotADirectoryError,
       f"--model_prefix: {a_file}/spiece.model lies under {a_file}, which is a file"),
      (f"{unwritable}/spiece", PermissionError,
       f"--model_prefix: cannot write to {unwritable}/spiece.model"),
      (tmp_path / "a_dir", IsADirectoryError,
       f"--model_prefix: {tmp_path}/a_dir.model is a directory"),
      (f"{tmp_path}/out/", ValueError, "must be a path prefix such as out/spiece")]:
    with pytest.raises(error, match=re.escape(message)):
      train_sentencepiece.train(CORPUS_GLOB, str(prefix), 100)


@pytest.mark.slow
def test_the_tools_name_a_bad_output_location_in_one_line(pretraining_records, spiece_model,
                                                          tmp_path):
  """create_pretraining_data's and train_sentencepiece's command lines end non-zero with the
  message naming the flag, no traceback."""
  _, inputs = pretraining_records
  _, unwritable, cases = _bad_output_dirs(tmp_path)
  for output_dir, message in cases:
    result = _tool("data_prep.create_pretraining_data",
                   *pretrain_data_flags(inputs[:2], spiece_model, output_dir))
    assert result.returncode != 0
    assert f"create_pretraining_data: {message}" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
  result = _tool("data_prep.train_sentencepiece", f"--input={CORPUS_GLOB}",
                 f"--model_prefix={unwritable}/spiece", "--vocab_size=100")
  assert result.returncode != 0 and "Traceback" not in result.stderr
  assert f"--model_prefix: cannot write to {unwritable}/spiece.model" in result.stderr


# ---- 9: a run that fails for too little text --------------------------------------------------

def test_a_run_with_too_little_text_leaves_nothing_that_blocks_the_retry(
    pretraining_records, spiece_model, tmp_path):
  text = open(sorted(glob.glob(CORPUS_GLOB))[1], encoding="utf-8").read()
  source = tmp_path / "corpus.txt"
  source.write_text(text[:300], encoding="utf-8")
  out = tmp_path / "records"
  with pytest.raises(ValueError, match="gave no complete row"):
    pipeline.create(PRETRAIN_SETTINGS, [str(source)], spiece_model, str(out))
  assert not out.exists()                       # it made the directory: nothing is left
  out.mkdir()
  (out / "notes.txt").write_text("the user's")
  with pytest.raises(ValueError, match="gave no complete row"):
    pipeline.create(PRETRAIN_SETTINGS, [str(source)], spiece_model, str(out))
  assert os.listdir(out) == ["notes.txt"]

  # Retries into the directory of a failed run: other settings on the same text, and
  # more text with the same settings (both used to stop at "made with other settings").
  rows = dataclasses.replace(PRETRAIN_SETTINGS.rows, bsz_per_host=4, num_core_per_host=1,
                             seq_len=16, reuse_len=8, perm_size=4, num_predict=3)
  smaller = dataclasses.replace(PRETRAIN_SETTINGS, rows=rows, num_passes=1)
  assert pipeline.create(smaller, [str(source)], spiece_model,
                         str(out))["counts"]["examples"] > 0
  out2 = tmp_path / "records2"
  with pytest.raises(ValueError, match="gave no complete row"):
    pipeline.create(PRETRAIN_SETTINGS, [str(source)], spiece_model, str(out2))
  source.write_text(text, encoding="utf-8")
  manifest = pipeline.create(PRETRAIN_SETTINGS, [str(source)], spiece_model, str(out2))
  assert manifest["counts"]["examples"] > 0

  # A failing run never deletes another, complete run's shards.
  records_dir, _ = pretraining_records
  other = tmp_path / "complete"
  shutil.copytree(records_dir, other)
  before = _shard_bytes(other)
  source.write_text(text[:300], encoding="utf-8")
  with pytest.raises(ValueError):
    pipeline.create(PRETRAIN_SETTINGS, [str(source)], spiece_model, str(other))
  assert _shard_bytes(other) == before


# ---- 11: a line too long for SentencePiece ----------------------------------------------------

def test_every_line_too_long_for_sentencepiece_names_the_line_and_the_flag(tmp_path):
  path = tmp_path / "one_line.txt"
  path.write_text("\n" + "word " * 2000 + "\n", encoding="utf-8")    # 10 kB on line 2
  with pytest.raises(ValueError, match=re.escape(
      f"every line is longer than --max_sentence_length (4192 bytes), e.g. line 2 of "
      f"{path} (9999 bytes)")):
    train_sentencepiece.train(str(path), str(tmp_path / "m"), 100)
  assert not (tmp_path / "m.model").exists()


@pytest.mark.slow
def test_a_line_too_long_for_sentencepiece_is_skipped_and_named(tmp_path):
  """Some lines fit: the command trains, and says which line was skipped."""
  mixed = tmp_path / "mixed.txt"
  lines = open(sorted(glob.glob(CORPUS_GLOB))[1], encoding="utf-8").read().splitlines()
  mixed.write_text("\n".join(lines[:3] + ["word " * 2000] + lines[3:]) + "\n",
                   encoding="utf-8")
  result = _tool("data_prep.train_sentencepiece", f"--input={mixed}",
                 f"--model_prefix={tmp_path / 'mixed'}", "--vocab_size=100",
                 "--num_threads=1")
  assert result.returncode == 0, result.stderr
  assert f"bytes skipped, e.g. line 4 of {mixed} (9999 bytes)" in result.stdout


# ---- 15: brackets in an input glob ------------------------------------------------------------

def _bracketed_file(tmp_path):
  """(a text file named part[1].txt, its name escaped for a glob, the hint that says so)."""
  path = tmp_path / "part[1].txt"
  shutil.copy(sorted(glob.glob(CORPUS_GLOB))[1], path)
  escaped = str(tmp_path / "part[[]1].txt")
  hint = (f"'[' and ']' are glob syntax ('[ab]' matches one character a or b), so the file "
          f"{path} exists but matches nothing as written; write '[' as '[[]' ({escaped!r})")
  return path, escaped, hint


def test_a_glob_with_brackets_that_matches_nothing_says_brackets_are_glob_syntax(
    spiece_model, tmp_path):
  """The file's own name as a glob is refused with the hint (records and SentencePiece);
  the suggested spelling matches it; no hint without brackets. (The command line: the
  slow test below.)"""
  path, escaped, hint = _bracketed_file(tmp_path)
  with pytest.raises(FileNotFoundError, match=re.escape(hint)):
    pipeline.create(PRETRAIN_SETTINGS, [str(path)], spiece_model, str(tmp_path / "out"))
  with pytest.raises(ValueError, match=re.escape(hint)):
    train_sentencepiece.train(str(path), str(tmp_path / "m"), 100)
  assert corpus.find_input_files([escaped]) == [str(path)]       # the suggested spelling
  with pytest.raises(FileNotFoundError, match=r"no file matches '.*nothing\*'$"):
    corpus.find_input_files([str(tmp_path / "nothing*")])          # no note without brackets


@pytest.mark.slow
def test_train_sentencepiece_says_brackets_are_glob_syntax(tmp_path):
  """The command line ends non-zero with the hint."""
  path, _, hint = _bracketed_file(tmp_path)
  result = _tool("data_prep.train_sentencepiece", f"--input={path}",
                 f"--model_prefix={tmp_path / 'm'}")
  assert result.returncode != 0 and hint in result.stderr
