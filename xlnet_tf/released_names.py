"""The released checkpoint's variable names, mapped to our variables, and strict assignment.

Both importers (released TF1 checkpoints and HuggingFace directories) produce arrays keyed
by the released names; `assign_released` is the one place they enter a model. Error
messages elsewhere name variables by these names too.
"""

import re
from typing import Dict, Mapping

import numpy as np
import tensorflow as tf

TRANSFORMER = "model/transformer"
LM_BIAS = "model/lm_loss/bias"

# Variables of a released or fine-tuned TF1 checkpoint that are not model weights.
_NOT_WEIGHTS = re.compile(r"(^global_step$|^beta[12]_power$|/adam_[mv]$|/Adam(_1)?$)")
# Task-head variables of fine-tuned TF1 checkpoints (loaded by the task models, not here).
_TASK_HEADS = re.compile(
    r"^model/(sequnece_summary|classification_[^/]+|regression_[^/]+)/"
    r"|^(start_logits|end_logits|answer_class|logits)/")


def is_optimizer_or_step(name: str) -> bool:
  return bool(_NOT_WEIGHTS.search(name))


def is_task_head(name: str) -> bool:
  return bool(_TASK_HEADS.search(name))


def released_variables(model) -> Dict[str, tf.Variable]:
  """Released name -> variable of an `XLNetPretrainer` (built)."""
  return {**encoder_variables(model.encoder), LM_BIAS: model.lm_head.bias}


def encoder_variables(encoder) -> Dict[str, tf.Variable]:
  """Released name -> variable of an `XLNetEncoder` (built)."""
  names = {
      f"{TRANSFORMER}/word_embedding/lookup_table": encoder.word_embedding,
      f"{TRANSFORMER}/mask_emb/mask_emb": encoder.mask_emb,
      f"{TRANSFORMER}/r_w_bias": encoder.r_w_bias,
      f"{TRANSFORMER}/r_r_bias": encoder.r_r_bias,
      f"{TRANSFORMER}/r_s_bias": encoder.r_s_bias,
      f"{TRANSFORMER}/seg_embed": encoder.seg_embed,
  }
  for i, block in enumerate(encoder.blocks):
    prefix = f"{TRANSFORMER}/layer_{i}"
    attention, ff = block.attention, block.feed_forward
    for proj in "qkvro":
      names[f"{prefix}/rel_attn/{proj}/kernel"] = getattr(attention, f"{proj}_kernel")
    names[f"{prefix}/rel_attn/LayerNorm/gamma"] = attention.layer_norm.gamma
    names[f"{prefix}/rel_attn/LayerNorm/beta"] = attention.layer_norm.beta
    names[f"{prefix}/ff/layer_1/kernel"] = ff.layer_1.kernel
    names[f"{prefix}/ff/layer_1/bias"] = ff.layer_1.bias
    names[f"{prefix}/ff/layer_2/kernel"] = ff.layer_2.kernel
    names[f"{prefix}/ff/layer_2/bias"] = ff.layer_2.bias
    names[f"{prefix}/ff/LayerNorm/gamma"] = ff.layer_norm.gamma
    names[f"{prefix}/ff/LayerNorm/beta"] = ff.layer_norm.beta
  return names


def assign_released(model, arrays: Mapping[str, np.ndarray], source: str) -> None:
  """Assigns every weight of `model` from `arrays` (released names), or nothing.

  Raises:
    ValueError: naming `source` and the variables, if any weight is missing, any array is
      unknown, or any shape differs. Nothing is assigned in that case.
  """
  variables = released_variables(model)
  missing = sorted(set(variables) - set(arrays))
  unknown = sorted(set(arrays) - set(variables))
  if missing:
    raise ValueError(f"{source}: missing variable(s) {missing}")
  if unknown:
    raise ValueError(f"{source}: unknown variable(s) {unknown}; expected the released names "
                     f"of a model with the given config")
  for name, variable in variables.items():
    if tuple(arrays[name].shape) != tuple(variable.shape):
      raise ValueError(f"{source}: variable {name} has shape {list(arrays[name].shape)}, "
                       f"the config needs {variable.shape.as_list()}")
  for name, variable in variables.items():
    array = np.asarray(arrays[name])
    if not np.issubdtype(array.dtype, np.floating):
      raise ValueError(f"{source}: variable {name} has dtype {array.dtype}, expected float")
    variable.assign(array.astype(np.float32))


def load_released_checkpoint(prefix: str, targets: Mapping[str, tf.Variable],
                             hint: str = "") -> None:
  """Assigns `targets` (released name -> variable) from the TF1 checkpoint `prefix`, after
  checking every name and shape. Raises ValueError naming the checkpoint and the variable
  (with `hint` and the checkpoint's non-encoder names for a missing one)."""
  reader = tf.train.load_checkpoint(prefix)
  shapes = reader.get_variable_to_shape_map()
  for name, variable in targets.items():
    if name not in shapes:
      raise ValueError(f"{prefix}: no variable {name} ({hint}the checkpoint has "
                       f"{sorted(k for k in shapes if 'transformer' not in k)})")
    if list(shapes[name]) != variable.shape.as_list():
      raise ValueError(f"{prefix}: {name} has shape {list(shapes[name])}, the model needs "
                       f"{variable.shape.as_list()}")
  for name, variable in targets.items():
    variable.assign(reader.get_tensor(name))
