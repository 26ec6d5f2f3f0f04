"""Reads a HuggingFace XLNet directory (config.json + safetensors or pytorch_model.bin),
with the head of its task model.

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

The task heads (`identify_hf_head`; D = d_model, C = labels; torch Linear weights [out, in]
are transposed) go to the released names where the original has the head, else to the
names of our layers, and into the model of that task (`task_heads`):
  XLNetForSequenceClassification  sequence_summary.summary [D, D] (summary_use_proj) ->
      model/sequnece_summary/summary; logits_proj [C, D] -> model/classification_<task>/
      logit (regression_<task> when num_labels is 1 or problem_type "regression")
      -> XLNetClassifier, classifier.json (labels: id2label in id order)
  XLNetForMultipleChoice  the same summary + logits_proj [1, D] -> logits/dense
      -> XLNetMultipleChoice, race.json
  XLNetForTokenClassification  classifier [C, D] -> classifier/{kernel,bias}
      -> XLNetTagger, tagger.json (tags: id2label)
  XLNetForQuestionAnsweringSimple  qa_outputs [2, D] -> qa_outputs/{kernel,bias}
      -> XLNetSimpleQA, qa_simple.json
  XLNetForQuestionAnswering  start_logits.dense, end_logits.{dense_0,LayerNorm,dense_1},
      answer_class.{dense_0,dense_1} -> start_logits/dense, end_logits/{dense_0,LayerNorm,
      dense_1}, answer_class/{dense_0,dense_1} -> XLNetForSquad, squad.json
HF's behaviour is kept where it differs from the original's: the summary's
`summary_activation` applies with or without the projection; summary_type "cls_index"
without a cls_index (as the classifier and multiple-choice models call it) is the last
position; "mean" averages over the padding too; the answer class reads the gold start in
training (answer_class_start "gold"). `measure_parity` runs HF's model and ours on a probe
batch. tokenizer_config.json gives do_lower_case and keep_accents (remove_space must be
true).
"""

import dataclasses
import json
import os
import re
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from absl import logging
import numpy as np
import tensorflow as tf

from xlnet_tf.configs import XLNetConfig
from xlnet_tf import model_directory
from xlnet_tf import released_names as names
from xlnet_tf import task_kind
from xlnet_tf.convert import task_heads
from xlnet_tf.convert.source import SourceWeights
from xlnet_tf.data import layouts
from xlnet_tf.data import tokenization
from xlnet_tf.layers import sequence_summary

CONFIG_FILE = "config.json"
TOKENIZER_CONFIG_FILE = "tokenizer_config.json"
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin")
# Without torch and transformers (pyproject.toml's [huggingface] extra) the parity is not
# measured, and a pytorch_model.bin cannot be read: what to install.
INSTALL_HUGGINGFACE = "install xlnet_tf[huggingface]"
NOT_MEASURED = f"not measured (transformers/torch not installed: {INSTALL_HUGGINGFACE})"
# Heads of HF task models (XLNetForSequenceClassification, ...QuestionAnswering, ...).
_HF_TASK_HEADS = re.compile(
    r"^(sequence_summary|logits_proj|classifier|qa_outputs|start_logits|end_logits|"
    r"answer_class)\.")
# The tensors of each kind of head ("summary": sequence classification and multiple choice).
HEAD_KEYS = {
    "summary": ("sequence_summary.summary.weight", "sequence_summary.summary.bias",
                "logits_proj.weight", "logits_proj.bias"),
    "tagger": ("classifier.weight", "classifier.bias"),
    "qa_simple": ("qa_outputs.weight", "qa_outputs.bias"),
    "squad": ("start_logits.dense.weight", "start_logits.dense.bias",
              "end_logits.dense_0.weight", "end_logits.dense_0.bias",
              "end_logits.LayerNorm.weight", "end_logits.LayerNorm.bias",
              "end_logits.dense_1.weight", "end_logits.dense_1.bias",
              "answer_class.dense_0.weight", "answer_class.dense_0.bias",
              "answer_class.dense_1.weight"),
}
_HEAD_KEY_GROUP = {key: group for group, keys in HEAD_KEYS.items() for key in keys}


def architecture_out(kind: str) -> str:
  """The HuggingFace class an export of a model of `kind` writes (its `task_kind` record);
  ValueError saying why when the kind has none."""
  record = task_kind.get(kind)
  if record.hf_architecture_out is None:
    raise ValueError(f"a {kind} model cannot be exported to HuggingFace: "
                     f"{record.hf_not_exportable}")
  return record.hf_architecture_out


def architectures_in() -> Dict[str, str]:
  """HF's model classes -> the kind of our output ("pretrained": no head), from the
  `task_kind` records."""
  return {architecture: kind.name for kind in task_kind.kinds()
          for architecture in kind.hf_architectures_in}


_GROUP_ARCHITECTURES = {
    "summary": "XLNetForSequenceClassification or XLNetForMultipleChoice",
    "tagger": "XLNetForTokenClassification", "qa_simple": "XLNetForQuestionAnsweringSimple",
    "squad": "XLNetForQuestionAnswering",
}
# Our summary activations (`sequence_summary.ACTIVATIONS`) -> HF's `summary_activation`
# (transformers.activations): our "gelu" (the tanh approximation) is HF's "gelu_new", our
# "gelu_exact" (erf) HF's "gelu". An export writes these names.
HF_SUMMARY_ACTIVATIONS = {"tanh": "tanh", "linear": "linear", "relu": "relu",
                          "gelu": "gelu_new", "gelu_exact": "gelu", "sigmoid": "sigmoid",
                          "silu": "silu"}
