"""The pretraining trainer: the common `Trainer` with the target cross-entropy and the
per-replica Transformer-XL memories.

The loss is the cross-entropy over the real targets divided by the number of real targets
of the GLOBAL batch; each replica reads its memories (zeros for rows that start a new
stream) and stores the new ones; see `xlnet_tf/training/trainer.py` for the step.
"""

from typing import Callable, Optional

import tensorflow as tf
import tf_keras

from xlnet_tf.models.losses import target_cross_entropy
from xlnet_tf.model_directory import NonFiniteError
from xlnet_tf.training.memory import ReplicaMemories
from xlnet_tf.training.trainer import Trainer

MODEL_INPUTS = ("input_ids", "segment_ids", "input_mask", "perm_mask", "target_mapping")


class NonFiniteLossError(NonFiniteError):
  """Training produced a NaN or infinite loss or gradient norm."""


def pretraining_loss(outputs, batch):
  """(cross-entropy summed over the real targets, their number) of one micro-batch."""
  return target_cross_entropy(outputs["logits"], batch["target"], batch["target_mask"])


class PretrainTrainer(Trainer):
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
    super().__init__(strategy, model, optimizer, dataset, input_keys=MODEL_INPUTS,
                     loss_fn=pretraining_loss, memories=memories, clip_norm=clip_norm,
                     total_steps=total_steps, tokens_per_step=tokens_per_step,
                     jit_compile=jit_compile, seed=seed, last_checkpoint=last_checkpoint,
                     error=NonFiniteLossError)
