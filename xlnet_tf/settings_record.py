"""What defines a thing, recorded beside it and compared before it is reused: the one home
of that idiom (run directories, fold runs, the demo's stages, record shards, feature
caches, embedding stores).

A thing (a run directory, a cache, a stage's output) is made with settings; they are
recorded in a JSON file beside it (`write`, whole, sorted keys). Before the thing is reused
its recorded settings are compared with the current ones (`check`): the same, it is reused;
different, `SettingsMismatch` lists every setting that differs, "key: A recorded, B now"
(nested settings by their dotted keys), and says what to do; nothing is deleted or
overwritten. Settings added after a thing was recorded compare as the values the thing was
made with (`defaults`).

  >>> if settings_record.check(path, settings, subject="runs/x holds a run",
  ...                          remedy="Give another --work_dir."):
  ...   reuse()
  ... else:
  ...   make(); settings_record.write(path, settings)

Pure Python (no TensorFlow import): the preprocessing tools use it too.
"""

import json
from typing import Any, Dict, List, Optional, Type

from xlnet_tf import paths
from xlnet_tf.data import storage


class SettingsMismatch(ValueError):
  """The recorded settings of a thing differ from the current ones (the message lists
  them)."""


def normalised(settings: Any) -> Any:
  """JSON's view of the settings (tuples become lists, keys strings, anything else its
  str), the form they are recorded and compared in."""
  return json.loads(json.dumps(settings, sort_keys=True, default=str))


def _flatten(value: Any, prefix: str = "") -> Dict[str, Any]:
  if isinstance(value, dict):
    flat = {}
    for key, item in value.items():
      flat.update(_flatten(item, f"{prefix}{key}."))
    return flat
  return {prefix[:-1]: value}


def differences(recorded: Any, current: Any,
                defaults: Optional[Dict[str, Any]] = None, *,
                recorded_name: str = "in the directory", current_name: str = "now",
                common_only: bool = False) -> List[str]:
  """Lines "key: A <recorded_name>, B <current_name>" for every setting (dotted key) that
  differs. `defaults` ({dotted key: value}): what a record that lacks a setting (made before
  it existed) was made with. `common_only`: compare only the keys both sides have."""
  old, new = _flatten(normalised(recorded)), _flatten(normalised(current))
  for key, value in normalised(defaults or {}).items():
    if key not in old and key in new:
      old[key] = value
  keys = set(old) & set(new) if common_only else set(old) | set(new)
  return [f"{key}: {old.get(key, '<absent>')!r} {recorded_name}, "
          f"{new.get(key, '<absent>')!r} {current_name}"
          for key in sorted(keys) if old.get(key, "<absent>") != new.get(key, "<absent>")]


def read(path: str) -> Optional[Any]:
  """The settings recorded at `path` (None when there is no record); ValueError naming the
  file when it is not JSON."""
  if not storage.exists(path):
    return None
  with storage.open_file(path) as f:
    text = f.read()
  try:
    return json.loads(text)
  except json.JSONDecodeError as e:
    raise ValueError(f"{path}: not valid JSON ({e}); it records the settings of what lies "
                     f"beside it") from None


def write(path: str, settings: Any) -> None:
  """Records `settings` at `path` (whole: `paths.write_json`; sorted keys)."""
  paths.write_json(path, normalised(settings), sort_keys=True)


def mismatch(path: str, lines: List[str], subject: str, remedy: str, needs: str = "",
             error: Type[SettingsMismatch] = SettingsMismatch) -> SettingsMismatch:
  """The error (of class `error`) of settings that differ from the record at `path`:
  "{subject} ({path}){; needs}. What differs:" and the `lines`, then `remedy`."""
  return error(f"{subject} ({path})" + (f"; {needs}" if needs else "") +
               ". What differs:\n  " + "\n  ".join(lines) + f"\n{remedy}")


def check(path: str, settings: Any, *, subject: str, remedy: str, needs: str = "",
          defaults: Optional[Dict[str, Any]] = None, field: Optional[str] = None,
          common_only: bool = False, recorded_name: str = "recorded",
          current_name: str = "now") -> bool:
  """Whether the thing recorded at `path` was made with `settings` (reuse it); False when
  nothing is recorded there; `SettingsMismatch` listing what differs otherwise (see
  `mismatch`). `field`: the settings are that field of a record that holds more;
  `common_only`: the record holds more keys than the settings (a cache's sidecar: its
  settings and what was made), and only the keys both have are compared."""
  recorded = read(path)
  if recorded is None:
    return False
  if field is not None:
    recorded = recorded.get(field)
  lines = differences(recorded, settings, defaults, recorded_name=recorded_name,
                      current_name=current_name, common_only=common_only)
  if lines:
    raise mismatch(path, lines, subject, remedy, needs)
  return True
