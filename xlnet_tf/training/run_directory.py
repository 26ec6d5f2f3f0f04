"""A model directory belongs to one run: its lock and the settings that define the run.

`open_run` is called by every trainer before it builds anything:
1. the directory must be usable for output (`paths.check_output_dir`);
2. it is locked for this process (`paths.DirectoryLock`: a second run into it is refused,
   a dead run's stale lock is taken over);
3. the settings that define the run (model config, data, optimizer, seed, ...) are
   compared with `run_settings.json` in the directory. A rerun with the same settings
   resumes; with other settings it is refused with the list of what differs, as long as
   the directory holds anything of the old run (a checkpoint or a final model). The first
   run records them.

Settings that do not change the numbers (loop length, checkpoint interval, where exports
go, when to stop) are not part of a run's settings and may change between reruns.

  >>> lock = open_run("runs/sst2", "run_classifier", {"learning_rate": 2e-5, ...},
  ...                 has_results=lambda: tf.train.latest_checkpoint("runs/sst2"))
"""

import os
from typing import Any, Callable, Dict, List, Optional

from absl import logging
import tensorflow as tf

from xlnet_tf import paths
from xlnet_tf import settings_record
from xlnet_tf.model_directory import NonFiniteError

SETTINGS_FILE = "run_settings.json"


class RunSettingsError(settings_record.SettingsMismatch):
  """The directory holds a run with other settings."""


# What stops a run for a reason the user can act on: the entry points print the message
# alone, without a traceback.
RUN_STOPPED = (settings_record.SettingsMismatch, paths.DirectoryLockedError, NonFiniteError)

_NEEDS_SAME = "rerunning into it resumes that run, which needs the same settings"
_NEW_RUN = "Use a new --model_dir for a new run, or the recorded settings to resume."


def record_settings(model_dir: str, settings: Dict[str, Any], has_results: bool,
                    defaults: Optional[Dict[str, Any]] = None) -> None:
  """Records `settings` in `model_dir`, or raises `RunSettingsError` listing how they
  differ from the recorded ones (`settings_record.differences` with `defaults`) when the
  directory holds results of that other run."""
  path = os.path.join(model_dir, SETTINGS_FILE)
  recorded = settings_record.read(path)
  if recorded is not None:
    differences = settings_record.differences(recorded, settings, defaults)
    if not differences:
      return
    if has_results:
      raise settings_record.mismatch(
          path, differences, f"{model_dir} holds a run with other settings", _NEW_RUN,
          needs=_NEEDS_SAME, error=RunSettingsError)
    logging.info("%s: no checkpoint of the earlier run; recording the new settings",
                 model_dir)
  elif has_results:
    logging.warning("%s has checkpoints but no %s (written by an older version): the "
                    "settings cannot be compared; recording them now", model_dir,
                    SETTINGS_FILE)
  tf.io.gfile.makedirs(model_dir)
  settings_record.write(path, settings)


def temporaries(model_dir: str) -> List[str]:
  """Glob patterns of the temporary names a run writes in `model_dir` (the run holds its
  lock, so they are its own): its writers' `*.partial*` files and directories and
  TensorFlow's `*_temp` checkpoint directories, there and one level below (best/, final/,
  features/). `paths.reporting_disk_full` removes them when the disk fills up."""
  return [os.path.join(model_dir, *below, name)
          for below in ((), ("*",)) for name in ("*.partial*", "*_temp")]


def check_model_settings(model_dir: str, settings: Dict[str, Any], purpose: str) -> None:
  """Before `purpose` (e.g. "evaluating") reads a run's checkpoint: raises
  `RunSettingsError` listing how `settings` (those that shape the model) differ from the
  ones `model_dir` records; settings only one side has are not compared."""
  path = os.path.join(model_dir, SETTINGS_FILE)
  recorded = settings_record.read(path)
  if recorded is None:
    return
  differences = settings_record.differences(recorded, settings, common_only=True)
  if differences:
    raise settings_record.mismatch(
        path, differences, f"{model_dir} holds a run with other settings",
        "Give the recorded settings (MODEL_DIR/params.yaml) or another --model_dir.",
        needs=f"{purpose} reads its checkpoint, which needs the model that run built",
        error=RunSettingsError)


def open_run(model_dir: str, purpose: str, settings: Dict[str, Any],
             has_results: Callable[[], Any], flag: str = "--model_dir",
             defaults: Optional[Dict[str, Any]] = None) -> paths.DirectoryLock:
  """Checks, locks and claims `model_dir` for a run (see the module docstring); returns
  the held lock (released at exit, or by the caller)."""
  paths.check_output_dir(model_dir, flag)
  lock = paths.DirectoryLock(model_dir, purpose).acquire()
  try:
    record_settings(model_dir, settings, bool(has_results()), defaults)
  except BaseException:
    lock.release()
    raise
  return lock
