"""The model directory: the one on-disk form of every model we write and read (a
checkpoint folder; a SavedModel is an "export", see `xlnet_tf.serving`).

  xlnet_config.json        the architecture (released keys) and run options
  model.ckpt.index/.data-* tf.train.Checkpoint(model=<the model>)
  spiece.model             the SentencePiece model, when known
  text.json                the text normalisation of a pretrained model, when not the
                           default (cased, accents stripped): {"uncased": bool,
                           "keep_accents": bool}; a fine-tuned model records both in its
                           spec file instead. `read_text_settings` reads either.
  <spec file>              a fine-tuned model's head spec (none for a pretrained model):
                           the FILE of its kind's spec class (`task_kind`), e.g.
                           classifier.json of `ClassifierSpec`

Written by pretraining (`pretrained.save_pretrained`), `xlnet_tf.convert` and every
fine-tuning task through `write`: the weights are checked first (no NaN or infinite value is
ever written) and the directory appears whole (built under a temporary name, then renamed
over the old one). Read by `pretrained.load_directory`, the tasks and `serving/` through
`load`, which takes the spec class of the kind; this module knows no kind (it imports no
model).

  >>> save(model, "runs/sst2/final", ClassifierSpec("sst-2", ("0", "1")), "spiece.model")
  >>> model, spec = load("runs/sst2/final", ClassifierSpec)
"""

import json
import os
from typing import Any, Dict, List, Optional, Sequence

import numpy as np
import tensorflow as tf
import tf_keras

from xlnet_tf import paths
from xlnet_tf import task_kind
from xlnet_tf.configs import XLNetConfig

CONFIG_FILE = "xlnet_config.json"
CHECKPOINT_PREFIX = "model.ckpt"
SPIECE_FILE = "spiece.model"
TEXT_FILE = "text.json"
TEXT_KEYS = ("uncased", "keep_accents")


class NonFiniteError(FloatingPointError):
  """Training produced a NaN or infinite value (loss, gradient norm or variable)."""


@tf.function
def _finite_flags(variables):
  return tf.stack([tf.reduce_all(tf.math.is_finite(tf.cast(v, tf.float32)))
                   for v in variables])


def non_finite_variables(variables: Sequence[tf.Variable]) -> List[str]:
  """Names of the floating-point variables holding a NaN or an infinity."""
  floats = [v for v in variables if v.dtype.is_floating]
  if not floats:
    return []
  flags = _finite_flags(floats).numpy()
  return [v.name for v, ok in zip(floats, flags) if not ok]


def check_finite(model: tf_keras.Model, what: str) -> None:
  """Raises `NonFiniteError` (naming up to three weights) before a model with a NaN or
  infinite weight is written to `what`."""
  bad = non_finite_variables(model.variables)
  if bad:
    raise NonFiniteError(
        f"{what}: {len(bad)} weight(s) hold NaN or infinite values (e.g. "
        f"{', '.join(bad[:3])}); nothing was written")


def check_checkpoint(path: str, what: str) -> str:
  """The checkpoint prefix of `path` (a model directory or a model.ckpt prefix) once it is
  found and every floating-point value in it is finite; else ValueError naming `what` and
  the path (a SavedModel export said to be one), or `NonFiniteError` naming the variables.
  Returns the prefix."""
  prefix = os.path.join(path, CHECKPOINT_PREFIX) if tf.io.gfile.isdir(path) else path
  if not tf.io.gfile.exists(f"{prefix}.index"):
    if tf.io.gfile.exists(os.path.join(path, "saved_model.pb")):
      raise ValueError(f"{what} {path} is a SavedModel (an export), not a model directory; "
                       f"give the model directory it was exported from ({CONFIG_FILE}, "
                       f"{CHECKPOINT_PREFIX}.*)")
    raise ValueError(f"{what} {path}: no checkpoint {prefix}.index (expected a model "
                     f"directory or a {CHECKPOINT_PREFIX} prefix)")
  reader = tf.train.load_checkpoint(prefix)
  bad = sorted(name.replace("/.ATTRIBUTES/VARIABLE_VALUE", "")
               for name, dtype in reader.get_variable_to_dtype_map().items()
               if dtype.is_floating and not np.isfinite(reader.get_tensor(name)).all())
  if bad:
    raise NonFiniteError(f"{what} {prefix}: {len(bad)} weight(s) hold NaN or infinite values "
                         f"(e.g. {', '.join(bad[:3])}); no run can start from them, give "
                         f"another checkpoint")
  return prefix


# ---- writing and reading ---------------------------------------------------------------------

def write(model: tf_keras.Model, directory: str, spec_file: Optional[str] = None,
          spec_values: Optional[Dict[str, Any]] = None,
          spiece_model: Optional[str] = None,
          text: Optional[Dict[str, bool]] = None) -> str:
  """Writes `model` (with a `config`) as a model directory: config, weights, a copy of
  `spiece_model` (if given), `spec_file` holding `spec_values` (if given) and TEXT_FILE
  holding `text` ({"uncased": bool, "keep_accents": bool}; written only when given and
  not both False, the default a directory without it means). The weights are checked
  first; the directory is built under a temporary name and replaces an older one whole
  (`paths.atomic_output`). Returns `directory`."""
  if text is not None:
    text = _check_text_settings(text, "write: text")
  check_finite(model, directory)
  with paths.atomic_output(directory, replace=True) as partial:
    tf.io.gfile.makedirs(partial)
    paths.write_json(os.path.join(partial, CONFIG_FILE), model.config.to_dict())
    if spec_file:
      paths.write_json(os.path.join(partial, spec_file), spec_values or {})
    tf.train.Checkpoint(model=model).write(os.path.join(partial, CHECKPOINT_PREFIX))
    if spiece_model:
      tf.io.gfile.copy(spiece_model, os.path.join(partial, SPIECE_FILE), overwrite=True)
    if text is not None and any(text.values()):
      paths.write_json(os.path.join(partial, TEXT_FILE), text)
  return directory.rstrip("/")


