"""Numerical parity with HuggingFace's PyTorch XLNet (the reference implementation).

Each scenario builds an HF XLNetLMHeadModel with random weights, saves it with HF's own
`save_pretrained`, converts the directory with `xlnet_tf.convert`, loads it with
`load_pretrained` and compares content output, query output, logits, new memories and
the content stream's attention probabilities (`output_attentions`):
max |ours - HF| <= 1e-5 * max(1, max |HF|), step by step, each model fed its own memories.
"""

import os

import numpy as np
import pytest
import tensorflow as tf

from hf_reference import hf_forward
from hf_reference import make_hf_model
from helpers import max_rel_error
from helpers import pretraining_inputs
from helpers import small_config
from xlnet_tf.convert.importer import convert
from xlnet_tf import load_pretrained

TOLERANCE = 1e-5
SEP, CLS, PAD_SEGMENT = 4, 3, 4


def _segments_and_cls(rng):
  """[A <sep> B <sep> <cls>] with XLNet segment ids 0, 1, 2."""
  ids = rng.integers(10, 50, [2, 9])
  ids[:, 3] = ids[:, 7] = SEP
  ids[:, 8] = CLS
  segments = np.tile([0, 0, 0, 0, 1, 1, 1, 1, 2], [2, 1])
  return [{"input_ids": ids, "segment_ids": segments}]


def _left_padding(rng):
  """Classification layout padded on the left, a different amount per row."""
  ids = rng.integers(10, 50, [3, 8])
  pad = np.zeros([3, 8], np.float32)
  pad[1, :2] = pad[2, :5] = 1.0
  segments = np.where(pad > 0, PAD_SEGMENT, 0)
  segments[:, -1] = 2
  ids[:, -1] = CLS
  return [{"input_ids": ids, "segment_ids": segments, "input_mask": pad}]


def _perm_and_targets(rng):
  return [pretraining_inputs(rng, 2, 10, num_predict=5, num_targets=4),
          pretraining_inputs(rng, 2, 10, num_predict=5, num_targets=5, padding=2)]


def _pretraining_steps(batch, seqlen, num_predict, num_targets, steps=3):
  def make(rng):
    return [pretraining_inputs(rng, batch, seqlen, num_predict, num_targets)
            for _ in range(steps)]
  return make


def _plain_steps(batch, seqlen, steps, with_targets_last=False):
  def make(rng):
    out = []
    for step in range(steps):
      inputs = {"input_ids": rng.integers(10, 50, [batch, seqlen]),
                "segment_ids": np.tile([0] * (seqlen - 1) + [2], [batch, 1])}
      if with_targets_last and step == steps - 1:
        mapping = np.zeros([batch, 2, seqlen], np.float32)
        mapping[:, 0, 1] = mapping[:, 1, seqlen - 1] = 1.0
        inputs["target_mapping"] = mapping
      out.append(inputs)
    return out
  return make


SCENARIOS = {
    "two_segments_and_cls": ({}, _segments_and_cls),
    "left_padding": ({}, _left_padding),
    "perm_mask_and_target_mapping": ({}, _perm_and_targets),
    "memory_three_segments": (dict(mem_len=8, reuse_len=4), _pretraining_steps(2, 6, 3, 2)),
    "memory_without_reuse_len": (dict(mem_len=5), _pretraining_steps(2, 4, 2, 2)),
    "attn_type_uni": (dict(attn_type="uni", mem_len=6),
                      _plain_steps(2, 5, steps=3, with_targets_last=True)),
    "bi_data": (dict(bi_data=True, mem_len=6, reuse_len=3), _pretraining_steps(4, 6, 3, 3, 2)),
    "clamp_len": (dict(clamp_len=3, mem_len=5), _pretraining_steps(2, 8, 3, 3, 2)),
    "same_length": (dict(attn_type="uni", same_length=True, mem_len=5),
                    _plain_steps(2, 5, steps=3, with_targets_last=True)),
    "tied_biases": (dict(untie_r=False, mem_len=4), _pretraining_steps(2, 6, 3, 2, 2)),
    "relu": (dict(ff_activation="relu"), _perm_and_targets),
    "gelu_exact": (dict(ff_activation="gelu_exact"), _perm_and_targets),
}


# Five scenarios in the fast tier (padding, permutation and targets, memory over three
# segments, causal attention with same_length, bi_data); the other seven slow.
FAST_SCENARIOS = ("left_padding", "perm_mask_and_target_mapping", "memory_three_segments",
                  "same_length", "bi_data")


@pytest.mark.parametrize("name", [
    name if name in FAST_SCENARIOS else pytest.param(name, marks=pytest.mark.slow)
    for name in sorted(SCENARIOS)])
def test_matches_huggingface(name, tmp_path):
  overrides, make_steps = SCENARIOS[name]
  config = small_config(**overrides)
  hf_model = make_hf_model(config, seed=len(name))
  hf_model.save_pretrained(os.fspath(tmp_path / "hf"))
  convert(os.fspath(tmp_path / "hf"), os.fspath(tmp_path / "ours"))
  model = load_pretrained(os.fspath(tmp_path / "ours"))
  assert model.config == config

  errors = {}
  ours_mems = hf_mems = None
  for step, inputs in enumerate(make_steps(np.random.default_rng(len(name)))):
    reference = hf_forward(hf_model, inputs, hf_mems)
    feed = {k: tf.constant(v) for k, v in inputs.items()}
    if ours_mems is not None:
      feed["mems"] = ours_mems
    outputs = model(feed)
    keys = ["content", "logits"] + (["query"] if "target_mapping" in inputs else [])
    for key in keys:
      errors[f"step{step}/{key}"] = max_rel_error(outputs[key], reference[key])
    attentions = model.encoder(feed, output_attentions=True)["attentions"]
    assert len(attentions) == config.n_layer
    for i, (ours, ref) in enumerate(zip(attentions, reference["attentions"])):
      errors[f"step{step}/attentions[{i}]"] = max_rel_error(ours, ref)
    if config.mem_len:
      assert len(outputs["new_mems"]) == config.n_layer
      for i, (ours, ref) in enumerate(zip(outputs["new_mems"], reference["new_mems"])):
        errors[f"step{step}/new_mems[{i}]"] = max_rel_error(ours, ref)
      ours_mems, hf_mems = outputs["new_mems"], reference["new_mems"]
    else:
      assert outputs["new_mems"] == []
  worst = max(errors, key=errors.get)
  print(f"{name}: worst {worst} {errors[worst]:.2e} over {len(errors)} comparisons")
  assert errors[worst] <= TOLERANCE, errors
