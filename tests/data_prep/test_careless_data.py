"""The data tools as a careless user runs them (issue 27, items 2, 3, 6, 12 and 13): half a
multi-task dataset or an empty manifest passed as sound, a SentencePiece model retrained in
place after the records were made, two train_sentencepiece runs into one --model_prefix and
its half-written outputs, hand-edited manifest fields of the wrong type, and an
--output_dir that the input glob reads.

The checks are made in-process (fast); the tools' command lines (one-line refusals, the
exit status, a second live run) are slow."""

import glob
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

from data_prep import pipeline
from data_prep import train_sentencepiece
from helpers import CORPUS_GLOB
from helpers import PRETRAIN_SETTINGS
from helpers import pretrain_data_flags
from xlnet_tf import paths
from xlnet_tf.data import pretrain_records
from xlnet_tf.data import tokenization

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _tool(*args, timeout=300):
  return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True,
                        text=True, timeout=timeout)


def _copy_records(records_dir, tmp_path):
  out = tmp_path / "records"
  shutil.copytree(records_dir, out)
  return out


def _edit_manifest(directory, edit):
  path = os.path.join(directory, pretrain_records.MANIFEST_NAME)
  manifest = json.loads(open(path).read())
  edit(manifest)
  paths.write_json(path, manifest, sort_keys=True)
  return path


def _refused_by_pretraining(directory, message):
  """Pretraining's check of the records raises `message`."""
  with pytest.raises(ValueError, match=re.escape(message)):
    pretrain_records.check_data(str(directory))


def _refused_by_verify(directory, message):
  """verify_records exits 2 with `message` in one line."""
  verified = _tool("data_prep.verify_records", str(directory))
  assert verified.returncode == 2, verified.stdout + verified.stderr
  assert "all sound" not in verified.stdout and "Traceback" not in verified.stderr
  assert verified.stderr.count("\n") == 1 and message in verified.stderr, verified.stderr


# ---- 2: half a dataset, a manifest without shards -------------------------------------------

def _half_a_dataset(pretraining_records, spiece_model, tmp_path):
  """(records of task 0 of 2, what is wrong with them)."""
  _, inputs = pretraining_records
  out = tmp_path / "records"
  pipeline.create(PRETRAIN_SETTINGS, inputs, spiece_model, str(out), task_index=0,
                  num_tasks=2)
  return out, (f"{out}: manifests of tasks [0] found, expected all 2 tasks (0..1); missing "
               f"manifest.task-00001-of-00002.json: a task has not finished")


def _no_shards(pretraining_records, spiece_model, tmp_path):
  """(records whose manifest lists no shards, what is wrong with them)."""
  del spiece_model
  out = _copy_records(pretraining_records[0], tmp_path)
  path = _edit_manifest(out, lambda m: m.update(shards=[]))
  return out, f"{path}: lists no shards (\"shards\": [])"


def _wrong_field(pretraining_records, spiece_model, tmp_path):
  """(records whose manifest has a string for settings.seq_len, what is wrong with them)."""
  del spiece_model
  out = _copy_records(pretraining_records[0], tmp_path)
  path = _edit_manifest(out, lambda m: m["settings"].update(seq_len="128"))
  return out, f'{path}: field settings.seq_len is "128", expected an integer'


def test_one_task_of_two_is_not_a_whole_dataset(pretraining_records, spiece_model, tmp_path):
  """Pretraining refuses the records of one task of two, naming the missing manifest."""
  out, message = _half_a_dataset(pretraining_records, spiece_model, tmp_path)
  _refused_by_pretraining(out, message)
  with pytest.raises(ValueError, match="missing manifest.task-00001-of-00002.json"):
    pretrain_records.load_manifest(str(out / "manifest.task-00000-of-00002.json"))


def test_a_manifest_without_shards_is_not_sound(pretraining_records, tmp_path):
  """Pretraining refuses a manifest that lists no shards."""
  out, message = _no_shards(pretraining_records, None, tmp_path)
  _refused_by_pretraining(out, message)


# ---- 12: hand-edited manifest fields ---------------------------------------------------------

@pytest.mark.parametrize("edit, message", [
    (lambda m: m["settings"].update(seq_len="128"),
     'field settings.seq_len is "128", expected an integer'),
    (lambda m: m["settings"].pop("reuse_len"),
     "field settings.reuse_len is missing (expected an integer)"),
    (lambda m: m["settings"].update(bi_data="yes"),
     'field settings.bi_data is "yes", expected true or false'),
    (lambda m: m["spiece"].pop("vocab_size"),
     "field spiece.vocab_size is missing (expected an integer)"),
    (lambda m: m["shards"][1].update(examples=None),
     "field shards[1].examples is null, expected an integer"),
    (lambda m: m["shards"][0].pop("file"),
     "field shards[0].file is missing (expected a string)"),
    (lambda m: m.update(counts=[]), "field counts is [], expected an object {...}"),
])
def test_a_hand_edited_manifest_field_is_named_with_its_type(pretraining_records, tmp_path,
                                                             edit, message):
  out = _copy_records(pretraining_records[0], tmp_path)
  path = _edit_manifest(out, edit)
  with pytest.raises(ValueError, match=re.escape(f"{path}: {message}")):
    pretrain_records.check_data(str(out))


