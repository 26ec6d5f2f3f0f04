"""The pretraining step and loop as an `orbit.StandardTrainer`.

One step, per replica: read the replica's memories (zeros for rows that start a new
stream), run the model on the batch with them, take the cross-entropy over the real
targets divided by the number of real targets of the GLOBAL batch, sum the gradients over
replicas, clip them by global norm, apply AdamW, store the new memories. `steps_per_loop`
steps run in one `tf.function` (orbit's while loop); after each loop the host checks the
loss and the gradient norm, logs and copies the memories to the checkpointed host variable.
Dropout draws its masks from (seed, global step, replica) (`step_dropout`), so a resumed
run takes exactly the steps of an uninterrupted one.
"""

import time
from typing import Callable, Dict, Optional

from absl import logging
import orbit
import tensorflow as tf
import tf_keras

from xlnet_tf.layers.step_dropout import step_seed
from xlnet_tf.layers.step_dropout import training_seed
from xlnet_tf.models.losses import target_cross_entropy
from xlnet_tf.training import optimization
from xlnet_tf.training.checkpointing import NonFiniteError
from xlnet_tf.training.checkpointing import check_loop_values
from xlnet_tf.training.memory import ReplicaMemories

MODEL_INPUTS = ("input_ids", "segment_ids", "input_mask", "perm_mask", "target_mapping")


class NonFiniteLossError(NonFiniteError):
  """Training produced a NaN or infinite loss or gradient norm."""


class PretrainTrainer(orbit.StandardTrainer):
  """Trains an `XLNetPretrainer` on `pretrain_dataset` batches.

  Args:
    strategy: the distribution strategy (model, optimizer and memories built in its scope).
    model: the pretraining model; optimizer: from `optimization.build_optimizer`.
    dataset: a distributed dataset of per-replica batches.
    memories: `ReplicaMemories`, or None when mem_len is 0.
    tokens_per_step: global tokens per step (for tokens/s).
    clip_norm: gradient clipping by global norm (after the cross-replica sum).
    total_steps: for the ETA in the log line.
    jit_compile: compile the forward and backward pass with XLA.
    seed: the run's seed; dropout masks are drawn from (seed, step, replica).
    last_checkpoint: returns the newest checkpoint (named when training stops on a NaN).
  """

  def __init__(self, strategy: tf.distribute.Strategy, model: tf_keras.Model,
               optimizer: tf_keras.optimizers.Optimizer, dataset,
               memories: Optional[ReplicaMemories], tokens_per_step: int,
               clip_norm: float = 1.0, total_steps: Optional[int] = None,
               jit_compile: bool = False, seed: int = 0,
               last_checkpoint: Optional[Callable[[], Optional[str]]] = None):
    self.strategy = strategy
    self.seed = seed
    self.last_checkpoint = last_checkpoint or (lambda: None)
    self.model = model
    self.optimizer = optimizer
    self.memories = memories
    self.tokens_per_step = tokens_per_step
    self.clip_norm = clip_norm
    self.total_steps = total_steps
    if jit_compile:
      self._forward_backward = tf.function(self._forward_backward, jit_compile=True)
    self.loss_scaled = isinstance(optimizer, tf_keras.mixed_precision.LossScaleOptimizer)
    with strategy.scope():
      self.loss_metric = tf_keras.metrics.Mean("loss", dtype=tf.float32)
      self.grad_norm_metric = tf_keras.metrics.Mean("grad_norm", dtype=tf.float32)
    self._loop_start = None
    self._loop_start_step = None
    super().__init__(dataset, options=orbit.StandardTrainerOptions(use_tf_while_loop=True))

  @property
  def global_step(self) -> tf.Variable:
    return self.optimizer.iterations

  def train_loop_begin(self):
    self.loss_metric.reset_states()
    self.grad_norm_metric.reset_states()
    self._loop_start = time.time()
    self._loop_start_step = int(self.global_step.numpy())

  def train_step(self, iterator):
    self.strategy.run(self._replica_step, args=(next(iterator),))

  def _replica_step(self, batch: Dict[str, tf.Tensor]):
    context = tf.distribute.get_replica_context()
    inputs = {key: batch[key] for key in MODEL_INPUTS if key in batch}   # mlm: no perm_mask
    if self.memories is not None:
      inputs["mems"] = self.memories.read(keep=batch["stream_step"] > 0)
    scale = self.optimizer.loss_scale if self.loss_scaled else tf.constant(1.0)
    seed = step_seed(self.seed, self.optimizer.iterations, context.replica_id_in_sync_group)
    loss_sum, count, grads, new_mems = self._forward_backward(
        inputs, batch["target"], batch["target_mask"], scale, seed)
    # Mean over the real targets of the GLOBAL batch: sum, then divide by the global count.
    global_count = tf.maximum(context.all_reduce(tf.distribute.ReduceOp.SUM, count), 1.0)
    grads = context.all_reduce(tf.distribute.ReduceOp.SUM,
                               [g / (global_count * scale) for g in grads])
    grads, grad_norm = tf.clip_by_global_norm(grads, self.clip_norm)
    self.optimizer.apply_gradients(zip(grads, self.model.trainable_variables),
                                   experimental_aggregate_gradients=False)
    if self.memories is not None:
      self.memories.write(new_mems)
    loss = context.all_reduce(tf.distribute.ReduceOp.SUM, loss_sum) / global_count
    self.loss_metric.update_state(loss)
    self.grad_norm_metric.update_state(grad_norm)

  def _forward_backward(self, inputs, target, target_mask, scale, seed):
    """Loss sum, target count, gradients of (loss sum x scale), new memories: no
    cross-replica communication, so it can be compiled with XLA (`jit_compile`)."""
    with tf.GradientTape() as tape, training_seed(seed):
      outputs = self.model(inputs, training=True)
      loss_sum, count = target_cross_entropy(outputs["logits"], target, target_mask)
      scaled = loss_sum * tf.cast(scale, loss_sum.dtype)
    # Zeros for unused weights (mask_emb under the mlm objective), not None.
    grads = tape.gradient(scaled, self.model.trainable_variables,
                          unconnected_gradients=tf.UnconnectedGradients.ZERO)
    return loss_sum, count, grads, outputs["new_mems"]

  def train_loop_end(self) -> Dict[str, float]:
    loss = float(self.loss_metric.result().numpy())
    grad_norm = float(self.grad_norm_metric.result().numpy())
    step = int(self.global_step.numpy())
    check_loop_values(loss, grad_norm, step, self.last_checkpoint(), self.loss_scaled,
                      error=NonFiniteLossError)
    if self.memories is not None:
      self.memories.to_host()
    seconds = max(time.time() - self._loop_start, 1e-9)
    steps = step - self._loop_start_step
    outputs = {"loss": loss, "grad_norm": grad_norm,
               "learning_rate": optimization.current_learning_rate(self.optimizer),
               "tokens_per_sec": self.tokens_per_step * steps / seconds}
    eta = ""
    if self.total_steps:
      eta = f" | ETA {(self.total_steps - step) * seconds / max(steps, 1) / 60:.1f} min"
    logging.info("step %d | loss %.4f | %.2f steps/s | %.0f tokens/s%s", step, loss,
                 steps / seconds, outputs["tokens_per_sec"], eta)
    return outputs
