"""The pretraining record format, defined once for the writer (data_prep) and the reader.

A record is one row of one batch slot at one step, in compact form (O(seq_len)):

  input_ids         int [T]   [reuse part] [A] <sep> [B] <sep> <cls>
  segment_ids       int [T]   the pretraining layout's segment ids (`layouts`)
  perm_rank         int [T]   the sampled factorization order: each position's rank within
                              its half (reuse half / new half), see data_prep.sampling
  target_positions  int [P]   predicted positions in increasing order, -1 padding
                              (fewer than P when a span covered <sep>/<cls>)
  b_is_random       int []    1 if B is a random span, 0 if it continues A
  stream_index      int []    the batch slot (stream) the row belongs to
  stream_step       int []    the row's step in its stream (0 = the stream's first row)

Records are written step-major: the bsz_per_host rows of step 0, then of step 1, ...
Consecutive steps of a stream overlap: the reuse part of step t + 1 is the reuse_len
tokens that follow step t's reuse part (starting with step t's segment A).

This table is `feature_shapes` (every feature an int64 list, `DTYPE`): `serialize_row`, the writer's
encoding, refuses a row with other features or shapes, and the reader's parsing spec
(`xlnet_tf.data.pretrain_reader.feature_spec`) is made from it. The manifest
(`manifest.json`, one per preprocessing task) records every setting, the
SentencePiece model's checksum, the shards and their counts, sizes and CRC-32C checksums
(`check_shards` compares the sizes, cheaply; `diagnose_shards` and
`python -m data_prep.verify_records` read every byte). Manifests written before sizes
and checksums were recorded still load; those checks are skipped for them.
"""

import hashlib
import json
import os
from typing import Any, Dict, List, Mapping, Optional, Tuple

import numpy as np

from xlnet_tf.data import storage
from xlnet_tf.data import tokenization
from xlnet_tf.data.tfrecord_writer import int64_example
from xlnet_tf.data.tfrecord_writer import scan_tfrecord

FORMAT = "xlnet_tf.pretraining.v1"
MANIFEST_NAME = "manifest.json"

# Settings every reader and trainer relies on.
REQUIRED_SETTINGS = ("seq_len", "reuse_len", "num_predict", "bsz_per_host",
                     "num_core_per_host", "bi_data", "perm_size")

# The type of every manifest field a reader relies on (checked when a manifest is read):
# the settings above, the SentencePiece model, each shard's entry (its optional fields:
# manifests written before sizes and checksums were recorded lack them).
SETTING_TYPES = {**{name: int for name in REQUIRED_SETTINGS}, "bi_data": bool}
SPIECE_TYPES = {"path": str, "sha256": str, "vocab_size": int}
SHARD_TYPES = {"file": str, "chunk": int, "pass": int}
OPTIONAL_SHARD_TYPES = {"steps": int, "examples": int, "targets": int, "b_is_random": int,
                        "size": int, "crc32c": str}
_TYPE_NAMES = {int: "an integer", bool: "true or false", str: "a string",
               dict: "an object {...}", list: "a list [...]"}


DTYPE = "int64"      # of every feature: `serialize_row` writes int64 lists only


def feature_shapes(seq_len: int, num_predict: int) -> Dict[str, Tuple[int, ...]]:
  """The record schema: each feature's shape (the table above, in its order; all DTYPE)."""
  return {"input_ids": (seq_len,), "segment_ids": (seq_len,), "perm_rank": (seq_len,),
          "target_positions": (num_predict,),
          "b_is_random": (), "stream_index": (), "stream_step": ()}


FEATURES = tuple(feature_shapes(0, 0))


def serialize_row(row: Mapping[str, Any], shapes: Mapping[str, Tuple[int, ...]]) -> bytes:
  """A row (dict of the features above, numpy or ints) as a serialized tf.train.Example
  (map in key order: the same bytes in every process).

  Args:
    row: the features of one record.
    shapes: `feature_shapes(seq_len, num_predict)` of the records being written.
  Raises:
    ValueError: the row's features or their shapes are not the schema's.
  """
  if row.keys() != shapes.keys():
    raise ValueError(f"a pretraining row has the features {sorted(row)}, the record schema "
                     f"{sorted(shapes)}")
  for name, shape in shapes.items():
    if np.shape(row[name]) != shape:
      raise ValueError(f"pretraining row feature {name}: shape {np.shape(row[name])}, the "
                       f"record schema {shape}")
  return int64_example(row)


