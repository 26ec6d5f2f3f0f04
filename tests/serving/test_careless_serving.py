"""Issue 27, load_pretrained / generation, xlnet-classify, convert, exports and run_squad's
export: each case as a careless user meets it.

5   load_pretrained (and so xlnet-generate) refuses NaN weights, naming the directory and
    the weight, as convert and the exports do.
12  xlnet-classify names the kind of export it got (every kind but the classifier, each
    from its test record `kind_tests.<kind>`, as the export's export.json says) and what
    serves it, takes --text_b for pair classifiers, and names a sentence that is not
    UTF-8;
    xlnet-generate names a prompt that is not UTF-8; a NaN in a HuggingFace safetensors
    file is named by the file and the tensor.
13  a finished run_squad --do_export rerun is refused before any work, naming the path and
    the flag that chose it; xlnet-generate serves the pipeline's own bi_data=True
    pretrained model; a kill -9 during an export leaves a partial directory that the
    next export removes (only a dead process's of this host), saying so.
"""

import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys

import numpy as np
import pytest
from safetensors.numpy import load_file
from safetensors.numpy import save_file
import tensorflow as tf

from experiments import classify_text
import kind_tests
from helpers import small_config
from hf_reference import make_hf_model
from xlnet_tf import build_pretrainer
from experiments import generate as generate_cli
from xlnet_tf import load_pretrained
from xlnet_tf import model_directory
from xlnet_tf import task_kind
from xlnet_tf.models.xlnet_squad import SquadSpec
from xlnet_tf import save_pretrained
from xlnet_tf.convert.importer import convert
from xlnet_tf.models.xlnet_classifier import build_classifier
from xlnet_tf.models.xlnet_squad import build_squad_model
from xlnet_tf.serving import classifier_export
from xlnet_tf.serving import encoder_export
from xlnet_tf.serving import export_card
from xlnet_tf.models.xlnet_classifier import ClassifierSpec

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="2")
SQUAD_SAMPLE = os.path.join(ROOT, "data_prep", "sample_data", "qa", "squad.json")


def _tiny(**overrides):
  return small_config(**{"n_token": 4000, **overrides})


def _one_line_exit(raised, prefix):
  text = str(raised.value)
  assert text.startswith(prefix) and "\n" not in text, text
  return text


# ---- 5: NaN weights ----------------------------------------------------------------------

def _nan_model_dir(directory, spiece_model):
  """A pretrained model directory whose word embedding holds a NaN (written as a killed or
  diverged run could leave it: save_pretrained itself refuses NaN)."""
  model = build_pretrainer(_tiny())
  embedding = model.encoder.word_embedding
  embedding.assign(tf.tensor_scatter_nd_update(embedding, [[3, 0]], [float("nan")]))
  os.makedirs(directory)
  model.config.to_json_file(os.path.join(directory, model_directory.CONFIG_FILE))
  tf.train.Checkpoint(model=model).write(
      os.path.join(directory, model_directory.CHECKPOINT_PREFIX))
  tf.io.gfile.copy(spiece_model, os.path.join(directory, model_directory.SPIECE_FILE))
  return os.fspath(directory)


def _generate_cli(argv):
  """`xlnet-generate ARGV` in this process (its absl flags in a FlagValues of their own)."""
  generate_cli.main(["xlnet-generate"], generate_cli.parse_flags(["xlnet-generate", *argv]))


def test_load_pretrained_refuses_nan_weights_naming_directory_and_weight(spiece_model,
                                                                         tmp_path):
  # Before: the model loaded, and xlnet-generate printed garbage ("stonestonestone" here)
  # with exit status 0.
  directory = _nan_model_dir(tmp_path / "nan", spiece_model)
  with pytest.raises(model_directory.NonFiniteError) as raised:
    load_pretrained(directory)
  assert str(raised.value) == (
      f"{directory}: 1 weight(s) hold NaN or infinite values (e.g. "
      f"model/transformer/word_embedding/lookup_table); the model cannot be used")
  with pytest.raises(SystemExit) as raised:
    _generate_cli(["--model_dir", directory, "--prompt", "the whale",
                   "--max_new_tokens", "3"])
  text = _one_line_exit(raised, f"xlnet-generate: {directory}: 1 weight(s) hold NaN")
  assert "model/transformer/word_embedding/lookup_table" in text


