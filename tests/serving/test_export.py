"""SavedModel export: raw text in a fresh process (TensorFlow + tensorflow-text only), the
ids signature, the model card, the encoder export's text settings, and an export written
whole or not at all.

The exports of a 1-layer classifier at max_seq_length 16 (and the encoder's) are slow; the
atomicity of an export (whole or not at all, an export directory never removed) is checked
fast on the classifier export, truncating at max_seq_length (one bucket: the cheapest)."""

import os
import re
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from helpers import serve_fresh
from helpers import small_config
from xlnet_tf import model_directory
from xlnet_tf.data import classifier_features
from xlnet_tf.data import tokenization
from xlnet_tf.data.classifier_tasks import InputExample
from xlnet_tf.models.xlnet_classifier import build_classifier
from xlnet_tf.serving.classifier_export import export_classifier
from xlnet_tf.models.xlnet_classifier import ClassifierSpec

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SENTIMENT = os.path.join(ROOT, "data_prep", "sample_data", "sentiment",
                         "movieReviewSnippets_GroundTruth.txt")
SEQ = 16


def _sentences(count):
  with open(SENTIMENT, encoding="utf-8", newline="") as f:
    rows = [line.rstrip("\r\n").split("\t") for line in f if line.strip()]
  return [row[2] for row in rows[:count]]


@pytest.fixture(scope="module")
def classifier_dir(spiece_model, tmp_path_factory):
  """(model, spec, model directory) of a 1-layer random classifier at max_seq_length SEQ."""
  work = tmp_path_factory.mktemp("export")
  spec = ClassifierSpec(task_name="movie_reviews", labels=("negative", "positive"),
                        max_seq_length=SEQ)
  model = build_classifier(small_config(n_layer=1, n_token=4000), 2, dropout_rate=0.0)
  model_directory.save(model, str(work / "model"), spec, spiece_model)
  return model, spec, str(work / "model")


@pytest.fixture(scope="module")
def exported(classifier_dir):
  """(model, spec, export directory): classifier_dir's export."""
  model, spec, model_dir = classifier_dir
  # The released behaviour, truncation at max_seq_length (whole texts:
  # tests/serving/test_document_serving.py).
  export_dir = export_classifier(model_dir, os.path.join(os.path.dirname(model_dir),
                                                         "saved_model"), whole_text=False)
  return model, spec, export_dir


@pytest.mark.slow
def test_raw_text_gives_the_python_models_probabilities(exported, spiece_model, tmp_path):
  """Texts served in a fresh process (real sentences, an empty one, other scripts, one far
  longer than max_seq_length) get the Python model's probabilities and labels."""
  model, spec, export_dir = exported
  texts = _sentences(40) + ["", "Amélie était très drôle — 電影 😀 naïve café", "x " * 50_000]
  served = serve_fresh(export_dir, {"text_a": texts}, tmp_path)  # TensorFlow (+ text) only

  sp = tokenization.load_spiece(spiece_model)
  features = [classifier_features.encode_example(sp, InputExample(str(i), t, None, "positive"),
                                                 SEQ, spec.labels)
              for i, t in enumerate(texts)]
  batch = {k: tf.constant(np.stack([f[k] for f in features]))
           for k in ("input_ids", "segment_ids", "input_mask")}
  expected = tf.nn.softmax(model(batch)["logits"]).numpy()
  probabilities = np.array(served["probabilities"])
  assert probabilities.shape == (len(texts), 2)
  np.testing.assert_allclose(probabilities, expected, atol=1e-5, rtol=0)
  np.testing.assert_allclose(probabilities.sum(-1), 1.0, atol=1e-5)
  assert served["label"] == [spec.labels[i] for i in expected.argmax(-1)]


@pytest.mark.slow
def test_ids_signature_and_saved_model_cli(exported, tmp_path):
  """serving_ids takes ids padded to max_seq_length; saved_model_cli runs the export."""
  _, spec, export_dir = exported
  loaded = tf.saved_model.load(export_dir)
  ids = loaded.signatures["serving_ids"]
  out = ids(input_ids=tf.constant([[0] * (SEQ - 3) + [20, 4, 3]], tf.int32),
            segment_ids=tf.constant([[4] * (SEQ - 3) + [0, 0, 2]], tf.int32),
            input_mask=tf.constant([[1.0] * (SEQ - 3) + [0.0] * 3]))
  assert out["probabilities"].shape == (1, 2)
  # saved_model_cli needs the tensorflow-text ops registered: run it through a Python
  # that imports tensorflow_text first (see the README).
  cli = ("import sys, tensorflow_text\n"
         "from tensorflow.python.tools import saved_model_cli\n"
         "sys.argv = ['saved_model_cli'] + sys.argv[1:]\n"
         "saved_model_cli.main()\n")
  result = subprocess.run(
      [sys.executable, "-c", cli, "run", "--dir", export_dir, "--tag_set", "serve",
       "--signature_def", "serving_default", "--input_exprs",
       'text_a=["a gripping, beautifully acted film"]'],
      capture_output=True, text=True, check=False, cwd=str(tmp_path))
  assert result.returncode == 0, result.stderr[-2000:]
  assert "probabilities" in result.stdout and "label" in result.stdout


@pytest.mark.slow
def test_the_export_has_a_model_card_with_labels_and_parity(exported):
  model, spec, export_dir = exported
  card = open(os.path.join(export_dir, "README.md"), encoding="utf-8").read()
  assert "- **Labels** (id: name): 0: negative, 1: positive" in card
  assert "- **Task**: classification" in card
  assert "- **Licence**: unknown: see the source" in card      # the model directory has none
  assert f"- **Source**: {os.path.join(os.path.dirname(export_dir), 'model')}\n" in card
  parity = re.search(r"- \*\*Parity\*\*: max \|diff\| (\S+) of probabilities", card)
  assert parity, card
  assert 0.0 <= float(parity.group(1)) < 1e-5
  assert f"d_model {model.config.d_model}" in card