# ---- manifests -------------------------------------------------------------------------------

def manifest_name(task_index: int, num_tasks: int) -> str:
  """`manifest.json` for a single task, else one file per task."""
  if num_tasks == 1:
    return MANIFEST_NAME
  return f"manifest.task-{task_index:05d}-of-{num_tasks:05d}.json"


def load_manifest(path: str) -> Dict[str, Any]:
  """Reads the manifest(s) of a record directory and checks they describe one data set.

  Args:
    path: a record directory (holding `manifest.json`, or one manifest per task) or the
      path of one manifest file.
  Returns:
    The manifest, with the shards of every task merged under "shards" (each with an
    absolute "path") and "counts" summed; "manifest_files" lists the files read.
  Raises:
    FileNotFoundError / ValueError: naming the path and what was expected; ValueError
      also when a task of a --num_tasks run has no manifest, a manifest lists no shards,
      or a field is missing or of the wrong type (`_check_fields`).
  """
  if storage.isdir(path):
    directory = path
    files = storage.glob(os.path.join(path, "manifest*.json"))
    if not files:
      raise FileNotFoundError(
          f"{path}: no {MANIFEST_NAME} (or manifest.task-*.json); is this a directory written "
          f"by `python -m data_prep.create_pretraining_data`? Its manifest is written last, "
          f"when every shard is complete")
  elif storage.exists(path):
    directory, files = os.path.dirname(path), [path]
  else:
    raise FileNotFoundError(f"{path}: no such record directory or manifest file")

  manifests = [_read_manifest(f) for f in files]
  first = manifests[0]
  num_tasks = first.get("num_tasks", 1)
  for other, name in zip(manifests[1:], files[1:]):
    if other["settings"] != first["settings"] or other["spiece"] != first["spiece"]:
      raise ValueError(f"{name}: settings or SentencePiece model differ from {files[0]}; "
                       f"the manifests of one record directory must describe one run")
  tasks = sorted(m.get("task_index", 0) for m in manifests)
  if tasks != list(range(num_tasks)):
    missing = [manifest_name(t, num_tasks) for t in range(num_tasks) if t not in tasks]
    raise ValueError(
        f"{directory or '.'}: manifests of tasks {tasks} found, expected all {num_tasks} "
        f"tasks (0..{num_tasks - 1})"
        + (f"; missing {', '.join(missing)}" if missing else "")
        + ": a task has not finished (or was not run), and its shards would be left out. "
          f"Run create_pretraining_data for every --task_index of --num_tasks {num_tasks} "
          f"into the directory")

  merged = dict(first)
  merged["shards"] = []
  merged["counts"] = {}
  for manifest in manifests:
    for shard in manifest["shards"]:
      merged["shards"].append({**shard, "path": os.path.join(directory, shard["file"])})
    for key, value in manifest["counts"].items():
      merged["counts"][key] = merged["counts"].get(key, 0) + value
  merged["shards"].sort(key=lambda s: (s["pass"], s["chunk"]))
  merged["directory"] = directory
  merged["manifest_files"] = files
  return merged


def _read_manifest(path: str) -> Dict[str, Any]:
  with storage.open_file(path, "r") as f:
    try:
      manifest = json.loads(f.read())
    except json.JSONDecodeError as e:
      raise ValueError(f"{path}: not valid JSON ({e})") from None
  if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
    raise ValueError(f"{path}: not a pretraining manifest (expected \"format\": "
                     f"\"{FORMAT}\")")
  _check_fields(path, manifest)
  if not manifest["shards"]:
    raise ValueError(f"{path}: lists no shards (\"shards\": []); create_pretraining_data "
                     f"writes a manifest only with its shards, so it was edited or damaged: "
                     f"recreate the records")
  return manifest


_MISSING = object()


