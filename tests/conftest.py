"""Shared test setup: quiet TensorFlow, float32 policy per test, small configs."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import tensorflow as tf  # noqa: E402
import tf_keras  # noqa: E402

# Every task kind registered (`xlnet_tf.task_kind`), as the driver and the command lines
# have them: the converters, the model directory loader and the presets read the records.
from xlnet_tf import task_kind  # noqa: E402
from xlnet_tf.tasks import all_tasks  # noqa: E402,F401


@pytest.fixture(autouse=True)
def _float32_policy_and_seed():
  """Each test starts in float32 with fixed seeds, whatever the previous test did."""
  tf_keras.mixed_precision.set_global_policy("float32")
  tf_keras.utils.set_random_seed(1234)
  yield
  tf_keras.mixed_precision.set_global_policy("float32")


@pytest.fixture(scope="session")
def spiece_model(tmp_path_factory):
  """Path of a SentencePiece model with the XLNet special ids, trained on the bundled corpus.

  Vocabulary 4000, every line of Moby-Dick (about 2700 paragraphs; deterministic, ~1.5 s).
  """
  from data_prep import train_sentencepiece  # pylint: disable=g-import-not-at-top
  from helpers import CORPUS_GLOB  # pylint: disable=g-import-not-at-top
  prefix = str(tmp_path_factory.mktemp("spiece") / "spiece")
  return train_sentencepiece.train(CORPUS_GLOB, prefix, vocab_size=4000, input_sentence_size=0,
                                   num_threads=2)


@pytest.fixture(scope="session")
def pretraining_records(spiece_model, tmp_path_factory):
  """(record directory, input files): the first 24 chapters through create_pretraining_data
  with the tests' PRETRAIN_SETTINGS (2 chunks x 2 passes = 4 shards)."""
  import glob  # pylint: disable=g-import-not-at-top
  from data_prep import pipeline  # pylint: disable=g-import-not-at-top
  from helpers import CORPUS_GLOB, PRETRAIN_SETTINGS  # pylint: disable=g-import-not-at-top
  inputs = sorted(glob.glob(CORPUS_GLOB))[:24]
  directory = str(tmp_path_factory.mktemp("records"))
  pipeline.create(PRETRAIN_SETTINGS, inputs, spiece_model, directory)
  return directory, inputs


# ---- the tasks: one demo-size run per trained task kind, parametrized over the registry ------

def _finetuning_override(spiece_model):
  """A fine-tuning demo on the bundled data: the tests' SentencePiece model, dropout on."""
  return (f"task.train_data.spiece_model={spiece_model},"
          f"task.validation_data.spiece_model={spiece_model},"
          "task.model.dropout=0.1,task.model.dropatt=0.1")


def _bundled_data_run(config_file):
  """The run of a fine-tuning task whose demo reads the bundled data."""
  return lambda spiece_model, records, tmp_path: (config_file,
                                                  _finetuning_override(spiece_model))


def _pretrained_run(spiece_model, records, tmp_path):
  del spiece_model, tmp_path
  return "pretraining_demo.yaml", (
      f"task.train_data.input_path={records},task.validation_data.input_path={records}")


def _race_run(spiece_model, records, tmp_path):
  del records
  import helpers  # pylint: disable=g-import-not-at-top
  data_dir = tmp_path / "race"
  helpers.write_race_sample(data_dir, splits=("train", "dev"))
  return "race_demo.yaml", f"task.data_dir={data_dir}," + _finetuning_override(spiece_model)


def _ranker_run(spiece_model, records, tmp_path):
  """The ranking demo over a tiny pretrained model, on the first 12 chapters' queries and
  passages of the bundled collection (in the TREC formats)."""
  del records
  import helpers  # pylint: disable=g-import-not-at-top
  files = helpers.write_ranking_sample(tmp_path / "collection")
  model_dir = helpers.write_pretrained_dir(tmp_path / "pretrained", spiece_model)
  data = f"queries={files['queries']},qrels={files['qrels']}"
  split = lambda name: ",".join(f"task.{name}.{kv}" for kv in data.split(","))
  return "ranking_demo.yaml", (
      f"task.init_checkpoint={model_dir},task.documents={files['documents']},"
      f"task.max_seq_length=32,task.mem_len=32,task.folds=3,{split('train_data')},"
      f"{split('validation_data')},task.train_data.global_batch_size=8")


# The demo run of each trained kind: (spiece_model, records, tmp_path) -> (the YAML in
# experiments/configs, the --params_override for the bundled data). A new trained kind
# needs one here: `demo_run` names the kind that has none.
DEMO_RUNS = {"classifier": _bundled_data_run("classification_demo.yaml"),
             "pretrained": _pretrained_run, "tagger": _bundled_data_run("tagging_demo.yaml"),
             "squad": _bundled_data_run("squad_demo.yaml"), "race": _race_run,
             "ranker": _ranker_run}


def pytest_generate_tests(metafunc):
  """`trained_kind`: every registered task kind that is trained here (has an experiment)."""
  if "trained_kind" in metafunc.fixturenames:
    metafunc.parametrize("trained_kind", [kind.name for kind in task_kind.kinds()
                                          if kind.experiment])


@pytest.fixture
def demo_run(trained_kind, spiece_model, pretraining_records, tmp_path):
  """(experiment, YAML file name, --params_override) of `trained_kind`'s demo-size run."""
  assert trained_kind in DEMO_RUNS, (
      f"task kind {trained_kind!r} has no demo run: add one to tests/conftest.py DEMO_RUNS")
  config_file, override = DEMO_RUNS[trained_kind](spiece_model, pretraining_records[0],
                                                  tmp_path)
  return task_kind.get(trained_kind).experiment, config_file, override
