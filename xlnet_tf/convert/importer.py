"""Import released TF1 checkpoints, fine-tuned ones with their task head, and HuggingFace
XLNet models with theirs.

  python -m xlnet_tf.convert --source SRC --output OUT [--saved_model EXPORT]

SRC is either a released directory (xlnet_config.json + xlnet_model.ckpt.*, optional
spiece.model) or a HuggingFace XLNet directory (config.json with model_type "xlnet" +
model.safetensors, a sharded safetensors index, or pytorch_model.bin). OUT receives
xlnet_config.json, the TF2 checkpoint model.ckpt, spiece.model if SRC has one,
conversion.json (what was read, what was left out, the parity figure) and README.md (the
model card, `xlnet_tf.model_card`); `xlnet_tf.load_pretrained(OUT)` loads a pretrained one.

A HuggingFace task model converts with its head (config.json's `architectures`, see
`hf_heads`) into the model directory of that task (read back with
`model_directory.load(directory, <its kind's spec class>)`): the kind whose record's
conversion reads that class (`xlnet_tf.convert.heads`), e.g.
  XLNetForSequenceClassification  classifier.json (labels: id2label; regression for one
                                  output), `ClassifierSpec`
  XLNetForQuestionAnswering       squad.json (answer_class_start "gold"), `SquadSpec`
XLNetModel and XLNetLMHeadModel (and --task pretrained) give the pretrained layout.
tokenizer_config.json's do_lower_case and keep_accents (or --uncased/--keep_accents) are
recorded in the spec (uncased, keep_accents), or for the pretrained layout in text.json
(`model_directory.TEXT_FILE`, written when not both false). The parity figure is measured
at conversion: for a HuggingFace source, HF's model and ours on a fixed probe batch (when
torch and transformers are installed; a difference above 1e-4 is a warning, logged and in
the report's notes); for a TF1 source, the written model.ckpt read back against the
checkpoint's arrays. With --saved_model the model directory is also exported as a raw-text
SavedModel (`xlnet_tf.serving`), with the model card; the export takes its name first, then
the model directory, so both appear or neither.

Checkpoints written by the original's fine-tuning scripts (run_classifier.py, run_squad.py,
run_race.py; a model directory with model.ckpt-N.* and a `checkpoint` file, config given
by `model_config_path`) hold the encoder without the pretraining-only `mask_emb` and
`model/lm_loss/bias`, plus the task head. With `task` "auto" such a checkpoint converts
with its head into the fine-tuned model directory of that task (see `task_heads`), e.g.
  classifier  xlnet_config.json, classifier.json, model.ckpt (`ClassifierSpec`,
              experiments/export_saved_model.py)
  squad       xlnet_config.json, squad.json, model.ckpt (run_squad's MODEL_DIR/final)
and without a head into the pretrained layout. conversion.json says what was absent and
what was done about it. A checkpoint that has the pretraining variables converts to the
pretrained layout (its task-head variables listed as left out) unless `task` names a head.

From Python, the task kinds' records must be registered first (`import
xlnet_tf.tasks.all_tasks`; the command line does it): every per-kind answer of a
conversion comes from them (`xlnet_tf.task_kind`: the record's `conversion`, the kind's
module of `xlnet_tf.convert.heads`, builds the model and writes the spec).

OUT is checked before anything is read: it must not be, contain or lie inside SRC (symbolic
links resolved), and it must be a writable directory location. An existing OUT is replaced
only with `overwrite` and only if it is the output of a previous conversion (it has
conversion.json and nothing a conversion does not write); the new output is written
completely beside it first, and the old one is removed only after the new one took its name.
"""

import dataclasses
import json
import math
import os
import shutil
from typing import Any, Dict, Iterator, Optional, Sequence

from absl import logging
import numpy as np
import tensorflow as tf
from tensorflow.core.protobuf import trackable_object_graph_pb2

from xlnet_tf import model_card
from xlnet_tf import model_directory
from xlnet_tf import paths
from xlnet_tf import pretrained
from xlnet_tf import released_names as names
from xlnet_tf import task_kind
from xlnet_tf.convert import hf_heads
from xlnet_tf.convert import hf_parity
from xlnet_tf.convert import hf_weights
from xlnet_tf.convert import huggingface
from xlnet_tf.convert import released
from xlnet_tf.convert import task_heads
from xlnet_tf.convert.heads import summary
from xlnet_tf.convert.heads.base import Head
from xlnet_tf.convert.source import SourceWeights
from xlnet_tf.models.xlnet_pretrainer import build_pretrainer