def _check_fields(path: str, manifest: Dict[str, Any]) -> None:
  """Raises ValueError naming the manifest, the first field that is missing or of the
  wrong type, and the type expected."""
  def check(value: Any, field: str, expected: type, required: bool = True) -> None:
    if value is _MISSING:
      if required:
        raise ValueError(f"{path}: field {field} is missing (expected "
                         f"{_TYPE_NAMES[expected]}); recreate the records")
    elif not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
      raise ValueError(f"{path}: field {field} is {json.dumps(value)}, expected "
                       f"{_TYPE_NAMES[expected]}")

  for section, expected in (("settings", dict), ("spiece", dict), ("shards", list),
                            ("counts", dict)):
    check(manifest.get(section, _MISSING), section, expected)
  for name, expected in SETTING_TYPES.items():
    check(manifest["settings"].get(name, _MISSING), f"settings.{name}", expected)
  for name, expected in SPIECE_TYPES.items():
    check(manifest["spiece"].get(name, _MISSING), f"spiece.{name}", expected)
  for name in ("task_index", "num_tasks"):
    check(manifest.get(name, _MISSING), name, int, required=False)
  for name, value in manifest["counts"].items():
    check(value, f"counts.{name}", int)
  for i, shard in enumerate(manifest["shards"]):
    check(shard, f"shards[{i}]", dict)
    for name, expected in SHARD_TYPES.items():
      check(shard.get(name, _MISSING), f"shards[{i}].{name}", expected)
    for name, expected in OPTIONAL_SHARD_TYPES.items():
      check(shard.get(name, _MISSING), f"shards[{i}].{name}", expected, required=False)


def check_shards_exist(paths: List[str], source: str) -> None:
  """Raises FileNotFoundError naming `source` and a missing shard, if any is missing."""
  missing = [p for p in paths if not storage.exists(p)]
  if missing:
    raise FileNotFoundError(f"{source}: {len(missing)} shard(s) listed in the manifest are "
                            f"missing, e.g. {missing[0]}")


def check_spiece(manifest: Mapping[str, Any], source: str) -> None:
  """Raises ValueError if the SentencePiece model a loaded manifest names is not the one
  the records were made with (its sha256 differs: it was replaced, e.g. retrained in place,
  afterwards), naming both files. A model no longer there is not checked."""
  spiece = manifest["spiece"]
  path = spiece["path"]
  if storage.is_url(path) or not os.path.isfile(path):
    return
  actual = tokenization.spiece_sha256(path)
  if actual != spiece["sha256"]:
    raise ValueError(
        f"{source}: the SentencePiece model {path} is not the one the records were made "
        f"with: its sha256 is {actual}, {manifest['manifest_files'][0]} records "
        f"{spiece['sha256']} (the model was replaced after the records were made, e.g. "
        f"retrained into the same --model_prefix). Restore that model, or recreate the "
        f"records with this one")


# ---- checking shards against the manifest ---------------------------------------------------

def _verify_hint(shard: Mapping[str, Any]) -> str:
  directory = os.path.dirname(shard["path"])
  return (f"Recreate the records (`python -m data_prep.verify_records {directory}` checks "
          f"every shard's checksum)")


def check_shards(manifest: Mapping[str, Any], source: str) -> None:
  """Checks that every shard of a loaded manifest exists with the size it records: cheap
  (one stat per shard), and catches missing and truncated shards before any training.

  Manifests written before sizes were recorded are checked for existence only.

  Args:
    manifest: from `load_manifest` (shards with their "path").
    source: what to name in the message, e.g. "--train_data records/".
  Raises:
    FileNotFoundError: a shard is missing (naming it and how many are).
    ValueError: a shard's size differs from the manifest's (naming it, both sizes).
  """
  shards = list(manifest["shards"])
  check_shards_exist([shard["path"] for shard in shards], source)
  wrong = []
  for shard in shards:
    expected = shard.get("size")
    if expected is not None:
      actual = storage.size(shard["path"])
      if actual != expected:
        wrong.append((shard, actual, expected))
  if wrong:
    shard, actual, expected = wrong[0]
    raise ValueError(f"{source}: {len(wrong)} shard(s) differ in size from the manifest, e.g. "
                     f"{shard['path']}: {_size_problem(actual, expected)}. "
                     f"{_verify_hint(shard)}")


def _size_problem(actual: int, expected: int) -> str:
  kind = "truncated" if actual < expected else "longer than written"
  return f"{actual} bytes, the manifest records {expected} ({kind})"


Problem = Tuple[str, str, Optional[int]]


