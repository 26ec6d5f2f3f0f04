"""Checks on the paths a tool reads and writes, and the lock on a directory a run writes.

Every tool checks its output locations before it does any work (`check_output_dir`,
`check_output_file`), so a typo costs a second, not an hour of training followed by a raw
OS traceback. A disk that fills up during the work ends it with one line, "no space left
on DEVICE while writing FILE", after removing the run's temporary files
(`reporting_disk_full`, around each tool's work). A directory that a run writes (a model
directory, a record directory) is held by one run at a time (`DirectoryLock`): a second
run into it is refused with the first one's pid, host and command; the lock of a process
that died (kill -9, a crash) is recognised as stale and taken over with a warning. Likewise
the temporary directory an export is built in (`partial_path`) that a killed process left
is removed by the next export to that path (`remove_stale_partials`).

Pure Python (no TensorFlow import): the preprocessing tools use it too.

  >>> check_output_dir("runs/sst2", "--model_dir")
  >>> with DirectoryLock("runs/sst2", purpose="run_classifier"):
  ...   train()
"""

import atexit
import contextlib
import errno
import glob
import itertools
import json
import os
import re
import shutil
import socket
import sys
import tempfile
import time
from typing import Any, Dict, Iterator, List, Optional, Sequence

from absl import logging

from xlnet_tf.data import storage

LOCK_NAME = ".lock"
_HELD: Dict[str, int] = {}            # lock path -> how many times this process holds it


is_url = storage.is_url


# ---- inputs --------------------------------------------------------------------------------

def glob_hint(pattern: str) -> str:
  """A sentence to add when `pattern` matched nothing and has glob brackets in it ("" when
  it has none): brackets are glob syntax, how to write them literally, and whether a file
  of exactly that name exists."""
  if "[" not in pattern and "]" not in pattern:
    return ""
  literal = pattern.replace("[", "[[]")
  exists = not is_url(pattern) and os.path.exists(pattern)
  return (" Note: '[' and ']' are glob syntax ('[ab]' matches one character a or b), so "
          + (f"the file {pattern} exists but " if exists else "a path with literal brackets ")
          + f"matches nothing as written; write '[' as '[[]' ({literal!r}) or rename the "
          f"file")


def check_input_path(path: Optional[str], flag: str, kind: str = "path") -> None:
  """Raises FileNotFoundError `"{flag}: {path} does not exist"` for a missing local path."""
  if path and not is_url(path) and not os.path.exists(path):
    raise FileNotFoundError(f"{flag}: {path} does not exist (expected a {kind})")


# ---- outputs -------------------------------------------------------------------------------

def _nearest_existing(path: str) -> str:
  current = os.path.abspath(path)
  while not os.path.exists(current):
    parent = os.path.dirname(current)
    if parent == current:
      break
    current = parent
  return current


def _check_creatable(path: str, flag: str, target: Optional[str] = None) -> None:
  """`path` (absent or a directory) can be created and written below; messages name
  `target` (default `path`), the location the flag gave."""
  target = target or path
  ancestor = _nearest_existing(path)
  if not os.path.isdir(ancestor):
    raise NotADirectoryError(f"{flag}: {target} lies under {ancestor}, which is a file, not "
                             f"a directory")
  try:
    handle, probe = tempfile.mkstemp(prefix=".xlnet_tf-write-check-", dir=ancestor)
    os.close(handle)
    os.remove(probe)
  except OSError as e:
    reason = "read-only file system" if e.errno == errno.EROFS else e.strerror
    raise PermissionError(f"{flag}: cannot write to {target} ({ancestor}: {reason})") from None


def check_output_dir(path: Optional[str], flag: str) -> None:
  """Raises a clear error (naming `flag`) if `path` cannot be a directory we write into:
  it is a file, lies under a file, or is not writable. Creates nothing. URLs are not
  checked (their errors come from the storage system)."""
  if not path or is_url(path):
    return
  if os.path.exists(path) and not os.path.isdir(path):
    raise NotADirectoryError(f"{flag}: {path} is a file; expected a directory (or a path "
                             f"that does not exist yet)")
  _check_creatable(path, flag)


def check_output_file(path: Optional[str], flag: str) -> None:
  """Like `check_output_dir` for a file we will write (under a temporary name first, so
  its directory must be writable): `path` must not be a directory."""
  if not path or is_url(path):
    return
  if os.path.isdir(path):
    raise IsADirectoryError(f"{flag}: {path} is a directory; expected a file name")
  _check_creatable(os.path.dirname(os.path.abspath(path)), flag, target=path)


