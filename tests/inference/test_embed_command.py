"""xlnet-embed: one vector per line or per file, of texts of any length.

The expected vectors come from the encoder export's serving_document called here on one
text at a time (cls: its `embedding`; mean: the average of its `token_embeddings` under
`token_mask`), independent of the command's batching and ordering. Tiny random pretrained
model (2 layers, d_model 16) with the tests' SentencePiece model. The command line and the
encoder export are slow; the bad inputs are checked in this process (fast), before any model
is loaded, against the pretrained directory and a SavedModel of another kind.
"""

import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from helpers import small_config
from xlnet_tf import pretrained
from xlnet_tf.inference import embedding
from xlnet_tf.models.xlnet_pretrainer import build_pretrainer
from xlnet_tf.serving import encoder_export

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPEECH = os.path.join(ROOT, "data_prep", "sample_data", "sotu", "2021_joseph_r_biden_d.txt")
SEQ = 32
TOLERANCE = 1e-5


def _speech(chars):
  with open(SPEECH, encoding="utf-8") as f:
    text = f.read()
  return text[:text.rindex(" ", 0, chars)]


LINES = ["A gripping, beautifully acted film.", _speech(400).replace("\n", " "),
         "Dull and far too long.", "Amélie était très drôle — naïve café, 電影 😀"]


@pytest.fixture(scope="module")
def model_dir(spiece_model, tmp_path_factory):
  """The pretrained model directory."""
  tf.keras.utils.set_random_seed(9)
  directory = os.fspath(tmp_path_factory.mktemp("embed") / "pretrained")
  pretrained.save_pretrained(build_pretrainer(small_config(n_token=4000,
                                                           initializer_range=0.5)),
                             directory, spiece_model=spiece_model)
  return directory


@pytest.fixture(scope="module")
def models(model_dir, tmp_path_factory):
  """(pretrained model directory, its encoder export)."""
  export = encoder_export.export_encoder(
      model_dir, os.fspath(tmp_path_factory.mktemp("embed_export") / "export"),
      max_seq_length=SEQ)
  return model_dir, export


def _expected(export_dir, texts, pooling):
  """One text at a time through the export's serving_document."""
  document = tf.saved_model.load(export_dir).signatures["serving_document"]
  rows, tokens, ids = [], [], []
  for text in texts:
    out = document(text=tf.constant([text]))
    mask = out["token_mask"].numpy()[0] > 0
    own = out["token_embeddings"].numpy()[0][mask]
    rows.append(own.mean(axis=0) if pooling == "mean" else out["embedding"].numpy()[0])
    tokens.append(own)
    ids.append(out["token_ids"].numpy()[0][mask])
  return np.stack(rows), tokens, ids


def _command(*args, cwd):
  return subprocess.run([sys.executable, "-m", "experiments.embed", *args], cwd=cwd,
                        env=dict(os.environ, PYTHONPATH=ROOT), capture_output=True,
                        text=True, check=False)


