"""The one place where a model name becomes a model: presets fetched once into a local
cache, and models built from a preset or a model directory.

  >>> model = xlnet_tf.load_pretrained("xlnet_base_cased")          # encoder + LM head
  >>> clf = xlnet_tf.from_preset("xlnet_large_cased", XLNetClassifier, num_classes=2)

A preset names a released archive (its URL, the directory it unpacks to, its config). The
first use downloads the archive into the cache, verifies it, unpacks it and converts it
(`xlnet_tf.convert.importer.convert`) into our model directory layout; later uses load that
directory without touching the network or converting again. The cache is
`$XLNET_TF_CACHE` (default ~/.cache/xlnet_tf), or the `cache_dir` argument; each preset
has one entry:

  <cache>/<preset>/<archive>.zip            the archive as downloaded (or put there by
                                            you), kept: it is the source of the model
  <cache>/<preset>/<archive>.zip.partial    a download under way; the next call resumes it
  <cache>/<preset>/model/                   our layout (xlnet_config.json, model.ckpt.*,
                                            spiece.model, conversion.json, README.md)
  <cache>/<preset>/.lock                    held while the entry is being filled

Download: the bytes go to `<archive>.partial` with a progress line on stderr; a dropped
connection is resumed with an HTTP Range request (if the server answers the whole file
instead, the download restarts from its first byte; if it answers 416 with
`Content-Range: bytes */N` and N is the partial file's size, that file is complete and is
used as it is). Verification, before anything is unpacked: the archive must be a zip
whose members all pass their CRC-32, hold exactly the released files in the expected
directory, and whose xlnet_config.json equals the preset's config. What is NOT verified:
the archive's total size and a digest of its bytes. No SHA-256 (or size) of the official
archives is pinned here (none was at hand when the presets were written), so the CRC-32s
catch a damaged download but not a different archive with the released names and config:
its weights are only checked when converted (each one present with the shape the config
gives, none NaN or infinite). The download's length is checked against the server's
Content-Length. An archive that fails is never deleted: it is renamed to
`<archive>.corrupt-<time>` (unreadable or a CRC mismatch) or `<archive>.rejected-<time>`
(a valid zip of other content), and the error names the file, the new name and what was
wrong. The archive is unpacked into a temporary directory, converted into a temporary
directory that gets its card, and that one is renamed to `model/` (the unpacked copy is
removed then; the archive stays).

Without a network (connection refused, unknown host): the error names the URL and the
exact path to put the archive at; the next call verifies that file and uses it.

The presets themselves are a table (`xlnet_tf.presets`); other archives (a mirror, a model
of your own in the released layout) are added there with `register_preset(Preset(...))`.
"""

import http.client
import json
import os
import re
import shutil
import socket
import sys
import time
from typing import Optional, Tuple, Union
import urllib.error
import urllib.parse
import urllib.request
import zipfile
import zlib

from absl import logging

from xlnet_tf import model_card
from xlnet_tf import model_directory
from xlnet_tf import paths
from xlnet_tf import pretrained
from xlnet_tf import released_names
from xlnet_tf import task_kind
from xlnet_tf.tasks import all_tasks  # noqa: F401  (registers the task kinds)
from xlnet_tf.configs import RELEASED_KEYS
from xlnet_tf.convert import importer
from xlnet_tf.models.xlnet_pretrainer import XLNetPretrainer
from xlnet_tf.presets import Preset
from xlnet_tf.presets import get_preset
from xlnet_tf.presets import preset_names

CACHE_ENV = "XLNET_TF_CACHE"
DEFAULT_CACHE = os.path.join("~", ".cache", "xlnet_tf")
MODEL_DIR = "model"                       # the converted model directory of an entry
LOCK_FILE = ".lock"

# ---- errors -----------------------------------------------------------------------------------

class PresetDownloadError(ConnectionError):
  """The archive could not be downloaded; the message says where to put it by hand."""


class ArchiveError(ValueError):
  """The archive in the cache is corrupt or not the preset's; it was renamed aside."""


