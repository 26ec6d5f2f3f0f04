"""Fine-tuning step and loop for `XLNetClassifier` (orbit), with gradient accumulation.

A step takes `grad_accum_steps` micro-batches per replica, sums their gradients, and
applies one update whose gradient is that of the mean loss over every example of the k
micro-batches of every replica: the same update as one step on the k-times larger batch.
Loss: cross-entropy (classification) or squared error (regression), mean over examples.
Dropout masks are drawn from (seed, step, replica, micro-batch) (`step_dropout`), so a
resumed run takes exactly the steps of an uninterrupted one.
"""

import time
from typing import Callable, Dict, Optional

from absl import logging
import numpy as np
import orbit
import tensorflow as tf
import tf_keras

from xlnet_tf.layers.step_dropout import step_seed
from xlnet_tf.layers.step_dropout import training_seed
from xlnet_tf.training import optimization
from xlnet_tf.training.checkpointing import check_loop_values

MODEL_INPUTS = ("input_ids", "segment_ids", "input_mask")


def example_losses(outputs: Dict[str, tf.Tensor], labels: tf.Tensor,
                   is_regression: bool) -> tf.Tensor:
  """Per-example loss [B], float32."""
  if is_regression:
    return tf.square(outputs["score"] - tf.cast(labels, tf.float32))
  return tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.cast(labels, tf.int32),
                                                        logits=outputs["logits"])


class ClassifierTrainer(orbit.StandardTrainer):
  """Trains a classifier on batches {input_ids, segment_ids, input_mask, label_id}.

  Args:
    strategy, model, optimizer: built in the strategy's scope.
    dataset: a distributed dataset of per-replica micro-batches.
    is_regression: squared-error loss on `score` instead of cross-entropy.
    grad_accum_steps: micro-batches per update (k).
    clip_norm: clipping by global norm of the summed gradient.
    seed: the run's seed; dropout masks are drawn from (seed, step, replica, micro-batch).
    last_checkpoint: returns the newest checkpoint (named when training stops on a NaN).
  """

  def __init__(self, strategy: tf.distribute.Strategy, model: tf_keras.Model,
               optimizer: tf_keras.optimizers.Optimizer, dataset, is_regression: bool,
               grad_accum_steps: int = 1, clip_norm: float = 1.0,
               total_steps: Optional[int] = None, seed: int = 0,
               last_checkpoint: Optional[Callable[[], Optional[str]]] = None):
    if grad_accum_steps < 1:
      raise ValueError(f"grad_accum_steps must be >= 1, got {grad_accum_steps}")
    self.strategy = strategy
    self.model = model
    self.optimizer = optimizer
    self.is_regression = is_regression
    self.grad_accum_steps = grad_accum_steps
    self.clip_norm = clip_norm
    self.total_steps = total_steps
    self.seed = seed
    self.last_checkpoint = last_checkpoint or (lambda: None)
    self.loss_scaled = isinstance(optimizer, tf_keras.mixed_precision.LossScaleOptimizer)
    with strategy.scope():
      self.loss_metric = tf_keras.metrics.Mean("loss", dtype=tf.float32)
      self.grad_norm_metric = tf_keras.metrics.Mean("grad_norm", dtype=tf.float32)
    self._loop_start = None
    super().__init__(dataset, options=orbit.StandardTrainerOptions(use_tf_while_loop=True))

  @property
  def global_step(self) -> tf.Variable:
    return self.optimizer.iterations

  def train_loop_begin(self):
    self.loss_metric.reset_states()
    self.grad_norm_metric.reset_states()
    self._loop_start = (time.time(), int(self.global_step.numpy()))

  def train_step(self, iterator):
    micro_batches = [next(iterator) for _ in range(self.grad_accum_steps)]
    self.strategy.run(self._replica_step, args=(micro_batches,))

  def _replica_step(self, micro_batches):
    context = tf.distribute.get_replica_context()
    variables = self.model.trainable_variables
    count = tf.add_n([tf.cast(tf.shape(b["label_id"])[0], tf.float32) for b in micro_batches])
    global_count = context.all_reduce(tf.distribute.ReduceOp.SUM, count)
    scale = self.optimizer.loss_scale if self.loss_scaled else tf.constant(1.0)
    summed, loss_sum = None, 0.0
    for index, batch in enumerate(micro_batches):
      seed = step_seed(self.seed, self.optimizer.iterations, context.replica_id_in_sync_group,
                       index)
      with tf.GradientTape() as tape, training_seed(seed):
        outputs = self.model({k: batch[k] for k in MODEL_INPUTS}, training=True)
        batch_loss = tf.reduce_sum(example_losses(outputs, batch["label_id"],
                                                  self.is_regression))
        scaled = batch_loss * tf.cast(scale, batch_loss.dtype)
      grads = tape.gradient(scaled, variables)
      # Variables the loss does not reach (mask_emb: no query stream here) are skipped.
      used = [i for i, g in enumerate(grads) if g is not None]
      grads = [tf.convert_to_tensor(grads[i]) for i in used]
      summed = grads if summed is None else [a + g for a, g in zip(summed, grads)]
      loss_sum += batch_loss
    grads = context.all_reduce(tf.distribute.ReduceOp.SUM,
                               [g / (global_count * scale) for g in summed])
    grads, grad_norm = tf.clip_by_global_norm(grads, self.clip_norm)
    self.grad_norm_metric.update_state(grad_norm)
    self.optimizer.apply_gradients(zip(grads, [variables[i] for i in used]),
                                   experimental_aggregate_gradients=False)
    self.loss_metric.update_state(
        context.all_reduce(tf.distribute.ReduceOp.SUM, loss_sum) / global_count)

  def train_loop_end(self) -> Dict[str, float]:
    loss = float(self.loss_metric.result().numpy())
    grad_norm = float(self.grad_norm_metric.result().numpy())
    check_loop_values(loss, grad_norm, int(self.global_step.numpy()),
                      self.last_checkpoint(), self.loss_scaled)
    start, start_step = self._loop_start
    steps = int(self.global_step.numpy()) - start_step
    seconds = max(time.time() - start, 1e-9)
    logging.info("step %d | loss %.4f | %.2f steps/s", int(self.global_step.numpy()), loss,
                 steps / seconds)
    return {"loss": loss, "grad_norm": grad_norm,
            "learning_rate": optimization.current_learning_rate(self.optimizer),
            "steps_per_sec": steps / seconds}


def predict(model: tf_keras.Model, dataset: tf.data.Dataset) -> Dict[str, np.ndarray]:
  """Logits (and scores) of every batch of an (unrepeated) dataset, concatenated."""
  run = tf.function(lambda batch: model({k: batch[k] for k in MODEL_INPUTS}, training=False))
  outputs = {}
  for batch in dataset:
    for key, value in run(batch).items():
      outputs.setdefault(key, []).append(value.numpy())
  return {key: np.concatenate(values) for key, values in outputs.items()}