# ---- a full disk ---------------------------------------------------------------------------

_NO_SPACE = os.strerror(errno.ENOSPC)                # "No space left on device"


class DiskFullError(OSError):
  """The file system of `filename` ran out of space while it was being written; the
  message is the one line "no space left on DEVICE while writing FILE"."""

  def __init__(self, filename: str):
    super().__init__(errno.ENOSPC, f"no space left on {mount_point(filename)} while writing "
                                   f"{filename}", filename)

  def __str__(self) -> str:
    return self.strerror


def mount_point(path: str) -> str:
  """The mount point of the file system holding `path` (or the nearest existing directory
  above it): the longest mount point in /proc/mounts on the same device above it; the
  directory itself where /proc/mounts cannot be read."""
  existing = _nearest_existing(path)
  try:
    device = os.stat(existing).st_dev
    with open("/proc/mounts", encoding="utf-8") as f:
      points = [line.split()[1].replace("\\040", " ") for line in f if line.strip()]
  except OSError:
    return existing if os.path.isdir(existing) else os.path.dirname(existing)
  real = os.path.realpath(existing)
  found = "/"
  for point in points:
    above = real == point or real.startswith(point.rstrip("/") + "/")
    if above and len(point) > len(found):
      try:
        if os.stat(point).st_dev == device:
          found = point
      except OSError:
        pass
  return found


def _disk_full_file(error: BaseException) -> Optional[str]:
  """The file whose write failed for want of space, "" if the error says no space left but
  names no file, None if it is another error. Follows the chain of causes: TensorFlow's
  errors and SentencePiece's RuntimeErrors carry the OS's reason in their text."""
  seen = set()
  while error is not None and id(error) not in seen:
    seen.add(id(error))
    if isinstance(error, OSError) and error.errno == errno.ENOSPC:
      written = error.filename2 or error.filename        # a copy's: (source, destination)
      return os.fspath(written) if written else ""
    text = str(error)
    if _NO_SPACE in text:
      named = re.findall(r"(?:^|[\s'\"(])(/[^\s;:'\"]+)", text.split(_NO_SPACE)[0])
      return named[-1] if named else ""
    error = error.__cause__ or error.__context__
  return None


def check_space_left(path: str) -> None:
  """Raises OSError(ENOSPC) naming `path` if the file system holding it has no space left
  (for writers that do not report a failed write, such as SentencePiece's trainer: call it
  when what they wrote turns out incomplete)."""
  if os.statvfs(_nearest_existing(path)).f_bavail == 0:
    raise OSError(errno.ENOSPC, _NO_SPACE, path)


def _remove(path: str) -> None:
  if os.path.isdir(path) and not os.path.islink(path):
    shutil.rmtree(path, ignore_errors=True)
  else:
    with contextlib.suppress(OSError):
      os.remove(path)


@contextlib.contextmanager
def reporting_disk_full(output: str, temporaries: Sequence[str] = ()) -> Iterator[None]:
  """Around a tool's work: an error of a full disk in the block (an OSError with errno
  ENOSPC, or an error whose text has the OS's "No space left on device") removes the
  files and directories matching the glob patterns `temporaries` (the run's own temporary
  names, e.g. "OUT/*.partial*" in a directory this run holds the lock of) and becomes
  `DiskFullError` naming the file that was being written (`output`, the tool's output
  location, where the error names none). Other errors pass unchanged. Local paths only:
  on a URL the storage system's error passes unchanged."""
  try:
    yield
  except Exception as e:                                 # pylint: disable=broad-except
    filename = _disk_full_file(e)
    if filename is None or is_url(output):
      raise
    for pattern in temporaries:
      for path in glob.glob(pattern):
        _remove(path)
    raise DiskFullError(filename or output) from None


# ---- the directory lock --------------------------------------------------------------------

class DirectoryLockedError(RuntimeError):
  """Another live run holds the directory."""


def _process_start(pid: int) -> Optional[str]:
  """The start time of process `pid` in clock ticks since boot (Linux), None elsewhere:
  tells a live process from a later one that reuses a dead one's pid."""
  try:
    with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
      return f.read().rsplit(")", 1)[1].split()[19]
  except (OSError, IndexError):
    return None


def _alive(holder: Dict[str, Any]) -> bool:
  pid = int(holder.get("pid", -1))
  if pid <= 0:
    return False
  try:
    os.kill(pid, 0)
  except ProcessLookupError:
    return False
  except PermissionError:
    return True
  started = holder.get("process_start")
  return started is None or _process_start(pid) in (None, started)