# ---- the cache ----------------------------------------------------------------------------

def cache_root(cache_dir: Optional[str] = None) -> str:
  """`cache_dir`, else $XLNET_TF_CACHE, else ~/.cache/xlnet_tf (absolute)."""
  root = cache_dir or os.environ.get(CACHE_ENV) or DEFAULT_CACHE
  return os.path.abspath(os.path.expanduser(root))


def entry_dir(preset: Union[str, Preset], cache_dir: Optional[str] = None) -> str:
  preset = preset if isinstance(preset, Preset) else get_preset(preset)
  return os.path.join(cache_root(cache_dir), preset.name)


def archive_path(preset: Union[str, Preset], cache_dir: Optional[str] = None) -> str:
  """Where the preset's archive is (to be) kept: put a copy there to skip the download."""
  preset = preset if isinstance(preset, Preset) else get_preset(preset)
  return os.path.join(entry_dir(preset, cache_dir), preset.archive_name)


def model_dir(name_or_directory: str, cache_dir: Optional[str] = None,
              progress: bool = True) -> str:
  """A model directory (our layout) itself, or the cached model of a preset (`resolve`).

  Raises:
    FileNotFoundError: `name_or_directory` is neither a directory nor a preset name (the
      message lists the presets).
  """
  if os.path.isdir(name_or_directory) or paths.is_url(name_or_directory):
    return name_or_directory
  if name_or_directory not in preset_names():
    raise FileNotFoundError(
        f"{name_or_directory}: neither a model directory (no such directory) nor a preset; "
        f"the known presets are {preset_names()}")
  return resolve(name_or_directory, cache_dir, progress=progress)


def resolve(preset: Union[str, Preset], cache_dir: Optional[str] = None,
            progress: bool = True, lock_timeout: float = 3 * 3600) -> str:
  """The converted model directory of `preset` in the cache, made first if needed.

  A cached `model/` is used as it is (no network, no conversion). Otherwise, holding the
  entry's lock (another process filling the same entry is waited for, up to
  `lock_timeout` seconds): the archive is downloaded unless present, verified, unpacked
  and converted.

  Raises:
    ValueError: an unknown preset name (listing the known ones).
    PresetDownloadError: the download failed (naming the URL and where to put the file).
    ArchiveError: the archive failed verification (naming it and where it was moved).
  """
  preset = preset if isinstance(preset, Preset) else get_preset(preset)
  entry = entry_dir(preset, cache_dir)
  target = os.path.join(entry, MODEL_DIR)
  archive = archive_path(preset, cache_dir)
  if os.path.isdir(target):
    _check_cached_model(preset, target, archive)
    return target
  paths.check_output_dir(entry, f"the cache entry of preset {preset.name}")
  lock = _acquire(entry, preset, lock_timeout)
  try:
    if os.path.isdir(target):            # another process made it while we waited
      _check_cached_model(preset, target, archive)
      return target
    _remove_leftovers(entry)
    if not os.path.isfile(archive):
      download(preset.url, archive, progress=progress)
    verify_archive(archive, preset)
    _unpack_and_convert(preset, archive, target)
  finally:
    lock.release()
  return target


def _check_cached_model(preset: Preset, directory: str, archive: str) -> None:
  """The cached model is the preset's (its released keys), else a ValueError naming it."""
  config = model_directory.read_config(directory)
  for key in RELEASED_KEYS:
    found, expected = getattr(config, key), getattr(preset.config, key)
    if found != expected:
      raise ValueError(
          f"{directory}: the cached model of preset {preset.name} has {key} {found!r}, the "
          f"preset {expected!r} (it was made from another archive). Move {directory} away "
          f"and call again to rebuild it from {archive}")


