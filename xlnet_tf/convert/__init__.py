"""Import released TF1 checkpoints and HuggingFace XLNet weights.

  python -m xlnet_tf.convert --source SRC --output OUT

SRC is either a released directory (xlnet_config.json + xlnet_model.ckpt.*, optional
spiece.model) or a HuggingFace XLNet directory (config.json with model_type "xlnet" +
model.safetensors, a sharded safetensors index, or pytorch_model.bin). OUT receives
xlnet_config.json, the TF2 checkpoint model.ckpt, spiece.model if SRC has one, and
conversion.json (what was read and what was left out); `xlnet_tf.load_pretrained(OUT)`
loads it.

OUT is checked before anything is read: it must not be, contain or lie inside SRC (symbolic
links resolved), and it must be a writable directory location. An existing OUT is replaced
only with `overwrite` and only if it is the output of a previous conversion (it has
conversion.json and nothing a conversion does not write); the new output is written
completely beside it first, and the old one is removed only after the new one took its name.
"""

import json
import os
import shutil
from typing import Iterator, Optional
import uuid

from absl import logging

from xlnet_tf import paths
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


REPORT_FILE = "conversion.json"


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
  return (name in (pretrained.CONFIG_FILE, pretrained.SPIECE_FILE, REPORT_FILE,
                   pretrained.CHECKPOINT_PREFIX + ".index") or
          name.startswith(pretrained.CHECKPOINT_PREFIX + ".data-"))


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


def _replace_directory(new: str, output: str) -> None:
  """Moves the complete directory `new` to `output`, replacing a previous `output`.

  The previous output is first renamed aside (same parent, so nothing is copied) and is
  deleted only once `new` has its name; if that rename fails, it gets its name back.
  """
  if not os.path.lexists(output):
    os.rename(new, output)
    return
  parent, base = os.path.split(os.path.abspath(output))
  old = os.path.join(parent, f".{base}.replaced-{uuid.uuid4().hex[:12]}")
  os.rename(output, old)
  try:
    os.rename(new, output)
  except BaseException:
    os.rename(old, output)
    raise
  shutil.rmtree(old, ignore_errors=True)


def read_source(source: str) -> SourceWeights:
  kind = detect_source(source)
  return released.read_released(source) if kind == "released" else huggingface.read_hf(source)


def convert(source: str, output: str, overwrite: bool = False) -> dict:
  """Converts SRC into our layout in `output`, atomically. Returns the report it writes.

  `output` is checked first (`check_locations`); with `overwrite`, a previous conversion
  output is replaced only once the new one is complete.
  """
  check_locations(source, output, overwrite)
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
  parent, base = os.path.split(os.path.abspath(output))
  os.makedirs(parent, exist_ok=True)
  partial = os.path.join(parent, f".{base}.partial-{uuid.uuid4().hex[:12]}")
  os.mkdir(partial)                 # a fresh name: never anything of the user's
  try:
    pretrained.save_pretrained(model, partial, spiece if os.path.exists(spiece) else None)
    with open(os.path.join(partial, REPORT_FILE), "w", encoding="utf-8") as f:
      json.dump(report, f, indent=2)
    _replace_directory(partial, output)
  except BaseException:
    shutil.rmtree(partial, ignore_errors=True)
    raise
  for name in weights.skipped:
    logging.warning("left out task-head variable %s (loaded by the task models)", name)
  logging.info("converted %s (%s, %d variables, %d parameters) to %s", source, weights.kind,
               report["variables"], report["parameters"], output)
  return report