def detect_source(source: str, config_path: Optional[str] = None) -> str:
  """"released" or "huggingface". `config_path`: the xlnet_config.json of a TF1 checkpoint
  directory that has none (the original's fine-tuning model_dir).

  Raises:
    FileNotFoundError / ValueError: naming SRC and saying what was expected.
  """
  if not os.path.isdir(source):
    raise FileNotFoundError(f"--source {source}: not a directory")
  if released.is_released_dir(source, config_path):
    return "released"
  if huggingface.is_hf_dir(source):
    return "huggingface"
  if released.has_checkpoint(source) and not config_path:
    raise ValueError(
        f"--source {source}: a TF1 checkpoint without {released.CONFIG_FILE}. The model_dir "
        f"of the original's fine-tuning scripts has none: pass --model_config_path (the "
        f"xlnet_config.json it was fine-tuned with)")
  found = sorted(os.listdir(source))[:20]
  raise ValueError(
      f"--source {source}: not an XLNet checkpoint directory. Expected either the released "
      f"layout ({released.CONFIG_FILE} + {released.CHECKPOINT_PREFIX}.index/.data-*) or a "
      f"HuggingFace XLNet directory ({huggingface.CONFIG_FILE} with model_type 'xlnet' + "
      f"one of {list(hf_weights.WEIGHT_FILES)}); found {found}")


REPORT_FILE = "conversion.json"


@dataclasses.dataclass(frozen=True)
class ConvertOptions:
  """What a checkpoint cannot tell, and which head to load (all optional).

  task: "auto" (a TF1 checkpoint without the pretraining variables converts with its task
    head, if it has one; a HuggingFace task model with its head; otherwise the pretrained
    layout), "pretrained" (the encoder alone, task heads left out), or one of
    `task_kind.head_kinds()` (that head, or an error).
  model_config_path: xlnet_config.json for a TF1 directory that has none.
  spiece_model_file: copied to OUT/spiece.model (default SRC/spiece.model if present).
  task_name: which classification head, if the checkpoint has several.
  labels: the classifier's label names in id order (default: the original's list for the
    tasks its run_classifier.py defines, else "0".."C-1").
  summary_type: default "attn" if the checkpoint has its variables, else "last".
  max_seq_length: default the original's flag default (128 classifier, 512 SQuAD, RACE).
  uncased: the text was lower-cased (the original's --uncased; a HuggingFace directory's
    tokenizer_config.json do_lower_case).
  keep_accents: the text keeps its accents (tokenizer_config.json keep_accents).
  max_query_length, doc_stride, start_n_top, end_n_top, version_2_with_negative,
    null_score_diff_threshold: SQuAD settings for squad.json (the original's defaults;
    v2.0, since the original's run_squad.py always trains the answer class).
  """
  task: str = "auto"
  model_config_path: Optional[str] = None
  spiece_model_file: Optional[str] = None
  task_name: Optional[str] = None
  labels: Optional[Sequence[str]] = None
  summary_type: Optional[str] = None
  max_seq_length: Optional[int] = None
  uncased: bool = False
  keep_accents: bool = False
  max_query_length: int = 64
  doc_stride: int = 128
  start_n_top: int = 5
  end_n_top: int = 5
  version_2_with_negative: bool = True
  null_score_diff_threshold: Optional[float] = None

  def __post_init__(self):
    kinds = task_kind.names()
    if self.task not in ["auto", *kinds]:
      raise ValueError(f"--task must be one of {['auto', *kinds]}, got {self.task!r}")
    if self.summary_type is not None and self.summary_type not in summary.SUMMARY_TYPES:
      raise ValueError(f"--summary_type must be one of {list(summary.SUMMARY_TYPES)}, got "
                       f"{self.summary_type!r}")
    if self.labels is not None:
      labels = [str(label) for label in self.labels]
      if len(labels) < 2 or len(set(labels)) != len(labels) or not all(labels):
        raise ValueError(f"--labels {labels}: expected at least 2 distinct, non-empty labels")
      object.__setattr__(self, "labels", tuple(labels))
    for name in ("max_seq_length", "max_query_length", "doc_stride", "start_n_top",
                 "end_n_top"):
      value = getattr(self, name)
      if value is not None and value < 1:
        raise ValueError(f"--{name} must be >= 1, got {value}")
    if self.max_seq_length is not None and self.max_seq_length < 4:
      raise ValueError(f"--max_seq_length must be >= 4 (room for the special tokens), got "
                       f"{self.max_seq_length}")


