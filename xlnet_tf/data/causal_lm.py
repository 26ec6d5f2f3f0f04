"""Causal-LM (left-to-right) inputs made from the same pretraining rows: a diagnostic baseline.

Every position of a row predicts the next token of the row: the model runs with attn_type
"uni" (position i sees the memory and positions <= i), no permutation mask and one stream
(the content stream is read, as for masked LM). The last position has no next token in
the row and is no target (target_mask 0). Everything else (the rows, the segments, the
memory) is shared with PLM, so a causal LM trained on the same records and budget tells
whether a small PLM's plateau is the objective's or the data's and model's.

  >>> batch = causal_lm_inputs(batch)     # target [B, T]: input_ids shifted left by one
"""

from typing import Dict

import tensorflow as tf


def causal_lm_inputs(batch: Dict[str, tf.Tensor]) -> Dict[str, tf.Tensor]:
  """Causal-LM model inputs for a batch of pretraining rows.

  Args:
    batch: `pretrain_dataset`-style features; uses input_ids int32 [B, T] and passes the
      others through (perm_mask and target_mapping are dropped: nothing is hidden by
      order, and every position is a target).
  Returns:
    The batch with target int32 [B, T] (target[:, i] = input_ids[:, i + 1], 0 at the last
    position) and target_mask float32 [B, T] (1, except 0 at the last position).
  """
  input_ids = batch["input_ids"]                                        # [B, T]
  last = tf.zeros_like(input_ids[:, :1])                                # [B, 1]
  outputs = {k: v for k, v in batch.items() if k not in ("perm_mask", "target_mapping")}
  outputs.update(
      target=tf.concat([input_ids[:, 1:], last], axis=1),               # [B, T]
      target_mask=tf.concat([tf.ones_like(input_ids[:, 1:], tf.float32),
                             tf.cast(last, tf.float32)], axis=1))       # [B, T]
  return outputs
