"""Reads a released (TF1) XLNet directory: xlnet_config.json + xlnet_model.ckpt.*

Also the model directory of the original's fine-tuning scripts (model.ckpt-N.* and a
`checkpoint` file), whose config is the separate file they were run with
(`config_path`).
"""

import os
from typing import Optional

import tensorflow as tf

from xlnet_tf.configs import XLNetConfig
from xlnet_tf import released_names as names
from xlnet_tf.convert import task_heads
from xlnet_tf.convert.source import SourceWeights

CONFIG_FILE = names.RELEASED_CONFIG_FILE
CHECKPOINT_PREFIX = names.RELEASED_CHECKPOINT_PREFIX


def checkpoint_prefix(directory: str) -> str:
  """The TF1 checkpoint in `directory`: xlnet_model.ckpt, else the `checkpoint` file's latest.

  Raises:
    FileNotFoundError: naming the directory and the files expected.
  """
  prefix = os.path.join(directory, CHECKPOINT_PREFIX)
  if os.path.exists(prefix + ".index"):
    return prefix
  latest = tf.train.latest_checkpoint(directory)
  if latest and os.path.exists(latest + ".index"):
    return latest
  raise FileNotFoundError(f"{directory}: no TF1 checkpoint; expected {CHECKPOINT_PREFIX}.index "
                          f"and {CHECKPOINT_PREFIX}.data-* (or a 'checkpoint' file)")


def has_checkpoint(directory: str) -> bool:
  return (os.path.exists(os.path.join(directory, CHECKPOINT_PREFIX + ".index")) or
          os.path.isfile(os.path.join(directory, "checkpoint")))


def is_released_dir(directory: str, config_path: Optional[str] = None) -> bool:
  return (os.path.isfile(config_path or os.path.join(directory, CONFIG_FILE)) and
          has_checkpoint(directory))


def read_released(directory: str, config_path: Optional[str] = None) -> SourceWeights:
  """Reads the config (`config_path`, default DIRECTORY/xlnet_config.json) and the model
  weights by released name.

  Optimizer slots and global_step are dropped; task-head variables of fine-tuned
  checkpoints (`task_heads.is_task_head`) are listed in `skipped` and their arrays returned
  in `heads`.
  """
  config = XLNetConfig.from_json_file(config_path or os.path.join(directory, CONFIG_FILE))
  prefix = checkpoint_prefix(directory)
  arrays, heads = {}, {}
  try:
    reader = tf.train.load_checkpoint(prefix)
    for name in sorted(reader.get_variable_to_shape_map()):
      if names.is_optimizer_or_step(name):
        continue
      (heads if task_heads.is_task_head(name) else arrays)[name] = reader.get_tensor(name)
  except (tf.errors.OpError, ValueError) as e:
    detail = e.message if isinstance(e, tf.errors.OpError) else str(e)
    raise ValueError(f"{prefix}: cannot read the TF1 checkpoint ({detail})") from None
  return SourceWeights("released", prefix, config, arrays, sorted(heads), heads=heads)
