"""Presets: download (resumed, verified), conversion into the cache, reuse; no real network.

An HTTP server on 127.0.0.1 (its own handler, with or without Range support, optionally
dropping the first connection halfway) serves a zip in the released layout made here from
a tiny config, registered as a preset.
"""

import http.server
import io
import json
import os
import socket
import subprocess
import sys
import threading
import time
import zipfile

import numpy as np
import pytest

from helpers import small_config
from released_checkpoint import original_encoder_arrays
from released_checkpoint import write_released_dir
import xlnet_tf
from xlnet_tf import hub
from xlnet_tf import model_card
from xlnet_tf import presets
from xlnet_tf import released_names
from xlnet_tf.models.xlnet_classifier import XLNetClassifier
from xlnet_tf.models.xlnet_multiple_choice import XLNetMultipleChoice
from xlnet_tf.models.xlnet_squad import XLNetForSquad
from xlnet_tf.models.xlnet_tagger import XLNetTagger

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CONFIG = small_config(n_token=60)
TOP = "xlnet_tiny_L-2_H-16"
SPIECE = b"not a real SentencePiece model, copied as it is"


def _arrays():
  arrays = original_encoder_arrays(CONFIG, seed=7)
  rng = np.random.default_rng(8)
  arrays[released_names.MASK_EMB] = rng.standard_normal([1, 1, CONFIG.d_model]).astype(
      np.float32)
  arrays[released_names.LM_BIAS] = rng.standard_normal([CONFIG.n_token]).astype(np.float32)
  return arrays


def _zip(directory, top=TOP, skip=(), extra=None, config_text=None) -> bytes:
  """The released archive layout: top/ + the five files of `directory`."""
  buffer = io.BytesIO()
  with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
    z.writestr(f"{top}/", b"")
    for name in presets.RELEASED_FILES:
      if name in skip:
        continue
      if name == "xlnet_config.json" and config_text is not None:
        z.writestr(f"{top}/{name}", config_text)
      else:
        z.write(os.path.join(directory, name), f"{top}/{name}")
    for name, data in (extra or {}).items():
      z.writestr(name, data)
  return buffer.getvalue()


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
  """(zip bytes, released arrays, the released directory)."""
  arrays = _arrays()
  directory = str(tmp_path_factory.mktemp("released") / TOP)
  write_released_dir(directory, CONFIG, arrays, spiece_bytes=SPIECE)
  assert sorted(os.listdir(directory)) == sorted(presets.RELEASED_FILES)
  return _zip(directory), arrays, directory


