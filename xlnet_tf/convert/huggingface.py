"""Reads a HuggingFace XLNet directory (config.json + safetensors or pytorch_model.bin).

HF names are translated to the released names (see `names.py`):
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
"""

import json
import os
import re
from typing import Dict, Mapping, Tuple

from absl import logging
import numpy as np

from xlnet_tf.configs import XLNetConfig
from xlnet_tf import released_names as names
from xlnet_tf.convert.source import SourceWeights

CONFIG_FILE = "config.json"
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin")
# Heads of HF task models (XLNetForSequenceClassification, ...QuestionAnswering, ...).
_HF_TASK_HEADS = re.compile(
    r"^(sequence_summary|logits_proj|classifier|qa_outputs|start_logits|end_logits|"
    r"answer_class)\.")
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
  if not any(os.path.isfile(os.path.join(directory, f)) for f in WEIGHT_FILES):
    return False
  try:
    with open(config, encoding="utf-8") as f:
      return json.load(f).get("model_type") == "xlnet"
  except (OSError, ValueError):
    return False


def read_hf(directory: str) -> SourceWeights:
  """Reads the config and the weights, translated to released names."""
  config_path = os.path.join(directory, CONFIG_FILE)
  with open(config_path, encoding="utf-8") as f:
    config = XLNetConfig.from_hf_dict(json.load(f), source=config_path)
  tensors, source = _read_tensors(directory)
  return hf_to_released(tensors, config, source)


def hf_to_released(tensors: Mapping[str, np.ndarray], config: XLNetConfig,
                   source: str) -> SourceWeights:
  """Translates HF state-dict arrays to released names (see the module docstring)."""
  arrays, skipped, notes = {}, [], []
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
    elif _HF_TASK_HEADS.match(key):
      skipped.append(key)
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
  if names.LM_BIAS not in arrays and embedding is not None:
    note = (f"{source}: no lm_loss.bias (a base XLNetModel, not XLNetLMHeadModel); the LM "
            f"bias is set to zeros")
    logging.warning(note)
    notes.append(note)
    arrays[names.LM_BIAS] = np.zeros([embedding.shape[0]], np.float32)
  return SourceWeights("huggingface", source, config, arrays, skipped, notes)


def _read_tensors(directory: str) -> Tuple[Dict[str, np.ndarray], str]:
  """All tensors of the directory's weight file(s) as float32 numpy arrays.

  Raises:
    FileNotFoundError: a shard listed in the index is missing (naming both).
    ValueError: a weight file (or the index) is truncated or corrupt, naming the file.
  """
  single = os.path.join(directory, "model.safetensors")
  index = os.path.join(directory, "model.safetensors.index.json")
  binary = os.path.join(directory, "pytorch_model.bin")
  if os.path.isfile(single):
    return _read_safetensors([single]), single
  if os.path.isfile(index):
    paths = [os.path.join(directory, shard) for shard in _index_shards(index)]
    for path in paths:
      if not os.path.isfile(path):
        raise FileNotFoundError(f"{index}: lists {os.path.basename(path)}, which is missing")
    return _read_safetensors(paths, index), index
  try:
    import torch  # pylint: disable=g-import-not-at-top
  except ImportError:
    raise ImportError(f"{binary}: reading pytorch_model.bin needs PyTorch "
                      f"(pip install torch==2.13.0); a model.safetensors file needs only "
                      f"the safetensors package") from None
  try:
    state = torch.load(binary, map_location="cpu", weights_only=True)
  except Exception as e:  # pylint: disable=broad-except  (torch raises many kinds)
    detail = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    raise ValueError(f"{binary}: cannot read the PyTorch weights; the file is truncated or "
                     f"corrupt ({os.path.getsize(binary):,} bytes; {detail}). Download it "
                     f"again") from None
  if not isinstance(state, dict):
    raise ValueError(f"{binary}: holds a {type(state).__name__}, expected a state dict "
                     f"(name -> tensor)")
  return {k: v.detach().to(torch.float32).numpy() for k, v in state.items()}, binary


def _index_shards(index: str):
  """The sorted shard file names of a sharded safetensors index."""
  try:
    with open(index, encoding="utf-8") as f:
      weight_map = json.load(f)["weight_map"]
    return sorted(set(weight_map.values()))
  except (ValueError, KeyError, TypeError, AttributeError) as e:
    reason = "not valid JSON" if isinstance(e, ValueError) else "no 'weight_map' object"
    raise ValueError(f"{index}: corrupt sharded-safetensors index ({reason}: {e}); expected "
                     f'{{"weight_map": {{tensor name: shard file}}}}') from None


def check_safetensors(path: str, index: str = None) -> None:
  """Raises ValueError naming `path` if it is not a complete safetensors file.

  The layout is an 8-byte little-endian header length N, N bytes of JSON header giving every
  tensor's byte range (`data_offsets`, relative to the end of the header), then the data:
  a file shorter than its header says is truncated (an interrupted download or copy).
  """
  listed = f" (listed in {index})" if index else ""
  size = os.path.getsize(path)
  with open(path, "rb") as f:
    head = f.read(8)
    length = int.from_bytes(head, "little") if len(head) == 8 else None
    if length is None or length > size - 8:
      raise ValueError(
          f"{path}{listed}: truncated or corrupt safetensors file: {size:,} bytes, too short "
          f"for its header{'' if length is None else f' ({length:,} bytes)'}. Download it "
          f"again")
    try:
      header = json.loads(f.read(length))
      end = max([int(v["data_offsets"][1]) for k, v in header.items() if k != "__metadata__"],
                default=0)
    except (ValueError, TypeError, KeyError, IndexError, AttributeError):
      raise ValueError(f"{path}{listed}: corrupt safetensors file: its header is not a valid "
                       f"safetensors header. Download it again") from None
  expected = 8 + length + end
  if size < expected:
    raise ValueError(f"{path}{listed}: truncated safetensors file: {size:,} bytes, its header "
                     f"describes {expected:,} bytes. Download it again")


def _read_safetensors(paths, index: str = None) -> Dict[str, np.ndarray]:
  from safetensors import SafetensorError  # pylint: disable=g-import-not-at-top
  from safetensors import safe_open  # pylint: disable=g-import-not-at-top
  tensors = {}
  for path in paths:
    check_safetensors(path, index)
    try:
      with safe_open(path, framework="np") as f:
        for key in f.keys():
          tensors[key] = np.asarray(f.get_tensor(key), dtype=np.float32)
    except (SafetensorError, OSError) as e:
      raise ValueError(f"{path}{f' (listed in {index})' if index else ''}: cannot read the "
                       f"safetensors file; it is corrupt ({e}). Download it again") from None
  return tensors
