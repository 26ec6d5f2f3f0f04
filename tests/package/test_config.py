"""XLNetConfig: the released JSON format, our JSON, HuggingFace's config, and errors."""

import json

import pytest
import transformers

from xlnet_tf.configs import XLNetConfig

# xlnet_cased_L-12_H-768_A-12/xlnet_config.json as released (key order as released).
RELEASED_BASE = {"d_head": 64, "d_inner": 3072, "d_model": 768, "ff_activation": "gelu",
                 "n_head": 12, "n_layer": 12, "n_token": 32000, "untie_r": True}


def test_released_json_round_trip(tmp_path):
  path = tmp_path / "xlnet_config.json"
  path.write_text(json.dumps(RELEASED_BASE))
  config = XLNetConfig.from_json_file(str(path))
  assert (config.n_layer, config.d_model, config.ff_activation, config.untie_r) == (
      12, 768, "gelu", True)
  assert (config.mem_len, config.attn_type, config.clamp_len) == (0, "bi", -1)
  config.to_json_file(str(tmp_path / "released.json"), released_only=True)
  assert json.loads((tmp_path / "released.json").read_text()) == RELEASED_BASE

  full = config.replace(mem_len=384, reuse_len=256, bi_data=True, same_length=True)
  full.to_json_file(str(tmp_path / "full.json"))
  assert XLNetConfig.from_json_file(str(tmp_path / "full.json")) == full


@pytest.mark.parametrize("change, message", [
    ({"n_layers": 12}, "unknown key(s) ['n_layers']"),
    ({"d_inner": None}, "XLNetConfig.d_inner must be a positive integer"),
    ({"ff_activation": "swish"}, "XLNetConfig.ff_activation must be one of"),
    ({"attn_type": "both"}, "XLNetConfig.attn_type must be one of ('bi', 'uni')"),
    ({"dropout": 1.5}, "XLNetConfig.dropout must be in [0, 1)"),
    ({"mem_len": -1}, "XLNetConfig.mem_len must be an integer >= 0"),
])
def test_bad_config_names_file_and_key(tmp_path, change, message):
  path = tmp_path / "xlnet_config.json"
  path.write_text(json.dumps({**RELEASED_BASE, **change}))
  with pytest.raises(ValueError) as error:
    XLNetConfig.from_json_file(str(path))
  assert str(path) in str(error.value) and message in str(error.value)


def test_missing_key_and_missing_file(tmp_path):
  values = dict(RELEASED_BASE)
  del values["untie_r"]
  (tmp_path / "c.json").write_text(json.dumps(values))
  with pytest.raises(ValueError, match=r"missing key\(s\) \['untie_r'\]"):
    XLNetConfig.from_json_file(str(tmp_path / "c.json"))
  with pytest.raises(FileNotFoundError, match="nope.json"):
    XLNetConfig.from_json_file(str(tmp_path / "nope.json"))


@pytest.mark.parametrize("hf_activation, ours", [
    ("gelu_new", "gelu"), ("gelu", "gelu_exact"), ("relu", "relu")])
def test_hf_activation_names(hf_activation, ours):
  hf = transformers.XLNetConfig(vocab_size=100, d_model=32, n_layer=2, n_head=4, d_inner=64,
                                ff_activation=hf_activation, mem_len=None)
  config = XLNetConfig.from_hf_dict(hf.to_dict())
  assert config.ff_activation == ours
  assert (config.d_head, config.n_token, config.mem_len, config.untie_r) == (8, 100, 0, True)


def test_hf_dict_round_trip_through_transformers():
  config = XLNetConfig(n_layer=3, d_model=32, n_head=4, d_head=8, d_inner=64, n_token=99,
                       ff_activation="gelu", untie_r=False, dropout=0.2, dropatt=0.2,
                       mem_len=16, reuse_len=8, attn_type="uni", bi_data=True, clamp_len=5,
                       same_length=True)
  hf = transformers.XLNetConfig(**config.to_hf_dict())
  assert XLNetConfig.from_hf_dict(hf.to_dict()) == config
  with pytest.raises(ValueError, match="d_head \\* n_head == d_model"):
    config.replace(d_head=16).to_hf_dict()
