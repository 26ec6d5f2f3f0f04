"""Transformer-XL memories kept per replica across steps, and saved with the checkpoints.

Every replica reads the same streams at every step (see `pretrain_dataset`), so its
memory is its own: `SyncOnRead` variables hold one copy per replica, read and written
inside `strategy.run` without any cross-replica traffic. Checkpoints cannot save per-replica
values, so `to_host` gathers them into one host variable [L, R·B, M, D] that the checkpoint
tracks and `from_host` hands each replica its slice back after a restore.
"""

from typing import List

import tensorflow as tf


def local_replica_count(strategy: tf.distribute.Strategy) -> int:
  """Replicas on this host (1 for the default strategy)."""
  try:
    return len(strategy.extended.worker_devices)
  except RuntimeError:                       # the default strategy has no worker devices
    return 1


class ReplicaMemories(tf.Module):
  """n_layer memories [B, M, D] per replica (float32, zeros at the start, as released).

  Args:
    strategy: the distribution strategy the model runs under.
    n_layer, batch_size (per replica), mem_len, d_model: the shapes.
  """

  def __init__(self, strategy: tf.distribute.Strategy, n_layer: int, batch_size: int,
               mem_len: int, d_model: int):
    super().__init__(name="memories")
    self._strategy = strategy
    self.batch_size = batch_size
    self.num_local_replicas = local_replica_count(strategy)
    shape = [batch_size, mem_len, d_model]
    with strategy.scope():
      self._per_replica = [
          tf.Variable(tf.zeros(shape), trainable=False, name=f"memory_{i}",
                      synchronization=tf.VariableSynchronization.ON_READ,
                      aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
          for i in range(n_layer)]
    with tf.device("/cpu:0"):
      self.saved = tf.Variable(tf.zeros([n_layer, self.num_local_replicas * batch_size,
                                         mem_len, d_model]), trainable=False, name="saved")

  # ---- inside strategy.run (replica context) ----------------------------------------------

  def read(self, keep: tf.Tensor = None) -> List[tf.Tensor]:
    """This replica's memories; rows where `keep` [B] is False start again from zeros."""
    memories = [v.read_value() for v in self._per_replica]
    if keep is None:
      return memories
    keep = tf.cast(keep, tf.float32)[:, None, None]
    return [m * keep for m in memories]

  def write(self, new_memories: List[tf.Tensor]) -> None:
    for variable, value in zip(self._per_replica, new_memories):
      variable.assign(tf.cast(value, tf.float32))

  # ---- cross-replica context ----------------------------------------------------------------

  def local_values(self) -> tf.Tensor:
    """[L, R·B, M, D]: every local replica's memories, replica after replica."""
    return tf.stack([tf.concat(self._strategy.experimental_local_results(v), axis=0)
                     for v in self._per_replica])

  def to_host(self) -> None:
    """Copies the per-replica memories into `saved` (before a checkpoint is written)."""
    self.saved.assign(self.local_values())

  def from_host(self) -> None:
    """Gives every replica its slice of `saved` (after a checkpoint was restored)."""
    saved, size = self.saved, self.batch_size
    local = self.num_local_replicas

    def slice_for(context):
      replica = context.replica_id_in_sync_group % local
      return saved[:, replica * size:(replica + 1) * size]

    values = self._strategy.experimental_distribute_values_from_function(slice_for)

    @tf.function
    def assign(values):
      def assign_fn(value):
        for i, variable in enumerate(self._per_replica):
          variable.assign(value[i])
      self._strategy.run(assign_fn, args=(values,))

    assign(values)
