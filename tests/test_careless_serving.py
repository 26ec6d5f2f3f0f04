"""Issue 27, load_pretrained / generation, xlnet-classify, convert, exports and run_squad's
export: each case as a careless user meets it.

5   load_pretrained (and so xlnet-generate) refuses NaN weights, naming the directory and
    the weight, as convert and the exports do.
12  xlnet-classify names the kind of export it got (tagger, SQuAD) and what serves it,
    takes --text_b for pair classifiers, and names a sentence that is not UTF-8;
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
from helpers import small_config
from hf_reference import make_hf_model
from xlnet_tf import build_pretrainer
from xlnet_tf import generate as generate_cli
from xlnet_tf import load_pretrained
from xlnet_tf import model_directory
from xlnet_tf import paths
from xlnet_tf import save_pretrained
from xlnet_tf.convert import convert
from xlnet_tf.models.xlnet_classifier import build_classifier
from xlnet_tf.models.xlnet_squad import build_squad_model
from xlnet_tf.models.xlnet_tagger import build_tagger
from xlnet_tf.serving import encoder_export
from xlnet_tf.serving import export as classifier_export
from xlnet_tf.serving import squad_export
from xlnet_tf.serving import tagger_export

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
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


def test_load_pretrained_refuses_nan_weights_naming_directory_and_weight(spiece_model,
                                                                         tmp_path):
  # Before: the model loaded, and xlnet-generate printed " ⁇  ⁇ ..." with exit status 0.
  directory = _nan_model_dir(tmp_path / "nan", spiece_model)
  with pytest.raises(model_directory.NonFiniteError) as raised:
    load_pretrained(directory)
  assert str(raised.value) == (
      f"{directory}: 1 weight(s) hold NaN or infinite values (e.g. "
      f"model/transformer/word_embedding/lookup_table); the model cannot be used")
  with pytest.raises(SystemExit) as raised:
    generate_cli.main(["--model_dir", directory, "--prompt", "the whale",
                       "--max_new_tokens", "3"])
  text = _one_line_exit(raised, f"xlnet_tf.generate: {directory}: 1 weight(s) hold NaN")
  assert "model/transformer/word_embedding/lookup_table" in text


# ---- 12: xlnet-generate with a prompt that is not UTF-8 ------------------------------------

@pytest.fixture(scope="module", name="pretrained_dir")
def _pretrained_dir(spiece_model, tmp_path_factory):
  directory = os.fspath(tmp_path_factory.mktemp("careless") / "pretrained")
  save_pretrained(build_pretrainer(_tiny()), directory, spiece_model=spiece_model)
  return directory


def test_generate_names_a_prompt_that_is_not_utf8(pretrained_dir):
  # Before: RuntimeError (pybind11) from SentencePiece, a traceback.
  prompt = b"the \xff whale".decode("utf-8", "surrogateescape")     # as argv arrives
  with pytest.raises(SystemExit) as raised:
    generate_cli.main(["--model_dir", pretrained_dir, "--prompt", prompt])
  assert _one_line_exit(raised, "xlnet_tf.generate: ") == (
      "xlnet_tf.generate: --prompt: not valid UTF-8 (character 5 of the prompt); give "
      "UTF-8 text")


# ---- 13: xlnet-generate on the pipeline's bi_data pretrained model --------------------------

def test_generate_serves_a_bi_data_pretrained_model(spiece_model, tmp_path, capsys):
  # Before: "xlnet_tf.generate: model: bi_data (...) is a pretraining option; load the
  # model with bi_data=False to generate", and no option for it.
  directory = os.fspath(tmp_path / "pretrained_bi_data")
  save_pretrained(build_pretrainer(_tiny(bi_data=True)), directory, spiece_model=spiece_model)
  argv = ["--model_dir", directory, "--prompt", "Call me Ishmael.", "--max_new_tokens", "4"]
  generate_cli.main(argv)
  printed = capsys.readouterr().out
  plain = os.fspath(tmp_path / "pretrained_plain")        # the same weights, bi_data off
  config = json.loads(open(os.path.join(directory, model_directory.CONFIG_FILE)).read())
  save_pretrained(load_pretrained(directory, bi_data=False), plain, spiece_model=spiece_model)
  assert config["bi_data"] is True
  generate_cli.main(["--model_dir", plain] + argv[2:])
  assert printed == capsys.readouterr().out


# ---- 12: a NaN in a HuggingFace safetensors file -------------------------------------------

def test_convert_names_the_safetensors_file_and_tensor_holding_nan(tmp_path):
  # Before: "<tmp>/.out.partial-<id>: 1 weight(s) hold NaN or infinite values (e.g.
  # xlnet_pretrainer/...); nothing was written", naming the temporary output directory.
  source = tmp_path / "hf"
  make_hf_model(small_config(), seed=3).save_pretrained(os.fspath(source))
  weights = os.fspath(source / "model.safetensors")
  tensors = load_file(weights)
  name = "transformer.layer.1.ff.layer_1.weight"
  tensors[name][0, 0] = np.nan
  save_file(tensors, weights, metadata={"format": "pt"})
  with pytest.raises(model_directory.NonFiniteError) as raised:
    convert(os.fspath(source), os.fspath(tmp_path / "out"))
  assert str(raised.value) == (f"{weights}: 1 tensor(s) hold NaN or infinite values (e.g. "
                               f"{name}); nothing was written")
  assert sorted(os.listdir(tmp_path)) == ["hf"]
  cli = subprocess.run([sys.executable, "-m", "xlnet_tf.convert", f"--source={source}",
                        f"--output={tmp_path / 'out'}"], capture_output=True, text=True,
                       env=ENV, cwd=ROOT, check=False)
  assert cli.returncode == 1 and cli.stderr.strip().splitlines()[-1] == (
      f"xlnet_tf.convert: {weights}: 1 tensor(s) hold NaN or infinite values (e.g. "
      f"{name}); nothing was written"), cli.stderr[-2000:]
  assert sorted(os.listdir(tmp_path)) == ["hf"]
