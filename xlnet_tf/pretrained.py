"""Our saved-model directory: `xlnet_config.json` + TF2 checkpoint `model.ckpt`.

Layout (written by `save_pretrained`, by `python -m xlnet_tf.convert`, and by pretraining):
  xlnet_config.json   the architecture keys of the released file plus the run options
  model.ckpt.index / model.ckpt.data-*   tf.train.Checkpoint(model=XLNetPretrainer)
  spiece.model        the SentencePiece model, when known
  text.json           {"uncased": bool, "keep_accents": bool}, when not both False
                      (`model_directory.read_text_settings`)

Example:
  >>> model = load_directory("converted/xlnet_base", mem_len=384, reuse_len=256)

A preset's name ("xlnet_base_cased") becomes a directory in `xlnet_tf.hub`
(`xlnet_tf.load_pretrained` takes either, and reads the directory with `load_directory`).
"""

import collections
import os
from typing import Dict, Optional

import tensorflow as tf

from xlnet_tf import model_directory
from xlnet_tf import released_names
from xlnet_tf.configs import RUN_OPTION_KEYS
from xlnet_tf.configs import XLNetConfig
from xlnet_tf.models.xlnet_pretrainer import XLNetPretrainer
from xlnet_tf.models.xlnet_pretrainer import build_pretrainer



def save_pretrained(model: XLNetPretrainer, directory: str, spiece_model: str = None,
                    text: Optional[Dict[str, bool]] = None) -> None:
  """Writes the pretrained model directory (`model_directory.write`: config, weights, a
  copy of `spiece_model`, the text normalisation `text` = {"uncased": bool,
  "keep_accents": bool} in text.json when not both False; no spec file), checked finite,
  whole or not at all."""
  model_directory.write(model, directory, spiece_model=spiece_model, text=text)


def load_directory(directory: str, **run_options) -> XLNetPretrainer:
  """The pretraining model (encoder + tied LM head) with the weights in `directory`.

  Args:
    directory: written by `save_pretrained`, pretraining or `python -m xlnet_tf.convert`
      (a preset's name: `xlnet_tf.hub.load_pretrained`).
    **run_options: overrides of mem_len, reuse_len, bi_data, clamp_len, same_length,
      attn_type, dropout, dropatt, recompute.
  Raises:
    ValueError: an override that is not a run option; a checkpoint that does not match the
      config (naming the variable).
    FileNotFoundError: naming the missing file.
    model_directory.NonFiniteError: a weight holds NaN or an infinity (naming the
      directory and the weight).
  """
  unknown = sorted(set(run_options) - set(RUN_OPTION_KEYS))
  if unknown:
    raise ValueError(f"load_pretrained: {unknown} cannot be overridden; the run options are "
                     f"{list(RUN_OPTION_KEYS)} (the architecture comes from "
                     f"{model_directory.CONFIG_FILE})")
  config = XLNetConfig.from_json_file(os.path.join(directory, model_directory.CONFIG_FILE))
  config = config.replace(**run_options)
  model = build_pretrainer(config)
  restore_weights(model, os.path.join(directory, model_directory.CHECKPOINT_PREFIX))
  non_finite = set(model_directory.non_finite_variables(model.variables))
  bad = [name for name, variable in released_names.released_variables(model).items()
         if variable.name in non_finite] or sorted(non_finite)
  if bad:
    raise model_directory.NonFiniteError(
        f"{directory}: {len(bad)} weight(s) hold NaN or infinite values (e.g. "
        f"{', '.join(bad[:3])}); the model cannot be used")
  return model


def restore_weights(model: XLNetPretrainer, prefix: str) -> None:
  """Restores every weight of `model` from the checkpoint `prefix`, or raises.

  The checkpoint is checked against the model first, so a mismatch is reported by the
  variable's released name (e.g. model/transformer/layer_0/ff/layer_1/kernel) and nothing
  is half-restored.
  """
  if not os.path.exists(prefix + ".index"):
    raise FileNotFoundError(f"checkpoint not found: {prefix}.index")
  root = tf.train.Checkpoint(model=model)
  stored = dict(tf.train.list_variables(prefix))
  expected = checkpoint_keys(root)
  labels = {id(v): name for name, v in released_names.released_variables(model).items()}
  for key, variable in expected.items():
    label = labels.get(id(variable), key)
    if key not in stored:
      raise ValueError(f"{prefix}: no value for {label}")
    if list(stored[key]) != variable.shape.as_list():
      raise ValueError(f"{prefix}: {label} has shape {list(stored[key])} in the checkpoint, "
                       f"the model built from {model_directory.CONFIG_FILE} needs "
                       f"{variable.shape.as_list()}")
  unexpected = sorted(key for key in stored
                      if key not in expected and key.startswith("model/"))
  if unexpected:
    raise ValueError(f"{prefix}: variables the model does not have: {unexpected[:5]}")
  root.read(prefix).assert_existing_objects_matched()


def checkpoint_keys(root) -> Dict[str, tf.Variable]:
  """Checkpoint key -> variable for every variable reachable from `root`.

  Keys follow tf.train.Checkpoint's naming: the breadth-first path of attribute names
  ('/' escaped as '.S', '.' as '..') + '/.ATTRIBUTES/VARIABLE_VALUE'.
  """
  view = tf.train.TrackableView(root)
  keys, seen = {}, {id(root)}
  queue = collections.deque([(root, "")])
  while queue:
    node, path = queue.popleft()
    for name, child in view.children(node).items():
      if id(child) in seen:
        continue
      seen.add(id(child))
      escaped = name.replace(".", "..").replace("/", ".S")
      child_path = f"{path}/{escaped}" if path else escaped
      if isinstance(child, tf.Variable):
        keys[f"{child_path}/.ATTRIBUTES/VARIABLE_VALUE"] = child
      else:
        queue.append((child, child_path))
  return keys


def restore_encoder(encoder, directory_or_prefix: str) -> None:
  """Loads the encoder weights of a pretrained model (our layout) into `encoder`.

  Args:
    encoder: a built `XLNetEncoder` (e.g. a classifier's), whose architecture must match.
    directory_or_prefix: a directory from `save_pretrained` / `xlnet_tf.convert` /
      pretraining's export, or a `model.ckpt` prefix.
  Raises:
    ValueError naming the variable (by its released name) whose shape differs, or that is
    missing; FileNotFoundError naming the file.
  """
  prefix = directory_or_prefix
  if tf.io.gfile.isdir(prefix):
    prefix = os.path.join(prefix, model_directory.CHECKPOINT_PREFIX)
  wrapper = XLNetPretrainer(encoder)              # the checkpoint holds encoder + LM head
  wrapper.build()
  restore_weights(wrapper, prefix)