def _ancestors(path: str) -> Iterator[str]:
  """`path` (absolute) and each of its parent directories, up to the root."""
  while True:
    yield path
    parent = os.path.dirname(path)
    if parent == path:
      return
    path = parent


def _same_directory(a: str, b: str) -> bool:
  try:
    return os.path.samefile(a, b)
  except OSError:
    return False


def _overlap(source: str, output: str) -> Optional[str]:
  """How `output` relates to `source`: "is", "lies inside", "contains", or None.

  Paths are compared by their components after resolving symbolic links ("/a/bc" is not
  inside "/a/b"), and existing directories also by identity (`os.path.samefile`), which
  catches other names of the same directory (bind mounts, case-insensitive file systems).
  """
  src, out = os.path.realpath(source), os.path.realpath(output)
  if src == out:
    return "is"
  common = os.path.commonpath([src, out])
  if common == src:
    return "lies inside"
  if common == out:
    return "contains"
  if os.path.isdir(src):
    for ancestor in _ancestors(out):
      if _same_directory(ancestor, src):
        return "is" if ancestor == out else "lies inside"
    if os.path.isdir(out):
      for ancestor in _ancestors(src):
        if _same_directory(ancestor, out):
          return "contains"
  return None


def _is_conversion_file(name: str) -> bool:
  """Whether a conversion writes a file called `name` into its output directory."""
  return (name in (model_directory.CONFIG_FILE, model_directory.SPIECE_FILE, REPORT_FILE,
                   *(kind.spec_file for kind in task_kind.kinds()
                     if kind.conversion is not None and kind.spec_file),
                   model_directory.TEXT_FILE, model_card.CARD_FILE,
                   model_directory.CHECKPOINT_PREFIX + ".index") or
          name.startswith(model_directory.CHECKPOINT_PREFIX + ".data-"))


def check_locations(source: str, output: str, overwrite: bool = False) -> None:
  """Raises, before any work, if writing `output` could harm `source` or other data.

  Raises:
    ValueError: `output` is empty, is `source`, lies inside it or contains it.
    NotADirectoryError / PermissionError: `output` is a file, lies under a file, or cannot
      be written (see `paths.check_output_dir`).
    FileExistsError: `output` exists and `overwrite` is false, or it exists but is not the
      output of a previous conversion (then `overwrite` would delete someone's files).
  """
  if not output:
    raise ValueError("--output: empty; expected the directory to write the converted model "
                     "to")
  if not source:
    raise ValueError("--source: empty; expected an XLNet checkpoint directory")
  relation = _overlap(source, output)
  if relation:
    resolved = (f" (resolved: {os.path.realpath(output)} and {os.path.realpath(source)})"
                if (os.path.realpath(output), os.path.realpath(source)) !=
                (os.path.abspath(output), os.path.abspath(source)) else "")
    raise ValueError(
        f"--output {output} {relation} --source {source}{resolved}: the conversion writes "
        f"(and with --overwrite replaces) --output, which would destroy the source files. "
        f"Choose an --output outside --source (e.g. a sibling directory)")
  paths.check_output_dir(output, "--output")
  if not os.path.lexists(output):
    return
  if not overwrite:
    raise FileExistsError(f"--output {output} exists; pass --overwrite to replace it")
  if os.path.islink(output):
    raise FileExistsError(f"--output {output} is a symbolic link; --overwrite replaces only "
                          f"a directory written by a previous conversion. Give the link's "
                          f"target ({os.path.realpath(output)}) or another --output")
  entries = sorted(os.listdir(output))
  if REPORT_FILE not in entries:
    raise FileExistsError(
        f"--output {output} exists and is not the output of a previous conversion (it has "
        f"no {REPORT_FILE}; it holds {entries[:10]}{' ...' if len(entries) > 10 else ''}); "
        f"--overwrite replaces only such an output, never other directories. Choose a new "
        f"--output, or remove {output} yourself")
  foreign = [name for name in entries if not _is_conversion_file(name)]
  if foreign:
    raise FileExistsError(
        f"--output {output} holds files a conversion does not write: "
        f"{foreign[:10]}{' ...' if len(foreign) > 10 else ''}; --overwrite would delete them. "
        f"Move them elsewhere or choose a new --output")


