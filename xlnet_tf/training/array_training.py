"""A plain training loop and batched prediction over in-memory arrays [N, ...], shared by
the SQuAD and RACE fine-tuning (one device; see `squad_training`, `race_training`).

  >>> losses = train_on_arrays(model, optimizer, arrays, 32, 1000, loss_fn)
  >>> outputs = predict_on_arrays(lambda batch: model(batch), arrays, INPUTS)
"""

from typing import Callable, Dict, List, Sequence

import numpy as np
import tensorflow as tf


def train_on_arrays(model, optimizer, arrays: Dict[str, np.ndarray], batch_size: int,
                    steps: int, loss_fn: Callable, clip_norm: float = 1.0,
                    seed: int = 0) -> List[float]:
  """`steps` updates on shuffled, repeated batches; `loss_fn(model, batch)` is the scalar
  loss (training mode). Weights the loss does not reach get zero gradients. Returns the
  loss of every step."""
  size = len(next(iter(arrays.values())))
  dataset = (tf.data.Dataset.from_tensor_slices(arrays).shuffle(size, seed=seed)
             .repeat().batch(batch_size))

  @tf.function
  def step(batch):
    with tf.GradientTape() as tape:
      loss = loss_fn(model, batch)
    variables = model.trainable_variables
    grads = tape.gradient(loss, variables,
                          unconnected_gradients=tf.UnconnectedGradients.ZERO)
    grads, _ = tf.clip_by_global_norm(grads, clip_norm)
    optimizer.apply_gradients(zip(grads, variables))
    return loss

  return [float(step(batch)) for batch in dataset.take(steps)]


def predict_on_arrays(run: Callable, arrays: Dict[str, np.ndarray], keys: Sequence[str],
                      batch_size: int) -> Dict[str, np.ndarray]:
  """`run(batch)` (a dict of tensors) over batches of `arrays[keys]`, concatenated."""
  run = tf.function(run)
  outputs: Dict[str, list] = {}
  dataset = tf.data.Dataset.from_tensor_slices({k: arrays[k] for k in keys})
  for batch in dataset.batch(batch_size):
    for key, value in run(batch).items():
      outputs.setdefault(key, []).append(value.numpy())
  return {key: np.concatenate(values) for key, values in outputs.items()}
