"""The one training step and loop of every task, as an `orbit.StandardTrainer`.

A task gives the trainer three things: which batch keys the model reads (`input_keys`),
its loss as (sum over the replica's micro-batch, count it is normalised by) (`loss_fn`),
and, for pretraining, the per-replica Transformer-XL memories. One step, per replica:

  for each of the k = `grad_accum_steps` micro-batches:
    dropout seed = (seed, global step, replica, micro-batch)      (`step_dropout`)
    outputs = model(inputs [+ memories]); loss_sum, count = loss_fn(outputs, batch)
    grads += d(loss_sum x loss scale) / d(weights)                 (one replica, no comms)
  grads = all-reduce-sum(grads / (global count x loss scale))     the mean over the
                                                                   GLOBAL (k-times) batch
  grads, norm = clip_by_global_norm(grads, clip_norm)
  optimizer.apply_gradients(grads)      (weights the loss does not reach are left alone,
                                         as TF1's optimizers skip their None gradients)
  store the new memories

`steps_per_loop` steps run in one `tf.function` (orbit's while loop). After each loop the
host checks the loss and gradient norm (`check_loop_values`: a NaN stops training naming
the last good checkpoint), copies the memories to their checkpointed host variable and
returns loss, grad_norm, learning_rate, steps_per_sec (and tokens_per_sec) for TensorBoard.

  >>> trainer = Trainer(strategy, model, optimizer, dataset, input_keys=("input_ids",),
  ...                   loss_fn=lambda outputs, batch: (tf.reduce_sum(...), count))
  >>> orbit.Controller(trainer=trainer, ...).train(steps)
"""

import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Type

from absl import logging
import orbit
import tensorflow as tf
import tf_keras

from xlnet_tf.layers.step_dropout import step_seed
from xlnet_tf.layers.step_dropout import training_seed
from xlnet_tf.training import host_memory
from xlnet_tf.training import optimization
from xlnet_tf.model_directory import NonFiniteError
from xlnet_tf.training.checkpointing import check_loop_values
from xlnet_tf.training.memory import ReplicaMemories


class NonFiniteLossError(NonFiniteError):
  """Training produced a NaN or infinite loss or gradient norm."""