# ---- 12: xlnet-generate with a prompt that is not UTF-8 ------------------------------------

@pytest.fixture(scope="module", name="pretrained_dir")
def _pretrained_dir(spiece_model, tmp_path_factory):
  directory = os.fspath(tmp_path_factory.mktemp("careless") / "pretrained")
  save_pretrained(build_pretrainer(_tiny(n_layer=1)), directory, spiece_model=spiece_model)
  return directory


def test_generate_names_a_prompt_that_is_not_utf8(pretrained_dir):
  # Before: RuntimeError (pybind11) from SentencePiece, a traceback.
  prompt = b"the \xff whale".decode("utf-8", "surrogateescape")     # as argv arrives
  with pytest.raises(SystemExit) as raised:
    _generate_cli(["--model_dir", pretrained_dir, "--prompt", prompt])
  assert _one_line_exit(raised, "xlnet-generate: ") == (
      "xlnet-generate: --prompt: not valid UTF-8 (character 5 of the prompt); give "
      "UTF-8 text")


# ---- 13: xlnet-generate on the pipeline's bi_data pretrained model --------------------------

def test_generate_serves_a_bi_data_pretrained_model(spiece_model, tmp_path, capsys):
  # Before: "xlnet-generate: model: bi_data (...) is a pretraining option; load the
  # model with bi_data=False to generate", and no option for it.
  directory = os.fspath(tmp_path / "pretrained_bi_data")
  save_pretrained(build_pretrainer(_tiny(bi_data=True)), directory, spiece_model=spiece_model)
  argv = ["--model_dir", directory, "--prompt", "Call me Ishmael.", "--max_new_tokens", "4"]
  _generate_cli(argv)
  printed = capsys.readouterr().out
  plain = os.fspath(tmp_path / "pretrained_plain")        # the same weights, bi_data off
  config = json.loads(open(os.path.join(directory, model_directory.CONFIG_FILE)).read())
  save_pretrained(load_pretrained(directory, bi_data=False), plain, spiece_model=spiece_model)
  assert config["bi_data"] is True
  _generate_cli(["--model_dir", plain] + argv[2:])
  assert printed == capsys.readouterr().out


# ---- 12: a NaN in a HuggingFace safetensors file -------------------------------------------

NAN_TENSOR = "transformer.layer.1.ff.layer_1.weight"


def _hf_dir_with_nan(tmp_path):
  """An HF directory whose NAN_TENSOR holds a NaN; the path of its weights file."""
  source = tmp_path / "hf"
  make_hf_model(small_config(), seed=3).save_pretrained(os.fspath(source))
  weights = os.fspath(source / "model.safetensors")
  tensors = load_file(weights)
  tensors[NAN_TENSOR][0, 0] = np.nan
  save_file(tensors, weights, metadata={"format": "pt"})
  return source, weights


def test_convert_names_the_safetensors_file_and_tensor_holding_nan(tmp_path):
  """convert refuses a NaN in an HF weights file naming the file and the tensor, and writes
  nothing. (The command line's last line: the slow test below.)"""
  # Before: "<tmp>/.out.partial-<id>: 1 weight(s) hold NaN or infinite values (e.g.
  # transformer/layer_1/ff/layer_1/kernel:0); nothing was written", naming the temporary
  # output directory; xlnet-convert printed it as a traceback's last line.
  source, weights = _hf_dir_with_nan(tmp_path)
  name = NAN_TENSOR
  with pytest.raises(model_directory.NonFiniteError) as raised:
    convert(os.fspath(source), os.fspath(tmp_path / "out"))
  assert str(raised.value) == (f"{weights}: 1 tensor(s) hold NaN or infinite values (e.g. "
                               f"{name}); nothing was written")
  assert sorted(os.listdir(tmp_path)) == ["hf"]


