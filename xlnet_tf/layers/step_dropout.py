"""Dropout whose masks are a function of (seed, global step, replica): exact resume.

Keras' `Dropout` draws from a stateful generator that starts again when a process starts,
so a run resumed from a checkpoint draws other masks than the run that was never
interrupted. Under `training_seed(seed)` every `StepDropout` call draws its mask
statelessly from `fold_in(seed, k)`, k counting the dropout calls of the forward pass in
order, so the same step on the same replica gets the same masks whenever it runs. The
trainers enter `training_seed(step_seed(...))` around the forward pass; outside it (Keras
`fit`, a user's own loop) `StepDropout` is Keras' `Dropout`.

  >>> with training_seed(step_seed(seed=7, step=optimizer.iterations, replica=0)):
  ...   outputs = model(batch, training=True)

The context is per thread: MirroredStrategy runs each replica in a thread of its own, so
it is entered inside the replica function.
"""

import contextlib
import threading
from typing import Optional

import tensorflow as tf
import tf_keras

_STATE = threading.local()


def step_seed(seed: int, step, replica=0, micro_batch=0) -> tf.Tensor:
  """The stateless seed [2] (int64) of one replica's micro-batch at one global step: a pure
  function of its arguments (ints or scalar tensors)."""
  key = tf.constant([0, seed], tf.int64)
  for value in (step, replica, micro_batch):
    key = tf.random.experimental.stateless_fold_in(key, tf.cast(value, tf.int64))
  return key


@contextlib.contextmanager
def training_seed(seed: Optional[tf.Tensor]):
  """Within: `StepDropout` draws its k-th mask from fold_in(seed, k) (seed None: Keras')."""
  previous = getattr(_STATE, "current", None)
  _STATE.current = None if seed is None else {"seed": seed, "calls": 0}
  try:
    yield
  finally:
    _STATE.current = previous


@contextlib.contextmanager
def folded_seed(index):
  """Within: the current `training_seed` folded with `index` (an int or scalar tensor), so
  repeated forward passes of one step (the segments of a document) draw masks of their
  own; outside `training_seed`, nothing changes."""
  state = getattr(_STATE, "current", None)
  if state is None:
    yield
    return
  with training_seed(tf.random.experimental.stateless_fold_in(state["seed"],
                                                             tf.cast(index, tf.int64))):
    yield


@tf_keras.utils.register_keras_serializable(package="xlnet_tf")
class StepDropout(tf_keras.layers.Dropout):
  """`tf_keras.layers.Dropout` with step-keyed masks under `training_seed`."""

  def call(self, inputs, training=None):
    state = getattr(_STATE, "current", None)
    if state is None or training is not True or self.rate == 0:
      return super().call(inputs, training=training)
    seed = tf.random.experimental.stateless_fold_in(state["seed"], state["calls"])
    state["calls"] += 1
    return tf.nn.experimental.stateless_dropout(inputs, rate=self.rate, seed=seed)
