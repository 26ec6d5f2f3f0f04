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

Activation recomputation (`tf.recompute_grad`, or the encoder's guarded version of it) runs a
part of the forward pass again in the backward pass, usually outside `training_seed`.
`replaying(fn)` wraps such a part so that its recomputation draws exactly the masks its
forward pass drew:

  >>> block = tf.recompute_grad(replaying(lambda x: layer(x, training=True)))

The first call of the wrapped function (the forward pass) draws from the current state
and advances its count as an unwrapped call would; every later call (the recomputation)
draws again from the count the first call started at, and leaves the state around it
unchanged. Keras' stateful `Dropout` (outside `training_seed`) cannot be replayed: a
recomputation there would draw other masks than the forward pass, so `replaying` raises
if a wrapped call draws a mask without a seed (`has_seed` tells beforehand).
"""

import contextlib
import threading
from typing import Callable, Optional

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


def has_seed() -> bool:
  """Whether `StepDropout` draws step-keyed masks here (inside `training_seed(seed)` with a
  seed), which `replaying` can replay."""
  return getattr(_STATE, "current", None) is not None


def replaying(fn: Callable) -> Callable:
  """`fn` wrapped so that every call after the first draws the `StepDropout` masks of the
  first (see the module docstring): for the function of `tf.recompute_grad`.

  Raises (when called):
    ValueError: a call draws a dropout mask outside `training_seed` (Keras' stateful
      dropout, which a recomputation would not draw again identically).
  """
  start = []                        # [the state at the first call's start] once called

  def wrapped(*args):
    if not start:
      state = getattr(_STATE, "current", None)
      start.append(None if state is None else (state["seed"], state["calls"]))
      if state is not None:
        return fn(*args)               # the forward pass: draws from (and advances) the state
      replay_state = None
    else:
      replay_state = None if start[0] is None else {"seed": start[0][0],
                                                    "calls": start[0][1]}
    previous = getattr(_STATE, "current", None)
    _STATE.current = replay_state
    _STATE.unseeded = 0
    try:
      outputs = fn(*args)
      if replay_state is None and _STATE.unseeded:
        raise ValueError(
            "dropout without training_seed cannot be recomputed: Keras' stateful dropout "
            "would draw other masks in the backward pass than in the forward pass. Enter "
            "xlnet_tf.layers.step_dropout.training_seed(step_seed(...)) around the forward "
            "pass (as xlnet_tf.training.trainer does), or set dropout and dropatt to 0, or "
            "recompute 'none'")
      return outputs
    finally:
      _STATE.current = previous
      _STATE.unseeded = 0

  return wrapped


@tf_keras.utils.register_keras_serializable(package="xlnet_tf")
class StepDropout(tf_keras.layers.Dropout):
  """`tf_keras.layers.Dropout` with step-keyed masks under `training_seed`."""

  def call(self, inputs, training=None):
    state = getattr(_STATE, "current", None)
    if state is None or training is not True or self.rate == 0:
      if state is None and training is True and self.rate > 0:
        _STATE.unseeded = getattr(_STATE, "unseeded", 0) + 1  # seen by `replaying`
      return super().call(inputs, training=training)
    seed = tf.random.experimental.stateless_fold_in(state["seed"], state["calls"])
    state["calls"] += 1
    return tf.nn.experimental.stateless_dropout(inputs, rate=self.rate, seed=seed)