def read_source(source: str, config_path: Optional[str] = None) -> SourceWeights:
  kind = detect_source(source, config_path)
  if kind == "released":
    return released.read_released(source, config_path)
  if config_path:
    raise ValueError(f"--model_config_path applies to TF1 checkpoint directories; --source "
                     f"{source} is a HuggingFace directory (its config.json is used)")
  return huggingface.read_hf(source)


# What conversion.json says about a pretraining-only variable the checkpoint does not have.
_MASK_EMB_ABSENT = (
    "not in the checkpoint: the original creates it only for pretraining's query stream, "
    "so its fine-tuning scripts never save it. Only pretraining reads it; it is set to what "
    "the original starts it from (its variable has no initializer: TF1's default, Glorot "
    "uniform, limit sqrt(6 / (1 + d_model)); drawn with seed 0)")
_LM_BIAS_ZEROS = (
    "not in the checkpoint: the original creates it only with pretraining's LM loss. Set to "
    "zeros, its initial value in the original (tf.zeros_initializer): the LM head's logits "
    "are the products with the tied embedding, without a bias. It was never trained with "
    "this encoder; continue pretraining before relying on the LM head")
_LM_BIAS_UNUSED = (
    "not in the checkpoint: the original creates it only with pretraining's LM loss; the "
    "task model has no LM head, so nothing needs it")


def original_mask_emb(d_model: int) -> np.ndarray:
  """[1, 1, d_model]: TF1's default initializer (Glorot uniform; fans 1 and d_model for
  this shape), as the original creates `mask_emb`; seeded, so a conversion is repeatable."""
  limit = math.sqrt(6.0 / (1 + d_model))
  return np.random.default_rng(0).uniform(-limit, limit, [1, 1, d_model]).astype(np.float32)


def _task_config(weights: SourceWeights):
  """The config of the task model: a TF1 checkpoint gets fine-tuning's run options
  (`XLNetConfig.for_finetuning`); a HuggingFace model keeps its own (attention type,
  bi_data, clamp_len, dropout: they shape its outputs), without memory."""
  if weights.kind == "huggingface":
    return weights.config.replace(mem_len=0, reuse_len=0)
  return weights.config.for_finetuning()


def _convert_task(weights: SourceWeights, head: Head, options: ConvertOptions,
                  report: Dict[str, Any], text: Dict[str, Any]):
  """Builds and loads the task model for `head` (its kind's conversion); returns (model,
  writer(directory, spiece)). `text`: the normalisation (uncased, keep_accents) recorded in
  the spec."""
  record = task_kind.get(head.kind)
  config = _task_config(weights)
  model = record.conversion.build_model(head, config, options)
  encoder = {k: v for k, v in weights.arrays.items() if k != names.LM_BIAS}
  absent = report["absent"]
  if names.MASK_EMB not in encoder:
    encoder[names.MASK_EMB] = original_mask_emb(config.d_model)
    absent[names.MASK_EMB] = _MASK_EMB_ABSENT
  if names.LM_BIAS in weights.arrays:
    report["notes"].append(f"{names.LM_BIAS} left out: the {head.kind} model has no LM head")
  else:
    absent[names.LM_BIAS] = _LM_BIAS_UNUSED
  task_heads.load_task_model(model, head, encoder, weights.heads, weights.path)
  report["variables"] = len(weights.arrays) + len(head.names)
  if weights.kind == "huggingface":
    report["skipped_task_head_variables"] = []
  else:
    report["skipped_task_head_variables"] = [n for n in weights.skipped
                                             if n not in head.names]
  max_seq_length = options.max_seq_length or record.max_seq_length
  described = {"kind": head.kind, "variables": list(head.names)}
  settings = {"max_seq_length": max_seq_length, "uncased": text["uncased"]}
  if text["keep_accents"]:
    settings["keep_accents"] = True
  if options.max_seq_length is None:
    report["notes"].append(f"max_seq_length {max_seq_length}: the original's default for "
                           f"this task (the checkpoint does not record it; "
                           f"--max_seq_length sets it)")
  spec, settings = record.conversion.converted_spec(head, options, settings, weights,
                                                    described, report["notes"])
  report["task_head"] = described
  report["task_settings"] = settings
  return model, lambda directory, spiece: model_directory.save(model, directory, spec, spiece)