@pytest.mark.slow
def test_the_command_embeds_each_line_and_each_file(models, tmp_path):
  model_dir, export_dir = models
  lines = tmp_path / "lines.txt"
  lines.write_text("\n".join(LINES) + "\n", encoding="utf-8")
  speech = tmp_path / "speech.txt"
  speech.write_text(_speech(700), encoding="utf-8")

  # Line mode, cls pooling, the export; the default output name INPUT.npy.
  run = _command(f"--saved_model={export_dir}", f"--input={lines}", "--batch_size=2",
                 cwd=tmp_path)
  assert run.returncode == 0, run.stderr[-3000:]
  assert run.stdout.strip() == f"wrote {lines}.npy: 4 vectors of 16 (cls)"
  want, _, _ = _expected(export_dir, LINES, "cls")
  np.testing.assert_allclose(np.load(f"{lines}.npy"), want, atol=TOLERANCE, rtol=0)
  assert "embedding [" in run.stderr and "4/4 texts" in run.stderr      # the progress bar

  # File mode, mean pooling, per token, the model directory: two files, two vectors.
  out = tmp_path / "files.npz"
  run = _command(f"--model_dir={model_dir}", f"--max_seq_length={SEQ}", f"--input={speech}",
                 f"--input={lines}", "--unit=file", "--pooling=mean", "--per_token",
                 f"--output={out}", cwd=tmp_path)
  assert run.returncode == 0, run.stderr[-3000:]
  texts = [_speech(700), "\n".join(LINES)]
  want, tokens, ids = _expected(export_dir, texts, "mean")
  with np.load(out) as got:
    assert sorted(got.files) == ["embeddings", "offsets", "token_embeddings", "token_ids"]
    np.testing.assert_allclose(got["embeddings"], want, atol=TOLERANCE, rtol=0)
    offsets = got["offsets"]
    assert offsets.tolist() == [0, len(ids[0]), len(ids[0]) + len(ids[1])]
    assert len(ids[0]) > 4 * SEQ                                     # several segments
    for i in range(2):
      np.testing.assert_array_equal(got["token_ids"][offsets[i]:offsets[i + 1]], ids[i])
      np.testing.assert_allclose(got["token_embeddings"][offsets[i]:offsets[i + 1]],
                                 tokens[i], atol=TOLERANCE, rtol=0)
  assert not [p for p in os.listdir(tmp_path) if ".partial" in p]

  # A bad input: one line on stderr, exit status 1, nothing written.
  bad = tmp_path / "bad"
  os.makedirs(bad)
  args, message = _bad_inputs(bad, model_dir, export_dir)[1]
  before = sorted(os.listdir(bad))
  run = _command(*args, cwd=bad)
  # (The last line: TensorFlow's C++ start-up may log a line of its own, e.g. a machine
  # without a GPU driver's cuInit error.)
  assert run.returncode == 1 and run.stderr.strip().splitlines()[-1] == (
      f"xlnet-embed: {message}")
  assert sorted(os.listdir(bad)) == before


@pytest.mark.slow
def test_model_dir_and_export_give_the_same_numbers(models):
  model_dir, export_dir = models
  from_dir = embedding.Embedder.from_model_dir(model_dir, max_seq_length=SEQ)
  from_export = embedding.Embedder.from_saved_model(export_dir)
  for pooling in ("cls", "mean"):
    a = embedding.embed(from_dir, LINES, pooling, per_token=True, batch_size=3)
    b = embedding.embed(from_export, LINES, pooling, per_token=True, batch_size=3)
    want, _, _ = _expected(export_dir, LINES, pooling)
    np.testing.assert_allclose(a["embeddings"], want, atol=TOLERANCE, rtol=0)
    for key in ("embeddings", "token_embeddings"):
      np.testing.assert_allclose(a[key], b[key], atol=TOLERANCE, rtol=0, err_msg=key)
    np.testing.assert_array_equal(a["token_ids"], b["token_ids"])
  with pytest.raises(embedding.EmbedInputError,
                     match=r"^in.txt line 2: no text to average \(--pooling mean\); remove "
                           r"the blank line or use --pooling cls$"):
    embedding.embed(from_export, ["one", "  "], "mean", sources=["in.txt line 1",
                                                                 "in.txt line 2"])


