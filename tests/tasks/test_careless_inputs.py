"""Task inputs that do not fit the model or each other are refused before any work (issue
27): validation data of another tokenizer or record layout than the training data, a
max_seq_length that leaves no room for text, a vocabulary larger than the model's n_token.
Each refusal is one line naming the key(s), both values and both sources, and leaves no
model directory behind (the command line's: slow)."""

import dataclasses
import glob
import os
import subprocess
import sys

from official.core import task_factory
import pytest

from data_prep import pipeline
from data_prep import train_sentencepiece
from helpers import CORPUS_GLOB
from helpers import PRETRAIN_SETTINGS
from helpers import write_race_sample
from xlnet_tf.tasks import classification
from xlnet_tf.tasks import pretraining
from xlnet_tf.tasks import race
from xlnet_tf.tasks import squad
from xlnet_tf.tasks import tagging
from xlnet_tf.tasks import train_lib as driver

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIGS = os.path.join(ROOT, "experiments", "configs")
FINETUNING = {classification.KIND.experiment: "classification_demo.yaml",
              squad.KIND.experiment: "squad_demo.yaml", race.KIND.experiment: "race_demo.yaml",
              tagging.KIND.experiment: "tagging_demo.yaml"}


@pytest.fixture(scope="module")
def small_spiece(tmp_path_factory):
  """A SentencePiece model of 1000 pieces (the session's spiece_model has 4000)."""
  prefix = str(tmp_path_factory.mktemp("small_spiece") / "spiece")
  return train_sentencepiece.train(CORPUS_GLOB, prefix, vocab_size=1000,
                                   input_sentence_size=0, num_threads=2)


def _records(directory, spiece, **rows):
  """Pretraining records of 4 chapters with the tests' settings (`rows` changed)."""
  settings = dataclasses.replace(
      PRETRAIN_SETTINGS, rows=dataclasses.replace(PRETRAIN_SETTINGS.rows, **rows))
  pipeline.create(settings, sorted(glob.glob(CORPUS_GLOB))[:4], spiece, str(directory))
  return str(directory)


def _pretraining(train, validation, override=""):
  return driver.parse_params(
      pretraining.KIND.experiment, [os.path.join(CONFIGS, "pretraining_demo.yaml")],
      f"task.train_data.input_path={train},task.validation_data.input_path={validation}"
      + override)


def _finetuning(experiment, spiece, validation_spiece, tmp_path, override=""):
  data = ""
  if experiment == race.KIND.experiment:
    write_race_sample(tmp_path / "RACE", splits=("train", "dev"))
    data = f"task.data_dir={tmp_path / 'RACE'},"
  cache = tmp_path / "features"
  return driver.parse_params(
      experiment, [os.path.join(CONFIGS, FINETUNING[experiment])],
      data + f"task.train_data.spiece_model={spiece},"
      f"task.validation_data.spiece_model={validation_spiece},"
      f"task.train_data.cache_dir={cache},task.validation_data.cache_dir={cache}" + override)


# ---- validation data of another tokenizer or layout --------------------------------------

def _refusal(params, mode, tmp_path):
  """The ConfigError message with which driver.run refuses `params`, after checking that
  nothing was written (no run directory, no features)."""
  run_dir = tmp_path / "run"
  with pytest.raises(driver.ConfigError) as refused:
    driver.run(params, mode, str(run_dir))
  assert not run_dir.exists() and not (tmp_path / "features").exists()
  return str(refused.value)


def test_pretraining_validation_records_of_another_layout_are_refused(
    spiece_model, pretraining_records, tmp_path):
  records, _ = pretraining_records                          # reuse_len 32
  other = _records(tmp_path / "reuse16", spiece_model, reuse_len=16)
  assert _refusal(_pretraining(records, other), "train_and_eval", tmp_path) == (
      f"task.validation_data.input_path {other}: made with reuse_len=16, the training "
      f"records (task.train_data.input_path {records}) with reuse_len=32; the held-out "
      f"loss needs records of the training layout")