class DirectoryLock:
  """An exclusive lock on `directory`: the file `directory/name` holding the owner's pid,
  host, start time and command line.

  `acquire` creates the directory if needed and the lock file atomically (O_EXCL). If the
  file exists: a holder on this host that is no longer running (killed, crashed) left a
  stale lock, which is taken over with a warning; any other holder makes `acquire` raise
  `DirectoryLockedError` naming it. `release` (also at interpreter exit) removes the file.
  On URLs (gs://) the lock is advisory: written and checked, but not atomically.

  Args:
    directory: the directory a run writes.
    purpose: what holds it, for the messages ("pretraining", "create_pretraining_data").
    name: the lock file's name (several independent tasks sharing a directory each lock
      their own name).
  """

  def __init__(self, directory: str, purpose: str, name: str = LOCK_NAME):
    self.directory = directory
    self.purpose = purpose
    self.path = os.path.join(directory if is_url(directory) else os.path.abspath(directory),
                             name)
    self._held = False

  def _record(self) -> Dict[str, Any]:
    return {"pid": os.getpid(), "host": socket.gethostname(),
            "process_start": _process_start(os.getpid()),
            "started": time.strftime("%Y-%m-%d %H:%M:%S"), "purpose": self.purpose,
            "command": " ".join(sys.argv)}

  def _read_holder(self) -> Dict[str, Any]:
    try:
      with storage.open_file(self.path, "r") as f:
        return json.loads(f.read())
    except (OSError, ValueError):
      return {}

  def acquire(self) -> "DirectoryLock":
    if _HELD.get(self.path):                    # this process holds it already: nested use
      _HELD[self.path] += 1
      self._held = True
      return self
    storage.makedirs(self.directory)
    for _ in range(3):
      if self._try_create():
        self._held = True
        _HELD[self.path] = 1
        atexit.register(self.release)
        return self
      holder = self._read_holder()
      if not holder:                   # being written right now, or unreadable: look again
        time.sleep(0.2)
        holder = self._read_holder()
      same_host = holder.get("host") == socket.gethostname()
      if holder and (not same_host or _alive(holder)):
        raise DirectoryLockedError(
            f"{self.directory} is in use by another run: pid {holder.get('pid')} on host "
            f"{holder.get('host')} ({holder.get('purpose')}, started {holder.get('started')}: "
            f"{holder.get('command')}). One directory takes one run at a time: wait for "
            f"it to finish or use another directory. If that process no longer exists, "
            f"delete {self.path}")
      if not holder and not self._stale_unreadable():
        continue
      logging.warning("%s: taking over the stale lock of pid %s on %s (%s, started %s), "
                      "which is no longer running", self.directory, holder.get("pid"),
                      holder.get("host"), holder.get("purpose"), holder.get("started"))
      self._remove_stale()
    raise DirectoryLockedError(f"{self.path}: could not take the lock (another run keeps "
                               f"taking it)")

  def _stale_unreadable(self) -> bool:
    """An empty/corrupt lock file older than a few seconds is a dead writer's."""
    try:
      return time.time() - os.path.getmtime(self.path) > 5
    except OSError:
      return False

  def _try_create(self) -> bool:
    record = json.dumps(self._record()) + "\n"
    if is_url(self.path):
      if storage.exists(self.path):
        return False
      with storage.open_file(self.path, "w") as f:
        f.write(record)
      return True
    try:
      handle = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
      return False
    with os.fdopen(handle, "w") as f:
      f.write(record)
    return True

  def _remove_stale(self) -> None:
    if is_url(self.path):
      storage.remove(self.path)
      return
    # Two runs may find the same stale lock: only one rename succeeds.
    aside = f"{self.path}.stale-{os.getpid()}"
    try:
      os.rename(self.path, aside)
      os.remove(aside)
    except FileNotFoundError:
      pass

  def release(self) -> None:
    if not self._held:
      return
    self._held = False
    _HELD[self.path] = _HELD.get(self.path, 1) - 1
    if _HELD[self.path] > 0:
      return
    del _HELD[self.path]
    holder = self._read_holder()
    if holder.get("pid") == os.getpid():
      try:
        storage.remove(self.path)
      except OSError:
        pass

  def __enter__(self) -> "DirectoryLock":
    return self.acquire()

  def __exit__(self, *exc) -> None:
    self.release()


# ---- writing an output whole: the one atomic writer -----------------------------------------

_WRITES = itertools.count()          # this process's writes: two never share a temporary name