def diagnose_shard(shard: Mapping[str, Any]) -> Optional[Problem]:
  """Reads one shard (an entry of a loaded manifest's "shards") whole and checks it
  against its entry: size, CRC-32C (when recorded), the TFRecord framing of every record,
  and the number of records.

  Returns:
    None if the shard is sound, else (path, what is wrong, byte offset of the first bad or
    truncated record or None when every record is well framed).
  """
  path = shard["path"]
  if not storage.exists(path):
    return path, "missing", None
  try:
    scan = scan_tfrecord(path)
  except OSError as e:
    return path, f"cannot be read ({e})", None
  problems = []
  if shard.get("size") is not None and scan.size != shard["size"]:
    problems.append(_size_problem(scan.size, shard["size"]))
  elif shard.get("crc32c") is not None and scan.crc32c != shard["crc32c"]:
    problems.append(f"CRC-32C {scan.crc32c}, the manifest records {shard['crc32c']} "
                    f"(the file changed after it was written)")
  if scan.problem:
    problems.append(f"{scan.problem}, after {scan.records} good record(s)")
  elif shard.get("examples") is not None and scan.records != shard["examples"]:
    problems.append(f"{scan.records} records, the manifest records {shard['examples']}")
  if not problems:
    return None
  return path, "; ".join(problems), scan.bad_offset


def diagnose_shards(manifest: Mapping[str, Any]) -> List[Problem]:
  """`diagnose_shard` for every shard of a loaded manifest, in order (reads every byte:
  for a read error, or `data_prep.verify_records`, which runs it in parallel). Returns
  the problems, [] if every shard is sound."""
  problems = (diagnose_shard(shard) for shard in manifest["shards"])
  return [problem for problem in problems if problem is not None]


# ---- the records of a run ------------------------------------------------------------------

class CorruptRecordsError(ValueError):
  """A record shard cannot be read (truncated or corrupt)."""


def data_settings(manifest: Dict[str, Any]) -> Dict[str, Any]:
  """What identifies the records of a run (not where they are): their settings, the
  SentencePiece model and the shards (names, sizes, examples), hashed."""
  shards = [{k: shard.get(k) for k in ("file", "examples", "size", "crc32c")}
            for shard in manifest["shards"]]
  digest = hashlib.sha256(json.dumps(shards, sort_keys=True).encode()).hexdigest()[:16]
  return {"settings": manifest["settings"], "spiece_sha256": manifest["spiece"]["sha256"],
          "examples": manifest["counts"].get("examples"), "shards_sha256": digest}


def check_data(data_path: str) -> Dict[str, Any]:
  """The manifest, after checking every shard it lists is there with the size it records
  (cheap; catches truncation) and that its SentencePiece model is unchanged, before any
  model work."""
  manifest = load_manifest(data_path)
  if not manifest["shards"] or manifest["counts"].get("examples", 0) == 0:
    raise ValueError(f"--train_data {data_path}: the manifest lists no examples")
  check_shards(manifest, f"--train_data {data_path}")
  check_spiece(manifest, f"--train_data {data_path}")
  return manifest


def check_vocabulary(n_token: int, n_token_source: str, manifest: Dict[str, Any],
                     source: str) -> None:
  """Raises ValueError (naming both numbers and where they come from) when the records'
  SentencePiece vocabulary has ids the model has no embedding for (n_token smaller)."""
  vocab = manifest["spiece"]["vocab_size"]
  if n_token < vocab:
    raise ValueError(f"{source}: the records' vocabulary has {vocab} pieces "
                     f"({manifest['spiece']['path']}), more than the model's n_token="
                     f"{n_token} ({n_token_source}); ids >= {n_token} have no embedding")


def corrupt_data_error(manifest, data_path: str, error) -> Exception:
  """tf.data's DataLossError names no file: find the bad shard(s) and record offsets."""
  problems = diagnose_shards(manifest)
  found = "; ".join(f"{path}: {problem}" + (f" (record at byte {offset})"
                                            if offset is not None else "")
                    for path, problem, offset in problems[:5])
  return CorruptRecordsError(
      f"--train_data {data_path}: reading the records failed ({error.message.strip()}). "
      + (f"Bad shard(s): {found}" if problems else "No shard differs from its manifest entry")
      + ". Recreate the records (or run `python -m data_prep.verify_records`)")