class _Handler(http.server.BaseHTTPRequestHandler):
  """GET /<name>: the server's payload; Range `bytes=N-` honoured if `ranges`; the first
  request of a server with `drop_first` announces everything and sends half."""

  def do_GET(self):  # noqa: N802
    server = self.server
    server.requests.append({"path": self.path, "range": self.headers.get("Range")})
    if self.path != server.path:
      self.send_error(404)
      return
    data, start = server.payload, 0
    wanted = self.headers.get("Range")
    if wanted and server.ranges:
      start = int(wanted.split("=")[1].split("-")[0])
      if start >= len(data):             # nothing to send: 416, as HTTP servers answer
        self.send_response(416)
        self.send_header("Content-Range", f"bytes */{len(data)}")
        self.send_header("Content-Length", "0")
        self.end_headers()
        return
      self.send_response(206)
      self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
    else:
      self.send_response(200)
    body = data[start:]
    self.send_header("Content-Length", str(len(body)))
    self.end_headers()
    if server.drop_first and len(server.requests) == 1:
      self.wfile.write(body[:len(body) // 2])
      self.wfile.flush()
      self.close_connection = True
      return
    self.wfile.write(body)

  def log_message(self, *args):
    pass


class Server:
  def __init__(self, payload, ranges=True, drop_first=False):
    self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    self.httpd.payload, self.httpd.ranges, self.httpd.drop_first = payload, ranges, drop_first
    self.httpd.path, self.httpd.requests = "/released_models/tiny.zip", []
    self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
    self.thread.start()

  @property
  def url(self):
    return f"http://127.0.0.1:{self.httpd.server_address[1]}{self.httpd.path}"

  @property
  def requests(self):
    return self.httpd.requests

  def close(self):
    self.httpd.shutdown()
    self.httpd.server_close()


@pytest.fixture
def serve():
  servers = []

  def start(payload, **kwargs):
    servers.append(Server(payload, **kwargs))
    return servers[-1]
  yield start
  for server in servers:
    server.close()


@pytest.fixture
def tiny(request):
  """Registers a preset "tiny_<n>_<test>" for `url`; unregistered after the test."""
  names = []

  def register(url, config=CONFIG):
    name = f"tiny_{len(names)}_{request.node.name}"[:60].replace("[", "_").replace("]", "_")
    names.append(name)
    return presets.register_preset(presets.Preset(
        name=name, url=url, directory=TOP, config=config, description="tiny test model",
        licence="test licence"), overwrite=True)
  yield register
  for name in names:
    presets.unregister_preset(name)


def _assert_weights_equal(model, arrays):
  variables = released_names.released_variables(model)
  assert set(variables) == set(arrays)
  for name, variable in variables.items():
    np.testing.assert_array_equal(variable.numpy(), arrays[name], err_msg=name)


def test_the_released_table():
  base, large = presets.get_preset("xlnet_base_cased"), presets.get_preset("xlnet_large_cased")
  assert base.url == ("https://storage.googleapis.com/xlnet/released_models/"
                      "cased_L-12_H-768_A-12.zip")
  assert large.url == ("https://storage.googleapis.com/xlnet/released_models/"
                       "cased_L-24_H-1024_A-16.zip")
  assert base.directory == "xlnet_cased_L-12_H-768_A-12"
  assert large.directory == "xlnet_cased_L-24_H-1024_A-16"
  assert base.config.released_dict() == {
      "n_layer": 12, "d_model": 768, "n_head": 12, "d_head": 64, "d_inner": 3072,
      "ff_activation": "gelu", "untie_r": True, "n_token": 32000}
  assert large.config.released_dict() == {
      "n_layer": 24, "d_model": 1024, "n_head": 16, "d_head": 64, "d_inner": 4096,
      "ff_activation": "gelu", "untie_r": True, "n_token": 32000}
  assert base.expected_members() == [
      "xlnet_cased_L-12_H-768_A-12/xlnet_config.json",
      "xlnet_cased_L-12_H-768_A-12/xlnet_model.ckpt.index",
      "xlnet_cased_L-12_H-768_A-12/xlnet_model.ckpt.data-00000-of-00001",
      "xlnet_cased_L-12_H-768_A-12/xlnet_model.ckpt.meta",
      "xlnet_cased_L-12_H-768_A-12/spiece.model"]


def test_cache_location(monkeypatch, tmp_path):
  monkeypatch.setenv(hub.CACHE_ENV, str(tmp_path / "env_cache"))
  assert hub.archive_path("xlnet_base_cased") == str(
      tmp_path / "env_cache" / "xlnet_base_cased" / "cased_L-12_H-768_A-12.zip")
  assert hub.cache_root(str(tmp_path / "arg")) == str(tmp_path / "arg")
  monkeypatch.delenv(hub.CACHE_ENV)
  assert hub.cache_root() == os.path.expanduser("~/.cache/xlnet_tf")


def test_download_convert_then_reuse_without_network_or_conversion(
    archive, serve, tiny, tmp_path, monkeypatch, capfd):
  data, arrays, _ = archive
  server = serve(data)
  preset = tiny(server.url)
  cache = str(tmp_path / "cache")
  model = xlnet_tf.load_pretrained(preset.name, cache_dir=cache)
  _assert_weights_equal(model, arrays)
  assert [r["range"] for r in server.requests] == [None]
  assert f"{len(data) / 1e6:.1f} MB" in capfd.readouterr().err      # the progress line
  entry = os.path.join(cache, preset.name)
  with open(os.path.join(entry, "tiny.zip"), "rb") as f:
    assert f.read() == data                                          # the archive is kept
  assert sorted(n for n in os.listdir(entry) if not n.startswith(".")) == ["model", "tiny.zip"]
  card = open(os.path.join(entry, "model", model_card.CARD_FILE), encoding="utf-8").read()
  assert f"- **Source**: {server.url}\n" in card and "- **Licence**: test licence\n" in card
  assert ".partial-" not in card                     # no temporary path
  with open(os.path.join(entry, "model", "spiece.model"), "rb") as f:
    assert f.read() == SPIECE

  # Second call: no request, no conversion.
  from xlnet_tf.convert import importer as convert

  def no_conversion(*args, **kwargs):
    raise AssertionError("converted again")
  monkeypatch.setattr(convert, "convert", no_conversion)
  server.requests.clear()
  again = xlnet_tf.load_pretrained(preset.name, cache_dir=cache, mem_len=8)
  assert server.requests == []
  assert again.config.mem_len == 8
  _assert_weights_equal(again, arrays)


@pytest.mark.parametrize("ranges", [True, False], ids=["range", "range_ignored"])
def test_a_dropped_download_resumes(archive, serve, tiny, tmp_path, ranges):
  data, arrays, _ = archive
  server = serve(data, ranges=ranges, drop_first=True)
  preset = tiny(server.url)
  cache = str(tmp_path / "cache")
  directory = hub.resolve(preset.name, cache_dir=cache, progress=False)
  ranges_asked = [r["range"] for r in server.requests]
  assert ranges_asked == [None, f"bytes={len(data) // 2}-"]          # resumed with Range
  with open(hub.archive_path(preset, cache), "rb") as f:
    assert f.read() == data                                          # identical
  assert not os.path.exists(hub.archive_path(preset, cache) + ".partial")
  _assert_weights_equal(xlnet_tf.load_pretrained(directory), arrays)


def test_a_partial_file_of_an_earlier_call_is_resumed(archive, serve, tiny, tmp_path):
  data, _, _ = archive
  server = serve(data)
  preset = tiny(server.url)
  cache = str(tmp_path / "cache")
  partial = hub.archive_path(preset, cache) + ".partial"
  os.makedirs(os.path.dirname(partial))
  with open(partial, "wb") as f:
    f.write(data[:1000])
  hub.resolve(preset.name, cache_dir=cache, progress=False)
  assert [r["range"] for r in server.requests] == ["bytes=1000-"]
  with open(hub.archive_path(preset, cache), "rb") as f:
    assert f.read() == data


def test_a_complete_partial_file_answered_416_is_used_as_it_is(archive, serve, tiny,
                                                               tmp_path):
  """The process died between the partial file's fsync and its rename: the server answers
  the Range request with 416 and `Content-Range: bytes */N`, N its size; the file gets its
  name without a download, then is verified and converted as usual."""
  data, arrays, _ = archive
  server = serve(data)
  preset = tiny(server.url)
  cache = str(tmp_path / "cache")
  partial = hub.archive_path(preset, cache) + ".partial"
  os.makedirs(os.path.dirname(partial))
  with open(partial, "wb") as f:
    f.write(data)
  directory = hub.resolve(preset.name, cache_dir=cache, progress=False)
  assert [r["range"] for r in server.requests] == [f"bytes={len(data)}-"]
  assert not os.path.exists(partial)
  with open(hub.archive_path(preset, cache), "rb") as f:
    assert f.read() == data
  _assert_weights_equal(xlnet_tf.load_pretrained(directory), arrays)


def test_a_416_for_a_partial_file_of_another_size_restarts(archive, serve, tiny, tmp_path):
  data, _, _ = archive
  server = serve(data)
  preset = tiny(server.url)
  cache = str(tmp_path / "cache")
  partial = hub.archive_path(preset, cache) + ".partial"
  os.makedirs(os.path.dirname(partial))
  with open(partial, "wb") as f:
    f.write(data + b"not of the archive")            # longer: not this file
  hub.resolve(preset.name, cache_dir=cache, progress=False)
  assert [r["range"] for r in server.requests] == [f"bytes={len(data) + 18}-", None]
  with open(hub.archive_path(preset, cache), "rb") as f:
    assert f.read() == data


def _corrupt_crc(data: bytes) -> bytes:
  """The archive with one byte of the checkpoint data member's stored bytes flipped."""
  with zipfile.ZipFile(io.BytesIO(data)) as z:
    info = z.getinfo(f"{TOP}/xlnet_model.ckpt.data-00000-of-00001")
  # local header: 30 bytes + name + extra, then the compressed data
  header = data[info.header_offset:info.header_offset + 30]
  name_len = int.from_bytes(header[26:28], "little")
  extra_len = int.from_bytes(header[28:30], "little")
  at = info.header_offset + 30 + name_len + extra_len + info.compress_size // 2
  return data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1:]


@pytest.mark.parametrize("damage", ["crc", "truncated"])
def test_a_corrupt_archive_is_renamed_aside_and_named(archive, serve, tiny, tmp_path, damage):
  data, _, _ = archive
  bad = _corrupt_crc(data) if damage == "crc" else data[:len(data) * 2 // 3]
  server = serve(bad)
  preset = tiny(server.url)
  cache = str(tmp_path / "cache")
  path = hub.archive_path(preset, cache)
  with pytest.raises(hub.ArchiveError) as error:
    hub.resolve(preset.name, cache_dir=cache, progress=False)
  message = str(error.value)
  assert path in message and ".corrupt-" in message
  if damage == "crc":
    assert "xlnet_model.ckpt.data-00000-of-00001" in message or "CRC" in message
  else:
    assert "zip" in message
  kept = [n for n in os.listdir(os.path.dirname(path)) if ".corrupt-" in n]
  assert len(kept) == 1 and not os.path.exists(path)
  with open(os.path.join(os.path.dirname(path), kept[0]), "rb") as f:
    assert f.read() == bad                                           # kept, not deleted
  assert kept[0] in message
  assert not os.path.exists(os.path.join(os.path.dirname(path), "model"))


def test_a_wrong_archive_names_the_member_or_field(archive, serve, tiny, tmp_path):
  data, _, directory = archive
  cases = {
      "missing": (_zip(directory, skip=("spiece.model",)), f"{TOP}/spiece.model"),
      "other_top": (_zip(directory, top="other_dir"), f"{TOP}/xlnet_config.json"),
      "extra": (_zip(directory, extra={f"{TOP}/notes.txt": b"x"}), f"{TOP}/notes.txt"),
      "config": (_zip(directory, config_text=json.dumps(
          {**CONFIG.released_dict(), "d_inner": 64})), "d_inner"),
  }
  for case, (payload, named) in cases.items():
    server = serve(payload)
    preset = tiny(server.url)
    cache = str(tmp_path / case)
    with pytest.raises(hub.ArchiveError) as error:
      hub.resolve(preset.name, cache_dir=cache, progress=False)
    message = str(error.value)
    assert named in message, (case, message)
    assert ".rejected-" in message, (case, message)
    entry = os.path.dirname(hub.archive_path(preset, cache))
    assert any(".rejected-" in n for n in os.listdir(entry)), case


def _free_port():
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


def test_offline_names_the_url_and_the_path_then_uses_a_placed_archive(
    archive, tiny, tmp_path):
  data, arrays, _ = archive
  url = f"http://127.0.0.1:{_free_port()}/released_models/tiny.zip"     # nothing listens
  preset = tiny(url)
  cache = str(tmp_path / "cache")
  path = hub.archive_path(preset, cache)
  with pytest.raises(hub.PresetDownloadError) as error:
    xlnet_tf.load_pretrained(preset.name, cache_dir=cache)
  assert url in str(error.value) and path in str(error.value)
  with open(path, "wb") as f:                     # the user puts the file there
    f.write(data)
  _assert_weights_equal(xlnet_tf.load_pretrained(preset.name, cache_dir=cache), arrays)
  with open(path, "rb") as f:
    assert f.read() == data


def test_unknown_preset_lists_the_known_ones(tmp_path):
  with pytest.raises(ValueError) as error:
    hub.resolve("xlnet_bsae_cased", cache_dir=str(tmp_path))
  assert "xlnet_bsae_cased" in str(error.value)
  assert "xlnet_base_cased" in str(error.value) and "xlnet_large_cased" in str(error.value)
  with pytest.raises(FileNotFoundError) as error:
    xlnet_tf.load_pretrained("xlnet_bsae_cased", cache_dir=str(tmp_path))
  assert "xlnet_base_cased" in str(error.value) and "xlnet_large_cased" in str(error.value)
  with pytest.raises(FileNotFoundError, match="xlnet_large_cased"):
    xlnet_tf.from_preset("xlnet_bsae_cased", XLNetClassifier, num_classes=2,
                         cache_dir=str(tmp_path))


def test_task_models_from_a_preset_get_its_encoder_and_a_fresh_head(
    archive, serve, tiny, tmp_path):
  data, arrays, _ = archive
  server = serve(data)
  preset = tiny(server.url)
  cache = str(tmp_path / "cache")
  encoder_arrays = {k: v for k, v in arrays.items() if k != released_names.LM_BIAS}
  classifier = xlnet_tf.from_preset(preset.name, XLNetClassifier, num_classes=3, cache_dir=cache,
                                    progress=False)
  assert classifier.logit.kernel.shape == (CONFIG.d_model, 3)
  assert classifier.config.mem_len == 0 and classifier.config.dropout == 0.1
  for name, variable in released_names.encoder_variables(classifier.encoder).items():
    np.testing.assert_array_equal(variable.numpy(), encoder_arrays[name], err_msg=name)
  assert set(released_names.encoder_variables(classifier.encoder)) == set(encoder_arrays)
  kernel = classifier.logit.kernel.numpy()
  assert 0 < np.std(kernel) < 0.1                        # initialised (0.02 normal), not 0
  for cls, args in ((XLNetForSquad, ()), (XLNetMultipleChoice, ()), (XLNetTagger, (5,))):
    model = xlnet_tf.from_preset(preset.name, cls, *args, cache_dir=cache)
    assert type(model) is cls
    for name, variable in released_names.encoder_variables(model.encoder).items():
      np.testing.assert_array_equal(variable.numpy(), encoder_arrays[name], err_msg=name)
  assert len(server.requests) == 1                       # one download for them all
  pretrainer = xlnet_tf.from_preset(preset.name, xlnet_tf.XLNetPretrainer, cache_dir=cache)
  _assert_weights_equal(pretrainer, arrays)


_HOLD_LOCK = """
import sys, time
from xlnet_tf import paths
lock = paths.DirectoryLock(sys.argv[1], purpose="another download", name=sys.argv[2])
lock.acquire()
print("held", flush=True)
time.sleep(float(sys.argv[3]))
lock.release()
"""


def test_a_second_process_waits_for_the_entry_lock(archive, serve, tiny, tmp_path):
  data, arrays, _ = archive
  server = serve(data)
  preset = tiny(server.url)
  cache = str(tmp_path / "cache")
  entry = hub.entry_dir(preset, cache)
  holder = subprocess.Popen(  # pylint: disable=consider-using-with
      [sys.executable, "-c", _HOLD_LOCK, entry, hub.LOCK_FILE, "3"],
      stdout=subprocess.PIPE, text=True, cwd=ROOT)
  try:
    assert holder.stdout.readline().strip() == "held"
    started = time.monotonic()
    directory = hub.resolve(preset.name, cache_dir=cache, progress=False)
    assert time.monotonic() - started > 2.0                    # waited for the holder
  finally:
    holder.wait(timeout=30)
  assert len(server.requests) == 1
  _assert_weights_equal(xlnet_tf.load_pretrained(directory), arrays)


def test_a_task_init_checkpoint_may_name_a_preset(archive, serve, tiny, tmp_path,
                                                  monkeypatch):
  """task.init_checkpoint "xlnet_base_cased"-style: the task takes the preset's sizes,
  SentencePiece model and encoder weights from the cache (downloaded on first use)."""
  from official.core import exp_factory  # pylint: disable=g-import-not-at-top
  from official.core import task_factory  # pylint: disable=g-import-not-at-top
  from xlnet_tf.tasks import classification
  data, arrays, _ = archive
  server = serve(data)
  preset = tiny(server.url)
  monkeypatch.setenv(hub.CACHE_ENV, str(tmp_path / "cache"))
  from xlnet_tf.tasks import train_lib  # pylint: disable=g-import-not-at-top
  params = exp_factory.get_exp_config(classification.KIND.experiment)
  params.override({"task": {"init_checkpoint": preset.name}})
  with pytest.raises(ValueError, match="names a preset: resolve it"):   # the driver does
    task_factory.get_task(params.task).xlnet_config()
  params = train_lib.resolve_init_checkpoint(params)
  task = task_factory.get_task(params.task)
  assert task.xlnet_config().d_model == CONFIG.d_model
  assert task.spiece_model() == os.path.join(
      hub.entry_dir(preset.name), hub.MODEL_DIR, "spiece.model")
  model = task.build_model()
  task.initialize(model)
  for name, variable in released_names.encoder_variables(model.encoder).items():
    np.testing.assert_array_equal(variable.numpy(), arrays[name], err_msg=name)
  options = train_lib.run_options(params, str(tmp_path / "run"))
  assert options.init_checkpoint == os.path.join(hub.entry_dir(preset.name),
                                                 hub.MODEL_DIR)     # what training reads
  assert len(server.requests) == 1