def read_config(directory: str) -> XLNetConfig:
  path = os.path.join(directory, CONFIG_FILE)
  if not tf.io.gfile.exists(path):
    raise FileNotFoundError(f"{directory}: no {CONFIG_FILE}; expected a model directory "
                            f"(written by training, xlnet_tf.convert or save_pretrained)")
  return XLNetConfig.from_json_file(path)


def read_spec(directory: str, spec_file: str) -> Dict[str, Any]:
  """The task spec of a model directory ({} when it has no `spec_file`)."""
  path = os.path.join(directory, spec_file)
  if not tf.io.gfile.exists(path):
    return {}
  with tf.io.gfile.GFile(path) as f:
    return json.loads(f.read())


def _check_text_settings(values: Any, what: str) -> Dict[str, bool]:
  """`values` as {"uncased": bool, "keep_accents": bool}, or a ValueError naming `what`
  and the field."""
  if not isinstance(values, dict):
    raise ValueError(f"{what}: expected a JSON object {{\"uncased\": bool, "
                     f"\"keep_accents\": bool}}, got {type(values).__name__}")
  unknown = sorted(set(values) - set(TEXT_KEYS))
  if unknown:
    raise ValueError(f"{what}: unknown field(s) {unknown}; the fields are {list(TEXT_KEYS)}")
  for key in TEXT_KEYS:
    if key not in values:
      raise ValueError(f"{what}: missing field {key!r} (a boolean)")
    if not isinstance(values[key], bool):
      raise ValueError(f"{what}: field {key!r} must be a boolean, got {values[key]!r}")
  return {key: values[key] for key in TEXT_KEYS}


def text_settings_file(directory: str,
                       spec_files: Optional[Sequence[str]] = None) -> Optional[str]:
  """The file recording the text normalisation of a model directory (its spec file, else
  TEXT_FILE), or None when it records none (the default: cased, accents stripped)."""
  if spec_files is None:
    spec_files = task_kind.spec_files()
  for name in tuple(spec_files) + (TEXT_FILE,):
    path = os.path.join(directory, name)
    if tf.io.gfile.exists(path):
      return path
  return None


def read_text_settings(directory: str,
                       spec_files: Optional[Sequence[str]] = None) -> Dict[str, bool]:
  """The text normalisation of a model directory, {"uncased": bool, "keep_accents": bool}:
  a fine-tuned directory's spec file's (the registered kinds' spec files; a field it lacks
  is False), else TEXT_FILE's, else both False (cased, accents stripped, as released).
  `spec_files`: the spec files that may hold them (default: the registered kinds';
  () for a pretrained directory, which has none).

  Raises:
    ValueError: TEXT_FILE is not a JSON object of the two booleans, or a spec file's
      `uncased`/`keep_accents` is not a boolean (naming the file and the field).
  """
  path = text_settings_file(directory, spec_files)
  if path is None:
    return {"uncased": False, "keep_accents": False}
  if os.path.basename(path) == TEXT_FILE:
    with tf.io.gfile.GFile(path) as f:
      try:
        values = json.loads(f.read())
      except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not JSON ({e})") from None
    return _check_text_settings(values, path)
  values = read_spec(directory, os.path.basename(path))
  if not isinstance(values, dict):
    raise ValueError(f"{path}: expected a JSON object, got {type(values).__name__}")
  settings = {}
  for key in TEXT_KEYS:
    value = values.get(key, False)
    if not isinstance(value, bool):
      raise ValueError(f"{path}: field {key!r} must be a boolean, got {value!r}")
    settings[key] = value
  return settings


def load(directory: str, spec_class, **build_options):
  """(model, spec) of a fine-tuned model directory of the kind of `spec_class` (e.g.
  `ClassifierSpec`): the spec read from its FILE (`spec_class.from_values`), the model
  built by `spec.build_model(config, **build_options)`, then every weight of the model read
  from model.ckpt (a mismatch raises). A missing file raises FileNotFoundError naming it and
  what writes such a directory."""
  for name in (CONFIG_FILE, spec_class.FILE, CHECKPOINT_PREFIX + ".index"):
    if not tf.io.gfile.exists(os.path.join(directory, name)):
      raise FileNotFoundError(f"{directory}: no {name}; expected a directory written by "
                              f"{spec_class.WRITTEN_BY}")
  spec = spec_class.from_values(read_spec(directory, spec_class.FILE), source=directory)
  model = spec.build_model(read_config(directory), **build_options)
  status = tf.train.Checkpoint(model=model).read(os.path.join(directory, CHECKPOINT_PREFIX))
  status.assert_existing_objects_matched().expect_partial()
  return model, spec


def save(model: tf_keras.Model, directory: str, spec, spiece_model: Optional[str]) -> str:
  """`write` of a fine-tuned model with its spec (a spec of a `task_kind`, written to its
  class's FILE)."""
  if not hasattr(type(spec), "FILE"):
    raise TypeError(f"model_directory.save: the spec must be a task kind's spec (e.g. "
                    f"ClassifierSpec, SquadSpec(values)), got {type(spec).__name__}")
  return write(model, directory, type(spec).FILE, spec.to_values(), spiece_model)