def _acquire(entry: str, preset: Preset, timeout: float) -> paths.DirectoryLock:
  """The entry's lock (`paths.DirectoryLock`), waiting while another live process holds
  it (a dead holder's lock is taken over by the lock itself)."""
  lock = paths.DirectoryLock(entry, purpose=f"filling the cache of preset {preset.name}",
                             name=LOCK_FILE)
  deadline, told = time.monotonic() + timeout, False
  while True:
    try:
      return lock.acquire()
    except paths.DirectoryLockedError as e:
      if time.monotonic() > deadline:
        raise paths.DirectoryLockedError(f"gave up waiting after {timeout:.0f} s: {e}") from None
      if not told:
        logging.warning("waiting for another process to fill %s: %s", entry, e)
        told = True
      time.sleep(1.0)


_UNPACKED = "unpacked"          # the archive unpacked for the conversion (a temporary)


def _remove_leftovers(entry: str) -> None:
  """Temporary directories of an unpacking or conversion that died (`paths.partial_path`
  names of the model and the unpacked archive, and the names older versions used: we hold
  the lock, so no live process owns them; they are ours, never user files)."""
  for name in (MODEL_DIR, _UNPACKED):
    paths.remove_stale_partials(os.path.join(entry, name))
  for name in os.listdir(entry):
    if name.startswith(".unpack-") or (name.startswith(".") and
                                       f"{MODEL_DIR}.converting-" in name):
      shutil.rmtree(os.path.join(entry, name), ignore_errors=True)


# ---- download ------------------------------------------------------------------------------

_OFFLINE_ERRORS = (ConnectionRefusedError, socket.gaierror, socket.herror)
# The connection broke while the body was read: resume.
_DROPPED = (http.client.IncompleteRead, ConnectionError, TimeoutError, socket.timeout,
            http.client.HTTPException)


class _Progress:
  """One line on stderr: `name: 12.3 MB / 467.0 MB (3%)` (redrawn in place on a terminal,
  every 10% otherwise)."""

  def __init__(self, name: str, enabled: bool = True, stream=None):
    self.name, self.enabled = name, enabled
    self.stream = stream or sys.stderr
    self.tty = getattr(self.stream, "isatty", lambda: False)()
    self.last_time, self.last_decile, self.last_text = 0.0, -1, None

  @staticmethod
  def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"

  def update(self, done: int, total: Optional[int], final: bool = False) -> None:
    if not self.enabled:
      return
    now = time.monotonic()
    decile = done * 10 // total if total else -1
    if not final and (now - self.last_time < 0.2 if self.tty else decile == self.last_decile):
      return
    self.last_time, self.last_decile = now, decile
    text = f"{self.name}: {self._mb(done)}"
    text += f" / {self._mb(total)} ({100 * done // total}%)" if total else " / ? MB"
    if text == self.last_text:
      return
    self.stream.write(("\r" + text) if self.tty else text + "\n")
    self.stream.flush()
    self.last_text = text

  def close(self) -> None:
    if self.enabled and self.last_text is not None and self.tty:
      self.stream.write("\n")
      self.stream.flush()


def _manual_hint(url: str, destination: str) -> str:
  partial = destination + ".partial"
  kept = (f" The {os.path.getsize(partial)} bytes downloaded so far stay in {partial}; the "
          f"next call resumes from there." if os.path.isfile(partial) else "")
  return (f"Fetch {url} by other means (e.g. on another machine) and put the file at "
          f"{destination} (exactly this path and name); the next call verifies it and "
          f"uses it.{kept}")


def _content_range(value: Optional[str]) -> Tuple[Optional[int], Optional[int]]:
  """(first byte, total) of a Content-Range header `bytes a-b/total` (None if absent)."""
  match = re.match(r"^\s*bytes\s+(\d+)-(\d+)/(\d+|\*)\s*$", value or "")
  if not match:
    return None, None
  return int(match.group(1)), None if match.group(3) == "*" else int(match.group(3))


def _unsatisfied_total(headers) -> Optional[int]:
  """The total N of a 416 answer's `Content-Range: bytes */N` (None if absent)."""
  value = headers.get("Content-Range") if headers is not None else None
  match = re.match(r"^\s*bytes\s+\*/(\d+)\s*$", value or "")
  return int(match.group(1)) if match else None


