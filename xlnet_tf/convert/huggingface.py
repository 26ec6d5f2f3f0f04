"""Reads a HuggingFace XLNet directory: config.json, tokenizer_config.json and the weights
(`hf_weights`), the encoder's tensors translated to the released names, the task head's
kept by their HuggingFace names for its kind's conversion (`hf_heads.identify_hf_head`).

HF names of the encoder are translated to the released names (see `released_names.py`):
  [transformer.]word_embedding.weight        -> model/transformer/word_embedding/lookup_table
  [transformer.]mask_emb                     -> model/transformer/mask_emb/mask_emb
  layer.{i}.rel_attn.{q,k,v,o,r}             -> layer_{i}/rel_attn/{q,k,v,o,r}/kernel
  layer.{i}.rel_attn.r_{w,r,s}_bias           -> r_{w,r,s}_bias stacked [L, N, H] (or one
                                                [N, H] if untie_r is false and all equal)
  layer.{i}.rel_attn.seg_embed               -> seg_embed stacked [L, 2, N, H]
  layer.{i}.{rel_attn,ff}.layer_norm.{weight,bias} -> .../LayerNorm/{gamma,beta}
  layer.{i}.ff.layer_{1,2}.{weight,bias}     -> ff/layer_{1,2}/{kernel (transposed),bias}
  lm_loss.bias                               -> model/lm_loss/bias
  lm_loss.weight                             -> must equal word_embedding (tied)

The tensors of the task heads are those of the registered kinds' conversions (`head_keys`:
`hf_head_keys` of each record's `conversion`, `xlnet_tf.convert.heads`). tokenizer_config.json
gives do_lower_case and keep_accents (remove_space must be true).
"""

import dataclasses
import json
import os
import re
from typing import Any, Dict, Mapping, Tuple

from absl import logging
import numpy as np

from xlnet_tf.configs import XLNetConfig
from xlnet_tf import released_names as names
from xlnet_tf import task_kind
from xlnet_tf.convert import hf_weights
from xlnet_tf.convert.source import SourceWeights

CONFIG_FILE = "config.json"
TOKENIZER_CONFIG_FILE = "tokenizer_config.json"
# HF's XLNetConfig defaults for the keys a config.json may leave out (and an export writes,
# but summary_proj_to_labels, which HF's XLNetConfig does not define).
HF_DEFAULTS = {"summary_type": "last", "summary_use_proj": True, "summary_activation": "tanh",
               "summary_last_dropout": 0.1, "summary_proj_to_labels": False,
               "start_n_top": 5, "end_n_top": 5, "use_mems_eval": True,
               "use_mems_train": False}

_LAYER_KEY = re.compile(r"^layer\.(\d+)\.(.+)$")
_LAYER_RENAMES = {
    "rel_attn.q": "rel_attn/q/kernel", "rel_attn.k": "rel_attn/k/kernel",
    "rel_attn.v": "rel_attn/v/kernel", "rel_attn.o": "rel_attn/o/kernel",
    "rel_attn.r": "rel_attn/r/kernel",
    "rel_attn.layer_norm.weight": "rel_attn/LayerNorm/gamma",
    "rel_attn.layer_norm.bias": "rel_attn/LayerNorm/beta",
    "ff.layer_1.weight": "ff/layer_1/kernel", "ff.layer_1.bias": "ff/layer_1/bias",
    "ff.layer_2.weight": "ff/layer_2/kernel", "ff.layer_2.bias": "ff/layer_2/bias",
    "ff.layer_norm.weight": "ff/LayerNorm/gamma", "ff.layer_norm.bias": "ff/LayerNorm/beta",
}
_TRANSPOSED = ("ff.layer_1.weight", "ff.layer_2.weight")   # torch Linear: [out, in]
_STACKED = ("rel_attn.r_w_bias", "rel_attn.r_r_bias", "rel_attn.r_s_bias",
            "rel_attn.seg_embed")