def test_pretraining_validation_records_of_another_tokenizer_are_refused(
    spiece_model, small_spiece, pretraining_records, tmp_path):
  """Training records of 1000 pieces (n_token 1000), validation records of 4000: the
  first evaluation, after training steps and a checkpoint, died in the embedding lookup
  (`indices[..] = 1636 is not in [0, 1000)`)."""
  records, _ = pretraining_records
  small = _records(tmp_path / "small", small_spiece)
  assert _refusal(_pretraining(small, records), "train_and_eval", tmp_path) == (
      f"task.validation_data.input_path {records}: made with the SentencePiece model "
      f"{spiece_model}, the training records (task.train_data.input_path {small}) with "
      f"{small_spiece} (another vocabulary); the held-out loss needs records of the "
      f"training tokenizer")


@pytest.mark.parametrize("experiment", sorted(FINETUNING))
def test_finetuning_validation_data_of_another_tokenizer_is_refused(
    experiment, spiece_model, small_spiece, tmp_path):
  params = _finetuning(experiment, spiece_model, small_spiece, tmp_path)
  assert _refusal(params, "train_and_eval", tmp_path) == (
      f"task.validation_data.spiece_model: {small_spiece} differs from the training data's "
      f"SentencePiece model {spiece_model}; held-out metrics need the tokenizer the model "
      f"is trained with: give the same file")
  copy = tmp_path / "copy.model"                             # the same model elsewhere
  copy.write_bytes(open(spiece_model, "rb").read())
  params = _finetuning(experiment, spiece_model, copy, tmp_path)
  task_factory.get_task(params.task).check(training=True, evaluating=True)


# ---- lengths that leave no room for text ---------------------------------------------------

@pytest.mark.parametrize("experiment, override, message", [
    (classification.KIND.experiment, "task.max_seq_length=2",
     "task.max_seq_length must be >= 3 (a piece of text in text <sep> <cls>), got 2"),
    (classification.KIND.experiment, "task.task_name=mrpc,task.max_seq_length=4",
     "task.max_seq_length must be >= 5 (a piece of each text in a <sep> b <sep> <cls>), "
     "got 4"),
    (tagging.KIND.experiment, "task.max_seq_length=2",
     "task.max_seq_length must be >= 3 (a piece of text in text <sep> <cls>), got 2"),
    (race.KIND.experiment, "task.max_seq_length=16",
     "task.max_seq_length (16) leaves no room for the article after max_qa_length (16) "
     "and 3 special tokens (article <sep> qa <sep> <cls>); give max_seq_length >= 20 or a "
     "smaller max_qa_length"),
])
def test_a_length_that_leaves_no_room_for_text_is_refused(
    experiment, override, message, spiece_model, tmp_path):
  params = _finetuning(experiment, spiece_model, spiece_model, tmp_path, "," + override)
  assert _refusal(params, "train", tmp_path) == message


# ---- a vocabulary larger than the model's ---------------------------------------------------

@pytest.mark.parametrize("experiment", sorted(FINETUNING))
def test_a_tokenizer_larger_than_the_model_vocabulary_is_refused(
    experiment, spiece_model, tmp_path):
  params = _finetuning(experiment, spiece_model, spiece_model, tmp_path,
                       ",task.model.n_token=1000")
  assert _refusal(params, "train", tmp_path) == (
      f"task.train_data.spiece_model: {spiece_model} has 4000 pieces, more than the "
      f"model's vocabulary (n_token=1000, task.model.n_token); ids >= 1000 have no "
      f"embedding")


@pytest.mark.slow
def test_pretraining_records_larger_than_the_model_vocabulary_are_refused_in_one_line(
    pretraining_records, spiece_model, tmp_path):
  """experiments/pretrain.py with --n_token below the records' vocabulary: one line, no
  model directory (the check used to run inside training: a ValueError traceback)."""
  records, _ = pretraining_records
  run_dir = tmp_path / "run"
  done = subprocess.run(
      [sys.executable, "-m", "experiments.pretrain", f"--train_data={records}",
       f"--model_dir={run_dir}", "--n_token=1000", "--n_layer=1", "--d_model=32",
       "--n_head=2", "--d_head=16", "--d_inner=64", "--train_steps=2"],
      cwd=ROOT, capture_output=True, text=True, timeout=300)
  assert done.returncode == 1, done.stderr[-2000:]
  assert done.stderr.strip().splitlines()[-1] == (
      f"pretrain: task.train_data.input_path {records}: the records' vocabulary has 4000 "
      f"pieces ({spiece_model}), more than the model's n_token=1000 (task.model.n_token); "
      f"ids >= 1000 have no embedding")
  assert "Traceback" not in done.stderr and not run_dir.exists()