def _convert_pretrained(weights: SourceWeights, report: Dict[str, Any],
                        text: Dict[str, Any]):
  """The pretraining model from the encoder (and LM bias); returns (model, writer). The
  writer records `text` (uncased, keep_accents) in text.json when not both False
  (`model_directory.TEXT_FILE`)."""
  arrays = dict(weights.arrays)
  if weights.kind == "huggingface" and names.LM_BIAS not in arrays:
    # A task model's weights (converted with --task pretrained): no LM head.
    arrays[names.LM_BIAS] = np.zeros([weights.config.n_token], np.float32)
    report["absent"][names.LM_BIAS] = (
        "not in the weights: a HuggingFace task model has no LM head. Set to zeros (the "
        "LM head's logits are the products with the tied embedding, without a bias)")
  if weights.kind == "released":
    if names.MASK_EMB not in arrays:
      arrays[names.MASK_EMB] = original_mask_emb(weights.config.d_model)
      report["absent"][names.MASK_EMB] = _MASK_EMB_ABSENT
    if names.LM_BIAS not in arrays:
      arrays[names.LM_BIAS] = np.zeros([weights.config.n_token], np.float32)
      report["absent"][names.LM_BIAS] = _LM_BIAS_ZEROS
  model = build_pretrainer(weights.config)
  names.assign_released(model, arrays, weights.path)
  settings = {key: bool(text[key]) for key in model_directory.TEXT_KEYS}
  return model, lambda directory, spiece: pretrained.save_pretrained(model, directory, spiece,
                                                                     text=settings)


# ---- the parity figure, the model card and the SavedModel ---------------------------------

def _checkpoint_keys(prefix: str, model) -> Dict[int, str]:
  """id(variable) -> its key in the checkpoint `prefix` written by
  `tf.train.Checkpoint(model=model)` (matched through the checkpoint's object graph)."""
  matched = tf.train.CheckpointView(prefix).match(tf.train.Checkpoint(model=model))
  graph = trackable_object_graph_pb2.TrackableObjectGraph()
  graph.ParseFromString(tf.train.load_checkpoint(prefix).get_tensor(
      "_CHECKPOINTABLE_OBJECT_GRAPH"))
  keys = {}
  for node_id, trackable in matched.items():
    attributes = graph.nodes[node_id].attributes
    if isinstance(trackable, tf.Variable) and attributes:
      keys[id(trackable)] = attributes[0].checkpoint_key
  return keys


def _weight_parity(model, head: Optional[Head], weights: SourceWeights,
                   written: str) -> Dict[str, Any]:
  """max |written - source| over every array the TF1 checkpoint gave (released names; the
  pretraining-only ones it lacks are not counted): `written` (the output's model.ckpt) is
  read back with `tf.train.load_checkpoint`, each tensor found by its variable in `model`
  (the model that was written), and compared with the array of the source checkpoint."""
  if head is None:
    targets = names.released_variables(model)
    sources = weights.arrays
  else:
    targets = {**names.encoder_variables(model.encoder),
               **task_heads.head_variables(head, model)}
    sources = {**weights.arrays, **{n: weights.heads[n] for n in head.names}}
  keys = _checkpoint_keys(written, model)
  reader = tf.train.load_checkpoint(written)
  diffs, mismatched = {}, []
  for name, variable in targets.items():
    if name not in sources:
      continue
    source = np.asarray(sources[name], np.float64)
    value = reader.get_tensor(keys[id(variable)]).astype(np.float64)
    if value.shape != source.shape:
      mismatched.append(f"{name} {list(value.shape)} vs {list(source.shape)}")
      diffs[name] = math.inf
    else:
      diffs[name] = float(np.max(np.abs(value - source), initial=0.0))
  worst = max(diffs.values(), default=0.0)
  exact = " (bit-exact)" if worst == 0.0 else ""
  where = os.path.basename(written)
  text = (f"weights written vs source checkpoint: max |diff| {worst:.1e}{exact} over the "
          f"{len(diffs)} arrays of {weights.path} (read back from the written {where})")
  if mismatched:
    text += f"; shapes differ: {', '.join(mismatched[:3])}"
  result = {"measured": True, "max_abs_diff": worst, "arrays": len(diffs), "text": text}
  if worst != 0.0:
    result["warning"] = (f"parity: the written weights differ from the source checkpoint "
                         f"({text})")
    logging.warning("%s", result["warning"])
  return result