def is_hf_dir(directory: str) -> bool:
  config = os.path.join(directory, CONFIG_FILE)
  if not os.path.isfile(config):
    return False
  if not any(os.path.isfile(os.path.join(directory, f)) for f in hf_weights.WEIGHT_FILES):
    return False
  try:
    with open(config, encoding="utf-8") as f:
      return json.load(f).get("model_type") == "xlnet"
  except (OSError, ValueError):
    return False


@dataclasses.dataclass
class HFSourceWeights(SourceWeights):
  """`SourceWeights` of a HuggingFace directory, with what the head and the tokenizer need.

  head_tensors: the task-head tensors by HF name (as stored: torch layout).
  hf_config: config.json's values; config_path: its path.
  tokenizer: uncased, keep_accents and `source` (the tokenizer_config.json read, or None).
  """
  head_tensors: Dict[str, np.ndarray] = dataclasses.field(default_factory=dict)
  hf_config: Dict[str, Any] = dataclasses.field(default_factory=dict)
  config_path: str = CONFIG_FILE
  tokenizer: Dict[str, Any] = dataclasses.field(default_factory=dict)


def read_hf(directory: str) -> HFSourceWeights:
  """Reads the config, the tokenizer settings and the weights, translated to released
  names (the task head's tensors kept by HF name: `hf_heads.identify_hf_head`)."""
  config_path = os.path.join(directory, CONFIG_FILE)
  with open(config_path, encoding="utf-8") as f:
    hf_config = json.load(f)
  config = XLNetConfig.from_hf_dict(hf_config, source=config_path)
  tokenizer = read_tokenizer_config(directory)
  tensors, source = hf_weights.read_tensors(directory)
  weights = hf_to_released(tensors, config, source)
  weights.hf_config, weights.config_path, weights.tokenizer = hf_config, config_path, tokenizer
  return weights


def read_json_object(path: str) -> Dict[str, Any]:
  """The JSON object in `path`; ValueError naming the file if it is not one."""
  try:
    with open(path, encoding="utf-8") as f:
      values = json.load(f)
  except ValueError as e:
    raise ValueError(f"{path}: not valid JSON ({e})") from None
  if not isinstance(values, dict):
    raise ValueError(f"{path}: expected a JSON object, got {type(values).__name__}")
  return values


def read_tokenizer_config(directory: str) -> Dict[str, Any]:
  """The text normalisation of DIRECTORY/tokenizer_config.json (HF's XLNetTokenizer):
  {"uncased": do_lower_case, "keep_accents": ..., "source": the file or None (absent: HF's
  defaults, False and False)}.

  Raises:
    ValueError naming the file and the field: not JSON, a value that is not a boolean, or
    remove_space false (XLNet's normalisation, ours and the original's, always collapses
    and strips the spaces).
  """
  path = os.path.join(directory, TOKENIZER_CONFIG_FILE)
  if not os.path.isfile(path):
    return {"uncased": False, "keep_accents": False, "source": None}
  values = read_json_object(path)
  settings = {}
  for field, default in (("do_lower_case", False), ("keep_accents", False),
                         ("remove_space", True)):
    value = values.get(field, default)
    if not isinstance(value, bool):
      raise ValueError(f"{path}: {field} is {value!r}, expected true or false")
    settings[field] = value
  if not settings["remove_space"]:
    raise ValueError(f"{path}: remove_space is false; XLNet's text normalisation always "
                     f"removes leading, trailing and repeated spaces (the released "
                     f"preprocessing, and our serving's), so such a tokenizer cannot be "
                     f"reproduced: expected remove_space true")
  return {"uncased": settings["do_lower_case"], "keep_accents": settings["keep_accents"],
          "source": path}


def head_keys() -> Dict[str, Tuple[str, ...]]:
  """The tensor names of every HuggingFace task head -> the kinds whose head has it (the
  `hf_head_keys` of the registered kinds' conversions; the classifier and RACE share
  theirs), in the order of the kinds."""
  kinds: Dict[str, Tuple[str, ...]] = {}
  for kind in task_kind.kinds():
    for key in (kind.conversion.hf_head_keys if kind.conversion else ()):
      kinds[key] = kinds.get(key, ()) + (kind.name,)
  return kinds


