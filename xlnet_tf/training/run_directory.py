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

import json
import os
from typing import Any, Callable, Dict, List, Optional

from absl import logging
import tensorflow as tf

from xlnet_tf import paths
from xlnet_tf.model_directory import NonFiniteError

SETTINGS_FILE = "run_settings.json"


class RunSettingsError(ValueError):
  """The directory holds a run with other settings."""


# What stops a run for a reason the user can act on: the entry points print the message
# alone, without a traceback.
RUN_STOPPED = (RunSettingsError, paths.DirectoryLockedError, NonFiniteError)


def _flatten(value: Any, prefix: str = "") -> Dict[str, Any]:
  if isinstance(value, dict):
    flat = {}
    for key, item in value.items():
      flat.update(_flatten(item, f"{prefix}{key}."))
    return flat
  return {prefix[:-1]: value}


def _normalised(settings: Dict[str, Any]) -> Dict[str, Any]:
  """JSON's view of the settings (tuples become lists, keys strings)."""
  return json.loads(json.dumps(settings, sort_keys=True, default=str))


def settings_differences(recorded: Dict[str, Any], current: Dict[str, Any],
                         defaults: Optional[Dict[str, Any]] = None) -> List[str]:
  """Lines "key: A in the directory, B now" for every setting that differs. `defaults`
  ({flattened key: value}) are what a directory that does not record a setting ran with
  (it was written before the setting existed): absent there, the setting compares as its
  default."""
  old, new = _flatten(_normalised(recorded)), _flatten(_normalised(current))
  for key, value in _normalised(defaults or {}).items():
    if key not in old and key in new:
      old[key] = value
  lines = []
  for key in sorted(set(old) | set(new)):
    if old.get(key, "<absent>") != new.get(key, "<absent>"):
      lines.append(f"{key}: {old.get(key, '<absent>')!r} in the directory, "
                   f"{new.get(key, '<absent>')!r} now")
  return lines


def check_settings(model_dir: str, settings: Dict[str, Any], has_results: bool,
                   defaults: Optional[Dict[str, Any]] = None) -> None:
  """Records `settings` in `model_dir`, or raises `RunSettingsError` listing how they
  differ from the recorded ones (`settings_differences` with `defaults`) when the
  directory holds results of that other run."""
  path = os.path.join(model_dir, SETTINGS_FILE)
  if tf.io.gfile.exists(path):
    with tf.io.gfile.GFile(path) as f:
      recorded = json.loads(f.read())
    differences = settings_differences(recorded, settings, defaults)
    if not differences:
      return
    if has_results:
      raise RunSettingsError(
          f"{model_dir} holds a run with other settings ({path}); rerunning into it resumes "
          f"that run, which needs the same settings. What differs:\n  " +
          "\n  ".join(differences) +
          "\nUse a new --model_dir for a new run, or the recorded settings to resume.")
    logging.info("%s: no checkpoint of the earlier run; recording the new settings",
                 model_dir)
  elif has_results:
    logging.warning("%s has checkpoints but no %s (written by an older version): the "
                    "settings cannot be compared; recording them now", model_dir,
                    SETTINGS_FILE)
  tf.io.gfile.makedirs(model_dir)
  partial = f"{path}.partial-{os.getpid()}"
  with tf.io.gfile.GFile(partial, "w") as f:
    f.write(json.dumps(_normalised(settings), indent=2, sort_keys=True) + "\n")
  tf.io.gfile.rename(partial, path, overwrite=True)


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
  if not tf.io.gfile.exists(path):
    return
  with tf.io.gfile.GFile(path) as f:
    recorded = _flatten(_normalised(json.loads(f.read())))
  current = _flatten(_normalised(settings))
  differences = settings_differences({k: v for k, v in recorded.items() if k in current},
                                     {k: v for k, v in current.items() if k in recorded})
  if differences:
    raise RunSettingsError(
        f"{model_dir} holds a run with other settings ({path}); {purpose} reads its "
        f"checkpoint, which needs the model that run built. What differs:\n  " +
        "\n  ".join(differences) +
        "\nGive the recorded settings (MODEL_DIR/params.yaml) or another --model_dir.")


def open_run(model_dir: str, purpose: str, settings: Dict[str, Any],
             has_results: Callable[[], Any], flag: str = "--model_dir",
             defaults: Optional[Dict[str, Any]] = None) -> paths.DirectoryLock:
  """Checks, locks and claims `model_dir` for a run (see the module docstring); returns
  the held lock (released at exit, or by the caller)."""
  paths.check_output_dir(model_dir, flag)
  lock = paths.DirectoryLock(model_dir, purpose).acquire()
  try:
    check_settings(model_dir, settings, bool(has_results()), defaults)
  except BaseException:
    lock.release()
    raise
  return lock