def _write_card(directory: str, report: Dict[str, Any], weights: SourceWeights, model,
                architecture: Optional[str]) -> None:
  """The model card of the conversion (`model_card.render`): its task is the kind's card
  task as the kind's conversion gives it for the converted head (a regression
  classifier's is "regression")."""
  record = task_kind.get(report["output_kind"])
  task = record.conversion.card_task(record.card_task, report.get("task_head") or {})
  labels = (report.get("task_head") or {}).get("labels")
  if weights.kind == "huggingface":
    source = (f"HuggingFace directory {report['source']} ({architecture or 'no architectures'}"
              f", {os.path.basename(weights.path)})")
    licence = model_card.read_hf_licence(report["source"]) or "unknown: see the source"
  else:
    source = f"TF1 checkpoint {weights.path}"
    licence = model_card.RELEASED_LICENCE
  text = report["tokenizer"]
  details = {"Text normalisation": f"uncased {text['uncased']}, keep_accents "
                                   f"{text['keep_accents']} ({text['from']})",
             "SentencePiece model": "spiece.model" if report["spiece_model"] else "none",
             "Conversion report": REPORT_FILE}
  if record.conversion.card_head:
    details["Head"] = record.conversion.card_head
  if report.get("task_settings"):
    details["Task settings"] = json.dumps(report["task_settings"])
  if report.get("saved_model"):
    details["SavedModel"] = report["saved_model"] + (
        f" (its parity with this model: {report['saved_model_parity']})"
        if report.get("saved_model_parity") else "")
  if report["notes"]:
    details["Notes"] = " | ".join(report["notes"])
  title_source = "HuggingFace " + (architecture or "XLNet") if weights.kind == "huggingface" \
      else "a TF1 checkpoint"
  model_card.write(directory, title=f"XLNet {task} model, converted from "
                                    f"{title_source}",
                   source=source, licence=licence, config=model.config.to_dict(), task=task,
                   labels=list(labels) if labels else None,
                   parity=report["parity"]["text"], details=details)


def _card_parity(directory: str) -> Optional[str]:
  """The parity line of DIRECTORY/README.md (the export's own card, if it wrote one)."""
  path = os.path.join(directory, model_card.CARD_FILE)
  if not os.path.isfile(path):
    return None
  with open(path, encoding="utf-8") as f:
    for line in f:
      if line.startswith("- **Parity**: "):
        return line[len("- **Parity**: "):].strip()
  return None


def check_export_location(export: str, source: str, output: str) -> None:
  """Raises, before any work, unless `export` (--saved_model) is a new or empty directory
  outside `source` and `output` (and containing neither)."""
  if not export:
    raise ValueError("--saved_model: empty; expected the directory to write the SavedModel to")
  for other, flag in ((source, "--source"), (output, "--output")):
    relation = _overlap(other, export)
    if relation:
      raise ValueError(f"--saved_model {export} {relation} {flag} {other}; expected a "
                       f"directory of its own, outside {flag}")
  paths.check_output_dir(export, "--saved_model")
  if os.path.lexists(export):
    if os.path.islink(export) or not os.path.isdir(export) or os.listdir(export):
      raise FileExistsError(f"--saved_model {export} exists and is not an empty directory; "
                            f"expected a new (or empty) directory for the SavedModel")


def _export(kind: str, model_dir: str, export_dir: str, text: Dict[str, Any],
            max_seq_length: Optional[int]) -> None:
  """The raw-text SavedModel of the model directory `model_dir` (see xlnet_tf/serving), with
  the options the kind's conversion gives it."""
  record = task_kind.get(kind)
  record.export(model_dir, export_dir, **record.conversion.export_options(text, max_seq_length))