@pytest.mark.slow
def test_verify_names_what_is_unsound_in_one_line(pretraining_records, spiece_model,
                                                  tmp_path):
  """`python -m data_prep.verify_records` exits 2 with one line saying what is wrong (and
  not "all sound") for half a dataset, a manifest without shards and a wrong manifest
  field; pretraining's check raises the same message."""
  for make in (_half_a_dataset, _no_shards, _wrong_field):
    work = tmp_path / make.__name__.strip("_")
    work.mkdir()
    out, message = make(pretraining_records, spiece_model, work)
    _refused_by_verify(out, message)
    _refused_by_pretraining(out, message)


# ---- 3: the SentencePiece model retrained in place -------------------------------------------

def _small_corpus(tmp_path, lines=300):
  text = []
  for path in sorted(glob.glob(CORPUS_GLOB)):
    text.extend(line for line in open(path, encoding="utf-8").read().splitlines() if line)
  corpus = tmp_path / "corpus.txt"
  corpus.write_text("\n".join(text[:lines]) + "\n", encoding="utf-8")
  return str(corpus)


def test_records_refuse_a_retrained_sentencepiece_model(pretraining_records, spiece_model,
                                                        tmp_path):
  """The records name their model and its sha256; the model is retrained in place
  (--overwrite) afterwards: pretraining refuses before any model work, naming both files,
  instead of shipping the new model as final/spiece.model."""
  prefix = tmp_path / "spiece"
  shutil.copy(spiece_model, f"{prefix}.model")
  out = _copy_records(pretraining_records[0], tmp_path)
  manifest_path = _edit_manifest(out, lambda m: m["spiece"].update(path=f"{prefix}.model"))
  assert pretrain_records.check_data(str(out))["spiece"]["path"] == f"{prefix}.model"

  train_sentencepiece.train(_small_corpus(tmp_path), str(prefix), 300, num_threads=2,
                            overwrite=True)
  with pytest.raises(ValueError, match=re.escape(
      f"--train_data {out}: the SentencePiece model {prefix}.model is not the one the "
      f"records were made with: its sha256 is {tokenization.spiece_sha256(f'{prefix}.model')}, "
      f"{manifest_path} records {tokenization.spiece_sha256(spiece_model)}")):
    pretrain_records.check_data(str(out))


@pytest.mark.slow
def test_train_sentencepiece_refuses_to_replace_a_model_without_overwrite(tmp_path):
  corpus = _small_corpus(tmp_path)
  prefix = tmp_path / "spiece"
  command = ["data_prep.train_sentencepiece", f"--input={corpus}",
             f"--model_prefix={prefix}", "--vocab_size=300", "--num_threads=2"]
  assert _tool(*command).returncode == 0
  model = open(f"{prefix}.model", "rb").read()
  again = _tool(*command[:-2], "--vocab_size=400", "--num_threads=2")
  assert again.returncode != 0 and "Traceback" not in again.stderr
  assert (f"train_sentencepiece: --model_prefix {prefix}: {prefix}.model exists; pass "
          f"--overwrite to replace it") in again.stderr, again.stderr
  assert open(f"{prefix}.model", "rb").read() == model

  replaced = _tool(*command[:-2], "--vocab_size=400", "--num_threads=2", "--overwrite")
  assert replaced.returncode == 0, replaced.stderr
  assert (f"--overwrite: replacing {prefix}.model (sha256 "
          f"{hashlib.sha256(model).hexdigest()})") in replaced.stderr
  assert tokenization.load_spiece(f"{prefix}.model").get_piece_size() == 400


# ---- 6: two train_sentencepiece runs into one prefix; half-written outputs -------------------

