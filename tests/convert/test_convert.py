"""Weight import: released TF1 directories and HuggingFace directories, and their errors."""

import json
import os
import sys

import numpy as np
import pytest
import tensorflow as tf

from hf_reference import make_hf_model
from helpers import pretraining_inputs
from helpers import small_config
from probe import probe
from released_checkpoint import released_arrays_from_hf
from released_checkpoint import write_released_dir
from xlnet_tf import released_names
from xlnet_tf.convert.importer import convert
from xlnet_tf.convert.importer import detect_source
from xlnet_tf import load_pretrained


@pytest.fixture(name="sources")
def _sources(tmp_path):
  """The same random weights as an HF directory and as a released TF1 directory."""
  config = small_config(n_layer=3, mem_len=4, reuse_len=2)
  hf_model = make_hf_model(config, seed=7)
  hf_model.save_pretrained(os.fspath(tmp_path / "hf"))
  arrays = released_arrays_from_hf(hf_model, config)
  write_released_dir(tmp_path / "released", config, arrays, spiece_bytes=b"spiece-bytes")
  return config, arrays, tmp_path


def test_released_and_hf_directories_convert_to_the_same_model(sources):
  config, arrays, tmp = sources
  assert detect_source(os.fspath(tmp / "released")) == "released"
  assert detect_source(os.fspath(tmp / "hf")) == "huggingface"
  convert(os.fspath(tmp / "released"), os.fspath(tmp / "from_released"))
  convert(os.fspath(tmp / "hf"), os.fspath(tmp / "from_hf"))
  from_released = load_pretrained(os.fspath(tmp / "from_released"))
  from_hf = load_pretrained(os.fspath(tmp / "from_hf"))

  # Bit-faithful: every weight equals the source array exactly.
  for model in (from_released, from_hf):
    variables = released_names.released_variables(model)
    assert set(variables) == set(arrays)
    for name, variable in variables.items():
      np.testing.assert_array_equal(variable.numpy(), arrays[name], err_msg=name)

  inputs = pretraining_inputs(np.random.default_rng(0), 2, 8, num_predict=3,
                              num_targets=3, padding=1)
  feed = {k: tf.constant(v) for k, v in inputs.items()}
  out_released, out_hf = from_released(feed), from_hf(feed)
  for key in ("content", "query", "logits"):
    np.testing.assert_array_equal(out_released[key].numpy(), out_hf[key].numpy())
  for a, b in zip(out_released["new_mems"], out_hf["new_mems"]):
    np.testing.assert_array_equal(a.numpy(), b.numpy())

  with open(tmp / "from_released" / "spiece.model", "rb") as f:
    assert f.read() == b"spiece-bytes"
  assert not (tmp / "from_hf" / "spiece.model").exists()
  report = json.loads((tmp / "from_released" / "conversion.json").read_text())
  assert report["source_kind"] == "released"
  assert report["variables"] == len(arrays)
  # The released config has only the 8 architecture keys: run options take defaults.
  assert from_released.config == config.replace(mem_len=0, reuse_len=0, dropout=0.1,
                                                dropatt=0.1)


def test_tied_biases_convert_from_both_layouts(tmp_path):
  config = small_config(untie_r=False)
  hf_model = make_hf_model(config, seed=3)
  hf_model.save_pretrained(os.fspath(tmp_path / "hf"))
  arrays = released_arrays_from_hf(hf_model, config)
  assert arrays["model/transformer/r_w_bias"].shape == (2, 8)
  write_released_dir(tmp_path / "released", config, arrays)
  for source in ("hf", "released"):
    convert(os.fspath(tmp_path / source), os.fspath(tmp_path / f"out_{source}"))
    model = load_pretrained(os.fspath(tmp_path / f"out_{source}"))
    np.testing.assert_array_equal(model.encoder.r_w_bias.numpy(),
                                  arrays["model/transformer/r_w_bias"])


def test_hf_pytorch_bin_directory(tmp_path):
  """Older hub repos ship pytorch_model.bin: torch.save of the full state dict, with the
  tied lm_loss.weight stored beside word_embedding.weight."""
  import torch
  config = small_config()
  hf_model = make_hf_model(config, seed=5)
  hf_model.save_pretrained(os.fspath(tmp_path / "hf"))
  os.remove(tmp_path / "hf" / "model.safetensors")
  state = hf_model.state_dict()
  assert "lm_loss.weight" in state
  torch.save(state, tmp_path / "hf" / "pytorch_model.bin")
  convert(os.fspath(tmp_path / "hf"), os.fspath(tmp_path / "out"))
  model = load_pretrained(os.fspath(tmp_path / "out"))
  np.testing.assert_array_equal(model.encoder.mask_emb.numpy(),
                                hf_model.transformer.mask_emb.detach().numpy())

  state["lm_loss.weight"] = state["lm_loss.weight"] + 1.0   # no longer tied
  torch.save(state, tmp_path / "hf" / "pytorch_model.bin")
  with pytest.raises(ValueError, match="lm_loss.weight differs from word_embedding.weight"):
    convert(os.fspath(tmp_path / "hf"), os.fspath(tmp_path / "out2"))