# (model outputs, batch) -> (loss summed over the micro-batch [], its count [] float32)
LossFn = Callable[[Dict[str, tf.Tensor], Dict[str, tf.Tensor]], Tuple[tf.Tensor, tf.Tensor]]
# (model, inputs) -> outputs, in training mode (default: model(inputs, training=True))
class Trainer(orbit.StandardTrainer):
  """Trains `model` on `dataset` with the step above.

  Args:
    strategy: the distribution strategy (model, optimizer, memories built in its scope).
    model, optimizer: the optimizer from `optimization.build_optimizer`.
    dataset: a distributed dataset of per-replica micro-batches.
    input_keys: the batch keys passed to the model (those present in the batch).
    loss_fn: see `LossFn`; the loss is the sum over the micro-batch, normalised by the sum
      of the counts over micro-batches and replicas.
    memories: `ReplicaMemories` (pretraining with mem_len > 0): read before the forward
      pass (zeros where `batch["stream_step"]` is 0), written after. Needs k = 1.
    grad_accum_steps: k micro-batches per update.
    clip_norm: clipping by global norm of the reduced gradient.
    total_steps: for the ETA in the log line.
    tokens_per_step: global tokens per step, for tokens_per_sec (None: not reported).
    jit_compile: compile each micro-batch's forward and backward pass with XLA.
    seed: the run's seed (dropout masks).
    last_checkpoint: returns the newest checkpoint (named when training stops on a NaN).
    error: the exception class of a non-finite loss.
  """

  def __init__(self, strategy: tf.distribute.Strategy, model: tf_keras.Model,
               optimizer: tf_keras.optimizers.Optimizer, dataset, input_keys: Sequence[str],
               loss_fn: LossFn, memories: Optional[ReplicaMemories] = None,
               grad_accum_steps: int = 1, clip_norm: float = 1.0,
               total_steps: Optional[int] = None, tokens_per_step: Optional[int] = None,
               jit_compile: bool = False, seed: int = 0,
               last_checkpoint: Optional[Callable[[], Optional[str]]] = None,
               error: Type[NonFiniteError] = NonFiniteError):
    if grad_accum_steps < 1:
      raise ValueError(f"grad_accum_steps must be >= 1, got {grad_accum_steps}")
    if memories is not None and grad_accum_steps > 1:
      raise ValueError("gradient accumulation with Transformer-XL memories is not "
                       "supported: a micro-batch's memory is the previous micro-batch's text")
    self.strategy = strategy
    self.model = model
    self.optimizer = optimizer
    self.input_keys = tuple(input_keys)
    self.loss_fn = loss_fn
    self.memories = memories
    self.grad_accum_steps = grad_accum_steps
    self.clip_norm = clip_norm
    self.total_steps = total_steps
    self.tokens_per_step = tokens_per_step
    self.seed = seed
    self.last_checkpoint = last_checkpoint or (lambda: None)
    self.error = error
    if jit_compile:
      self._forward_backward = tf.function(self._forward_backward, jit_compile=True)
      host_memory.keep_freed_memory()      # XLA:CPU's buffers: no page faults per step
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
    scale = self.optimizer.loss_scale if self.loss_scaled else tf.constant(1.0)
    summed, used, loss_sum, count = None, None, 0.0, 0.0
    for index, batch in enumerate(micro_batches):
      inputs = {key: batch[key] for key in self.input_keys if key in batch}
      if self.memories is not None:
        inputs["mems"] = self.memories.read(keep=batch["stream_step"] > 0)
      seed = step_seed(self.seed, self.optimizer.iterations,
                       context.replica_id_in_sync_group, index)
      batch_loss, batch_count, grads, new_mems = self._forward_backward(
          inputs, batch, scale, seed)
      # Weights the loss does not reach (mask_emb without the query stream) get None.
      used = [i for i, g in enumerate(grads) if g is not None]
      grads = [tf.convert_to_tensor(grads[i]) for i in used]
      summed = grads if summed is None else [a + g for a, g in zip(summed, grads)]
      loss_sum += batch_loss
      count += batch_count
    # Mean over the GLOBAL batch: sum, then divide by the global count.
    global_count = tf.maximum(context.all_reduce(tf.distribute.ReduceOp.SUM, count), 1.0)
    grads = context.all_reduce(tf.distribute.ReduceOp.SUM,
                               [g / (global_count * scale) for g in summed])
    grads, grad_norm = tf.clip_by_global_norm(grads, self.clip_norm)
    self.optimizer.apply_gradients(zip(grads, [variables[i] for i in used]),
                                   experimental_aggregate_gradients=False)
    if self.memories is not None:
      self.memories.write(new_mems)
    self.loss_metric.update_state(
        context.all_reduce(tf.distribute.ReduceOp.SUM, loss_sum) / global_count)
    self.grad_norm_metric.update_state(grad_norm)

  def _forward_backward(self, inputs, batch, scale, seed):
    """Loss sum, count, gradients of (loss sum x scale) and the new memories of one
    micro-batch: no cross-replica communication, so it can be compiled with XLA."""
    with tf.GradientTape() as tape, training_seed(seed):
      outputs = self.model(inputs, training=True)
      loss_sum, count = self.loss_fn(outputs, batch)
      scaled = loss_sum * tf.cast(scale, loss_sum.dtype)
    grads = tape.gradient(scaled, self.model.trainable_variables)
    return loss_sum, tf.cast(count, tf.float32), grads, outputs.get("new_mems")

  def train_loop_end(self) -> Dict[str, float]:
    loss = float(self.loss_metric.result().numpy())
    grad_norm = float(self.grad_norm_metric.result().numpy())
    step = int(self.global_step.numpy())
    check_loop_values(loss, grad_norm, step, self.last_checkpoint(), self.loss_scaled,
                      error=self.error)
    if self.memories is not None:
      self.memories.to_host()
    start, start_step = self._loop_start
    seconds = max(time.time() - start, 1e-9)
    steps = step - start_step
    outputs = {"loss": loss, "grad_norm": grad_norm,
               "learning_rate": optimization.current_learning_rate(self.optimizer),
               "steps_per_sec": steps / seconds}
    line = f"step {step} | loss {loss:.4f} | {steps / seconds:.2f} steps/s"
    if self.tokens_per_step:
      outputs["tokens_per_sec"] = self.tokens_per_step * steps / seconds
      line += f" | {outputs['tokens_per_sec']:.0f} tokens/s"
    if self.total_steps:
      line += f" | ETA {(self.total_steps - step) * seconds / max(steps, 1) / 60:.1f} min"
    logging.info("%s", line)
    return outputs


def run_controller(trainer: Trainer, strategy: tf.distribute.Strategy, manager,
                   summary_dir: str, eval_summary_dir: str, steps_per_loop, start_step: int,
                   stop_step: int, evaluator: Optional[orbit.AbstractEvaluator] = None,
                   eval_interval: Optional[int] = None, eval_steps: int = -1,
                   eval_actions: Sequence[Callable[[Dict[str, Any]], None]] = (),
                   train_actions: Sequence[Callable[[Dict[str, Any]], None]] = ()
                   ) -> Dict[str, Any]:
  """Runs `trainer` from `start_step` to `stop_step` under an `orbit.Controller` (the
  checkpoints of `manager`, TensorBoard scalars every loop in `summary_dir`), with an
  evaluation every `eval_interval` steps and at the end when there is an `evaluator`
  (its metrics in `eval_summary_dir` and passed to `eval_actions`). `train_actions` get
  every loop's outputs before its checkpoint is written. Returns {"losses":
  one per loop, "evals": [metrics]} of this call."""
  losses: List[float] = []
  evals: List[Dict[str, Any]] = []
  controller = orbit.Controller(
      global_step=trainer.global_step, trainer=trainer, evaluator=evaluator,
      strategy=strategy, steps_per_loop=steps_per_loop, checkpoint_manager=manager,
      summary_dir=summary_dir, eval_summary_dir=eval_summary_dir,
      summary_interval=None,                              # every loop
      train_actions=[lambda output: losses.append(float(output["loss"])), *train_actions],
      eval_actions=[evals.append, *eval_actions])
  if start_step >= stop_step:
    logging.info("already trained to step %d (stop at %d)", start_step, stop_step)
  elif evaluator is not None:
    controller.train_and_evaluate(stop_step, eval_steps=eval_steps,
                                  eval_interval=eval_interval)
  else:
    controller.train(stop_step)
  return {"losses": losses, "evals": evals}