def partial_path(path: str) -> str:
  """The temporary name this process writes `path` (a file or a directory) under before
  renaming it into place: `<path>.partial-<pid>-<n>@<host>`, n counting this process's
  writes. The one scheme of the package: `remove_stale_partials` recognises it (and the
  older `<path>.partial-<pid>@<host>`)."""
  return (f"{path.rstrip('/')}.partial-{os.getpid()}-{next(_WRITES)}@"
          f"{socket.gethostname()}")


@contextlib.contextmanager
def atomic_output(path: str, replace: bool = False) -> Iterator[str]:
  """Yields the temporary name (`partial_path`) to write the file or directory `path`
  under; when the block ends, gives it the name `path`, and when the block raises, removes
  what was written. A file replaces an older one; a directory takes the place of an empty
  one only (the OS refuses one with contents), unless `replace`, when it replaces an older
  one whole (`replace_directory`). The temporaries of `path` that dead processes left are removed
  first.

    >>> with atomic_output("out/results.json") as partial:
    ...   write(partial)
  """
  path = path.rstrip("/")
  remove_stale_partials(path)
  partial = partial_path(path)
  try:
    yield partial
    if replace:
      replace_directory(partial, path)
    else:
      storage.rename(partial, path)
  except BaseException:
    if storage.exists(partial):
      if storage.isdir(partial):
        storage.remove_tree(partial)
      else:
        storage.remove(partial)
    raise


def replace_directory(new: str, directory: str) -> str:
  """Gives the complete directory `new` the name `directory`: an older `directory` is
  renamed aside (`<directory>.old-<pid>@<host>`) first and removed only once `new` has its
  name (if `new` cannot take it, the older one gets its name back), so a process killed in
  between leaves both whole. Returns `directory`."""
  old = f"{directory}.old-{os.getpid()}@{socket.gethostname()}"
  if not storage.exists(directory):
    storage.rename(new, directory)
    return directory
  storage.rename(directory, old)
  try:
    storage.rename(new, directory)
  except BaseException:
    storage.rename(old, directory)
    raise
  storage.remove_tree(old)
  return directory


def write_figure(path: str, figure: Any) -> None:
  """Saves the matplotlib `figure` to `path` whole, in the format its extension names."""
  with atomic_output(path) as partial:
    figure.savefig(partial, format=os.path.splitext(path)[1].lstrip(".") or "png")


def write_bytes(path: str, data: bytes) -> None:
  """Writes `data` to `path` whole (`atomic_output`)."""
  with atomic_output(path) as partial:
    with storage.open_file(partial, "wb") as f:
      f.write(data)


def write_text(path: str, text: str) -> None:
  """Writes `text` (UTF-8) to `path` whole (`atomic_output`)."""
  write_bytes(path, text.encode("utf-8"))


def write_json(path: str, values: Any, **dumps: Any) -> None:
  """Writes `values` as JSON (`json.dumps(values, **dumps)` and a newline; default indent
  2) to `path` whole (`atomic_output`)."""
  dumps.setdefault("indent", 2)
  write_text(path, json.dumps(values, **dumps) + "\n")


# ---- temporaries of dead processes ---------------------------------------------------------

def remove_stale_partials(path: str) -> List[str]:
  """Removes the `partial_path` files and directories of `path` (and the temporaries nested
  under their names) left by processes of this host that are no longer running (killed
  during the write), with a warning naming each; a live process's, another host's or a
  URL's is never touched. Returns the paths removed."""
  path = path.rstrip("/")
  if is_url(path):
    return []
  parent, base = os.path.split(os.path.abspath(path))
  try:
    names = sorted(os.listdir(parent))
  except OSError:
    return []
  pattern = re.compile(re.escape(base) + r"\.partial-(\d+)(?:-\d+)?@(.+?)(\.partial-.*)?")
  host, removed = socket.gethostname(), []
  for name in names:
    match = pattern.fullmatch(name)
    if not match or match.group(2) != host or _alive({"pid": int(match.group(1))}):
      continue
    stale = os.path.join(parent, name)
    if os.path.isdir(stale) and not os.path.islink(stale):
      shutil.rmtree(stale, ignore_errors=True)       # another run may be removing it too
    elif os.path.lexists(stale):
      with contextlib.suppress(FileNotFoundError):
        os.remove(stale)
    logging.warning("removed %s: the unfinished output of pid %s on %s, which is no longer "
                    "running", stale, match.group(1), host)
    removed.append(stale)
  return removed