def test_the_export_card_takes_the_licence_of_the_model_directorys_card(tmp_path):
  from xlnet_tf import model_card  # pylint: disable=g-import-not-at-top
  from xlnet_tf.serving import export_card  # pylint: disable=g-import-not-at-top
  assert export_card.source_licence(str(tmp_path)) == "unknown: see the source"
  model_card.write(str(tmp_path), title="t", source="s", licence=model_card.RELEASED_LICENCE,
                   config={}, task="pretrained")
  assert export_card.source_licence(str(tmp_path)) == model_card.RELEASED_LICENCE


# ---- the encoder's export: the directory's text settings; whole or not at all ---------------

@pytest.fixture(scope="module")
def uncased_pretrained(spiece_model, tmp_path_factory):
  """A pretrained model directory recording uncased, accents kept (text.json)."""
  from xlnet_tf import build_pretrainer  # pylint: disable=g-import-not-at-top
  from xlnet_tf import save_pretrained  # pylint: disable=g-import-not-at-top
  directory = os.fspath(tmp_path_factory.mktemp("pretrained") / "model")
  save_pretrained(build_pretrainer(small_config(n_layer=1, n_token=4000)), directory,
                  spiece_model=spiece_model, text={"uncased": True, "keep_accents": True})
  return directory


@pytest.mark.slow
def test_the_encoder_export_normalises_as_the_model_directory_records(uncased_pretrained,
                                                                      tmp_path):
  """The encoder export lower-cases and keeps accents as the directory's text.json records,
  says so on its card, and takes explicit settings over them."""
  from xlnet_tf.serving.encoder_export import export_encoder  # pylint: disable=g-import-not-at-top
  export_dir = export_encoder(uncased_pretrained, os.fspath(tmp_path / "encoder"),
                              max_seq_length=16)
  card = open(os.path.join(export_dir, "README.md"), encoding="utf-8").read()
  assert "uncased**: True" in card and "keep_accents**: True" in card, card
  serve = tf.saved_model.load(export_dir).signatures["serving_default"]
  summary = serve(text=tf.constant(["CALL ME ISHMAEL", "call me ishmael", "cafe",
                                    "café"]))["summary"].numpy()
  np.testing.assert_array_equal(summary[0], summary[1])              # lower-cased
  assert np.abs(summary[2] - summary[3]).max() > 1e-4                # the accent is kept
  explicit = export_encoder(uncased_pretrained, os.fspath(tmp_path / "cased"),
                            max_seq_length=16, lower=False, keep_accents=False)
  card = open(os.path.join(explicit, "README.md"), encoding="utf-8").read()
  assert "uncased**: False" in card and "keep_accents**: False" in card, card


def _leftovers(tmp_path):
  return sorted(name for name in os.listdir(tmp_path) if "partial" in name)


def test_an_export_that_fails_at_its_card_leaves_nothing(classifier_dir, tmp_path,
                                                         monkeypatch):
  """An export whose parity measure (for its card) fails leaves no directory and no
  temporary; an empty export directory that was there stays, empty."""
  from xlnet_tf.serving import export_card  # pylint: disable=g-import-not-at-top
  _, _, model_dir = classifier_dir

  def fail(export_dir, card):
    del card
    assert os.path.exists(os.path.join(export_dir, "saved_model.pb"))  # the partial one
    raise RuntimeError("parity probe failed")
  monkeypatch.setattr(export_card, "measure_parity", fail)
  export_dir = tmp_path / "classifier"
  with pytest.raises(RuntimeError, match="parity probe failed"):
    export_classifier(model_dir, os.fspath(export_dir), whole_text=False)
  assert not export_dir.exists() and _leftovers(tmp_path) == []
  export_dir.mkdir()                                        # an empty one stays as it was
  with pytest.raises(RuntimeError, match="parity probe failed"):
    export_classifier(model_dir, os.fspath(export_dir), whole_text=False)
  assert export_dir.is_dir() and not os.listdir(export_dir) and _leftovers(tmp_path) == []


def test_an_export_dir_filled_meanwhile_is_never_removed(classifier_dir, tmp_path,
                                                         monkeypatch):
  """The export_dir was empty at the check and gets a file while the export runs: the
  rename refuses (os.rmdir of a non-empty directory), the file stays, no partial is left;
  an export_dir still empty is replaced."""
  from xlnet_tf.serving import export_card  # pylint: disable=g-import-not-at-top
  _, _, model_dir = classifier_dir
  export_dir = tmp_path / "classifier"
  export_dir.mkdir()
  measure = export_card.measure_parity

  def someone_writes(directory, card):
    (export_dir / "theirs.txt").write_text("keep me")
    return measure(directory, card)
  monkeypatch.setattr(export_card, "measure_parity", someone_writes)
  with pytest.raises(FileExistsError, match="not empty"):
    export_classifier(model_dir, os.fspath(export_dir), whole_text=False)
  assert os.listdir(export_dir) == ["theirs.txt"] and _leftovers(tmp_path) == []
  monkeypatch.setattr(export_card, "measure_parity", measure)
  empty = tmp_path / "empty"
  empty.mkdir()
  export_classifier(model_dir, os.fspath(empty), whole_text=False)
  assert (empty / "saved_model.pb").exists() and (empty / "README.md").exists()
  assert _leftovers(tmp_path) == []