@pytest.mark.slow
def test_convert_command_names_the_safetensors_file_and_tensor_holding_nan(tmp_path):
  """`python -m xlnet_tf.convert` ends with status 1 and the same message as its last line;
  nothing is written."""
  source, weights = _hf_dir_with_nan(tmp_path)
  name = NAN_TENSOR
  cli = subprocess.run([sys.executable, "-m", "xlnet_tf.convert", f"--source={source}",
                        f"--output={tmp_path / 'out'}"], capture_output=True, text=True,
                       env=ENV, cwd=ROOT, check=False)
  assert cli.returncode == 1 and cli.stderr.strip().splitlines()[-1] == (
      f"xlnet_tf.convert: {weights}: 1 tensor(s) hold NaN or infinite values (e.g. "
      f"{name}); nothing was written"), cli.stderr[-2000:]
  assert sorted(os.listdir(tmp_path)) == ["hf"]


# ---- 12: xlnet-classify on other exports, pairs, text that is not UTF-8 --------------------

SQUAD_SETTINGS = {"uncased": False, "max_seq_length": 64, "doc_stride": 32,
                  "max_query_length": 16, "start_n_top": 2, "end_n_top": 2,
                  "version_2_with_negative": False}


def _squad_model_dir(directory, spiece_model):
  model = build_squad_model(_tiny(), start_n_top=2, end_n_top=2)
  model_directory.save(model, os.fspath(directory), SquadSpec(SQUAD_SETTINGS),
                       spiece_model)
  return model


def _stand_in_export(card, export_dir):
  """A SavedModel standing in for the export whose card is `card`, with what xlnet-classify
  reads of an export: a serving_default taking the real export's inputs (the card's probe
  inputs, which the real export's parity check feeds to its serving_default: a list of
  strings as [batch], one string as a scalar) and returning zeros under the card's output
  keys, and the real export's export.json (`export_card.write_description`). Returns
  `export_dir`."""
  specs = {name: tf.TensorSpec([None] if isinstance(value, list) else [], tf.string,
                               name=name) for name, value in card.inputs.items()}
  module = tf.Module()
  module.serve = tf.function(lambda **inputs: {key: tf.zeros([1]) for key in card.keys})
  tf.saved_model.save(module, export_dir, signatures={
      "serving_default": module.serve.get_concrete_function(**specs)})
  export_card.write_description(export_dir, card)
  return export_dir


# The kinds whose exports xlnet-classify refuses, naming them (their test records'
# `export_card` and `classify_refusal`).
REFUSED_KINDS = [kind.name for kind in task_kind.kinds() if kind_tests.of(kind.name).export_card]


def test_every_kind_but_the_classifier_says_what_xlnet_classify_makes_of_its_export():
  assert {kind.name for kind in task_kind.kinds()} - set(REFUSED_KINDS) == {"classifier"}
  assert all(kind_tests.of(name).classify_refusal for name in REFUSED_KINDS)


@pytest.fixture(scope="module", name="exports")
def _exports(spiece_model, tmp_path_factory):
  """{name: export directory}: the exports of a sentence-pair classifier ("pair") and a
  pair regression model ("regression", STS-B-like), 1 layer, truncating at
  max_seq_length 16; for every kind of REFUSED_KINDS a stand-in (`_stand_in_export`) made
  from its real serving module's card on a 1-layer model (the tests using it are slow)."""
  root = tmp_path_factory.mktemp("exports")
  pair_dir, regression_dir = root / "pair_model", root / "regression_model"
  model_directory.save(build_classifier(_tiny(n_layer=1), 1), os.fspath(regression_dir),
                       ClassifierSpec("sts-b", None, max_seq_length=16,
                                      is_regression=True), spiece_model)
  model_directory.save(build_classifier(_tiny(n_layer=1), 2), os.fspath(pair_dir),
                       ClassifierSpec("rte", ("entailment", "not"),
                                      max_seq_length=16), spiece_model)
  exports = {
      "pair": classifier_export.export_classifier(os.fspath(pair_dir),
                                                  os.fspath(root / "pair"), pair=True,
                                                  bucketed=False, whole_text=False),
      "regression": classifier_export.export_classifier(
          os.fspath(regression_dir), os.fspath(root / "regression"), pair=True, bucketed=False,
          whole_text=False)}
  for name in REFUSED_KINDS:
    card = kind_tests.of(name).export_card(_tiny(n_layer=1), spiece_model)
    exports[name] = _stand_in_export(card, os.fspath(root / f"{name}_export"))
  return exports


