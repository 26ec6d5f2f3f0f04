"""Shared test setup: quiet TensorFlow, float32 policy per test, small configs."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest  # noqa: E402
import tf_keras  # noqa: E402

# Every task kind registered (`xlnet_tf.task_kind`), as the driver and the command lines
# have them: the converters, the model directory loader and the presets read the records.
from xlnet_tf import task_kind  # noqa: E402
from xlnet_tf.tasks import all_tasks  # noqa: E402,F401
import kind_tests  # noqa: E402


# The longest files, longest first: `make test` runs whole files in two processes
# (pytest-xdist --dist loadfile --no-loadscope-reorder hands them out in collection order),
# so these start at once instead of last (tests/durations_file.py's list shows them).
LONGEST_FILES = (
    "runs/test_demo_size.py",
    "package/test_docs_commands.py",
    "runs/test_tiny_pipelines.py",
)


def pytest_collection_modifyitems(items):
  """Puts the tests of LONGEST_FILES first, in that order; the rest keep theirs."""
  tests_dir = os.path.dirname(os.path.abspath(__file__))

  def rank(item):
    path = os.path.relpath(str(item.path), tests_dir)
    return LONGEST_FILES.index(path) if path in LONGEST_FILES else len(LONGEST_FILES)
  items.sort(key=rank)


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


# ---- the task kinds: their test records (tests/kind_tests/<kind>.py) ------------------------

def pytest_generate_tests(metafunc):
  """`trained_kind`: every registered task kind that is trained here (has an experiment)."""
  if "trained_kind" in metafunc.fixturenames:
    metafunc.parametrize("trained_kind", [kind.name for kind in task_kind.kinds()
                                          if kind.experiment])


@pytest.fixture
def kind_fixtures(spiece_model, pretraining_records, tmp_path):
  """What a kind's demo run is built from (`kind_tests.Fixtures`)."""
  return kind_tests.Fixtures(spiece_model, pretraining_records[0], tmp_path)


@pytest.fixture
def demo_run(trained_kind, kind_fixtures):
  """(experiment, YAML file name, --params_override) of `trained_kind`'s demo-size run
  (its test record's `demo_run`)."""
  config_file, override = kind_tests.of(trained_kind).demo_run(kind_fixtures)
  return task_kind.get(trained_kind).experiment, config_file, override