def _text_settings(weights: SourceWeights, options: ConvertOptions) -> Dict[str, Any]:
  """uncased and keep_accents: a HuggingFace directory's tokenizer_config.json (the flags
  may only agree with it), else the flags."""
  tokenizer = getattr(weights, "tokenizer", None) or {}
  if not tokenizer.get("source"):
    default = (" (HuggingFace's defaults: no tokenizer_config.json)"
               if weights.kind == "huggingface" else "")
    return {"uncased": options.uncased, "keep_accents": options.keep_accents,
            "from": "--uncased/--keep_accents" + default}
  for flag, field, key in (("--uncased", "do_lower_case", "uncased"),
                           ("--keep_accents", "keep_accents", "keep_accents")):
    if getattr(options, key) and not tokenizer[key]:
      raise ValueError(f"{flag}: {tokenizer['source']} says {field} false; the tokenizer "
                       f"settings of a HuggingFace directory come from that file")
  return {"uncased": tokenizer["uncased"], "keep_accents": tokenizer["keep_accents"],
          "from": tokenizer["source"]}


def _remove_temporary(path: str) -> None:
  """Removes the temporary directory `path` (`paths.partial_path`: this process's own) and
  whatever was built beside it under names that extend it (`path`.partial-*, `path`.old-*:
  the writers' own temporaries)."""
  shutil.rmtree(path, ignore_errors=True)
  parent, base = os.path.split(path)
  try:
    entries = os.listdir(parent)
  except OSError:
    return
  for name in entries:
    if name.startswith(base + "."):
      extra = os.path.join(parent, name)
      if os.path.isdir(extra) and not os.path.islink(extra):
        shutil.rmtree(extra, ignore_errors=True)
      else:
        try:
          os.remove(extra)
        except OSError:
          pass


def _publish_both(partial: str, output: str, export_partial: str, saved_model: str) -> None:
  """Gives the complete export `export_partial` the name --saved_model, then the complete
  model directory `partial` the name --output (`paths.replace_directory`): both appear, or neither
  (a failure of the second takes the export back to its temporary name, and an empty
  --saved_model directory that was there before is recreated).

  Raises:
    FileExistsError: --saved_model was created or filled since it was checked.
  """
  existed = os.path.isdir(saved_model) and not os.path.islink(saved_model)
  if os.path.lexists(saved_model) and (not existed or os.listdir(saved_model)):
    raise FileExistsError(f"--saved_model {saved_model}: appeared or was filled during the "
                          f"conversion; expected a new (or empty) directory for the "
                          f"SavedModel. Nothing was written")
  os.rename(export_partial, saved_model)     # replaces an empty directory
  try:
    paths.replace_directory(partial, output)
  except BaseException:
    os.rename(saved_model, export_partial)
    if existed:
      os.mkdir(saved_model)
    raise