def download(url: str, destination: str, progress: bool = True, attempts: int = 5,
             timeout: float = 60.0) -> str:
  """Downloads `url` to `destination` through `destination`.partial, resuming.

  A partial file from an earlier call is resumed with `Range: bytes=<size>-`; a server that
  answers 200 (the whole file) restarts it from the first byte. A 416 answer whose
  `Content-Range: bytes */N` has N equal to the partial file's size means it is already
  complete (an earlier call stopped before renaming it): it gets its name as it is (the
  caller verifies it as any download); any other 416 restarts from the first byte. A
  connection that drops while the body is read is resumed the same way, up to `attempts`
  times. The file gets its name only when all Content-Length bytes arrived.

  Raises:
    PresetDownloadError: no connection (refused, unknown host), an HTTP error, or every
      attempt dropped; the message names the URL and where to put the file by hand.
  """
  partial = destination + ".partial"
  os.makedirs(os.path.dirname(os.path.abspath(destination)), exist_ok=True)
  bar = _Progress(os.path.basename(destination), enabled=progress)
  last_error = None
  try:
    for _ in range(attempts):
      start = os.path.getsize(partial) if os.path.isfile(partial) else 0
      request = urllib.request.Request(url, headers={"User-Agent": "xlnet_tf"})
      if start:
        request.add_header("Range", f"bytes={start}-")
      try:
        response = urllib.request.urlopen(request, timeout=timeout)  # closed below
      except urllib.error.HTTPError as e:
        if e.code == 416 and start and _unsatisfied_total(e.headers) == start:
          # Nothing after our partial file, which has the whole length: it is complete (an
          # earlier call stopped between its fsync and its rename). Verified as any file.
          logging.info("%s: %s already holds all %d bytes (HTTP 416, Content-Range "
                       "bytes */%d)", url, partial, start, start)
          bar.update(start, start, final=True)
          os.replace(partial, destination)
          return destination
        if e.code == 416 and start:      # nothing after our partial file: it is not ours
          logging.warning("%s: the server refused to resume at byte %d (HTTP 416); "
                          "restarting the download", url, start)
          open(partial, "wb").close()    # pylint: disable=consider-using-with
          last_error = e
          continue
        raise PresetDownloadError(f"downloading {url}: HTTP {e.code} {e.reason}. "
                                  f"{_manual_hint(url, destination)}") from None
      except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
        reason = getattr(e, "reason", e)
        if isinstance(reason, _OFFLINE_ERRORS) or not isinstance(reason, _DROPPED):
          raise PresetDownloadError(f"cannot download {url}: {reason}. "
                                    f"{_manual_hint(url, destination)}") from None
        last_error = e
        continue
      with response:
        status = getattr(response, "status", 200)
        first, total = _content_range(response.headers.get("Content-Range"))
        length = response.headers.get("Content-Length")
        if status == 206 and first == start:
          mode = "ab"
          if total is None and length is not None:
            total = start + int(length)
        elif status == 206:              # another range than asked for: start afresh
          logging.warning("%s: asked for bytes from %d, the server sent bytes from %s; "
                          "restarting the download", url, start, first)
          open(partial, "wb").close()    # pylint: disable=consider-using-with
          last_error = f"the server answered the range request with bytes from {first}"
          continue
        else:
          if start:
            logging.warning("%s: the server did not resume at byte %d (HTTP %d); "
                            "downloading the whole file again", url, start, status)
          start, mode = 0, "wb"
          total = int(length) if length is not None else None
        done = start
        try:
          with open(partial, mode) as f:
            while True:
              chunk = response.read(1 << 20)
              if not chunk:
                break
              f.write(chunk)
              done += len(chunk)
              bar.update(done, total)
            f.flush()
            os.fsync(f.fileno())
        except _DROPPED as e:
          last_error = e
          logging.warning("%s: the connection dropped at byte %d (%s); resuming", url,
                          done, e)
          continue
      if total is not None and done < total:
        last_error = f"the connection closed at byte {done} of {total}"
        logging.warning("%s: %s; resuming", url, last_error)
        continue
      if total is not None and done > total:   # not the announced file: start afresh
        last_error = f"got {done} bytes, the server announced {total}"
        logging.warning("%s: %s; restarting the download", url, last_error)
        open(partial, "wb").close()      # pylint: disable=consider-using-with
        continue
      bar.update(done, total, final=True)
      os.replace(partial, destination)
      return destination
  finally:
    bar.close()
  raise PresetDownloadError(f"downloading {url}: {attempts} attempts broke off (last: "
                            f"{last_error}). {_manual_hint(url, destination)}")


