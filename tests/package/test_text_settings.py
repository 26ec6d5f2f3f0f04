"""The text normalisation a model directory records (`model_directory.read_text_settings`:
a fine-tuned model's spec file, else text.json) and a reader of it: a fine-tuning task
refuses an init_checkpoint whose recorded normalisation its input pipeline cannot give."""

import json
import os

import pytest

from helpers import small_config
from xlnet_tf import build_pretrainer
from xlnet_tf import model_directory
from xlnet_tf import save_pretrained
from xlnet_tf.configs import XLNetConfig
from xlnet_tf.models.xlnet_classifier import ClassifierSpec
from xlnet_tf.models.xlnet_squad import SquadSpec
from xlnet_tf.models.xlnet_tagger import TaggerSpec

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEMO = os.path.join(ROOT, "experiments", "configs", "classification_demo.yaml")


def _write(directory, name, value):
  os.makedirs(directory, exist_ok=True)
  with open(os.path.join(directory, name), "w", encoding="utf-8") as f:
    f.write(value if isinstance(value, str) else json.dumps(value))


def test_nothing_recorded_is_cased_with_accents_stripped(tmp_path):
  assert model_directory.read_text_settings(str(tmp_path)) == {"uncased": False,
                                                               "keep_accents": False}
  assert model_directory.text_settings_file(str(tmp_path)) is None


def test_text_json_then_the_spec_file_of_a_fine_tuned_model(tmp_path):
  directory = str(tmp_path)
  _write(directory, model_directory.TEXT_FILE, {"uncased": True, "keep_accents": True})
  assert model_directory.read_text_settings(directory) == {"uncased": True,
                                                           "keep_accents": True}
  # A fine-tuned directory: its spec file is the record (a field it lacks is False).
  _write(directory, SquadSpec.FILE, {"uncased": True, "max_seq_length": 64})
  assert model_directory.read_text_settings(directory) == {"uncased": True,
                                                           "keep_accents": False}
  assert model_directory.text_settings_file(directory).endswith("squad.json")
  spec = ClassifierSpec("sst-2", ("0", "1"), keep_accents=True)
  _write(directory, ClassifierSpec.FILE, spec.to_values())
  assert model_directory.read_text_settings(directory) == {"uncased": False,
                                                           "keep_accents": True}


@pytest.mark.parametrize("content, message", [
    ("[true, false]", "expected a JSON object"),
    ('{"uncased": 1, "keep_accents": false}', "field 'uncased' must be a boolean"),
    ('{"uncased": true}', "missing field 'keep_accents'"),
    ('{"uncased": true, "keep_accents": false, "lower": true}', r"unknown field\(s\) \['lower'\]"),
    ('{"uncased": tru', "not JSON"),
])
def test_a_bad_text_json_is_named_with_its_field(tmp_path, content, message):
  _write(str(tmp_path), model_directory.TEXT_FILE, content)
  with pytest.raises(ValueError, match=message) as raised:
    model_directory.read_text_settings(str(tmp_path))
  assert os.path.join(str(tmp_path), "text.json") in str(raised.value)


def test_a_spec_files_non_boolean_field_is_named(tmp_path):
  _write(str(tmp_path), TaggerSpec.FILE, {"labels": ["O"], "keep_accents": "yes"})
  with pytest.raises(ValueError, match=r"tagger.json: field 'keep_accents' must be a boolean"):
    model_directory.read_text_settings(str(tmp_path))


def test_write_records_text_json_only_when_not_the_default(tmp_path):
  model = build_pretrainer(small_config())
  for name, text, written in (("default", None, False),
                              ("both_false", {"uncased": False, "keep_accents": False}, False),
                              ("uncased", {"uncased": True, "keep_accents": False}, True)):
    directory = str(tmp_path / name)
    save_pretrained(model, directory, text=text)
    assert os.path.exists(os.path.join(directory, "text.json")) == written, name
    assert model_directory.read_text_settings(directory) == (
        text or {"uncased": False, "keep_accents": False})
  assert sorted(os.listdir(tmp_path)) == ["both_false", "default", "uncased"]  # no partial
  with pytest.raises(ValueError, match="write: text: field 'uncased' must be a boolean"):
    save_pretrained(model, str(tmp_path / "bad"), text={"uncased": "yes",
                                                        "keep_accents": False})
  assert not os.path.exists(tmp_path / "bad")


# ---- a reader: the fine-tuning tasks --------------------------------------------------------

def _init_dir(tmp_path, text):
  """A pretrained directory's config with the demo's sizes, and `text` in text.json."""
  directory = str(tmp_path / "init")
  os.makedirs(directory)
  XLNetConfig(n_layer=1, d_model=32, n_head=2, d_head=16, d_inner=64, n_token=4000
              ).to_json_file(os.path.join(directory, "xlnet_config.json"))
  if text is not None:
    _write(directory, model_directory.TEXT_FILE, text)
  return directory


@pytest.mark.parametrize("text, uncased, message", [
    ({"uncased": True, "keep_accents": False}, False,
     r"task.uncased=False differs from the init_checkpoint's uncased=True \(.*text.json\)"),
    ({"uncased": False, "keep_accents": False}, True,       # written by hand: a record
     r"task.uncased=True differs from the init_checkpoint's uncased=False"),
    ({"uncased": False, "keep_accents": True}, False,
     r"text.json records keep_accents=true, but the tasks' input pipelines strip accents"),
])
def test_a_task_refuses_an_init_checkpoint_of_other_text_before_any_work(
    spiece_model, tmp_path, text, uncased, message):
  from xlnet_tf.tasks import classification
  from xlnet_tf.tasks import train_lib as driver  # pylint: disable=g-import-not-at-top
  init = _init_dir(tmp_path, text)
  params = driver.parse_params(
      classification.KIND.experiment, [DEMO],
      f"task.init_checkpoint={init},task.uncased={str(uncased).lower()},"
      f"task.train_data.spiece_model={spiece_model},"
      f"task.validation_data.spiece_model={spiece_model}")
  run_dir = tmp_path / "run"
  with pytest.raises(driver.ConfigError, match=message):
    driver.run(params, "train", str(run_dir))
  assert not run_dir.exists()


def test_a_task_takes_an_init_checkpoint_of_its_text_or_recording_none(spiece_model, tmp_path):
  from official.core import task_factory  # pylint: disable=g-import-not-at-top
  from xlnet_tf.tasks import classification
  from xlnet_tf.tasks import train_lib as driver  # pylint: disable=g-import-not-at-top
  for name, text, uncased in (("same", {"uncased": True, "keep_accents": False}, True),
                              ("none", None, True)):
    init = _init_dir(tmp_path / name, text)
    params = driver.parse_params(
        classification.KIND.experiment, [DEMO],
        f"task.init_checkpoint={init},task.uncased={str(uncased).lower()},"
        f"task.train_data.spiece_model={spiece_model},"
        f"task.validation_data.spiece_model={spiece_model}")
    task_factory.get_task(params.task).check(training=True, evaluating=True)