def _bad_inputs(tmp_path, model_dir, export_dir):
  """(flags, the one-line error) of every bad input, all checked before the model."""
  good = tmp_path / "good.txt"
  good.write_text("Call me Ishmael.\n", encoding="utf-8")
  empty = tmp_path / "empty.txt"
  empty.write_text("\n \n", encoding="utf-8")
  latin = tmp_path / "latin1.txt"
  latin.write_bytes("fine\nstill fine\ncaf\xe9\n".encode("latin-1"))
  not_model = tmp_path / "not_a_model"
  os.makedirs(not_model)
  no_ckpt = tmp_path / "no_ckpt"
  os.makedirs(no_ckpt)
  (no_ckpt / "xlnet_config.json").write_text("{}")
  existing = tmp_path / "exists.npy"
  existing.write_bytes(b"keep")
  model = f"--model_dir={model_dir}"
  return [
      ([model, f"--input={empty}"], f"--input {empty}: the file is empty; expected UTF-8 text"),
      ([model, f"--input={latin}"], f"--input {latin} line 3: invalid UTF-8 (byte 4 of the "
                                    f"line)"),
      ([model, f"--input={tmp_path / 'missing.txt'}"],
       f"--input {tmp_path / 'missing.txt'}: no such file"),
      ([model, f"--input={tmp_path}"], f"--input {tmp_path}: is a directory; expected a text "
                                       f"file"),
      ([f"--model_dir={not_model}", f"--input={good}"],
       f"--model_dir {not_model}: no xlnet_config.json; expected a pretrained model "
       f"directory (xlnet-convert, pretraining's final/)"),
      ([f"--model_dir={no_ckpt}", f"--input={good}"],
       f"--model_dir {no_ckpt}: no model.ckpt.index; expected a pretrained model directory "
       f"(xlnet-convert, pretraining's final/)"),
      ([f"--saved_model={model_dir}", f"--input={good}"],
       f"--saved_model {model_dir}: no saved_model.pb; expected an encoder export "
       f"(xlnet-convert --saved_model of a pretrained model)"),
      ([model, f"--input={good}", f"--output={existing}"],
       f"--output {existing}: exists; never overwritten (give a new name, or --overwrite)"),
      ([model, f"--input={good}", f"--output={good / 'out.npy'}"],
       f"--output {good / 'out.npy'}: {good} is a file, not a directory"),
      ([model, f"--input={good}", f"--output={tmp_path / 'no' / 'out.npy'}"],
       f"--output {tmp_path / 'no' / 'out.npy'}: the directory {tmp_path / 'no'} does not "
       f"exist"),
      ([model, f"--input={good}", "--per_token", f"--output={tmp_path / 'out.npy'}"],
       f"--output {tmp_path / 'out.npy'}: expected a name ending in .npz (--per_token "
       f"writes an .npz archive)"),
      ([model, f"--saved_model={export_dir}", f"--input={good}"],
       "give one of --model_dir and --saved_model"),
  ]


def test_bad_inputs_are_one_line_errors_before_the_model(model_dir, tmp_path, monkeypatch):
  # A SavedModel without serving_document: an export of another kind.
  no_document = tmp_path / "no_document"

  class Other(tf.Module):
    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def serve(self, text):
      return {"length": tf.strings.length(text)}
  module = Other()
  tf.saved_model.save(module, os.fspath(no_document),
                      signatures={"serving_default": module.serve})
  cases = _bad_inputs(tmp_path, model_dir, no_document)
  before = sorted(os.listdir(tmp_path))
  # Each case through the command's checks in this process, with the model loaders
  # replaced by a failure: nothing may be loaded before the error.
  from experiments import embed  # pylint: disable=g-import-not-at-top
  from absl import flags  # pylint: disable=g-import-not-at-top

  def no_model(*args, **kwargs):
    raise AssertionError("the model was loaded before the inputs were checked")
  monkeypatch.setattr(embedding.Embedder, "from_model_dir", no_model)
  monkeypatch.setattr(embedding.Embedder, "from_saved_model", no_model)
  for args, message in cases:
    flags.FLAGS.unparse_flags()
    flags.FLAGS(["xlnet-embed"] + args)
    with pytest.raises(SystemExit) as raised:
      embed.main(["xlnet-embed"])
    assert str(raised.value.code) == f"xlnet-embed: {message}", args
  flags.FLAGS.unparse_flags()
  assert sorted(os.listdir(tmp_path)) == before                        # nothing written
  assert open(tmp_path / "exists.npy", "rb").read() == b"keep"

  with pytest.raises(embedding.EmbedInputError) as raised:
    embedding.check_saved_model(os.fspath(no_document))
  assert str(raised.value) == (f"--saved_model {no_document}: no signature serving_document "
                               f"(it has serving_default); expected an encoder export of "
                               f"this version")