def _classify_error(argv, capsys):
  with pytest.raises(SystemExit) as raised:
    classify_text.main(argv)
  assert raised.value.code == 2
  return capsys.readouterr().err.strip().splitlines()[-1]


@pytest.mark.slow
@pytest.mark.parametrize("kind", REFUSED_KINDS)
def test_classify_names_the_kind_of_export_it_got(exports, kind, capsys):
  # Before: TypeError: signature_wrapper(*, text) missing required argument 'text' (and
  # (*, context, question) for SQuAD), a traceback.
  says = kind_tests.of(kind).classify_refusal
  line = _classify_error(["--saved_model", exports[kind], "the whale"], capsys)
  assert line.endswith(f": error: {exports[kind]} {says}. xlnet-classify serves classifier "
                       f"exports (serving_default takes text_a, and text_b for pairs; written "
                       f"by xlnet-export)"), line


@pytest.mark.slow
def test_classify_names_the_inputs_of_an_export_without_export_json(exports, tmp_path,
                                                                    capsys):
  # An export written before exports had an export.json: named by its inputs.
  older = tmp_path / "squad_export"
  shutil.copytree(exports["squad"], older)
  os.remove(older / "export.json")
  line = _classify_error(["--saved_model", os.fspath(older), "the whale"], capsys)
  assert line.endswith(f": error: {older} is an export whose serving_default takes "
                       f"['context', 'question']. xlnet-classify serves classifier exports "
                       f"(serving_default takes text_a, and text_b for pairs; written by "
                       f"xlnet-export)"), line


@pytest.mark.slow
def test_classify_takes_text_b_for_a_pair_classifier(exports, capsys):
  # Before: "error: unrecognized arguments: --text_b ..." (no way to pass text_b).
  classify_text.main(["--saved_model", exports["pair"], "--json", "A man eats.", "Rain.",
                      "--text_b", "Someone eats.", "--text_b", "It is dry."])
  rows = [json.loads(line) for line in capsys.readouterr().out.strip().splitlines()]
  serve = tf.saved_model.load(exports["pair"]).signatures["serving_default"]
  labels = serve(text_a=tf.constant(["A man eats.", "Rain."]),
                 text_b=tf.constant(["Someone eats.", "It is dry."]))["label"].numpy()
  assert [r["text"] for r in rows] == ["A man eats.", "Rain."]
  assert [r["label"] for r in rows] == [label.decode() for label in labels]
  line = _classify_error(["--saved_model", exports["pair"], "A man eats."], capsys)
  assert line.endswith(f"error: {exports['pair']} classifies sentence pairs: give one "
                       f"--text_b per sentence")
  line = _classify_error(["--saved_model", exports["pair"], "A", "B", "--text_b", "C"],
                         capsys)
  assert line.endswith("error: --text_b: 1 given for 2 sentence(s); give one per sentence, "
                       "in order")


@pytest.mark.slow
def test_classify_prints_the_score_of_a_regression_export(exports, capsys):
  # Before: KeyError: 'label' (a regression export returns "score").
  classify_text.main(["--saved_model", exports["regression"], "--json", "A man eats.",
                      "--text_b", "Someone eats."])
  rows = [json.loads(line) for line in capsys.readouterr().out.strip().splitlines()]
  serve = tf.saved_model.load(exports["regression"]).signatures["serving_default"]
  score = serve(text_a=tf.constant(["A man eats."]),
                text_b=tf.constant(["Someone eats."]))["score"].numpy()[0]
  assert rows == [{"text": "A man eats.", "score": round(float(score), 4)}]


@pytest.mark.slow
def test_classify_names_a_sentence_that_is_not_utf8(exports, capsys):
  # Before: "ValueError: Error converting unicode string while converting Python sequence
  # to Tensor.", a traceback.
  bad = b"the \xff whale".decode("utf-8", "surrogateescape")      # as argv arrives
  line = _classify_error(["--saved_model", exports["pair"], bad], capsys)
  assert line.endswith("error: sentence 1: not valid UTF-8 (character 5); give UTF-8 text")
  line = _classify_error(["--saved_model", exports["pair"], "fine", "--text_b", bad], capsys)
  assert line.endswith("error: --text_b 1: not valid UTF-8 (character 5); give UTF-8 text")


