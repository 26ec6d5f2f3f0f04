"""Export of our model directories to HuggingFace transformers' XLNet layout.

  python -m xlnet_tf.convert --to huggingface --source MODEL_DIR --output HF_DIR

MODEL_DIR is one of our model directories (`xlnet_tf.model_directory`); what it holds
chooses the HuggingFace class written into config.json's `architectures` (its kind's
conversion's `hf_architecture_out`, `xlnet_tf.convert.heads`):

  xlnet_config.json + model.ckpt            XLNetLMHeadModel (AutoModelForCausalLM)
  ... + classifier.json                     XLNetForSequenceClassification (classification
                                              and regression; AutoModelForSequenceClassification)
  ... + squad.json                          XLNetForQuestionAnswering (the start/end/answer-class
                                              head; AutoModelForQuestionAnswering maps to the
                                              simpler XLNetForQuestionAnsweringSimple, so load
                                              it with XLNetForQuestionAnswering itself)
  ... + qa_simple.json                      XLNetForQuestionAnsweringSimple (one Dense(2) for
                                              start and end; AutoModelForQuestionAnswering)
  ... + race.json                           XLNetForMultipleChoice (AutoModelForMultipleChoice)
  ... + tagger.json                         XLNetForTokenClassification
                                              (AutoModelForTokenClassification)

HF_DIR receives config.json, model.safetensors, and when MODEL_DIR has a spiece.model, that
file with tokenizer_config.json and special_tokens_map.json (the XLNetTokenizer settings:
do_lower_case and keep_accents from `model_directory.read_text_settings`: a fine-tuned
model's spec, a pretrained one's text.json; the special pieces); README.md (the
model card, YAML front matter for the Hub: licence, library, tags) and conversion.json (what
was done). The tensors, by our released names (`xlnet_tf.released_names`):

  model/transformer/word_embedding/lookup_table   transformer.word_embedding.weight
  model/transformer/mask_emb/mask_emb             transformer.mask_emb
  model/transformer/r_{w,r,s}_bias [L, N, H]      transformer.layer.{i}.rel_attn.r_{w,r,s}_bias
                                                    [N, H] each (one [N, H] when untie_r is
                                                    false: the same values in every layer)
  model/transformer/seg_embed [L, 2, N, H]        transformer.layer.{i}.rel_attn.seg_embed
  layer_{i}/rel_attn/{q,k,v,o,r}/kernel [D, N, H] transformer.layer.{i}.rel_attn.{q,k,v,o,r}
  layer_{i}/{rel_attn,ff}/LayerNorm/{gamma,beta}  ....{rel_attn,ff}.layer_norm.{weight,bias}
  layer_{i}/ff/layer_{1,2}/{kernel,bias}          ....ff.layer_{1,2}.{weight (transposed:
                                                    torch Linear is [out, in]), bias}
  model/lm_loss/bias                              lm_loss.bias (lm_loss.weight is tied to the
                                                    word embedding: not written, as HF's own
                                                    save_pretrained leaves it out)
and the task head by the kind's conversion (`hf_tensors`; every Dense kernel transposed to
[out, in]), e.g.
  classifier  sequence_summary.summary.{weight,bias} (with the projection), logits_proj.*
  squad       start_logits.dense.*, end_logits.dense_0.*, end_logits.LayerNorm.*,
              end_logits.dense_1.*, answer_class.dense_0.*, answer_class.dense_1.weight
with the head's config.json values (`hf_config`). Our summary types "last", "first" and
"mean_with_padding" are HF's "last", "first" and "mean"; our "mean" (over the real tokens
only) and "attn" have no HF equivalent and refuse (`heads.summary`).

The output is checked before any work: it must not exist or be an empty directory (with
`overwrite`, a previous export may be replaced), and must not be, contain or lie inside the
source. It is written under a temporary name and renamed when complete; the source is
only read. A weight holding NaN or an infinity refuses the export. With PyTorch and
transformers installed, the written directory is loaded with transformers (any missing or
unexpected tensor is an error) and its outputs on a small probe batch are compared with
ours: the card records the largest difference.
"""

import os
import shutil
from typing import Any, Dict, List, Optional, Tuple

from absl import logging
import numpy as np
import tensorflow as tf