# ---- verification --------------------------------------------------------------------------

def _set_aside(path: str, kind: str) -> str:
  """Renames `path` to `path`.<kind>-<time> (a free name); returns the new name."""
  stamp = time.strftime("%Y%m%d-%H%M%S")
  aside, n = f"{path}.{kind}-{stamp}", 1
  while os.path.lexists(aside):
    n += 1
    aside = f"{path}.{kind}-{stamp}-{n}"
  os.rename(path, aside)
  return aside


def _reject(path: str, kind: str, problem: str) -> ArchiveError:
  aside = _set_aside(path, kind)
  what = "is corrupt" if kind == "corrupt" else "is not the preset's archive"
  return ArchiveError(f"{path} {what}: {problem}. It was renamed to {aside} (not deleted); "
                      f"the next call downloads the archive again (or uses a copy you put "
                      f"at {path})")


def check_archive(path: str, preset: Preset) -> Optional[Tuple[str, str]]:
  """What is wrong with the archive at `path`: None, or (kind, problem) with kind
  "corrupt" (not a readable zip, a CRC-32 mismatch) or "wrong" (another layout or
  config)."""
  try:
    archive = zipfile.ZipFile(path)  # pylint: disable=consider-using-with
  except (zipfile.BadZipFile, OSError, EOFError) as e:
    return "corrupt", f"not a readable zip archive ({e}); a truncated download looks so"
  with archive:
    names = archive.namelist()
    expected = preset.expected_members()
    top = preset.directory.strip("/") + "/"
    for name in expected:
      if name not in names:
        return "wrong", (f"member {name} is missing; expected exactly {expected} (found "
                         f"{names[:8]}{' ...' if len(names) > 8 else ''})")
    for name in names:
      if name not in expected and name != top:
        return "wrong", f"unexpected member {name}; expected exactly {expected}"
    if len(names) != len(set(names)):
      return "wrong", "a member appears twice"
    config_member = top + released_names.RELEASED_CONFIG_FILE
    try:
      values = json.loads(archive.read(config_member).decode("utf-8"))
    except zipfile.BadZipFile as e:
      return "corrupt", f"member {config_member}: {e}"
    except (ValueError, UnicodeDecodeError) as e:
      return "wrong", f"member {config_member} is not JSON ({e})"
    if not isinstance(values, dict):
      return "wrong", f"member {config_member} is not a JSON object"
    want = preset.config.released_dict()
    for key in RELEASED_KEYS:
      if key not in values:
        return "wrong", f"member {config_member} has no field {key} (expected {want[key]!r})"
      if values[key] != want[key] or type(values[key]) is not type(want[key]):
        return "wrong", (f"member {config_member}: field {key} is {values[key]!r}, the "
                         f"preset {preset.name} has {want[key]!r}")
    extra = sorted(set(values) - set(RELEASED_KEYS))
    if extra:
      return "wrong", (f"member {config_member} has field(s) {extra}, a released config "
                       f"has only {list(RELEASED_KEYS)}")
    try:
      bad = archive.testzip()        # reads every member, checking its CRC-32
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as e:
      return "corrupt", f"a member cannot be read ({e})"
    if bad is not None:
      return "corrupt", f"member {bad} fails its CRC-32 check"
  return None


def verify_archive(path: str, preset: Preset) -> None:
  """Raises ArchiveError (after renaming the file aside) unless `path` is the preset's
  archive: a zip with valid CRCs, exactly the released files, the preset's config."""
  problem = check_archive(path, preset)
  if problem is not None:
    kind, what = problem
    raise _reject(path, "corrupt" if kind == "corrupt" else "rejected", what)


