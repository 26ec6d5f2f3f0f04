"""Import released TF1 checkpoints and HuggingFace XLNet weights.

  python -m xlnet_tf.convert --source SRC --output OUT

SRC is either a released directory (xlnet_config.json + xlnet_model.ckpt.*, optional
spiece.model) or a HuggingFace XLNet directory (config.json with model_type "xlnet" +
model.safetensors, a sharded safetensors index, or pytorch_model.bin). OUT receives
xlnet_config.json, the TF2 checkpoint model.ckpt, spiece.model if SRC has one, and
conversion.json (what was read and what was left out); `xlnet_tf.load_pretrained(OUT)`
loads it.
"""

import json
import os
import shutil

from absl import logging

from xlnet_tf import pretrained
from xlnet_tf import released_names as names
from xlnet_tf.convert import huggingface
from xlnet_tf.convert import released
from xlnet_tf.convert.source import SourceWeights
from xlnet_tf.models.xlnet_pretrainer import build_pretrainer


def detect_source(source: str) -> str:
  """"released" or "huggingface".

  Raises:
    FileNotFoundError / ValueError: naming SRC and saying what was expected.
  """
  if not os.path.isdir(source):
    raise FileNotFoundError(f"--source {source}: not a directory")
  if released.is_released_dir(source):
    return "released"
  if huggingface.is_hf_dir(source):
    return "huggingface"
  found = sorted(os.listdir(source))[:20]
  raise ValueError(
      f"--source {source}: not an XLNet checkpoint directory. Expected either the released "
      f"layout ({released.CONFIG_FILE} + {released.CHECKPOINT_PREFIX}.index/.data-*) or a "
      f"HuggingFace XLNet directory ({huggingface.CONFIG_FILE} with model_type 'xlnet' + "
      f"one of {list(huggingface.WEIGHT_FILES)}); found {found}")


def read_source(source: str) -> SourceWeights:
  kind = detect_source(source)
  return released.read_released(source) if kind == "released" else huggingface.read_hf(source)


def convert(source: str, output: str, overwrite: bool = False) -> dict:
  """Converts SRC into our layout in `output`, atomically. Returns the report it writes."""
  if os.path.exists(output) and not overwrite:
    raise FileExistsError(f"--output {output} exists; pass --overwrite to replace it")
  weights = read_source(source)
  model = build_pretrainer(weights.config)
  names.assign_released(model, weights.arrays, weights.path)

  spiece = os.path.join(source, pretrained.SPIECE_FILE)
  report = {
      "source": os.path.abspath(source), "source_kind": weights.kind,
      "source_file": os.path.abspath(weights.path),
      "variables": len(weights.arrays), "parameters": int(model.count_params()),
      "skipped_task_head_variables": weights.skipped, "notes": weights.notes,
      "spiece_model": os.path.exists(spiece),
  }
  partial = f"{output.rstrip(os.sep)}.partial-{os.getpid()}"
  shutil.rmtree(partial, ignore_errors=True)
  pretrained.save_pretrained(model, partial, spiece if os.path.exists(spiece) else None)
  with open(os.path.join(partial, "conversion.json"), "w", encoding="utf-8") as f:
    json.dump(report, f, indent=2)
  if os.path.exists(output):
    shutil.rmtree(output)
  os.replace(partial, output)
  for name in weights.skipped:
    logging.warning("left out task-head variable %s (loaded by the task models)", name)
  logging.info("converted %s (%s, %d variables, %d parameters) to %s", source, weights.kind,
               report["variables"], report["parameters"], output)
  return report

