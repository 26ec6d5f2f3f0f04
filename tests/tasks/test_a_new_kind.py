"""A task kind made inside this test, from its own pieces and one registration, passes the
checks the registry-walking tests make of every kind (`kind_checks`), with no edit to
them: what "a task is its own files plus one registration line" means, shown.

The pieces are grouped by the file each would be in a real task (`NEW_TASK_FILES`, which
tests/package/test_docs_tasks.py compares with docs/architecture.md's "How to add a
task"): a sentence-classification kind "note" whose model and spec subclass the
classifier's, with its own spec file, export, task, experiment and test record.
"""

import dataclasses
import sys
import types
from typing import Any, ClassVar, Mapping

from official.core import config_definitions as cfg
from official.core import exp_factory
from official.core import task_factory

import kind_checks
import kind_tests
from xlnet_tf import task_kind
from xlnet_tf.models.xlnet_classifier import ClassifierSpec
from xlnet_tf.models.xlnet_classifier import XLNetClassifier
from xlnet_tf.networks.xlnet_encoder import XLNetEncoder
from xlnet_tf.serving import classifier_export
from xlnet_tf.serving import model_dir_export
from xlnet_tf.tasks import base
from xlnet_tf.tasks import classification

NAME = "note"
EXPERIMENT = "test/note"


# ---- xlnet_tf/models/xlnet_note.py: the model class, its builder and its spec ---------------

class NoteClassifier(XLNetClassifier):
  """The kind's model class (a classifier)."""


def build_note(config, num_classes: int, **kwargs) -> NoteClassifier:
  model = NoteClassifier(XLNetEncoder(config, name="transformer"), num_classes,
                         name="xlnet_classifier", **kwargs)
  model.build()
  return model


@dataclasses.dataclass(frozen=True)
class NoteSpec(ClassifierSpec):
  """The kind's spec, in its own file."""
  FILE: ClassVar[str] = "note.json"
  WRITTEN_BY: ClassVar[str] = "the test/note task (tests/tasks/test_a_new_kind.py)"
  OPTIONAL_FIELDS: ClassVar[Mapping[str, Any]] = ClassifierSpec.OPTIONAL_FIELDS

  def build_model(self, config, **kwargs) -> NoteClassifier:
    return build_note(config.replace(mem_len=self.mem_len, reuse_len=0), self.num_classes,
                      summary_type=self.summary_type, use_proj=self.use_proj,
                      is_regression=self.is_regression,
                      summary_activation=self.summary_activation, **kwargs)


# ---- xlnet_tf/serving/note_export.py: its raw-text SavedModel --------------------------------

def export_note(model_dir: str, export_dir: str) -> str:
  """The note model directory's SavedModel (the classifier's serving module and card)."""
  return model_dir_export.export_model_dir(
      model_dir, export_dir, NoteSpec,
      lambda model, spec, spiece: classifier_export.ClassifierServing(model, spec, spiece,
                                                                      pair=False),
      card=classifier_export.classifier_card)


# ---- xlnet_tf/tasks/note.py: the task, its record and its experiment -------------------------

@dataclasses.dataclass
class NoteConfig(classification.ClassificationConfig):
  """The note task's config (the classification task's settings)."""


# The record the task module registers (`task_kind.register(KIND)`: here inside the test,
# and removed after).
KIND = task_kind.TaskKind(
    name=NAME, description="a test kind: a sentence classifier of its own",
    model_class=NoteClassifier, build_model=build_note, spec_class=NoteSpec,
    card_task="classification", export=export_note, conversion=None,
    hf_not_exportable="a kind made in a test has no HuggingFace class",
    max_seq_length=128, experiment=EXPERIMENT)


@task_factory.register_task_cls(NoteConfig)
class NoteTask(classification.ClassificationTask):
  """The note task: classification whose model directory is the note kind's."""

  KIND = KIND

  def __init__(self, params, logging_dir=None, name=None):
    super().__init__(params, logging_dir=logging_dir, name=name)
    self.spec = NoteSpec(**dataclasses.asdict(self.spec))

  def build_model(self) -> NoteClassifier:
    return self.spec.build_model(self.xlnet_config(),
                                 bptt_segments=self.task_config.bptt_segments,
                                 dropout_rate=self.task_config.model.dropout)


@exp_factory.register_config_factory(EXPERIMENT)
def note_experiment() -> cfg.ExperimentConfig:
  return base.experiment_config(NoteConfig(), train_steps=4, steps_per_loop=2,
                                checkpoint_interval=2, validation_interval=2)


# ---- tests/kind_tests/note.py: its test record (experiments/configs/note_demo.yaml: here the
# classification demo's, whose keys the note task's config has) -------------------------------

RECORD = kind_tests.KindTest(
    example_spec=NoteSpec("sst-2", ("negative", "positive"), max_seq_length=16),
    demo_run=lambda fixtures: ("classification_demo.yaml", fixtures.fine_tuning()))

# The files a real task of this kind would be (the sections above), and the one line that
# registers it: docs/architecture.md's "How to add a task" lists the same.
NEW_TASK_FILES = ("xlnet_tf/models/xlnet_<name>.py", "xlnet_tf/serving/<name>_export.py",
                  "xlnet_tf/tasks/<name>.py", "experiments/configs/<name>_demo.yaml",
                  "tests/kind_tests/<kind>.py", "tests/tasks/test_tasks_<name>.py")
REGISTRATION = "xlnet_tf/tasks/all_tasks.py"


def test_a_kind_of_its_own_pieces_passes_every_registry_check(kind_fixtures, tmp_path):
  kind = task_kind.register(KIND)
  record_module = types.ModuleType(f"kind_tests.{NAME}")
  record_module.RECORD = RECORD
  sys.modules[record_module.__name__] = record_module
  try:
    assert NAME in task_kind.names() and kind_tests.of(NAME) is RECORD
    kind_checks.check_every_consumer(kind, tmp_path / "consumers")
    kind_checks.check_experiment_configs(kind, kind_fixtures)
    kind_checks.check_stream_from_step(kind, kind_fixtures)
  finally:
    del task_kind._KINDS[NAME]                           # pylint: disable=protected-access
    del sys.modules[record_module.__name__]
  assert NAME not in task_kind.names()
