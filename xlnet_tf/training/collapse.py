"""Collapse: a fine-tuning run whose training loss has not left the loss of predicting the
labels' prior, noticed at a configurable step, and restarted with the next seed.

A pretrained start sometimes fine-tunes to the majority class: the training loss stays at
ln C (or the majority-class loss) where the same data from random weights learns.

Reference loss (`reference_loss`, from the training labels, before training):
  classification  H(prior) = -sum_c p_c ln p_c     (ln C when the classes are balanced)
  regression      the variance of the labels        (the squared error of their mean)

The check (`Watch`, an orbit train action): the mean training loss of the WINDOW, the last
max(1, check_step // 5) steps up to `check_step`, "has not left" the reference when it is
above THRESHOLD x reference (0.98: the collapsed runs of issue 28 sat at 0.988-1.001 x
ln 2 at steps 200-400; 18 out-of-domain runs that learned were at 0.83-0.98 at step 200,
median 0.90, the slowest at 0.977: a close call, hence a warning and opt-in restarts).
Loops end at both ends of the window (`loop_steps`), so the window is the same steps
whatever --iterations is. A collapse is one `logging.warning` line naming the likely
causes (`warning_line`).

Restarts (`restarts` > 0): a collapsed attempt with restarts left is abandoned: its
checkpoints (and best/) move to MODEL_DIR/abandoned/attempt-<n>/ and the run starts again
from the initial weights with the attempt's seed, seed + attempt (the head's
initialisation, dropout and data order). MODEL_DIR/collapse.json (RECORD_FILE) is the
attempts' state: the current attempt, the abandoned ones (seed, step, loss), the losses
of the window's loops so far and the check's outcome. Every change to it is written
(temporary name, then rename) before the checkpoint of the loop that made it, and the
abandoned checkpoints are moved only after the record says so ("moving"), so a run killed
at any moment and run again with the same command resumes the same attempt at the same
place: the same final weights as a run never interrupted. After the last restart a
collapsed run finishes, warned. With restarts 0 the check only warns and writes nothing.
"""

import json
import os
from typing import Any, Callable, Dict, List, Optional, Sequence

from absl import logging
import numpy as np
import tensorflow as tf

from xlnet_tf import paths

RECORD_FILE = "collapse.json"
ABANDONED_DIR = "abandoned"
THRESHOLD = 0.98                 # "has not left" the reference: loss > THRESHOLD x reference
DEFAULT_CHECK_STEPS = 200        # the check step by default: min(200, train_steps // 2)
_MOVED = ("checkpoint", "best")  # besides ckpt-*: what an abandoned attempt leaves


class Restart(Exception):
  """The attempt collapsed and a restart is left: train the next attempt."""


