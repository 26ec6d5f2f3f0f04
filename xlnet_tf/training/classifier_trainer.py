"""The classifier's loss for the common `Trainer` (xlnet_tf/training/trainer.py), and
`predict`. Loss: cross-entropy (classification) or squared error (regression), mean over
the examples of every micro-batch of every replica.
"""

from typing import Dict

import numpy as np
import tensorflow as tf
import tf_keras

from xlnet_tf.training import model_functions

MODEL_INPUTS = ("input_ids", "segment_ids", "input_mask")


def example_losses(outputs: Dict[str, tf.Tensor], labels: tf.Tensor,
                   is_regression: bool) -> tf.Tensor:
  """Per-example loss [B], float32."""
  if is_regression:
    return tf.square(outputs["score"] - tf.cast(labels, tf.float32))
  return tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.cast(labels, tf.int32),
                                                        logits=outputs["logits"])


def classifier_loss(outputs, batch, is_regression: bool):
  """(loss summed over the micro-batch's examples, their number)."""
  labels = batch["label_id"]
  return (tf.reduce_sum(example_losses(outputs, labels, is_regression)),
          tf.cast(tf.shape(labels)[0], tf.float32))


# The inference graph of `predict`, traced once per model and input signature.
_PREDICT = model_functions.ModelFunctions(
    lambda model, batch: model({k: batch[k] for k in MODEL_INPUTS}, training=False))


def predict(model: tf_keras.Model, dataset: tf.data.Dataset) -> Dict[str, np.ndarray]:
  """Logits (and scores) of every batch of an (unrepeated) dataset, concatenated."""
  run = _PREDICT.get(model, dataset.element_spec)
  outputs = {}
  for batch in dataset:
    for key, value in run(batch).items():
      outputs.setdefault(key, []).append(value.numpy())
  return {key: np.concatenate(values) for key, values in outputs.items()}