# ---- unpacking and conversion --------------------------------------------------------------

def _unpack_and_convert(preset: Preset, archive: str, target: str) -> None:
  """Unpacks `archive` into a temporary directory, converts it into `target` (written
  whole: `paths.atomic_output`) with the card; the unpacked copy is removed."""
  entry = os.path.dirname(target)
  unpacked = paths.partial_path(os.path.join(entry, _UNPACKED))
  try:
    with paths.atomic_output(target) as staging:
      with zipfile.ZipFile(archive) as z:
        z.extractall(unpacked, members=preset.expected_members())   # exactly those names
      logging.info("converting %s (preset %s) into %s", archive, preset.name, target)
      report = importer.convert(os.path.join(unpacked, preset.directory.strip("/")),
                                staging, options=importer.ConvertOptions(task="pretrained"))
      config = model_directory.read_config(staging)
      parity = report.get("parity")           # the conversion's figure, when it has one
      parity = parity.get("text") if isinstance(parity, dict) else None
      if parity:                              # name the member, not the temporary copy
        parity = parity.replace(os.path.join(unpacked, ""), f"{preset.archive_name}:")
      model_card.write(                       # the conversion's card, with the URL
          staging, title=preset.description or f"XLNet preset {preset.name}",
          source=preset.url, licence=preset.licence, config=config.to_dict(),
          task="pretrained", parity=parity,
          details={"Preset": preset.name,
                   "Archive": f"{archive} (zip CRC-32 of every member checked; its "
                              f"xlnet_config.json equals the preset's)",
                   "Conversion": f"xlnet_tf.convert, {report.get('variables')} variables "
                                 f"(conversion.json says what was read and filled in)"})
  finally:
    shutil.rmtree(unpacked, ignore_errors=True)


# ---- models from a preset --------------------------------------------------------------------

def load_pretrained(name_or_directory: str, cache_dir: Optional[str] = None,
                    progress: bool = True, **run_options) -> XLNetPretrainer:
  """The pretraining model (encoder + tied LM head) of a preset ("xlnet_base_cased", ...,
  downloaded and converted into the cache on first use) or a model directory;
  `run_options` as `pretrained.load_directory` (mem_len, reuse_len, dropout, ...)."""
  return pretrained.load_directory(model_dir(name_or_directory, cache_dir, progress=progress),
                                   **run_options)


def from_preset(preset: str, model_class: type, *args, cache_dir: Optional[str] = None,
                dropout: float = 0.1, dropatt: float = 0.1, progress: bool = True,
                **kwargs):
  """A model of class `model_class` whose encoder holds the weights of `preset` (a preset
  name or a model directory of our layout).

  `model_class` is the model class of a registered `task_kind`. The pretrained kind's
  (`XLNetPretrainer`): the pretrained model itself (`load_pretrained`; `kwargs` are run
  options). A task model's (XLNetClassifier, XLNetForSquad, ...): built by its kind's
  `build_model` with `args`/`kwargs` (e.g. num_classes, summary_type) under fine-tuning's
  run options (`XLNetConfig.for_finetuning`: no memory, bidirectional, `dropout`/`dropatt`),
  the encoder restored from the preset and the head freshly initialised, as fine-tuning
  starts.
  """
  kind = task_kind.of_model_class(model_class)
  if kind.name == task_kind.PRETRAINED:          # a preset is a pretrained model directory
    if args:
      raise TypeError(f"from_preset({model_class.__name__}) takes run options as keywords, "
                      f"got {args}")
    return load_pretrained(preset, cache_dir=cache_dir, progress=progress, **kwargs)
  directory = model_dir(preset, cache_dir, progress=progress)
  config = model_directory.read_config(directory)
  model = kind.build_model(config.for_finetuning(dropout=dropout, dropatt=dropatt), *args,
                           **kwargs)
  pretrained.restore_encoder(model.encoder, directory)
  return model