# HF's other names of the same functions -> the name above (an import reads them too).
HF_ACTIVATION_ALIASES = {"gelu_python": "gelu", "gelu_pytorch_tanh": "gelu_new",
                         "gelu_fast": "gelu_new", "swish": "silu"}
# HF `summary_activation` -> `SequenceSummary`'s; "" and null: none.
SUMMARY_ACTIVATIONS = {hf: ours for ours, hf in HF_SUMMARY_ACTIVATIONS.items()}
SUMMARY_ACTIVATIONS.update({alias: SUMMARY_ACTIVATIONS[hf]
                            for alias, hf in HF_ACTIVATION_ALIASES.items()})
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
  if not any(os.path.isfile(os.path.join(directory, f)) for f in WEIGHT_FILES):
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
  names (the task head's tensors kept by HF name: `identify_hf_head`)."""
  config_path = os.path.join(directory, CONFIG_FILE)
  with open(config_path, encoding="utf-8") as f:
    hf_config = json.load(f)
  config = XLNetConfig.from_hf_dict(hf_config, source=config_path)
  tokenizer = read_tokenizer_config(directory)
  tensors, source = _read_tensors(directory)
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


def hf_to_released(tensors: Mapping[str, np.ndarray], config: XLNetConfig,
                   source: str) -> HFSourceWeights:
  """Translates HF state-dict arrays to released names (see the module docstring); the
  task-head tensors are listed in `skipped` and kept by HF name in `head_tensors`. Weights
  without lm_loss.bias and without a task head (a base XLNetModel) get a zero LM bias."""
  arrays, skipped, notes, head_tensors = {}, [], [], {}
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
    elif key in _HEAD_KEY_GROUP:
      skipped.append(key)
      head_tensors[key] = value
    elif _HF_TASK_HEADS.match(key):
      raise ValueError(
          f"{source}: unknown HuggingFace key {key!r} for an XLNet model: not a tensor of "
          f"any XLNet task head (sequence_summary.summary.*, logits_proj.*, classifier.*, "
          f"qa_outputs.*, start_logits.dense.*, end_logits.{{dense_0,LayerNorm,dense_1}}.*, "
          f"answer_class.{{dense_0.*,dense_1.weight}})")
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


def _read_tensors(directory: str) -> Tuple[Dict[str, np.ndarray], str]:
  """All tensors of the directory's weight file(s) as float32 numpy arrays.

  Raises:
    FileNotFoundError: a shard listed in the index is missing (naming both).
    ValueError: a weight file (or the index) is truncated or corrupt, naming the file.
    model_directory.NonFiniteError: a tensor holds NaN or an infinity (naming the file
      and the tensor).
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
                      f"({INSTALL_HUGGINGFACE}); a model.safetensors file needs only "
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
  tensors = {k: v.detach().to(torch.float32).numpy() for k, v in state.items()}
  _check_finite(tensors, binary)
  return tensors, binary


def _check_finite(tensors: Mapping[str, np.ndarray], path: str) -> None:
  """Raises `model_directory.NonFiniteError` naming `path` and (up to three) tensors of
  `tensors` that hold NaN or an infinity."""
  bad = sorted(name for name, value in tensors.items() if not np.all(np.isfinite(value)))
  if bad:
    raise model_directory.NonFiniteError(
        f"{path}: {len(bad)} tensor(s) hold NaN or infinite values (e.g. "
        f"{', '.join(bad[:3])}); nothing was written")


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


def _safetensors_header(path: str, index: str = None) -> Tuple[int, Dict[str, Any]]:
  """(header length, header) of the safetensors file `path`, checked complete (see
  `check_safetensors`)."""
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
  return length, header


def check_safetensors(path: str, index: str = None) -> None:
  """Raises ValueError naming `path` if it is not a complete safetensors file.

  The layout is an 8-byte little-endian header length N, N bytes of JSON header giving every
  tensor's dtype, shape and byte range (`data_offsets`, relative to the end of the header),
  then the data: a file shorter than its header says is truncated (an interrupted download
  or copy).
  """
  _safetensors_header(path, index)


def _bf16_tensor(path: str, header_length: int, key: str, entry: Mapping[str, Any],
                 listed: str) -> np.ndarray:
  """A BF16 tensor of a safetensors file as float32 (exact: bfloat16 is the upper half of a
  float32), read from its bytes (numpy has no bfloat16, so safetensors' numpy reader
  cannot)."""
  try:
    shape = [int(n) for n in entry["shape"]]
    begin, end = (int(n) for n in entry["data_offsets"])
  except (KeyError, TypeError, ValueError):
    raise ValueError(f"{path}{listed}: corrupt safetensors file: tensor {key} has no valid "
                     f"shape and data_offsets in its header. Download it again") from None
  count = int(np.prod(shape, dtype=np.int64))
  if end - begin != 2 * count:
    raise ValueError(f"{path}{listed}: corrupt safetensors file: tensor {key} (BF16, shape "
                     f"{shape}) has {end - begin:,} bytes, expected {2 * count:,}. Download "
                     f"it again")
  with open(path, "rb") as f:
    f.seek(8 + header_length + begin)
    data = f.read(end - begin)
  halves = np.frombuffer(data, dtype="<u2").astype(np.uint32)
  return (halves << 16).view(np.float32).reshape(shape)


def _read_safetensors(paths, index: str = None) -> Dict[str, np.ndarray]:
  """Every tensor of the safetensors files `paths` as float32 (BF16 ones converted from
  their bytes, `_bf16_tensor`).

  Raises:
    ValueError naming the file (and the tensor and its dtype, for a dtype that does not
    convert to float32): truncated or corrupt.
  """
  from safetensors import SafetensorError  # pylint: disable=g-import-not-at-top
  from safetensors import safe_open  # pylint: disable=g-import-not-at-top
  tensors = {}
  for path in paths:
    listed = f" (listed in {index})" if index else ""
    length, header = _safetensors_header(path, index)
    read = {}
    try:
      with safe_open(path, framework="np") as f:
        for key in f.keys():
          dtype = header.get(key, {}).get("dtype")
          if dtype == "BF16":
            read[key] = _bf16_tensor(path, length, key, header[key], listed)
            continue
          try:
            read[key] = np.asarray(f.get_tensor(key), dtype=np.float32)
          except (TypeError, ValueError) as e:
            raise ValueError(f"{path}{listed}: tensor {key} has dtype {dtype}, which cannot "
                             f"be read as float32 ({e}); expected F32, F16, BF16 or F64") \
                from None
    except (SafetensorError, OSError) as e:
      raise ValueError(f"{path}{listed}: cannot read the safetensors file; it is corrupt "
                       f"({e}). Download it again") from None
    _check_finite(read, path)
    tensors.update(read)
  return tensors


# ---- the task head --------------------------------------------------------------------------

@dataclasses.dataclass
class HFHead:
  """What `identify_hf_head` found: the head (None: the pretrained layout), the class it
  came from, and the conversion's notes about HF behaviour that differs from the original's."""
  head: Optional[task_heads.Head]
  architecture: Optional[str]
  notes: List[str] = dataclasses.field(default_factory=list)


def _architecture(weights: HFSourceWeights) -> Optional[str]:
  """The one HF class of config.json's `architectures` (None if it names none)."""
  where = weights.config_path
  listed = weights.hf_config.get("architectures") or []
  if isinstance(listed, str) or not all(isinstance(a, str) for a in listed):
    raise ValueError(f"{where}: architectures is {listed!r}, expected a list of HuggingFace "
                     f"class names")
  unknown = [a for a in listed if a not in architectures_in()]
  if unknown:
    raise ValueError(f"{where}: architectures {listed} names {unknown}, which is not an "
                     f"XLNet model class this converter knows; expected one of "
                     f"{sorted(architectures_in())}")
  if len(set(listed)) > 1:
    raise ValueError(f"{where}: architectures {listed} lists {len(set(listed))} models (the "
                     f"heads of different tasks); expected the one class the weights were "
                     f"saved from")
  return listed[0] if listed else None


def _present_groups(weights: HFSourceWeights) -> Dict[str, List[str]]:
  groups: Dict[str, List[str]] = {}
  for key in sorted(weights.head_tensors):
    groups.setdefault(_HEAD_KEY_GROUP[key], []).append(key)
  return groups


def _setting(weights: HFSourceWeights, key: str):
  return weights.hf_config.get(key, HF_DEFAULTS.get(key))


def _labels(weights: HFSourceWeights, key: str, outputs: int) -> Tuple[str, ...]:
  """id2label in id order, checked against the head's `outputs` (the rows of `key`)."""
  where = weights.config_path
  id2label = weights.hf_config.get("id2label")
  if id2label is None:            # HF's default: LABEL_0 .. LABEL_{num_labels - 1}
    count = _num_labels(weights)
    if count != outputs:
      raise ValueError(
          f"{where}: no id2label, so HuggingFace's {count} default labels (num_labels "
          f"{count}), but the head's {key} has {outputs} outputs (shape "
          f"{list(weights.head_tensors[key].shape)}); expected id2label with one label per "
          f"output")
    return tuple(f"LABEL_{i}" for i in range(outputs))
  if not isinstance(id2label, dict):
    raise ValueError(f"{where}: id2label is {id2label!r}, expected an object mapping ids "
                     f"0..{outputs - 1} to label names")
  try:
    by_id = {int(k): v for k, v in id2label.items()}
  except (TypeError, ValueError):
    raise ValueError(f"{where}: id2label has keys {sorted(id2label)}, expected the ids "
                     f"0..{outputs - 1}") from None
  if len(by_id) != outputs:
    raise ValueError(
        f"{where}: id2label has {len(by_id)} labels {[by_id[i] for i in sorted(by_id)]}, but "
        f"the head's {key} has {outputs} outputs (shape "
        f"{list(weights.head_tensors[key].shape)}); expected one label per output")
  if sorted(by_id) != list(range(outputs)):
    raise ValueError(f"{where}: id2label has the ids {sorted(by_id)}, expected 0..{outputs - 1}")
  labels = tuple(str(by_id[i]) for i in range(outputs))
  if len(set(labels)) != len(labels) or not all(labels):
    raise ValueError(f"{where}: id2label {list(labels)}: expected distinct, non-empty names")
  return labels


def _num_labels(weights: HFSourceWeights) -> int:
  """HF's num_labels: the size of id2label, else num_labels, else its default 2."""
  id2label = weights.hf_config.get("id2label")
  if isinstance(id2label, dict) and id2label:
    return len(id2label)
  return int(weights.hf_config.get("num_labels", 2))


def _check_shapes(weights: HFSourceWeights, expected: Mapping[str, Tuple[List[int], str]]):
  """Raises naming the first tensor (HF name) whose shape is not `expected`, or that is
  missing."""
  present = sorted(weights.head_tensors)
  for key, (shape, why) in expected.items():
    if key not in weights.head_tensors:
      raise ValueError(f"{weights.path}: incomplete task head: no {key} (it has "
                       f"{present}); expected {sorted(expected)}")
    found = list(weights.head_tensors[key].shape)
    if found != shape:
      raise ValueError(f"{weights.path}: tensor {key} has shape {found}, expected {shape} "
                       f"({why})")
  extra = sorted(set(present) - set(expected))
  if extra:
    raise ValueError(f"{weights.path}: tensor(s) {extra} do not belong to this head "
                     f"(expected {sorted(expected)}; check config.json's summary_use_proj)")


def _summary(weights: HFSourceWeights, num_labels: int, architecture: str, notes: List[str]):
  """(summary_type, use_proj, our activation) of HF's sequence summary, checked."""
  where = weights.config_path
  d = weights.config.d_model
  summary_type = _setting(weights, "summary_type")
  if summary_type == "attn":
    raise ValueError(f"{where}: summary_type 'attn': HuggingFace's sequence summary does not "
                     f"implement it (it raises NotImplementedError), so no such "
                     f"{architecture} exists; expected last, first, mean or cls_index")
  if summary_type not in (*task_heads.OUR_SUMMARY_TYPES, "cls_index"):
    raise ValueError(f"{where}: summary_type {summary_type!r}, expected last, first, mean or "
                     f"cls_index")
  use_proj = _setting(weights, "summary_use_proj")
  if not isinstance(use_proj, bool):
    raise ValueError(f"{where}: summary_use_proj is {use_proj!r}, expected true or false")
  if use_proj and _setting(weights, "summary_proj_to_labels") and num_labels != d:
    raise ValueError(
        f"{where}: summary_proj_to_labels is true with summary_use_proj, so HuggingFace's "
        f"sequence summary projects to num_labels ({num_labels}) features, but its "
        f"logits_proj reads d_model ({d}): {architecture} cannot run such a config; expected "
        f"summary_proj_to_labels false (or num_labels == d_model)")
  activation = _setting(weights, "summary_activation")
  if activation in (None, ""):
    ours = "linear"
  elif activation in SUMMARY_ACTIVATIONS:
    ours = SUMMARY_ACTIVATIONS[activation]
  else:
    raise ValueError(f"{where}: summary_activation {activation!r} is not supported; expected "
                     f"one of {sorted(SUMMARY_ACTIVATIONS)}, \"\" or null (none)")
  if summary_type == "cls_index":
    notes.append("summary_type 'cls_index': HuggingFace's model passes no cls_index, so the "
                 "summary is the last position (our 'last')")
    summary_type = "last"
  if summary_type == "mean":
    notes.append("summary_type 'mean': HuggingFace averages over every position, padding "
                 "included; the model uses 'mean_with_padding' (the same logits)")
  if not use_proj and ours != "linear":
    notes.append(f"summary_activation {activation!r} without the projection: HuggingFace "
                 f"applies it to the summary anyway, and so does the model")
  assert ours in sequence_summary.ACTIVATIONS
  return summary_type, use_proj, ours


def identify_hf_head(weights: HFSourceWeights, task: str = "auto",
                     labels: Optional[Sequence[str]] = None,
                     task_name: Optional[str] = None) -> HFHead:
  """The head of a HuggingFace task model (config.json's `architectures` and the head
  tensors), checked and translated into `weights.heads` (released names, our layout).

  Args:
    task: "auto" (the directory's head, or the pretrained layout without one),
      "pretrained" (the encoder alone: the head's tensors are left out) or one of
      `task_kind.head_kinds()` (that head, or an error).
    labels: the classifier's or tagger's label names (default: id2label).
    task_name: the classifier's task (default: config.json's finetuning_task, else
      "huggingface"); the export takes text pairs for a pair task of our registry.
  Raises:
    ValueError naming config.json and the field, or the weight file and the tensor: several
    architectures; heads of several tasks; a head that disagrees with `architectures`; a
    tensor missing, extra or of a shape that does not fit the config; an id2label that
    does not fit the head; a summary HF cannot run.
  """
  architecture = _architecture(weights)
  groups = _present_groups(weights)
  where = weights.config_path
  if len(groups) > 1:
    listed = "; ".join(f"{_GROUP_ARCHITECTURES[g]}: {keys[0]}, ..." for g, keys in
                       groups.items())
    raise ValueError(f"{weights.path}: holds the heads of several tasks ({listed}); expected "
                     f"the head of one HuggingFace model class ({where} architectures: "
                     f"{weights.hf_config.get('architectures')})")
  group = next(iter(groups), None)
  kind = architectures_in().get(architecture) if architecture else None
  inferred = None                 # a note when the head names the class
  if group is None:
    if kind not in (None, "pretrained"):
      raise ValueError(f"{weights.path}: {where} says {architecture}, but the weights have "
                       f"none of its head's tensors ({_keys_of(kind)}); expected them")
    kind = "pretrained"
  elif kind == "pretrained":
    raise ValueError(f"{weights.path}: {where} says {architecture} (no task head), but the "
                     f"weights hold a {_GROUP_ARCHITECTURES[group]} head ({groups[group][0]}, "
                     f"...); expected architectures to name the model they were saved from")
  elif kind is not None and _group_of(kind) != group:
    raise ValueError(f"{weights.path}: {where} says {architecture}, but the weights hold a "
                     f"{_GROUP_ARCHITECTURES[group]} head ({groups[group][0]}, ...)")
  elif kind is None:
    if group == "summary":
      rows = weights.head_tensors.get("logits_proj.weight")
      if rows is None or rows.shape[0] == 1:
        raise ValueError(f"{where}: no architectures, and sequence_summary/logits_proj with "
                         f"one output are the head of both XLNetForSequenceClassification "
                         f"(regression) and XLNetForMultipleChoice; expected architectures "
                         f"to name the class")
      kind = "classifier"
    else:
      kind = {"tagger": "tagger", "qa_simple": "qa_simple", "squad": "squad"}[group]
    architecture = architecture_out(kind)
    inferred = f"{where} has no architectures: the head's tensors are {architecture}'s"
  if task_name is not None and kind != "classifier":
    raise ValueError(f"--task_name {task_name}: names a classification task; {weights.path} "
                     f"converts to the {kind} layout")
  if task == "pretrained" or kind == "pretrained":
    if task not in ("auto", "pretrained"):
      raise ValueError(f"--task {task}: {weights.path} has no task head ({where} "
                       f"architectures: {weights.hf_config.get('architectures')})")
    return HFHead(None, architecture)
  if task != "auto" and task != kind:
    raise ValueError(f"--task {task}: {weights.path} holds the head of {architecture} (--task "
                     f"{kind}); pass --task {kind}, or --task pretrained for the encoder alone")
  notes: List[str] = [inferred] if inferred else []
  if task_name is not None:
    weights.hf_config = {**weights.hf_config, "finetuning_task": task_name}
  head = _BUILDERS[kind](weights, architecture, labels, notes)
  task_heads.check_shapes(head, weights.heads, weights.config, weights.path)
  return HFHead(head, architecture, notes)


def _group_of(kind: str) -> str:
  return "summary" if kind in ("classifier", "race") else kind


def _keys_of(kind: str) -> str:
  return ", ".join(HEAD_KEYS[_group_of(kind)])


def _linear(weights: HFSourceWeights, key: str, released: str, bias: bool = True) -> None:
  """HF Linear `key` (weight [out, in], bias [out]) -> `released`/kernel [in, out], /bias."""
  weights.heads[f"{released}/kernel"] = np.ascontiguousarray(
      weights.head_tensors[f"{key}.weight"].T)
  if bias:
    weights.heads[f"{released}/bias"] = weights.head_tensors[f"{key}.bias"]


def _rows(weights: HFSourceWeights, key: str, d: int) -> int:
  """The outputs of the Linear weight `key` [out, d_model], its input width checked."""
  tensor = weights.head_tensors.get(key)
  if tensor is None:
    raise ValueError(f"{weights.path}: incomplete task head: no {key} (it has "
                     f"{sorted(weights.head_tensors)})")
  if tensor.ndim != 2 or tensor.shape[1] != d or tensor.shape[0] < 1:
    raise ValueError(f"{weights.path}: tensor {key} has shape {list(tensor.shape)}, expected "
                     f"[outputs, {d}] (torch Linear [out, in]; d_model {d} from "
                     f"config.json)")
  return int(tensor.shape[0])


def _summary_head(weights: HFSourceWeights, architecture: str, labels, notes, race: bool):
  if race:
    _no_labels(labels, "XLNetForMultipleChoice")
  d = weights.config.d_model
  where = weights.config_path
  outputs = _rows(weights, "logits_proj.weight", d)
  num_labels = _num_labels(weights)
  summary_type, use_proj, activation = _summary(weights, num_labels, architecture, notes)
  model = f"d_model {d}"
  expected = {}
  if use_proj:
    expected["sequence_summary.summary.weight"] = ([d, d], f"[d_model, d_model], {model}")
    expected["sequence_summary.summary.bias"] = ([d], f"[d_model], {model}")
  if race:
    expected["logits_proj.weight"] = ([1, d], f"one score per choice: [1, d_model], {model}")
    expected["logits_proj.bias"] = ([1], "[1]")
  else:
    expected["logits_proj.weight"] = ([outputs, d], f"[num_labels, d_model], {model}")
    expected["logits_proj.bias"] = ([outputs], f"[num_labels]: logits_proj.weight has "
                                                f"{outputs} outputs")
  _check_shapes(weights, expected)
  if use_proj:
    _linear(weights, "sequence_summary.summary", f"{names.SUMMARY}/summary")
  if race:
    _linear(weights, "logits_proj", "logits/dense")
    return task_heads.Head("race", names.RACE_HEAD + (names.SUMMARY_PROJECTION if use_proj
                                                      else ()),
                           summary_type=summary_type, use_proj=use_proj, activation=activation)
  problem = weights.hf_config.get("problem_type")
  if problem not in (None, "regression", "single_label_classification"):
    raise ValueError(f"{where}: problem_type {problem!r} is not supported: the classifier and "
                     f"its export give softmax probabilities (one label per text); expected "
                     f"single_label_classification or regression")
  is_regression = outputs == 1 or problem == "regression"
  if is_regression and outputs != 1:
    raise ValueError(f"{where}: problem_type 'regression' with {outputs} outputs "
                     f"(logits_proj.weight {list(weights.head_tensors['logits_proj.weight'].shape)}"
                     f"); the classifier's regression gives one score: expected num_labels 1")
  if problem == "single_label_classification" and outputs == 1:
    raise ValueError(f"{where}: problem_type 'single_label_classification' with one output; "
                     f"expected num_labels >= 2 (or problem_type regression)")
  task_name = str(weights.hf_config.get("finetuning_task") or "huggingface")
  names_found = None
  if not is_regression:
    names_found = _given_labels(weights, "logits_proj.weight", outputs, labels)
  else:
    _one_output_id2label(weights)
    if labels is not None:
      raise ValueError(f"--labels {list(labels)}: {weights.path} holds a regression head "
                       f"(one score, no labels)")
  scope = names.classification_scope(task_name, is_regression)
  _linear(weights, "logits_proj", f"{scope}/logit")
  return task_heads.Head(
      "classifier", (f"{scope}/logit/kernel", f"{scope}/logit/bias") +
      (names.SUMMARY_PROJECTION if use_proj else ()), task_name=task_name,
      is_regression=is_regression, num_outputs=outputs, summary_type=summary_type,
      use_proj=use_proj, activation=activation, labels=names_found)


def _given_labels(weights: HFSourceWeights, tensor: str, outputs: int, labels):
  """--labels if given (as many as the head's outputs), else config.json's id2label
  (checked against the head either way)."""
  found = _labels(weights, tensor, outputs)
  if labels is None:
    return found
  if len(labels) != outputs:
    raise ValueError(f"--labels {list(labels)}: {len(labels)} labels, but the head's "
                     f"{tensor} has {outputs} outputs")
  return tuple(labels)


def _one_output_id2label(weights: HFSourceWeights) -> None:
  """A one-output (regression) head: config.json's id2label must be absent or name one
  label (HF's num_labels 1); more labels mean the config and the weights disagree."""
  id2label = weights.hf_config.get("id2label")
  if id2label is None or (isinstance(id2label, dict) and len(id2label) == 1):
    return
  shown = (f"{len(id2label)} labels {list(id2label.values())}"
           if isinstance(id2label, dict) else repr(id2label))
  raise ValueError(
      f"{weights.config_path}: id2label has {shown}, but the head's logits_proj.weight has "
      f"one output (shape {list(weights.head_tensors['logits_proj.weight'].shape)}): a "
      f"regression head; expected id2label absent or of exactly one entry (num_labels 1), "
      f"or weights with one output per label")


def _tagger_head(weights: HFSourceWeights, architecture, labels, notes):
  del architecture
  d = weights.config.d_model
  outputs = _rows(weights, "classifier.weight", d)
  _check_shapes(weights, {
      "classifier.weight": ([outputs, d], f"[num_labels, d_model], d_model {d}"),
      "classifier.bias": ([outputs], f"[num_labels]: classifier.weight has {outputs} "
                                     f"outputs")})
  tags = _given_labels(weights, "classifier.weight", outputs, labels)
  _linear(weights, "classifier", "classifier")
  notes.append("XLNetForTokenClassification has no dropout in front of its classifier; the "
               "tagger's dropout_rate is 0.0 (the same)")
  return task_heads.Head("tagger", task_heads.TAGGER_HEAD, num_outputs=outputs, labels=tags)


def _qa_simple_head(weights: HFSourceWeights, architecture, labels, notes):
  del architecture
  _no_labels(labels, "XLNetForQuestionAnsweringSimple")
  d = weights.config.d_model
  _check_shapes(weights, {
      "qa_outputs.weight": ([2, d], f"start and end logits: [2, d_model], d_model {d}"),
      "qa_outputs.bias": ([2], "[2] (start, end)")})
  _linear(weights, "qa_outputs", "qa_outputs")
  notes.append("XLNetForQuestionAnsweringSimple: start_logits and end_logits as HuggingFace "
               "computes them (every position, no p_mask); with a p_mask the model also "
               "gives the top-k log-probabilities of the masked logits, which the SQuAD "
               "export decodes (v1.1: the head has no answer class)")
  return task_heads.Head("qa_simple", task_heads.QA_SIMPLE_HEAD, num_outputs=2,
                         start_n_top=_top(weights, "start_n_top"),
                         end_n_top=_top(weights, "end_n_top"))


def _squad_head(weights: HFSourceWeights, architecture, labels, notes):
  del architecture
  _no_labels(labels, "XLNetForQuestionAnswering")
  d = weights.config.d_model
  model = f"d_model {d}"
  wide = ([d, 2 * d], f"[d_model, 2 * d_model] (torch Linear [out, in]), {model}")
  vector = ([d], f"[d_model], {model}")
  _check_shapes(weights, {
      "start_logits.dense.weight": ([1, d], f"[1, d_model], {model}"),
      "start_logits.dense.bias": ([1], "[1]"),
      "end_logits.dense_0.weight": wide, "end_logits.dense_0.bias": vector,
      "end_logits.LayerNorm.weight": vector, "end_logits.LayerNorm.bias": vector,
      "end_logits.dense_1.weight": ([1, d], f"[1, d_model], {model}"),
      "end_logits.dense_1.bias": ([1], "[1]"),
      "answer_class.dense_0.weight": wide, "answer_class.dense_0.bias": vector,
      "answer_class.dense_1.weight": ([1, d], f"[1, d_model], {model}")})
  for key in ("start_logits.dense", "end_logits.dense_0", "end_logits.dense_1",
              "answer_class.dense_0"):
    _linear(weights, key, key.replace(".", "/"))
  _linear(weights, "answer_class.dense_1", "answer_class/dense_1", bias=False)
  weights.heads["end_logits/LayerNorm/gamma"] = weights.head_tensors[
      "end_logits.LayerNorm.weight"]
  weights.heads["end_logits/LayerNorm/beta"] = weights.head_tensors["end_logits.LayerNorm.bias"]
  notes.append("XLNetForQuestionAnswering: the answer class reads the gold start's state in "
               "training (HuggingFace), not the expected start (the original): squad.json "
               "records answer_class_start 'gold'; inference is the same")
  notes.append("HuggingFace's start_top_log_probs / end_top_log_probs are probabilities "
               "(softmax) despite their names, its end candidates flattened end-major "
               "[B, end_n_top * start_n_top]; the model gives log-probabilities, end "
               "candidates [B, start_n_top, end_n_top] (the same top-k indices; exp of ours "
               "is HF's)")
  return task_heads.Head("squad", names.SQUAD_HEAD, answer_class_start="gold",
                         start_n_top=_top(weights, "start_n_top"),
                         end_n_top=_top(weights, "end_n_top"))


def _top(weights: HFSourceWeights, key: str) -> int:
  value = _setting(weights, key)
  if not isinstance(value, int) or isinstance(value, bool) or value < 1:
    raise ValueError(f"{weights.config_path}: {key} is {value!r}, expected an integer >= 1")
  return value


def _no_labels(labels, architecture: str) -> None:
  if labels is not None:
    raise ValueError(f"--labels {list(labels)}: a {architecture} head has no labels")


_BUILDERS = {
    "classifier": lambda w, a, l, n: _summary_head(w, a, l, n, race=False),
    "race": lambda w, a, l, n: _summary_head(w, a, l, n, race=True),
    "tagger": _tagger_head, "qa_simple": _qa_simple_head, "squad": _squad_head,
}


# ---- parity at conversion -------------------------------------------------------------------

def probe_batch(config: XLNetConfig, kind: str, length: int = 12) -> Dict[str, np.ndarray]:
  """A fixed small batch in the released classification layout (`layouts`; input_mask 1 at
  padding): 2 rows of `length` pieces `A <sep> B <sep> <cls>`, the second with 3 positions
  of left padding (<pad>, the classifier's padding segment); [2, 2, length] (two choices)
  for "race"; p_mask and cls_index for the QA heads. The text pieces are ids above the
  special pieces (`tokenization.SPECIAL_PIECES`)."""
  batch, pad = 2, 3
  first = max(tokenization.SPECIAL_PIECES.values()) + 1         # the first ordinary piece
  span = max(1, config.n_token - first)
  ids = (first + (np.arange(batch * length) * 7919) % span).reshape(batch, length)
  sep = length // 2
  ids[:, sep] = ids[:, -2] = tokenization.SEP_ID
  ids[:, -1] = tokenization.CLS_ID
  segments = np.where(np.arange(length) <= sep, layouts.SEGMENT_A,
                      layouts.SEGMENT_B)[None].repeat(batch, 0)
  segments[:, -1] = layouts.SEGMENT_CLS
  mask = np.zeros([batch, length], np.float32)
  ids[1, :pad], segments[1, :pad] = tokenization.PAD_ID, layouts.CLASSIFIER_SEGMENT_PAD
  mask[1, :pad] = 1.0
  feed = {"input_ids": ids.astype(np.int32), "segment_ids": segments.astype(np.int32),
          "input_mask": mask}
  if kind == "race":
    other = {k: v[::-1].copy() for k, v in feed.items()}
    feed = {k: np.stack([feed[k], other[k]], axis=1) for k in feed}   # [B, 2, T]
  if kind in ("squad", "qa_simple"):
    special = np.isin(ids, layouts.FUNCTIONAL_IDS) | (mask > 0)
    feed["p_mask"] = special.astype(np.float32)                    # [B, T]
    feed["cls_index"] = np.full([batch], length - 1, np.int32)
  return feed


def _hf_outputs(source: str, architecture: str, kind: str, feed) -> Dict[str, np.ndarray]:
  """HF's outputs on `feed`, in our layout (squad: exp of ours, start-major)."""
  import torch  # pylint: disable=g-import-not-at-top
  import transformers  # pylint: disable=g-import-not-at-top
  cls = transformers.XLNetModel if kind == "pretrained" else getattr(transformers,
                                                                     architecture)
  verbosity = transformers.logging.get_verbosity()
  transformers.logging.set_verbosity_error()
  try:
    model = cls.from_pretrained(source).float().eval()
  finally:
    transformers.logging.set_verbosity(verbosity)
  tensor = lambda key, dtype: torch.as_tensor(np.asarray(feed[key]), dtype=dtype)
  kwargs = dict(input_ids=tensor("input_ids", torch.long),
                token_type_ids=tensor("segment_ids", torch.long),
                input_mask=tensor("input_mask", torch.float32), use_mems=False)
  if kind == "squad":
    kwargs.update(p_mask=tensor("p_mask", torch.float32),
                  cls_index=tensor("cls_index", torch.long))
  with torch.no_grad():
    out = model(**kwargs, return_dict=True)
  if kind == "pretrained":
    return {"content": out.last_hidden_state.numpy()}
  if kind == "qa_simple":
    return {"start_logits": out.start_logits.numpy(), "end_logits": out.end_logits.numpy()}
  if kind == "squad":
    k1, k2 = model.start_n_top, model.end_n_top
    end = lambda x: x.numpy().reshape(-1, k2, k1).transpose(0, 2, 1)   # -> [B, K1, K2]
    return {"start_top_probs": out.start_top_log_probs.numpy(),
            "start_top_index": out.start_top_index.numpy(),
            "end_top_probs": end(out.end_top_log_probs),
            "end_top_index": end(out.end_top_index), "cls_logits": out.cls_logits.numpy()}
  return {"logits": out.logits.numpy()}


def _our_outputs(model, kind: str, feed) -> Dict[str, np.ndarray]:
  inputs = {k: tf.constant(v) for k, v in feed.items()}
  if kind == "pretrained":
    encoder_inputs = {k: inputs[k] for k in ("input_ids", "segment_ids", "input_mask")}
    return {"content": model.encoder(encoder_inputs, training=False)["content"].numpy()}
  out = {k: v.numpy() for k, v in model(inputs, training=False).items()}
  if kind == "qa_simple":
    return {k: out[k] for k in ("start_logits", "end_logits")}
  if kind == "squad":
    return {"start_top_probs": np.exp(out["start_top_log_probs"]),
            "start_top_index": out["start_top_index"],
            "end_top_probs": np.exp(out["end_top_log_probs"]),
            "end_top_index": out["end_top_index"], "cls_logits": out["cls_logits"]}
  return {"logits": out["logits"]}


# A parity figure above this (or differing top-k indices) is a warning, logged and noted
# in conversion.json (the conversion is not refused: the report says what was measured).
PARITY_TOLERANCE = 1e-4


def measure_parity(source: str, architecture: Optional[str], kind: str, model,
                   config: XLNetConfig, top_k: int = 0) -> Dict[str, Any]:
  """Runs HF's model of `source` (its `architecture`; XLNetModel for the pretrained layout)
  and `model` on `probe_batch` (long enough for `top_k` answer candidates); returns
  {"measured", "max_abs_diff", "indices_equal", "outputs", "reference", "probe", "text"},
  plus "warning" when the difference exceeds `PARITY_TOLERANCE` or the top-k indices
  differ (logged). "measured" False, and why, without torch/transformers or when either
  model does not run on the probe (logged as a warning, with the reason)."""
  try:
    import torch  # pylint: disable=g-import-not-at-top
    import transformers  # pylint: disable=g-import-not-at-top
  except ImportError:
    return {"measured": False, "text": NOT_MEASURED}
  feed = probe_batch(config, kind, length=max(12, 2 * top_k + 6))
  reference_class = "XLNetModel" if kind == "pretrained" else architecture
  reference = (f"transformers.{reference_class} {transformers.__version__} (torch "
               f"{torch.__version__})")
  try:
    theirs = _hf_outputs(source, architecture, kind, feed)
  except Exception as e:  # pylint: disable=broad-except  (HF raises many kinds)
    detail = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    logging.warning("%s: parity not measured: %s did not run on the probe batch: %s (%s)",
                    source, reference, detail, type(e).__name__)
    return {"measured": False, "reference": reference,
            "text": f"not measured ({reference} did not run: {detail})"}
  try:
    ours = _our_outputs(model, kind, feed)
  except (tf.errors.OpError, ValueError) as e:
    detail = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    logging.warning("%s: parity not measured: the converted model did not run on the probe "
                    "batch: %s", source, detail)
    return {"measured": False, "reference": reference,
            "text": f"not measured (the converted model did not run on the probe: {detail})"}
  diffs = {k: float(np.max(np.abs(ours[k].astype(np.float64) - theirs[k])))
           for k in theirs if not k.endswith("_index")}
  indices_equal = all(np.array_equal(ours[k], theirs[k]) for k in theirs
                      if k.endswith("_index"))
  worst = max(diffs.values())
  shape = "x".join(str(n) for n in feed["input_ids"].shape)
  probe = f"a fixed probe batch of input_ids [{shape}] with left padding"
  what = ", ".join(sorted(diffs))
  text = f"max |diff| {worst:.2e} vs {reference} ({what}) on {probe}"
  if not indices_equal:
    text += "; the top-k indices DIFFER"
  result = {"measured": True, "max_abs_diff": worst, "indices_equal": indices_equal,
            "outputs": diffs, "reference": reference, "probe": probe, "text": text}
  if worst > PARITY_TOLERANCE or not indices_equal:
    result["warning"] = (f"parity: the converted model differs from {reference} beyond "
                         f"{PARITY_TOLERANCE:g} on the probe batch ({text}); check the "
                         f"outputs before relying on it")
    logging.warning("%s: %s", source, result["warning"])
  return result