def hf_to_released(tensors: Mapping[str, np.ndarray], config: XLNetConfig,
                   source: str) -> HFSourceWeights:
  """Translates HF state-dict arrays to released names (see the module docstring); the
  task-head tensors are listed in `skipped` and kept by HF name in `head_tensors`. Weights
  without lm_loss.bias and without a task head (a base XLNetModel) get a zero LM bias."""
  arrays, skipped, notes, head_tensors = {}, [], [], {}
  known_heads = head_keys()
  scopes = {key.split(".")[0] for key in known_heads}     # e.g. logits_proj, qa_outputs
  stacked = {key: {} for key in _STACKED}
  tied_lm_weight = None
  for key in sorted(tensors):
    value = tensors[key]
    short = key[len("transformer."):] if key.startswith("transformer.") else key
    layer = _LAYER_KEY.match(short)
    if short == "word_embedding.weight":
      arrays[f"{names.TRANSFORMER}/word_embedding/lookup_table"] = value
    elif short == "mask_emb":
      arrays[f"{names.TRANSFORMER}/mask_emb/mask_emb"] = value
    elif key == "lm_loss.bias":
      arrays[names.LM_BIAS] = value
    elif key == "lm_loss.weight":
      tied_lm_weight = value
    elif layer and layer.group(2) in _LAYER_RENAMES:
      index, part = int(layer.group(1)), layer.group(2)
      arrays[f"{names.TRANSFORMER}/layer_{index}/{_LAYER_RENAMES[part]}"] = (
          value.T if part in _TRANSPOSED else value)
    elif layer and layer.group(2) in _STACKED:
      stacked[layer.group(2)][int(layer.group(1))] = value
    elif key in known_heads:
      skipped.append(key)
      head_tensors[key] = value
    elif "." in key and key.split(".")[0] in scopes:
      patterns = dict.fromkeys(kind.conversion.hf_head_pattern for kind in task_kind.kinds()
                               if kind.conversion and kind.conversion.hf_head_pattern)
      raise ValueError(
          f"{source}: unknown HuggingFace key {key!r} for an XLNet model: not a tensor of "
          f"any XLNet task head ({', '.join(patterns)})")
    else:
      raise ValueError(f"{source}: unknown HuggingFace key {key!r} for an XLNet model")

  for part, per_layer in stacked.items():
    missing = [i for i in range(config.n_layer) if i not in per_layer]
    if missing:
      raise ValueError(f"{source}: missing transformer.layer.{missing[0]}.{part} "
                       f"(n_layer is {config.n_layer})")
    extra = sorted(set(per_layer) - set(range(config.n_layer)))
    if extra:
      raise ValueError(f"{source}: transformer.layer.{extra[0]}.{part} is beyond n_layer "
                       f"({config.n_layer})")
    values = np.stack([per_layer[i] for i in range(config.n_layer)])
    name = part.split(".")[-1]
    if name != "seg_embed" and not config.untie_r:
      if not all(np.array_equal(values[0], v) for v in values[1:]):
        raise ValueError(f"{source}: untie_r is false but transformer.layer.*.{part} differ "
                         f"between layers")
      values = values[0]
    arrays[f"{names.TRANSFORMER}/{name}"] = values

  embedding = arrays.get(f"{names.TRANSFORMER}/word_embedding/lookup_table")
  if tied_lm_weight is not None and embedding is not None and not np.array_equal(
      tied_lm_weight, embedding):
    raise ValueError(f"{source}: lm_loss.weight differs from word_embedding.weight; XLNet's "
                     f"LM head is tied to the embedding")
  if names.LM_BIAS not in arrays and embedding is not None and not head_tensors:
    note = (f"{source}: no lm_loss.bias (a base XLNetModel, not XLNetLMHeadModel); the LM "
            f"bias is set to zeros")
    logging.warning(note)
    notes.append(note)
    arrays[names.LM_BIAS] = np.zeros([embedding.shape[0]], np.float32)
  return HFSourceWeights("huggingface", source, config, arrays, skipped, notes,
                         head_tensors=head_tensors)