def test_hf_pytorch_bin_without_torch_names_the_extra(tmp_path, monkeypatch):
  """Without PyTorch a pytorch_model.bin is refused with what to install (the command
  prints it as one line), not a bare ImportError."""
  import torch
  hf_model = make_hf_model(small_config(), seed=5)
  hf_model.save_pretrained(os.fspath(tmp_path / "hf"))
  os.remove(tmp_path / "hf" / "model.safetensors")
  torch.save(hf_model.state_dict(), tmp_path / "hf" / "pytorch_model.bin")
  monkeypatch.setitem(sys.modules, "torch", None)              # import raises ImportError
  binary = tmp_path / "hf" / "pytorch_model.bin"
  with pytest.raises(ImportError) as raised:
    convert(os.fspath(tmp_path / "hf"), os.fspath(tmp_path / "out"))
  assert str(raised.value) == (
      f"{binary}: reading pytorch_model.bin needs PyTorch (install xlnet_tf[huggingface]); "
      f"a model.safetensors file needs only the safetensors package")
  assert not (tmp_path / "out").exists()


def test_task_heads_and_optimizer_slots_are_left_out_and_reported(sources):
  config, arrays, tmp = sources
  heads = {"model/sequnece_summary/summary/kernel": np.zeros([16, 16], np.float32),
           "model/classification_sst-2/logit/kernel": np.zeros([16, 2], np.float32),
           "start_logits/dense/kernel": np.zeros([16, 1], np.float32)}
  write_released_dir(tmp / "finetuned", config, arrays, extra=heads)
  report = convert(os.fspath(tmp / "finetuned"), os.fspath(tmp / "out"))
  assert sorted(report["skipped_task_head_variables"]) == sorted(heads)
  assert report["variables"] == len(arrays)


# The missing variable in the fast tier; the unknown and misshapen ones (the same check of
# the names and shapes against the config) slow.
@pytest.mark.parametrize("change, message", [
    (lambda a: a.pop("model/transformer/layer_1/ff/layer_2/bias"),
     "missing variable(s) ['model/transformer/layer_1/ff/layer_2/bias']"),
    pytest.param(
        lambda a: a.update({"model/transformer/layer_9/ff/extra": np.zeros([2], np.float32)}),
        "unknown variable(s) ['model/transformer/layer_9/ff/extra']", marks=pytest.mark.slow),
    pytest.param(
        lambda a: a.update({"model/transformer/layer_0/rel_attn/q/kernel":
                            np.zeros([16, 2, 4], np.float32)}),
        "variable model/transformer/layer_0/rel_attn/q/kernel has shape [16, 2, 4], the "
        "config needs [16, 2, 8]", marks=pytest.mark.slow),
])
def test_released_checkpoint_errors_name_the_variable(sources, change, message):
  """A released checkpoint with a missing, unknown or misshapen variable is refused naming
  the variable and the checkpoint, and nothing is written."""
  config, arrays, tmp = sources
  arrays = dict(arrays)
  change(arrays)
  write_released_dir(tmp / "bad", config, arrays)
  with pytest.raises(ValueError) as error:
    convert(os.fspath(tmp / "bad"), os.fspath(tmp / "out"))
  assert message in str(error.value)
  assert os.fspath(tmp / "bad" / "xlnet_model.ckpt") in str(error.value)
  assert not (tmp / "out").exists()
  assert not [p for p in os.listdir(tmp) if p.startswith("out")]


def test_config_that_does_not_match_the_checkpoint(sources):
  _, _, tmp = sources
  values = json.loads((tmp / "released" / "xlnet_config.json").read_text())
  values["d_inner"] = 40
  (tmp / "released" / "xlnet_config.json").write_text(json.dumps(values))
  with pytest.raises(ValueError, match=r"ff/layer_1/kernel has shape \[16, 32\], the config "
                                       r"needs \[16, 40\]"):
    convert(os.fspath(tmp / "released"), os.fspath(tmp / "out"))


def test_unknown_hf_key_is_an_error(sources):
  _, _, tmp = sources
  from safetensors.numpy import load_file, save_file
  path = os.fspath(tmp / "hf" / "model.safetensors")
  tensors = load_file(path)
  tensors["transformer.layer.0.rel_attn.extra"] = np.zeros([3], np.float32)
  save_file(tensors, path)
  with pytest.raises(ValueError, match=r"unknown HuggingFace key "
                                       r"'transformer.layer.0.rel_attn.extra'"):
    convert(os.fspath(tmp / "hf"), os.fspath(tmp / "out"))