def convert(source: str, output: str, overwrite: bool = False,
            options: Optional[ConvertOptions] = None,
            saved_model: Optional[str] = None) -> dict:
  """Converts SRC into our layout in `output`, atomically. Returns the report it writes.

  `output` is checked first (`check_locations`); with `overwrite`, a previous conversion
  output is replaced only once the new one is complete. `options`: see `ConvertOptions`.
  `saved_model`: also export the converted model as a raw-text SavedModel there (a new or
  empty directory outside SRC and `output`, checked first; written from the complete model
  directory under a temporary name, then renamed).
  """
  options = options or ConvertOptions()
  check_locations(source, output, overwrite)
  if saved_model is not None:
    check_export_location(saved_model, source, output)
  for path, flag in ((options.model_config_path, "--model_config_path"),
                     (options.spiece_model_file, "--spiece_model_file")):
    if path and not os.path.isfile(path):
      raise FileNotFoundError(f"{flag} {path}: no such file")
  weights = read_source(source, options.model_config_path)
  head, architecture, head_notes = None, None, []
  if weights.kind == "huggingface":
    if options.summary_type is not None:
      raise ValueError(f"--summary_type {options.summary_type}: a HuggingFace directory's "
                       f"summary comes from its config.json (summary_type)")
    found = hf_heads.identify_hf_head(weights, options.task, options.labels,
                                      options.task_name)
    head, architecture, head_notes = found.head, found.architecture, found.notes
  elif options.task in task_kind.head_kinds() or (
      options.task == "auto" and not any(n in weights.arrays for n in names.PRETRAINING_ONLY)):
    head = task_heads.identify_head(
        weights.heads, weights.config, weights.path,
        task="auto" if options.task == "auto" else options.task, task_name=options.task_name,
        summary_type=options.summary_type, labels=options.labels)
  if head is not None:
    record = task_kind.get(head.kind)
    record.conversion.check_options(options, options.max_seq_length or record.max_seq_length)
  if head is None:
    unused = [flag for flag, value in (
        ("--task_name", options.task_name), ("--labels", options.labels),
        ("--summary_type", options.summary_type),
        ("--max_seq_length", None if saved_model else options.max_seq_length))
              if value is not None]
    if unused:
      raise ValueError(f"{', '.join(unused)}: these describe a task head, but the "
                       f"conversion of {source} writes the pretrained layout (no head "
                       f"loaded; --task chooses one)")
  text = _text_settings(weights, options)

  spiece = options.spiece_model_file or os.path.join(source, model_directory.SPIECE_FILE)
  spiece = spiece if os.path.isfile(spiece) else None
  if saved_model is not None and spiece is None:
    raise FileNotFoundError(f"--saved_model {saved_model}: the SavedModel needs the "
                            f"SentencePiece model, and {source} has no "
                            f"{model_directory.SPIECE_FILE}; pass --spiece_model_file")
  report = {
      "source": os.path.abspath(source), "source_kind": weights.kind,
      "source_file": os.path.abspath(weights.path),
      "output_kind": head.kind if head else "pretrained",
      "variables": len(weights.arrays),
      "skipped_task_head_variables": list(weights.skipped), "notes": list(weights.notes),
      "absent": {}, "spiece_model": spiece is not None,
      "tokenizer": {k: text[k] for k in ("uncased", "keep_accents", "from")},
  }
  if architecture:
    report["architecture"] = architecture
  if head is None:
    model, write = _convert_pretrained(weights, report, text)
  else:
    model, write = _convert_task(weights, head, options, report, text)
    report["notes"].extend(head_notes)
    if spiece is None:
      where = ("the original's model_dir has none" if weights.kind == "released" else
               f"{source} has none")
      report["notes"].append(f"no spiece.model ({where}): pass --spiece_model_file, or give "
                             f"one to the export")
  report["parameters"] = int(model.count_params())
  if weights.kind == "huggingface":
    report["parity"] = hf_parity.measure_parity(source, architecture, report["output_kind"],
                                                model, model.config,
                                                head.top_k if head else 0)
  output = os.path.abspath(output)
  os.makedirs(os.path.dirname(output), exist_ok=True)
  paths.remove_stale_partials(output)           # a killed conversion's
  partial = paths.partial_path(output)
  export_partial = None
  os.mkdir(partial)                 # a fresh name: never anything of the user's
  try:
    write(partial, spiece)
    if weights.kind != "huggingface":
      report["parity"] = _weight_parity(
          model, head, weights, os.path.join(partial, model_directory.CHECKPOINT_PREFIX))
    if report["parity"].get("warning"):
      report["notes"].append(report["parity"]["warning"])
    _write_card(partial, report, weights, model, architecture)   # read by the export
    if saved_model is not None:
      saved_model = os.path.abspath(saved_model)
      os.makedirs(os.path.dirname(saved_model), exist_ok=True)
      paths.remove_stale_partials(saved_model)
      export_partial = paths.partial_path(saved_model)
      _export(report["output_kind"], partial, export_partial, text, options.max_seq_length)
      report["saved_model"] = os.path.abspath(saved_model)
      export_parity = _card_parity(export_partial)
      if export_parity:
        report["saved_model_parity"] = export_parity
      _write_card(partial, report, weights, model, architecture)
      shutil.copyfile(os.path.join(partial, model_card.CARD_FILE),
                      os.path.join(export_partial, model_card.CARD_FILE))
    paths.write_json(os.path.join(partial, REPORT_FILE), report)
    if export_partial is None:
      paths.replace_directory(partial, output)
    else:
      _publish_both(partial, output, export_partial, saved_model)
  except BaseException:
    _remove_temporary(partial)
    if export_partial is not None:
      _remove_temporary(export_partial)
    raise
  for name in report["skipped_task_head_variables"]:
    logging.warning("left out task-head variable %s (not part of the %s output)", name,
                    report["output_kind"])
  for name, what in report["absent"].items():
    logging.info("%s: %s", name, what)
  logging.info("converted %s (%s, %d variables, %d parameters) to %s (%s); parity: %s",
               source, weights.kind, report["variables"], report["parameters"], output,
               report["output_kind"], report["parity"]["text"])
  return report