from xlnet_tf import model_card
from xlnet_tf import paths
from xlnet_tf import model_directory
from xlnet_tf import released_names as names
from xlnet_tf import task_kind
from xlnet_tf.configs import XLNetConfig
from xlnet_tf.convert import hf_heads
from xlnet_tf.convert import hf_parity
from xlnet_tf.convert import hf_weights
from xlnet_tf.convert import huggingface
from xlnet_tf.convert import importer
from xlnet_tf.convert.heads import base
from xlnet_tf.data import tokenization

CONFIG_FILE = huggingface.CONFIG_FILE
WEIGHTS_FILE = "model.safetensors"
assert WEIGHTS_FILE in hf_weights.WEIGHT_FILES
TOKENIZER_CONFIG_FILE = huggingface.TOKENIZER_CONFIG_FILE
SPECIAL_TOKENS_FILE = "special_tokens_map.json"
REPORT_FILE = importer.REPORT_FILE        # conversion.json, as an import's
# Everything an export writes (a previous export holds nothing else).
EXPORT_FILES = (CONFIG_FILE, WEIGHTS_FILE, model_directory.SPIECE_FILE, TOKENIZER_CONFIG_FILE,
                SPECIAL_TOKENS_FILE, model_card.CARD_FILE, REPORT_FILE)

# Per layer: (HF name under transformer.layer.{i}., ours under model/transformer/layer_{i}/,
# transposed).
_LAYER_TENSORS = (
    *((f"rel_attn.{p}", f"rel_attn/{p}/kernel", False) for p in "qkvor"),
    ("rel_attn.layer_norm.weight", "rel_attn/LayerNorm/gamma", False),
    ("rel_attn.layer_norm.bias", "rel_attn/LayerNorm/beta", False),
    ("ff.layer_1.weight", "ff/layer_1/kernel", True),
    ("ff.layer_1.bias", "ff/layer_1/bias", False),
    ("ff.layer_2.weight", "ff/layer_2/kernel", True),
    ("ff.layer_2.bias", "ff/layer_2/bias", False),
    ("ff.layer_norm.weight", "ff/LayerNorm/gamma", False),
    ("ff.layer_norm.bias", "ff/LayerNorm/beta", False),
)
_PER_LAYER_BIASES = ("r_w_bias", "r_r_bias", "r_s_bias")

# The XLNetTokenizer's special tokens: its names -> the ids of the released vocabulary
# (`tokenization`, whose `load_spiece` checks them); the pieces are the vocabulary's
# (`tokenization.SPECIAL_PIECES`).
_PIECES = {i: piece for piece, i in tokenization.SPECIAL_PIECES.items()}
_SPECIAL_TOKEN_IDS = {"bos_token": tokenization.BOS_ID, "eos_token": tokenization.EOS_ID,
                      "unk_token": tokenization.UNK_ID, "sep_token": tokenization.SEP_ID,
                      "pad_token": tokenization.PAD_ID, "cls_token": tokenization.CLS_ID,
                      "mask_token": tokenization.MASK_ID}
SPECIAL_TOKENS = {name: _PIECES[i] for name, i in _SPECIAL_TOKEN_IDS.items()}
# The rest of the special pieces, in HuggingFace's order (<eop>, <eod>).
ADDITIONAL_SPECIAL_TOKENS = [_PIECES[tokenization.EOP_ID], _PIECES[tokenization.EOD_ID]]
assert set(SPECIAL_TOKENS.values()) | set(ADDITIONAL_SPECIAL_TOKENS) == set(_PIECES.values())
# HuggingFace's token ids in config.json.
_TOKEN_IDS = {f"{name}_id": _SPECIAL_TOKEN_IDS[name]
              for name in ("bos_token", "eos_token", "pad_token")}

NOT_MEASURED = hf_parity.NOT_MEASURED


# ---- the source --------------------------------------------------------------------------------

def detect_kind(model_dir: str) -> str:
  """The kind of the model directory (`task_kind.of_model_dir`), one HuggingFace has a
  class for.

  Raises:
    FileNotFoundError: `model_dir` is not a directory.
    ValueError: it is not one of our model directories (no xlnet_config.json or no
      model.ckpt.index), or it holds the spec files of several tasks.
  """
  if not os.path.isdir(model_dir):
    raise FileNotFoundError(f"--source {model_dir}: not a directory")
  required = (model_directory.CONFIG_FILE, model_directory.CHECKPOINT_PREFIX + ".index")
  missing = [f for f in required if not os.path.isfile(os.path.join(model_dir, f))]
  if missing:
    found = sorted(os.listdir(model_dir))
    hint = (" (a HuggingFace directory is imported with --to xlnet_tf, not exported)"
            if CONFIG_FILE in found else "")
    exportable = sorted(kind.spec_file for kind in task_kind.kinds()   # HF has their heads
                        if kind.spec_file and kind.conversion)
    raise ValueError(
        f"--source {model_dir}: not an xlnet_tf model directory: it has no {missing[0]}. "
        f"Expected {required[0]} and {required[1]} (written by training, xlnet_tf.convert or "
        f"save_pretrained), plus one of {', '.join(exportable)} for a fine-tuned model; "
        f"found {found[:20]}{' ...' if len(found) > 20 else ''}{hint}")
  try:
    kind = task_kind.of_model_dir(model_dir)
  except ValueError as e:
    raise ValueError(f"--source {e}") from None
  hf_heads.architecture_out(kind.name)             # a kind HF has no class for: why
  return kind.name


