"""The released checkpoint's variable names, mapped to our variables, and strict assignment.

Both importers (released TF1 checkpoints and HuggingFace directories) produce arrays keyed
by the released names; `assign_released` (pretraining model) and `assign_by_name` (task
models, `xlnet_tf.convert.task_heads`) are where they enter a model. The encoder's names
are here; a task head's are its model's (e.g. `models.xlnet_classifier.SUMMARY_PROJECTION`,
`models.xlnet_squad.SQUAD_HEAD`) or its conversion's (`xlnet_tf.convert.heads`). Error
messages elsewhere name variables by these names.
"""

import re
from typing import Dict, List, Mapping, Sequence

import numpy as np
import tensorflow as tf

# The released archives' files (zihangdai/xlnet's README: xlnet_config.json, the TF1
# checkpoint xlnet_model.ckpt, spiece.model), under the archive's top-level directory.
RELEASED_CONFIG_FILE = "xlnet_config.json"
RELEASED_CHECKPOINT_PREFIX = "xlnet_model.ckpt"
RELEASED_SPIECE_FILE = "spiece.model"
RELEASED_FILES = (RELEASED_CONFIG_FILE,
                  f"{RELEASED_CHECKPOINT_PREFIX}.index",
                  f"{RELEASED_CHECKPOINT_PREFIX}.data-00000-of-00001",
                  f"{RELEASED_CHECKPOINT_PREFIX}.meta",
                  RELEASED_SPIECE_FILE)

TRANSFORMER = "model/transformer"
LM_BIAS = "model/lm_loss/bias"
MASK_EMB = f"{TRANSFORMER}/mask_emb/mask_emb"
# Built by the original only for pretraining (the query stream and the LM loss): its
# fine-tuning scripts (run_classifier, run_squad, run_race) save checkpoints without them.
PRETRAINING_ONLY = (MASK_EMB, LM_BIAS)

# Variables of a released or fine-tuned TF1 checkpoint that are not model weights.
_NOT_WEIGHTS = re.compile(r"(^global_step$|^beta[12]_power$|/adam_[mv]$|/Adam(_1)?$)")


def is_optimizer_or_step(name: str) -> bool:
  return bool(_NOT_WEIGHTS.search(name))


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
  """Assigns every weight of `model` (an `XLNetPretrainer`) from `arrays` (released
  names), or nothing.

  Raises:
    ValueError: naming `source` and the variables, if any weight is missing, any array is
      unknown, or any shape differs. Nothing is assigned in that case.
  """
  assign_by_name(released_variables(model), arrays, source)


def assign_by_name(variables: Mapping[str, tf.Variable], arrays: Mapping[str, np.ndarray],
                   source: str) -> None:
  """Assigns every variable (released name -> variable) from `arrays`, or nothing.

  Raises:
    ValueError: as `assign_released`.
  """
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
    if not np.issubdtype(np.asarray(arrays[name]).dtype, np.floating):
      raise ValueError(f"{source}: variable {name} has dtype {np.asarray(arrays[name]).dtype}, "
                       f"expected float")
  for name, variable in variables.items():
    variable.assign(np.asarray(arrays[name]).astype(np.float32))


def load_released_checkpoint(prefix: str, targets: Mapping[str, tf.Variable],
                             hint: str = "", optional: Sequence[str] = (MASK_EMB,)
                             ) -> List[str]:
  """Assigns `targets` (released name -> variable) from the TF1 checkpoint `prefix`, after
  checking every name and shape. Raises ValueError naming the checkpoint and the variable
  (with `hint` and the checkpoint's non-encoder names for a missing one).

  Targets named in `optional` that the checkpoint does not have keep their values (by
  default mask_emb: the original's fine-tuning scripts never build it, so their checkpoints
  lack it; only pretraining reads it). Returns those names.
  """
  reader = tf.train.load_checkpoint(prefix)
  shapes = reader.get_variable_to_shape_map()
  kept = sorted(name for name in targets if name in optional and name not in shapes)
  for name, variable in targets.items():
    if name in kept:
      continue
    if name not in shapes:
      raise ValueError(f"{prefix}: no variable {name} ({hint}the checkpoint has "
                       f"{sorted(k for k in shapes if 'transformer' not in k)})")
    if list(shapes[name]) != variable.shape.as_list():
      raise ValueError(f"{prefix}: {name} has shape {list(shapes[name])}, the model needs "
                       f"{variable.shape.as_list()}")
  for name, variable in targets.items():
    if name not in kept:
      variable.assign(reader.get_tensor(name))
  return kept