def test_not_a_checkpoint_directory(tmp_path):
  (tmp_path / "src").mkdir()
  (tmp_path / "src" / "notes.txt").write_text("hello")
  with pytest.raises(ValueError) as error:
    convert(os.fspath(tmp_path / "src"), os.fspath(tmp_path / "out"))
  for expected in ("xlnet_config.json", "xlnet_model.ckpt.index", "config.json",
                   "model.safetensors", "pytorch_model.bin", "notes.txt"):
    assert expected in str(error.value)
  with pytest.raises(FileNotFoundError, match="--source .*missing: not a directory"):
    convert(os.fspath(tmp_path / "missing"), os.fspath(tmp_path / "out"))


def test_existing_output_needs_overwrite(sources):
  _, _, tmp = sources
  convert(os.fspath(tmp / "hf"), os.fspath(tmp / "out"))
  with pytest.raises(FileExistsError, match="--overwrite"):
    convert(os.fspath(tmp / "hf"), os.fspath(tmp / "out"))
  convert(os.fspath(tmp / "released"), os.fspath(tmp / "out"), overwrite=True)
  assert json.loads((tmp / "out" / "conversion.json").read_text())["source_kind"] == "released"


def test_load_pretrained_errors(sources):
  _, _, tmp = sources
  convert(os.fspath(tmp / "hf"), os.fspath(tmp / "out"))
  with pytest.raises(ValueError, match=r"\['d_model'\] cannot be overridden"):
    load_pretrained(os.fspath(tmp / "out"), d_model=32)
  with pytest.raises(ValueError, match="XLNetConfig.attn_type must be one of"):
    load_pretrained(os.fspath(tmp / "out"), attn_type="sideways")
  model = load_pretrained(os.fspath(tmp / "out"), mem_len=7, bi_data=True, dropout=0.0)
  assert (model.config.mem_len, model.config.bi_data, model.config.dropout) == (7, True, 0.0)

  values = json.loads((tmp / "out" / "xlnet_config.json").read_text())
  values["n_layer"] = 2
  (tmp / "out" / "xlnet_config.json").write_text(json.dumps(values))
  with pytest.raises(ValueError, match=r"model/transformer/r_w_bias has shape \[3, 2, 8\] in "
                                       r"the checkpoint, the model built from "
                                       r"xlnet_config.json needs \[2, 2, 8\]"):
    load_pretrained(os.fspath(tmp / "out"))
  os.remove(tmp / "out" / "model.ckpt.index")
  with pytest.raises(FileNotFoundError, match="model.ckpt.index"):
    load_pretrained(os.fspath(tmp / "out"))


@pytest.mark.slow
def test_command_line(sources):
  """xlnet-convert (`experiments.convert`) converts a released directory and says what it
  converted; a directory that holds no checkpoint fails with a message saying so (both
  command lines in one interpreter, `probe`)."""
  _, _, tmp = sources
  (tmp / "notes").mkdir()
  (tmp / "notes" / "readme.txt").write_text("not a checkpoint")
  run, bad = probe("experiments.convert", [
      ["--source", tmp / "released", "--output", tmp / "cli_out"],
      ["--source", tmp / "notes", "--output", tmp / "cli_bad"]])
  assert run.returncode == 0, run.stderr
  assert "released checkpoint" in run.stdout and "variables" in run.stdout
  assert (tmp / "cli_out" / "model.ckpt.index").exists()

  assert bad.returncode != 0
  assert "not an XLNet checkpoint directory" in bad.stderr


def test_missing_checkpoint_data_or_shard_names_the_file(sources):
  _, _, tmp = sources
  for name in os.listdir(tmp / "released"):
    if ".data-" in name:
      os.remove(tmp / "released" / name)
  with pytest.raises(ValueError, match=r"released/xlnet_model.ckpt: cannot read the TF1 "
                                       r"checkpoint"):
    convert(os.fspath(tmp / "released"), os.fspath(tmp / "out"))

  os.rename(tmp / "hf" / "model.safetensors", tmp / "hf" / "model-00001-of-00002.safetensors")
  (tmp / "hf" / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {
      "lm_loss.bias": "model-00001-of-00002.safetensors",
      "transformer.mask_emb": "model-00002-of-00002.safetensors"}}))
  with pytest.raises(FileNotFoundError, match="lists model-00002-of-00002.safetensors, which "
                                              "is missing"):
    convert(os.fspath(tmp / "hf"), os.fspath(tmp / "out"))