def _read_spec(model_dir: str, spec_file: str) -> Dict[str, Any]:
  return huggingface.read_json_object(os.path.join(model_dir, spec_file))


# ---- our weights -> HuggingFace's tensors ------------------------------------------------

def encoder_tensors(encoder) -> Dict[str, np.ndarray]:
  """HF name -> array for every weight of our `XLNetEncoder` (see the module docstring)."""
  config = encoder.config
  arrays = {name: base.value(v) for name, v in names.encoder_variables(encoder).items()}
  t = names.TRANSFORMER
  tensors = {"transformer.word_embedding.weight": arrays[f"{t}/word_embedding/lookup_table"],
             "transformer.mask_emb": arrays[names.MASK_EMB]}
  for i in range(config.n_layer):
    hf, ours = f"transformer.layer.{i}.", f"{t}/layer_{i}/"
    for hf_name, our_name, transposed in _LAYER_TENSORS:
      value = arrays[ours + our_name]
      tensors[hf + hf_name] = value.T if transposed else value
    for bias in _PER_LAYER_BIASES:
      value = arrays[f"{t}/{bias}"]
      tensors[f"{hf}rel_attn.{bias}"] = value[i] if config.untie_r else value
    tensors[f"{hf}rel_attn.seg_embed"] = arrays[f"{t}/seg_embed"][i]
  return tensors


def hf_tensors(model, kind: str) -> Dict[str, np.ndarray]:
  """Every tensor of the HF model (C-contiguous float32 copies), by HF name: the encoder's
  and the head's (its kind's conversion's `hf_tensors`)."""
  tensors = {**encoder_tensors(model.encoder),
             **task_kind.get(kind).conversion.hf_tensors(model)}
  return {k: np.ascontiguousarray(v, dtype=np.float32).copy() for k, v in tensors.items()}


# ---- config.json and the tokenizer files ---------------------------------------------------

# The HuggingFace defaults (`huggingface.HF_DEFAULTS`) every config.json gets, overridden
# below by the model's own values.
_WRITTEN_DEFAULTS = ("summary_type", "summary_use_proj", "summary_activation",
                     "summary_last_dropout", "start_n_top", "end_n_top", "use_mems_eval",
                     "use_mems_train")


def hf_config(config: XLNetConfig, kind: str, model, spec: Dict[str, Any],
              source: str) -> Tuple[Dict[str, Any], List[str]]:
  """(config.json values, notes) for our model of `kind` with `config` and `spec` (the
  head's values are its kind's conversion's, `hf_config`)."""
  values = config.to_hf_dict()          # checked by `export_to_huggingface`
  notes = []
  values.update(
      {k: v for k, v in huggingface.HF_DEFAULTS.items() if k in _WRITTEN_DEFAULTS},
      architectures=[hf_heads.architecture_out(kind)], model_type="xlnet",
      d_head=config.d_head, tie_word_embeddings=True, dtype="float32", **_TOKEN_IDS)
  if config.dropatt != config.dropout:
    notes.append(f"dropatt {config.dropatt} is not carried over: HuggingFace's XLNet drops "
                 f"attention probabilities at `dropout` ({config.dropout}) too")
  values.update(task_kind.get(kind).conversion.hf_config(model, spec, source, notes))
  return dict(sorted(values.items())), notes


