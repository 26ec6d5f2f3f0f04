"""Shared test setup: quiet TensorFlow, float32 policy per test, small configs."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import tensorflow as tf  # noqa: E402
import tf_keras  # noqa: E402

# Every task kind registered (`xlnet_tf.task_kind`), as the driver and the command lines
# have them: the converters, the model directory loader and the presets read the records.
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