def check_step(collapse_check_steps: Optional[int], train_steps: int) -> int:
  """The step of the check: `collapse_check_steps`, None for min(200, train_steps // 2);
  0 is off."""
  if collapse_check_steps is None:
    return min(DEFAULT_CHECK_STEPS, train_steps // 2)
  return collapse_check_steps


def reference_loss(labels: Sequence[float], is_regression: bool) -> Dict[str, Any]:
  """{"loss": the loss of predicting the labels' prior, "name" and "note": what it is,
  for the warning} (see the module docstring)."""
  labels = np.asarray(labels, np.float64)
  if labels.size == 0:
    raise ValueError("the collapse check needs training labels; the training split has none")
  if is_regression:
    return {"loss": float(np.var(labels)), "name": "the labels' variance",
            "note": "the loss of predicting their mean"}
  _, counts = np.unique(labels, return_counts=True)
  prior = counts / counts.sum()
  loss = float(-np.sum(prior * np.log(prior)))
  balanced = len(counts) > 1 and counts.min() == counts.max()
  return {"loss": loss, "name": "the majority-class loss",
          "note": f"ln {len(counts)}" if balanced else "the entropy of the label prior"}


def warning_line(loss: float, step: int, reference: Dict[str, Any], restarts: int,
                 next_seed: Optional[int]) -> str:
  """The one line of a collapse (`next_seed`: the seed of the restart, None: none left)."""
  if next_seed is not None:
    then = f"restarting with seed {next_seed}"
  elif restarts:
    then = f"no restart left (--restarts={restarts}): finishing this attempt"
  else:
    then = "--restarts=N retries with the next seed"
  return (f"fine-tuning collapsed: training loss {loss:.3f} at step {step} has not left "
          f"{reference['name']} {reference['loss']:.3f} ({reference['note']}); likely "
          f"causes: a pretrained model that learnt no context (its held-out pretraining "
          f"loss near the unigram entropy of its targets: docs/small-models.md), a "
          f"learning rate too small or too large, too few steps, labels the text does not "
          f"predict; {then}")


class Watch:
  """The collapse check of a run in `model_dir` and its attempts (module docstring).

    >>> watch = Watch(model_dir, reference, step=200, restarts=1, seed=0)
    >>> options = dataclasses.replace(options, attempt=watch.attempt)   # seed + attempt
    >>> try: train_model(..., collapse_watch=watch)
    ... except Restart: watch.abandon()                                 # the next attempt
  """

  def __init__(self, model_dir: str, reference: Dict[str, Any], step: int, restarts: int,
               seed: int):
    self.model_dir, self.reference, self.step, self.restarts = model_dir, reference, step, restarts
    self.window = max(1, step // 5)
    self.base_seed = seed
    self.warnings: List[str] = []
    self.record = {"attempt": 0, "abandoned": [], "loops": [], "check": None,
                   "moving": False}
    path = os.path.join(model_dir, RECORD_FILE)
    if restarts and tf.io.gfile.exists(path):
      with tf.io.gfile.GFile(path) as f:
        self.record = json.loads(f.read())
      if self.record["moving"]:            # killed while moving the abandoned attempt
        self.abandon()
    self._last_step, self._step_fn = 0, lambda: 0

  @property
  def attempt(self) -> int:
    return self.record["attempt"]

  def loop_steps(self, steps: Callable[[int], int]) -> Callable[[int], int]:
    """orbit's `steps_per_loop` function `steps`; with restarts, loops also end at both
    ends of the window, so its loss is the same steps' whatever --iterations is."""
    if not self.restarts:
      return steps
    ends = (self.step - self.window, self.step)

    def limited(step: int) -> int:
      return min([steps(step)] + [end - int(step) for end in ends if end > int(step)])
    return limited

  def begin(self, start_step: int, step_fn: Callable[[], int]) -> None:
    """Before training from `start_step` (`step_fn` gives the step after a loop): the loops
    a killed run recorded beyond its last checkpoint are dropped (they run again)."""
    self._last_step, self._step_fn = start_step, step_fn
    self.record["loops"] = [loop for loop in self.record["loops"] if loop[0] <= start_step]

  def __call__(self, output: Dict[str, Any]) -> None:
    """The train action (before the loop's checkpoint): records the loops of the window;
    at the end of the loop that reaches the check step, warns on a collapse and raises
    `Restart` while restarts are left. Without restarts the loss checked is that loop's."""
    end, start = self._step_fn(), self._last_step
    self._last_step = end
    if self.record["check"] is not None:
      return
    loops = self.record["loops"]
    in_window = self.restarts and self.step - self.window < end <= self.step
    if in_window:
      loops.append([end, end - start, float(output["loss"])])
    if not start < self.step <= end:                  # not the loop that reaches the step
      if in_window:
        self._write()
      return
    loss = (sum(steps * value for _, steps, value in loops) / sum(s for _, s, _ in loops)
            if self.restarts else float(output["loss"]))
    collapsed = loss > THRESHOLD * self.reference["loss"]
    restarting = collapsed and self.attempt < self.restarts
    self.record["check"] = {"step": end, "loss": loss, "collapsed": collapsed}
    if collapsed:
      line = warning_line(loss, end, self.reference, self.restarts,
                          self.seed + 1 if restarting else None)
      logging.warning("%s", line)
      self.warnings.append(line)
    if restarting:
      self.record["abandoned"].append({"attempt": self.attempt, "seed": self.seed,
                                       "step": end, "loss": loss})
      self.record.update(attempt=self.attempt + 1, loops=[], check=None, moving=True)
    self._write()
    if restarting:
      raise Restart()

  @property
  def seed(self) -> int:
    """The seed of the current attempt."""
    return self.base_seed + self.attempt

  def abandon(self) -> None:
    """Moves the abandoned attempt's checkpoints and best/ to
    MODEL_DIR/abandoned/attempt-<n>/ (after the record says so; again after a kill)."""
    target = os.path.join(self.model_dir, ABANDONED_DIR,
                          f"attempt-{self.record['abandoned'][-1]['attempt']}")
    tf.io.gfile.makedirs(target)
    for name in tf.io.gfile.listdir(self.model_dir):
      name = name.rstrip("/")
      if name.startswith("ckpt-") or name in _MOVED:
        tf.io.gfile.rename(os.path.join(self.model_dir, name), os.path.join(target, name),
                           overwrite=True)
    self.record["moving"] = False
    self._write()
    logging.info("abandoned attempt %d (moved to %s); attempt %d with seed %d",
                 self.attempt - 1, target, self.attempt, self.seed)

  def _write(self) -> None:
    if not self.restarts:
      return
    paths.write_json(os.path.join(self.model_dir, RECORD_FILE), self.record)

  def card_details(self) -> Dict[str, str]:
    """The model card's lines: the seed used and the abandoned attempts with their losses."""
    details = {"Fine-tuning seed": f"{self.seed} (attempt {self.attempt + 1} of at most "
                                   f"{self.restarts + 1})"}
    if self.record["abandoned"]:
      details["Abandoned attempts (collapsed)"] = "; ".join(
          f"seed {a['seed']}: training loss {a['loss']:.4f} at step {a['step']}"
          for a in self.record["abandoned"]) + (
              f" (reference: {self.reference['name']} {self.reference['loss']:.4f})")
    return details


def has_restarted(model_dir: str) -> bool:
  """Whether `model_dir` holds an abandoned attempt (its results, for `open_run`)."""
  path = os.path.join(model_dir, RECORD_FILE)
  if not tf.io.gfile.exists(path):
    return False
  with tf.io.gfile.GFile(path) as f:
    return json.loads(f.read())["attempt"] > 0


def check_options(collapse_check_steps: Optional[int], restarts: int,
                  train_steps: int) -> None:
  """ValueError naming the flag for an impossible check step or number of restarts."""
  if collapse_check_steps is not None and collapse_check_steps < 0:
    raise ValueError(f"--collapse_check_steps must be >= 0 (0: no check), got "
                     f"{collapse_check_steps}")
  if collapse_check_steps is not None and collapse_check_steps > train_steps:
    raise ValueError(f"--collapse_check_steps ({collapse_check_steps}) must be <= "
                     f"--train_steps ({train_steps})")
  if restarts < 0:
    raise ValueError(f"--restarts must be >= 0, got {restarts}")
  if restarts and not check_step(collapse_check_steps, train_steps):
    raise ValueError(f"--restarts={restarts} needs the collapse check, which is off "
                     f"(--collapse_check_steps 0, or --train_steps < 2)")