def tokenizer_files(text: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
  """tokenizer_config.json and special_tokens_map.json for HF's XLNetTokenizer; `text`:
  the model directory's normalisation (`model_directory.read_text_settings`)."""
  mask = {"__type": "AddedToken", "content": SPECIAL_TOKENS["mask_token"], "lstrip": True,
          "rstrip": False, "normalized": True, "single_word": False, "special": True}
  tokenizer_config = {
      "tokenizer_class": "XLNetTokenizer",
      "do_lower_case": bool(text["uncased"]),
      "remove_space": True,
      "keep_accents": bool(text["keep_accents"]),
      **SPECIAL_TOKENS, "mask_token": mask,
      "additional_special_tokens": list(ADDITIONAL_SPECIAL_TOKENS),
      "padding_side": "left",
  }
  special = {**SPECIAL_TOKENS, "mask_token": {k: v for k, v in mask.items() if k != "__type"},
             "additional_special_tokens": list(ADDITIONAL_SPECIAL_TOKENS)}
  return {TOKENIZER_CONFIG_FILE: tokenizer_config, SPECIAL_TOKENS_FILE: special}


def _check_spiece(path: str, n_token: int) -> int:
  """The piece count of `path`, checked: the XLNet special pieces at their ids, and no
  more pieces than the model's n_token."""
  sp = tokenization.load_spiece(path)
  size = sp.get_piece_size()
  if size > n_token:
    raise ValueError(f"{path}: {size} pieces, but n_token (xlnet_config.json) is {n_token}: "
                     f"the tokenizer would produce ids the model has no embedding for")
  return size


# ---- the output location ---------------------------------------------------------------------

def check_output(source: str, output: str, overwrite: bool = False) -> None:
  """Raises before any work if `output` may not be written (see `xlnet_tf.convert.
  check_locations` for the relation to `source` and writability). `output` must not exist
  or be an empty directory; with `overwrite` it may be a previous export (conversion.json
  and only the files an export writes)."""
  try:
    importer.check_locations(source, output, overwrite=False)
    return
  except FileExistsError:
    pass              # every other check passed: only the existing output is in question
  if os.path.islink(output):
    raise FileExistsError(f"--output {output} is a symbolic link; give a new directory (or "
                          f"the link's target, {os.path.realpath(output)})")
  entries = sorted(os.listdir(output))
  if not entries:
    return
  shown = f"{entries[:10]}{' ...' if len(entries) > 10 else ''}"
  if not overwrite:
    raise FileExistsError(f"--output {output} exists and is not empty (it holds {shown}); "
                          f"give a new or empty directory, or pass --overwrite to replace a "
                          f"previous export")
  foreign = [e for e in entries if e not in EXPORT_FILES]
  if REPORT_FILE not in entries or foreign:
    raise FileExistsError(
        f"--output {output} is not the output of a previous export (it holds {shown}"
        f"{'' if REPORT_FILE in entries else f', no {REPORT_FILE}'}); --overwrite replaces "
        f"only such an output. Choose a new --output, or remove {output} yourself")


# ---- the licence, the parity figure, the card -------------------------------------------

def source_licence(model_dir: str) -> str:
  """The Hub licence identifier: the source README's front matter `license:`, else
  "apache-2.0" when its model card names the released licence, else "unknown"."""
  found = model_card.read_hf_licence(model_dir)
  if found:
    return found
  path = os.path.join(model_dir, model_card.CARD_FILE)
  if os.path.isfile(path):
    with open(path, encoding="utf-8", errors="replace") as f:
      if model_card.RELEASED_LICENCE in f.read(20000):
        return "apache-2.0"
  return "unknown"


def _probe_inputs(kind: str, config: XLNetConfig) -> Dict[str, np.ndarray]:
  """A small fixed batch: two rows [A <sep> B <sep> <cls>], the second left-padded (with
  attn_type "uni" without padding: HF's XLNet cannot combine its causal mask with an
  input_mask), as the kind's conversion makes it its own (`export_probe`)."""
  rng = np.random.default_rng(20240611)
  batch, length = 2, 9
  ids = rng.integers(0, config.n_token, [batch, length])
  segments = np.tile([0, 0, 0, 0, 1, 1, 1, 1, 2], [batch, 1])
  pad = np.zeros([batch, length], np.float32)
  inputs = {"input_ids": ids, "segment_ids": segments}
  if config.attn_type != "uni":
    pad[1, :2] = 1.0
    segments[1, :2] = 4
    inputs["input_mask"] = pad
  return task_kind.get(kind).conversion.export_probe(inputs, pad, rng, config)


def measure_parity(model, kind: str, hf_dir: str) -> Tuple[Optional[float], str]:
  """(max |ours - HF|, the card's text) on `_probe_inputs`, loading `hf_dir` with
  transformers; (None, why) when not measured: NOT_MEASURED without torch or transformers,
  or HF's forward pass failed, or (SQuAD) the top-k positions differ.

  Raises:
    ValueError: transformers reports missing, unexpected or mis-shaped tensors.
  """
  try:
    # pylint: disable=g-import-not-at-top
    import torch
    import transformers
  except ImportError:
    return None, NOT_MEASURED
  hf_class = getattr(transformers, hf_heads.architecture_out(kind))
  hf_model, info = hf_class.from_pretrained(hf_dir, output_loading_info=True)
  problems = {k: v for k, v in info.items() if v}
  if problems:
    raise ValueError(f"{hf_dir}: transformers {transformers.__version__} loads the written "
                     f"directory with {problems}; nothing was written")
  hf_model.eval()
  try:
    pairs = _probe_pairs(model, kind, hf_model, torch)
  except RuntimeError as e:     # torch's errors (e.g. an HF limitation on some options)
    detail = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    logging.warning("%s: HuggingFace's forward pass failed on the probe batch: %s", hf_dir,
                    detail)
    return None, (f"not measured (transformers {transformers.__version__} loads the "
                  f"directory, but its forward pass failed on the probe batch: {detail})")
  if pairs is None:
    logging.warning("%s: the top-k answer positions differ from HuggingFace's on the probe "
                    "batch", hf_dir)
    return None, ("not measured: the top-k answer positions differ from HuggingFace's on the "
                  "probe batch")
  worst = max(float(np.max(np.abs(ours - ref))) for _, ours, ref in pairs)
  what = ", ".join(what for what, _, _ in pairs)
  return worst, (f"max |ours - HuggingFace| {worst:.1e} ({what}; a probe batch of 2 rows, "
                 f"transformers {transformers.__version__}, torch {torch.__version__}, "
                 f"measured at export)")


def _probe_pairs(model, kind: str, hf_model, torch):
  """[(what, ours, HF's)] on `_probe_inputs` (its kind's conversion's `export_pairs`); None
  if the SQuAD top-k positions differ."""
  inputs = _probe_inputs(kind, model.config)
  torch_in = dict(input_ids=torch.as_tensor(inputs["input_ids"], dtype=torch.long),
                  token_type_ids=torch.as_tensor(inputs["segment_ids"], dtype=torch.long))
  if "input_mask" in inputs:
    torch_in["input_mask"] = torch.as_tensor(inputs["input_mask"], dtype=torch.float32)
  feed = {k: tf.constant(v) for k, v in inputs.items()}
  with torch.no_grad():
    return task_kind.get(kind).conversion.export_pairs(model, hf_model, inputs, torch_in,
                                                       feed, torch)


def _card(model_dir: str, kind: str, config: XLNetConfig, spec: Dict[str, Any],
          licence: str, parity: str, files: List[str], hf_values: Dict[str, Any]) -> str:
  record = task_kind.get(kind)
  task = record.conversion.card_task(record.card_task, spec)
  labels = spec.get("labels")
  labels = list(labels) if labels is not None else None
  what = record.conversion.card_title(spec, task)
  if licence == "apache-2.0" and model_card.read_hf_licence(model_dir) is None:
    shown_licence = model_card.RELEASED_LICENCE
  elif licence == "unknown":
    shown_licence = "unknown: see the source"
  else:
    shown_licence = licence
  details = {"HuggingFace class": f"{hf_heads.architecture_out(kind)} (transformers)",
             "Files": ", ".join(files)}
  if record.conversion.card_head:
    details["Head"] = record.conversion.card_head
  if spec.get("max_seq_length"):
    details["Fine-tuned with max_seq_length"] = spec["max_seq_length"]
  details.update(record.conversion.card_details(spec, hf_values))
  body = model_card.render(
      title=f"XLNet {what} ({config.n_layer} layers, d_model {config.d_model}), "
            f"HuggingFace layout",
      source=f"xlnet_tf model directory {os.path.abspath(model_dir)}", licence=shown_licence,
      config=config.to_dict(), task=task, labels=labels, parity=parity, details=details)
  front = f"---\nlicense: {licence}\nlibrary_name: transformers\ntags: [xlnet]\n---\n"
  return front + body


# ---- the export ------------------------------------------------------------------------------

def export_to_huggingface(model_dir: str, output: str, overwrite: bool = False) -> dict:
  """Writes our model directory `model_dir` as a HuggingFace XLNet directory `output`.

  Returns the report written to `output`/conversion.json.
  Raises:
    FileNotFoundError / ValueError: `model_dir` is not one of our model directories, its
      spec has a summary type HF lacks, its weights do not match its config, its
      spiece.model does not fit; transformers loads the written directory with missing or
      unexpected tensors.
    FileExistsError / ValueError / PermissionError: `output` (see `check_output`).
    model_directory.NonFiniteError: a weight holds NaN or an infinity.
  Nothing is written in any of these cases.
  """
  check_output(model_dir, output, overwrite)
  kind = detect_kind(model_dir)
  spec_file = task_kind.get(kind).spec_file
  spec = _read_spec(model_dir, spec_file) if spec_file else {}
  # A spec HF has no equivalent of is refused before anything is loaded.
  task_kind.get(kind).conversion.check_exportable(model_dir, spec)
  config = model_directory.read_config(model_dir)
  try:
    config.to_hf_dict()
  except ValueError as e:
    raise ValueError(f"{os.path.join(model_dir, model_directory.CONFIG_FILE)}: {e}") from None
  spiece = os.path.join(model_dir, model_directory.SPIECE_FILE)
  spiece = spiece if os.path.isfile(spiece) else None
  pieces = _check_spiece(spiece, config.n_token) if spiece else None
  text = model_directory.read_text_settings(model_dir)    # the spec's, or text.json's

  model, spec = task_kind.get(kind).conversion.load_model_dir(model_dir)   # the spec values
  tensors = hf_tensors(model, kind)
  bad = sorted(k for k, v in tensors.items() if not np.all(np.isfinite(v)))
  if bad:
    raise model_directory.NonFiniteError(
        f"--source {model_dir}: {len(bad)} weight(s) hold NaN or infinite values (e.g. "
        f"{', '.join(bad[:3])}, by their HuggingFace names); nothing was written")
  values, notes = hf_config(model.config, kind, model, spec, model_dir)
  licence = source_licence(model_dir)

  output = os.path.abspath(output)
  os.makedirs(os.path.dirname(output), exist_ok=True)
  with paths.atomic_output(output, replace=True) as partial:
    os.mkdir(partial)               # a fresh name: never anything of the user's
    from safetensors.numpy import save_file  # pylint: disable=g-import-not-at-top
    save_file(tensors, os.path.join(partial, WEIGHTS_FILE), metadata={"format": "pt"})
    paths.write_json(os.path.join(partial, CONFIG_FILE), values)
    if spiece:
      shutil.copyfile(spiece, os.path.join(partial, model_directory.SPIECE_FILE))
      for name, content in tokenizer_files(text).items():
        paths.write_json(os.path.join(partial, name), content)
      if text["keep_accents"]:
        notes.append(f"{TOKENIZER_CONFIG_FILE}: keep_accents true; transformers 5's "
                     f"XLNetTokenizer strips accents whatever the flag says (its normaliser "
                     f"always applies NFKD + StripAccents), so its pieces can differ from "
                     f"ours on accented text")
    else:
      notes.append(f"no {model_directory.SPIECE_FILE} in the source: no tokenizer files "
                   f"written (copy the model's SentencePiece model and its tokenizer settings "
                   f"into the output)")
    worst, parity = measure_parity(model, kind, partial)
    files = sorted(os.listdir(partial)) + [model_card.CARD_FILE, REPORT_FILE]
    report = {
        "source": os.path.abspath(model_dir), "source_kind": "xlnet_tf",
        "source_model": kind, "output_kind": "huggingface",
        "architecture": hf_heads.architecture_out(kind), "tensors": len(tensors),
        "parameters": int(sum(v.size for v in tensors.values())),
        "spiece_model": spiece is not None, "spiece_pieces": pieces,
        "licence": licence, "parity": parity, "max_abs_diff": worst, "notes": notes,
        "files": sorted(files),
    }
    if spiece:
      report["tokenizer"] = {k: v for k, v in tokenizer_files(text)[TOKENIZER_CONFIG_FILE]
                             .items() if k in ("do_lower_case", "keep_accents")}
    paths.write_text(os.path.join(partial, model_card.CARD_FILE),
                     _card(model_dir, kind, model.config, spec, licence, parity,
                           sorted(files), values))
    paths.write_json(os.path.join(partial, REPORT_FILE), report)
  if worst is not None and worst > hf_parity.PARITY_TOLERANCE:
    logging.warning("%s: %s", output, parity)
  logging.info("exported %s (%s) to %s (%s, %d tensors); parity: %s", model_dir, kind, output,
               hf_heads.architecture_out(kind), len(tensors), parity)
  return report