# ---- 13: a finished run_squad --do_export rerun ----------------------------------------------

@pytest.mark.slow
def test_run_squad_export_rerun_is_refused_before_any_work(spiece_model, tmp_path):
  # Before: the rerun predicted again (writing predictions.json), then stopped with
  # "run_squad: --export_dir <MODEL_DIR>/export is not empty; give a new directory (an
  # export is never overwritten)", a flag the user never gave.
  model_dir = tmp_path / "squad"
  _squad_model_dir(model_dir / "final", spiece_model)
  export_dir = model_dir / "export"
  export_dir.mkdir()
  (export_dir / "saved_model.pb").write_bytes(b"the first run's export")
  done = subprocess.run(
      [sys.executable, "-m", "experiments.run_squad", "--do_predict", "--do_export",
       f"--model_dir={model_dir}", f"--predict_file={SQUAD_SAMPLE}",
       f"--output_dir={tmp_path / 'out'}"],
      capture_output=True, text=True, env=ENV, cwd=ROOT, check=False)
  assert done.returncode == 1
  assert done.stderr.strip().splitlines()[-1] == (
      f"run_squad: --do_export: {export_dir} (the default of --export_dir, MODEL_DIR/export) "
      f"is not empty: the model was exported there already, and an export is never "
      f"overwritten; give --export_dir a new directory, or leave out --do_export. Nothing "
      f"was done"), done.stderr[-2000:]
  assert not (tmp_path / "out").exists()                       # no prediction was made
  assert os.listdir(export_dir) == ["saved_model.pb"]


# ---- 13: a kill -9 during an export --------------------------------------------------------

_KILLED_EXPORT = r"""
import os, signal, sys
from xlnet_tf.serving import encoder_export, export_card
def die(export_dir, card):
  os.kill(os.getpid(), signal.SIGKILL)       # kill -9 once the SavedModel is written
export_card.measure_parity = die
encoder_export.export_encoder(sys.argv[1], sys.argv[2], max_seq_length=8)
"""


@pytest.mark.slow
def test_an_export_removes_the_partial_directory_of_a_killed_export(pretrained_dir,
                                                                    tmp_path, caplog):
  # Before: <export>.partial-<pid>/ of the killed process stayed beside the export, and
  # every later kill left one more.
  export_dir = os.fspath(tmp_path / "encoder")
  killed = subprocess.run([sys.executable, "-c", _KILLED_EXPORT, pretrained_dir, export_dir],
                          env=ENV, cwd=ROOT, capture_output=True, text=True, check=False)
  assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
  left = [name for name in os.listdir(tmp_path) if ".partial-" in name]
  assert len(left) == 1 and os.path.exists(tmp_path / left[0] / "saved_model.pb"), left
  # <export>.partial-<pid>-<n>@<host>: the killed process's pid.
  pid = left[0].split(".partial-")[1].split("@")[0].split("-")[0]
  # The older name of a dead process's partial directory, <export>.partial-<pid>@<host>,
  # is removed too; a live process's partial directory, and another host's, are never
  # touched.
  older = tmp_path / f"encoder.partial-{pid}@{socket.gethostname()}"
  live = tmp_path / f"encoder.partial-{os.getppid()}@{socket.gethostname()}"
  other_host = tmp_path / "encoder.partial-999999999@another-host"
  for partial in (older, live, other_host):
    partial.mkdir()
    (partial / "theirs.txt").write_text("in use")
  with caplog.at_level(logging.WARNING):
    encoder_export.export_encoder(pretrained_dir, export_dir, max_seq_length=8)
  assert sorted(name for name in os.listdir(tmp_path) if ".partial-" in name) == sorted(
      [live.name, other_host.name])
  assert os.path.exists(os.path.join(export_dir, "saved_model.pb"))
  for removed in (tmp_path / left[0], older):
    assert (f"removed {removed}: the unfinished output of pid {pid} on "
            f"{socket.gethostname()}, which is no longer running" in caplog.text), caplog.text
