"""A plain training loop and batched prediction over in-memory arrays [N, ...], shared by
the SQuAD and RACE fine-tuning (see `squad_training`, `race_training`).

Under a `tf.distribute` strategy (model and optimizer built in its scope) every global
batch is split over the replicas; the update is the one of the mean loss over the global
batch (gradients all-reduced, then clipped), the same as on one device.

  >>> with strategy.scope():
  ...   model, optimizer = build(...)
  >>> losses = train_on_arrays(model, optimizer, arrays, 32, 1000, loss_fn, strategy=strategy)
  >>> outputs = predict_on_arrays(lambda batch: model(batch), arrays, INPUTS)
"""

from typing import Callable, Dict, List, Optional, Sequence

import numpy as np
import tensorflow as tf

from xlnet_tf.layers.step_dropout import step_seed
from xlnet_tf.layers.step_dropout import training_seed


def train_on_arrays(model, optimizer, arrays: Dict[str, np.ndarray], batch_size: int,
                    steps: int, loss_fn: Callable, clip_norm: float = 1.0, seed: int = 0,
                    strategy: Optional[tf.distribute.Strategy] = None) -> List[float]:
  """`steps` updates on shuffled, repeated global batches of `batch_size`;
  `loss_fn(model, batch)` is the mean loss of a (replica's) batch, in training mode.
  Weights the loss does not reach get zero gradients; dropout masks are drawn from (seed,
  step, replica). Returns every step's loss."""
  strategy = strategy or tf.distribute.get_strategy()
  size = len(next(iter(arrays.values())))
  dataset = (tf.data.Dataset.from_tensor_slices(arrays).shuffle(size, seed=seed)
             .repeat().batch(batch_size))

  with strategy.scope():
    iterations = optimizer.iterations     # created here, not lazily inside the replica step

  def replica_step(batch):
    context = tf.distribute.get_replica_context()
    count = tf.cast(tf.shape(next(iter(batch.values())))[0], tf.float32)
    total = context.all_reduce(tf.distribute.ReduceOp.SUM, count)
    seed_now = step_seed(seed, iterations, context.replica_id_in_sync_group)
    with tf.GradientTape() as tape, training_seed(seed_now):
      loss = loss_fn(model, batch) * count / total     # this replica's share of the mean
    variables = model.trainable_variables
    grads = tape.gradient(loss, variables,
                          unconnected_gradients=tf.UnconnectedGradients.ZERO)
    grads = context.all_reduce(tf.distribute.ReduceOp.SUM, grads)
    grads, _ = tf.clip_by_global_norm(grads, clip_norm)
    optimizer.apply_gradients(zip(grads, variables), experimental_aggregate_gradients=False)
    return context.all_reduce(tf.distribute.ReduceOp.SUM, loss)

  @tf.function
  def step(batch):
    losses = strategy.run(replica_step, args=(batch,))
    return strategy.experimental_local_results(losses)[0]

  batches = strategy.experimental_distribute_dataset(dataset.take(steps))
  return [float(step(batch)) for batch in batches]


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
