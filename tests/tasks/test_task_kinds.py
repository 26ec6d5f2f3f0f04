"""The registry of task kinds (`xlnet_tf.task_kind`): one record per kind, and every
consumer of the ring (the model directory, the converters in both directions, the presets'
`from_preset`, the cards, the exports and the driver) has an answer for every registered
kind. A kind registered without one fails here, by name."""

import inspect

import numpy as np
import pytest
from official.core import exp_factory
from official.core import task_factory

from helpers import small_config
from xlnet_tf import model_directory
from xlnet_tf import pretrained
from xlnet_tf import task_kind
from xlnet_tf.convert import hf_heads
from xlnet_tf.convert import task_heads
from xlnet_tf.convert import to_huggingface
from xlnet_tf.convert.heads.base import HeadConversion
from xlnet_tf.models.xlnet_classifier import ClassifierSpec
from xlnet_tf.models.xlnet_multiple_choice import RaceSpec
from xlnet_tf.models.xlnet_ranker import RankerSpec
from xlnet_tf.models.xlnet_simple_qa import SimpleQASpec
from xlnet_tf.models.xlnet_squad import SquadSpec
from xlnet_tf.models.xlnet_tagger import TaggerSpec
from xlnet_tf.tasks import all_tasks  # noqa: F401  (registers every kind and experiment)
from xlnet_tf.tasks import base

# A spec of each fine-tuned kind, for the round trip through a model directory. A new kind
# needs one here: the test below names the kind that has none.
EXAMPLE_SPECS = {
    "classifier": ClassifierSpec("sst-2", ("negative", "positive"), max_seq_length=16),
    "race": RaceSpec(max_seq_length=32, max_qa_length=8),
    "squad": SquadSpec({"max_seq_length": 32, "max_query_length": 8, "doc_stride": 8,
                        "start_n_top": 2, "end_n_top": 2}),
    "qa_simple": SimpleQASpec(max_seq_length=32, max_query_length=8, start_n_top=2,
                              end_n_top=2),
    "tagger": TaggerSpec("brown", ("nn", "vb", "at"), max_seq_length=16),
    "ranker": RankerSpec(embedding_layer=-1, max_seq_length=16, mem_len=16,
                         max_document_pieces=64),
}
KINDS = task_kind.kinds()


def test_the_registered_kinds_are_the_seven_of_the_package():
  assert task_kind.names() == ["pretrained", "classifier", "qa_simple", "race", "ranker",
                               "squad", "tagger"]
  assert task_kind.head_kinds() == ("classifier", "qa_simple", "race", "ranker", "squad",
                                    "tagger")
  assert sorted(task_kind.spec_files()) == sorted(
      s.FILE for s in (ClassifierSpec, RaceSpec, RankerSpec, SquadSpec, SimpleQASpec,
                       TaggerSpec))


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
  config = small_config()
  directory = str(tmp_path / "model")
  if kind.spec_class is None:                                  # the pretrained layout
    model = kind.build_model(config)
    pretrained.save_pretrained(model, directory)
    loaded = pretrained.load_directory(directory)
  else:
    assert kind.name in EXAMPLE_SPECS, f"add an example spec of {kind.name!r} to this test"
    spec = EXAMPLE_SPECS[kind.name]
    assert type(spec) is kind.spec_class and kind.spec_file == spec.FILE
    assert spec.WRITTEN_BY
    model = spec.build_model(config)
    model_directory.save(model, directory, spec, None)
    loaded, read = model_directory.load(directory, kind.spec_class)
    assert read.to_values() == spec.to_values()          # as the spec file records it
    assert kind.max_seq_length                       # a converted checkpoint's default
  # The model: its class, found back from the instance and the class (from_preset).
  assert isinstance(model, kind.model_class)
  assert task_kind.of_model(model) is kind and task_kind.of_model_class(kind.model_class) is kind
  for ours, theirs in zip(model.variables, loaded.variables):
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
  # The model directory and the exporter to HuggingFace find the kind by its spec file.
  assert task_kind.of_model_dir(directory) is kind
  if kind.conversion is None:
    with pytest.raises(ValueError, match=kind.hf_not_exportable):
      to_huggingface.detect_kind(directory)
  else:
    assert to_huggingface.detect_kind(directory) == kind.name
  # HuggingFace: the class written, and every class read maps back to the kind.
  if kind.conversion is None:                     # refused, saying why (the ranker)
    with pytest.raises(ValueError, match=f"cannot be exported to HuggingFace: "
                                         f"{kind.hf_not_exportable}"):
      hf_heads.architecture_out(kind.name)
  else:
    assert hf_heads.architecture_out(kind.name) == kind.conversion.hf_architecture_out
    for architecture in kind.conversion.hf_architectures_in:
      assert hf_heads.architectures_in()[architecture] == kind.name
    assert kind.conversion.released_head
  # The original's head: its variables by their released (or converted) names.
  if kind.name == task_kind.PRETRAINED:
    assert not isinstance(kind.conversion, HeadConversion)
  else:
    assert kind.name in task_heads.task_kind.head_kinds()
  if isinstance(kind.conversion, HeadConversion):
    assert kind.conversion.spec_class is kind.spec_class
    heads = kind.conversion.head_variables(model, "sst-2")
    assert heads and all(any(v is w for w in model.variables) for v in heads.values())
  # The card, the export, the description.
  assert kind.card_task and kind.description
  assert {"model_dir", "export_dir"} <= set(inspect.signature(kind.export).parameters)
  # The driver: a trained kind's experiment builds a task whose record is the kind.
  if kind.experiment is not None:
    params = exp_factory.get_exp_config(kind.experiment)
    task_class = task_factory._REGISTERED_TASK_CLS[type(params.task)]  # pylint: disable=protected-access
    assert task_class.KIND is kind
    assert task_class.loss_fn is not base.XLNetTask.loss_fn


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
