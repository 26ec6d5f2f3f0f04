"""Losses of the pretraining objectives."""

from typing import Tuple

import tensorflow as tf


def target_cross_entropy(logits: tf.Tensor, target: tf.Tensor,
                         target_mask: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
  """Cross-entropy summed over the real targets, and their number.

  Args:
    logits: float [B, P, V]; target: int [B, P]; target_mask: [B, P], 1 for real targets
      and 0 for padding rows of target_mapping.
  Returns:
    (sum of -log p(target) over real targets, number of real targets), float32 scalars.
    Divide the global sums (over all replicas) to get the mean over the global batch.
  """
  per_target = tf.nn.sparse_softmax_cross_entropy_with_logits(
      labels=target, logits=tf.cast(logits, tf.float32))                 # [B, P]
  mask = tf.cast(target_mask, tf.float32)
  return tf.reduce_sum(per_target * mask), tf.reduce_sum(mask)
