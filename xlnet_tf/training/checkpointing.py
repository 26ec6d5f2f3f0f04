"""Checkpoints that are only ever written finite, at multiples of `save_steps`.

`GuardedCheckpointManager` is the `tf.train.CheckpointManager` of every trainer:
- it writes at steps that are multiples of `save_steps` (and when told to, at the end of a
  run), never in between — orbit's own interval counts from the last save, so with loops
  of 10 steps `save_steps=20` gave checkpoints 10, 30, 50;
- before writing it checks every variable of the checkpoint (weights, optimizer slots,
  memories); a non-finite value stops training with `NonFiniteError` naming the step,
  the variables and the last good checkpoint, which stays the newest one.

`loop_steps(steps_per_loop, save_steps)` is the `steps_per_loop` to give orbit's
Controller so that a loop ends at every multiple of `save_steps`.

  >>> manager = GuardedCheckpointManager(checkpoint, model_dir, max_to_keep=5,  # 0: all
  ...     step_counter=optimizer.iterations, save_steps=1000,
  ...     variables=lambda: model.variables + optimizer.variables())
"""

from typing import Callable, Optional, Sequence

import numpy as np
import tensorflow as tf

from xlnet_tf.model_directory import NonFiniteError
from xlnet_tf.model_directory import non_finite_variables

KEEP_ALL_CHECKPOINTS = 0               # max_to_keep / --max_checkpoints: keep every one


def check_loop_values(loss: float, grad_norm: float, step: int,
                      last_checkpoint: Optional[str], loss_scaled: bool = False,
                      error: type = NonFiniteError) -> None:
  """At the end of a loop: raises `error` if its mean loss or gradient norm is NaN or
  infinite, naming the step and the last good checkpoint. With loss scaling (float16) an
  overflowing gradient is normal (the optimizer skips that step), so only the loss counts."""
  if np.isfinite(loss) and (loss_scaled or np.isfinite(grad_norm)):
    return
  what = (f"the loss became {loss}" if not np.isfinite(loss) else
          f"the gradient norm became {grad_norm} (loss {loss:.4f})")
  raise error(f"{what} in the steps before step {step}; training stopped without writing a "
              f"checkpoint. The last good checkpoint is "
              f"{last_checkpoint or 'none (none was written yet)'}. Lower --learning_rate, "
              f"raise --warmup_steps, check the data, or use --precision=float32")


def loop_steps(steps_per_loop: int, save_steps: int) -> Callable[[int], int]:
  """orbit's `steps_per_loop` as a function of the step: loops end at multiples of
  `save_steps`, so checkpoints can be written exactly there."""
  def steps(step: int) -> int:
    return int(min(steps_per_loop, save_steps - int(step) % save_steps))
  return steps


class GuardedCheckpointManager(tf.train.CheckpointManager):
  """A CheckpointManager that saves at multiples of `save_steps` and only finite values.

  Args:
    checkpoint, directory, max_to_keep, step_counter: as for `tf.train.CheckpointManager`
      (max_to_keep KEEP_ALL_CHECKPOINTS, 0: every checkpoint is kept).
    save_steps: the interval; `save(check_interval=True)` writes only when the step is a
      multiple of it, `save(check_interval=False)` (end of a run) always.
    variables: returns the variables to check before a save (default: the checkpoint's
      model and optimizer, as found by `tf.train.Checkpoint`'s attributes).
  """

  def __init__(self, checkpoint: tf.train.Checkpoint, directory: str, max_to_keep: int,
               step_counter: tf.Variable, save_steps: int,
               variables: Optional[Callable[[], Sequence[tf.Variable]]] = None):
    if save_steps < 1:
      raise ValueError(f"save_steps must be >= 1, got {save_steps}")
    super().__init__(checkpoint, directory,
                     max_to_keep=None if max_to_keep == KEEP_ALL_CHECKPOINTS else max_to_keep,
                     step_counter=step_counter, checkpoint_interval=save_steps)
    self.save_steps = save_steps
    self._variables = variables

  def save(self, checkpoint_number=None, check_interval=True, options=None):
    step = int(self._step_counter.numpy())
    if check_interval and step % self.save_steps:
      return None
    if self.latest_checkpoint and self.latest_checkpoint.endswith(f"-{step}"):
      return None                                       # this step is saved already
    variables = self._variables() if self._variables else []
    bad = non_finite_variables(variables)
    if bad:
      raise NonFiniteError(
          f"step {step}: {len(bad)} variable(s) hold NaN or infinite values (e.g. "
          f"{', '.join(bad[:3])}); no checkpoint was written. The last good checkpoint is "
          f"{self.latest_checkpoint or 'none (the run had written none yet)'}. Lower the "
          f"learning rate or raise the warmup, check the data, or use float32")
    return super().save(checkpoint_number=step, check_interval=False, options=options)