@pytest.mark.slow
def test_second_train_sentencepiece_run_into_a_live_prefix_is_refused(tmp_path):
  """Run 1 (vocabulary 300) is paused while it holds the prefix: run 2 (400) is refused
  naming run 1, and the model is run 1's."""
  corpus = _small_corpus(tmp_path)
  prefix = tmp_path / "spiece"
  command = ["data_prep.train_sentencepiece", f"--input={corpus}",
             f"--model_prefix={prefix}", "--num_threads=2"]
  first = subprocess.Popen([sys.executable, "-m", *command, "--vocab_size=300"], cwd=ROOT,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
  try:
    deadline = time.time() + 120
    while not (tmp_path / ".lock-spiece").exists():
      assert first.poll() is None and time.time() < deadline, "run 1 took no lock"
      time.sleep(0.01)
    first.send_signal(signal.SIGSTOP)
    second = _tool(*command, "--vocab_size=400")
    assert second.returncode != 0 and "Traceback" not in second.stderr
    assert f"{tmp_path} is in use by another run: pid {first.pid}" in second.stderr
    assert "(train_sentencepiece," in second.stderr
  finally:
    first.send_signal(signal.SIGCONT)
    first.wait()
  assert first.returncode == 0
  assert tokenization.load_spiece(f"{prefix}.model").get_piece_size() == 300
  assert sorted(os.listdir(tmp_path)) == ["corpus.txt", "spiece.model", "spiece.vocab"]


def test_a_trainer_that_dies_writing_leaves_no_half_written_model(tmp_path, monkeypatch):
  """A full disk (or a kill) while SentencePiece writes PREFIX.model and PREFIX.vocab: they
  are written under temporary names, so neither a truncated model nor an empty .vocab is
  left under the real names; a killed run's temporary files are removed by the next run."""
  corpus = _small_corpus(tmp_path)
  prefix = str(tmp_path / "spiece")

  def dies_writing(sentences, model_prefix, *args):
    del sentences, args
    with open(model_prefix + ".model", "wb") as f:
      f.write(b"\n\x0b\n\x05<unk>")              # the start of a model, then the disk is full
    open(model_prefix + ".vocab", "w").close()
    raise OSError(28, "No space left on device")

  monkeypatch.setattr(train_sentencepiece, "_run_trainer", dies_writing)
  with pytest.raises(OSError, match="No space left"):
    train_sentencepiece.train(corpus, prefix, 300)
  assert os.listdir(tmp_path) == ["corpus.txt"]

  monkeypatch.undo()
  killed = [f"{prefix}.partial-999999{suffix}" for suffix in (".model", ".vocab")]
  for path in killed:
    open(path, "w").close()
  train_sentencepiece.train(corpus, prefix, 300, num_threads=2)
  assert sorted(os.listdir(tmp_path)) == ["corpus.txt", "spiece.model", "spiece.vocab"]


# ---- 13: an --output_dir that the input glob reads -------------------------------------------

def _corpus_and_reading_globs(pretraining_records, tmp_path):
  """(a directory of 2 text files, its listing, (glob, --output_dir) pairs where the glob
  reads what the tool writes into --output_dir)."""
  _, inputs = pretraining_records
  corpus = tmp_path / "corpus"
  corpus.mkdir()
  for path in inputs[:2]:
    shutil.copy(path, corpus)
  return corpus, sorted(os.listdir(corpus)), [
      (f"{corpus}/*", corpus), (f"{tmp_path}/*/*", corpus),
      (f"{corpus}/*/*.json", corpus / "records")]


def test_output_dir_read_by_the_input_glob_is_refused_before_any_work(pretraining_records,
                                                                      spiece_model, tmp_path):
  """A glob that reads the records' directory is refused by the plan (before any work),
  naming both flags, and nothing is written; a glob of the text files only may share the
  directory with the records."""
  corpus, before, cases = _corpus_and_reading_globs(pretraining_records, tmp_path)
  for pattern, output_dir in cases:
    with pytest.raises(ValueError) as refused:
      pipeline.plan(PRETRAIN_SETTINGS, [pattern], spiece_model, str(output_dir))
    assert str(refused.value).startswith(
        f"--input_glob {pattern!r} matches the files this tool writes into --output_dir "
        f"{output_dir} (e.g. "), str(refused.value)
    assert sorted(os.listdir(corpus)) == before

  # A glob of the text files only may share the directory with the records, as before.
  run = pipeline.plan(PRETRAIN_SETTINGS, [f"{corpus}/*.txt"], spiece_model, str(corpus))
  assert len(run.files) == 2


@pytest.mark.slow
def test_create_pretraining_data_refuses_an_output_dir_its_glob_reads(pretraining_records,
                                                                      spiece_model, tmp_path):
  """The command line refuses the same globs with the message, no traceback, and writes
  nothing."""
  corpus, before, cases = _corpus_and_reading_globs(pretraining_records, tmp_path)
  for pattern, output_dir in cases:
    result = _tool("data_prep.create_pretraining_data",
                   *pretrain_data_flags([pattern], spiece_model, output_dir))
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert (f"create_pretraining_data: --input_glob {pattern!r} matches the files this tool "
            f"writes into --output_dir {output_dir} (e.g. ") in result.stderr, result.stderr
    assert sorted(os.listdir(corpus)) == before
