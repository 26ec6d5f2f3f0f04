"""The registry of task kinds (`xlnet_tf.task_kind`): one record per kind, and every
consumer of the ring (the model directory, the converters in both directions, the presets'
`from_preset`, the cards, the exports and the driver) has an answer for every registered
kind. A kind registered without one fails here, by name; so does a kind without its test
record (tests/kind_tests/<kind>.py). `check_every_consumer` is what a new kind must pass
(tests/tasks/test_a_new_kind.py passes a kind made inside the test through it)."""


import pytest

from xlnet_tf import task_kind
from xlnet_tf.convert import hf_heads
from xlnet_tf.models.xlnet_classifier import ClassifierSpec
from xlnet_tf.models.xlnet_tagger import TaggerSpec
from xlnet_tf.tasks import all_tasks  # noqa: F401  (registers every kind and experiment)
import kind_checks
import kind_tests

KINDS = task_kind.kinds()


def test_every_kind_has_a_test_record_and_every_record_a_kind():
  """The test records are the registry's (no record of a kind that is gone), and the
  names the registry derives from its records agree with them."""
  assert kind_tests.recorded_names() == sorted(task_kind.names())
  assert task_kind.names()[0] == task_kind.PRETRAINED
  assert task_kind.head_kinds() == tuple(task_kind.names()[1:])
  assert sorted(task_kind.spec_files()) == sorted(
      kind_tests.of(name).example_spec.FILE for name in task_kind.head_kinds())


def test_a_second_record_of_a_name_or_a_spec_file_is_refused():
  classifier = task_kind.get("classifier")
  with pytest.raises(ValueError, match="'classifier' is registered already"):
    task_kind.register(classifier.__class__(**{**classifier.__dict__, "description": "x"}))
  with pytest.raises(ValueError, match="both use classifier.json"):
    task_kind.register(classifier.__class__(**{**classifier.__dict__, "name": "other"}))
  assert "other" not in task_kind.names()


def test_a_record_must_say_why_it_has_no_huggingface_class():
  classifier = task_kind.get("classifier")
  with pytest.raises(ValueError, match="hf_not_exportable saying why"):
    classifier.__class__(**{**classifier.__dict__, "name": "x", "conversion": None})


@pytest.mark.parametrize("kind", KINDS, ids=[k.name for k in KINDS])
def test_every_consumer_has_an_answer_for_the_kind(kind, tmp_path):
  kind_checks.check_every_consumer(kind, tmp_path)


def test_a_kind_without_a_huggingface_class_is_refused_by_name():
  classifier = task_kind.get("classifier")
  record = classifier.__class__(**{**classifier.__dict__, "name": "not_exportable",
                                   "conversion": None,
                                   "hf_not_exportable": "its head has no HuggingFace class",
                                   "spec_class": None})
  task_kind._KINDS[record.name] = record                   # pylint: disable=protected-access
  try:
    with pytest.raises(ValueError, match="a not_exportable model cannot be exported to "
                                         "HuggingFace: its head has no HuggingFace class"):
      hf_heads.architecture_out("not_exportable")
  finally:
    del task_kind._KINDS[record.name]                      # pylint: disable=protected-access


def test_a_directory_with_two_spec_files_is_refused(tmp_path):
  (tmp_path / ClassifierSpec.FILE).write_text("{}")
  (tmp_path / TaggerSpec.FILE).write_text("{}")
  with pytest.raises(ValueError, match="several kinds"):
    task_kind.of_model_dir(str(tmp_path))


def test_a_consumer_asking_before_any_kind_is_registered_is_told_what_to_import():
  registered = dict(task_kind._KINDS)                      # pylint: disable=protected-access
  task_kind._KINDS.clear()                                 # pylint: disable=protected-access
  try:
    for ask in (task_kind.kinds, task_kind.spec_files, hf_heads.architectures_in,
                lambda: task_kind.get("classifier")):
      with pytest.raises(task_kind.NoKindsRegistered, match="import xlnet_tf.tasks.all_tasks"):
        ask()
  finally:
    task_kind._KINDS.update(registered)                    # pylint: disable=protected-access
