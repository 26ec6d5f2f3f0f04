"""Issue 27, item 9: a full disk, as a careless user meets it.

Every tool that writes (train_sentencepiece, create_pretraining_data, training, the
SavedModel export, convert) ends with one line, "TOOL: no space left on DEVICE while
writing FILE", exits non-zero and leaves none of its temporaries behind
(`paths.reporting_disk_full`, around each entry point's work; the released-flag wrappers
through `xlnet_tf.runs.released.flag_translation.reporting_disk_full`).

The end-to-end cases run each tool against a small tmpfs (1 MiB) mounted for the test;
they are skipped, saying why, where mounting is not permitted (this needs root). The
unit tests of the helper inject the errors and run everywhere. The end-to-end cases (each a
command line or a training run) are slow.
"""

import errno
import os
import subprocess
import sys

import pytest
import tensorflow as tf

from helpers import CORPUS_GLOB
from helpers import pretrain_data_flags
from helpers import small_config
from xlnet_tf import model_directory
from xlnet_tf import paths
from xlnet_tf.models.xlnet_classifier import build_classifier
from xlnet_tf.models.xlnet_pretrainer import build_pretrainer
from xlnet_tf.pretrained import save_pretrained
from xlnet_tf.training import run_directory
from xlnet_tf.models.xlnet_classifier import ClassifierSpec

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="2")
DEMO = os.path.join(ROOT, "experiments", "configs", "classification_demo.yaml")


# ---- the helper, with injected errors --------------------------------------------------------

def _no_space(filename=None):
  return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), *([filename] if filename else []))


def test_enospc_becomes_one_line_naming_the_mount_point_and_the_file(tmp_path):
  written = tmp_path / "out" / "shard.tfrecord"
  mount = paths.mount_point(os.fspath(tmp_path))
  with pytest.raises(paths.DiskFullError) as caught:
    with paths.reporting_disk_full(os.fspath(tmp_path / "out")):
      raise _no_space(os.fspath(written))
  assert str(caught.value) == f"no space left on {mount} while writing {written}"
  assert caught.value.errno == errno.ENOSPC and isinstance(caught.value, OSError)
  assert os.fspath(os.path.realpath(tmp_path)).startswith(mount.rstrip("/") + "/")
  assert os.stat(mount).st_dev == os.stat(tmp_path).st_dev


def test_a_failed_copy_names_its_destination(tmp_path):
  source, copy = tmp_path / "spiece.model", tmp_path / "out" / "spiece.model"
  error = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), os.fspath(source), None,
                  os.fspath(copy))                  # as shutil.copyfile raises it
  with pytest.raises(paths.DiskFullError, match=f"while writing {copy}$"):
    with paths.reporting_disk_full(os.fspath(tmp_path / "out")):
      raise error


def test_an_error_naming_no_file_names_the_output(tmp_path):
  """Python's buffered writes fail without a file name; SafeTensors' text has "I/O"."""
  output = os.fspath(tmp_path / "records")
  for error in (_no_space(), RuntimeError("Error while serializing: I/O error: No space "
                                          "left on device (os error 28)")):
    with pytest.raises(paths.DiskFullError, match=f"while writing {output}$"):
      with paths.reporting_disk_full(output):
        raise error


def test_tensorflows_error_text_gives_the_file(tmp_path):
  part = f"{tmp_path}/run/ckpt-1_temp/part-00000-of-00001.data-00000-of-00001.tempstate12"
  error = tf.errors.ResourceExhaustedError(
      None, None, "{{function_node __wrapped__SaveV2_device_/job:localhost/replica:0/task:0/"
      f"device:CPU:0}} {part}; No space left on device [Op:SaveV2]")
  with pytest.raises(paths.DiskFullError, match=f"while writing {part}$"):
    with paths.reporting_disk_full(os.fspath(tmp_path / "run")):
      try:
        raise error
      except tf.errors.ResourceExhaustedError as e:          # a cause is followed too
        raise RuntimeError("saving failed") from e


def test_the_temporaries_are_removed_and_nothing_else(tmp_path):
  run = tmp_path / "run"
  (run / "ckpt-3_temp").mkdir(parents=True)
  (run / "ckpt-3_temp" / "part").write_text("half")
  (run / "best").mkdir()
  (run / "best" / "results.json.partial-77").write_text("{")
  (run / "run_settings.json.partial-77").write_text("{")
  for kept in ("ckpt-2.index", "checkpoint", "run_settings.json", "notes.txt"):
    (run / kept).write_text("whole")
  with pytest.raises(paths.DiskFullError):
    with paths.reporting_disk_full(os.fspath(run),
                                   run_directory.temporaries(os.fspath(run))):
      raise _no_space()
  assert sorted(os.listdir(run)) == ["best", "checkpoint", "ckpt-2.index", "notes.txt",
                                     "run_settings.json"]
  assert os.listdir(run / "best") == []


def test_other_errors_pass_unchanged_and_remove_nothing(tmp_path):
  (tmp_path / "x.partial-1").write_text("kept")
  for error in (OSError(errno.EACCES, "Permission denied", "x"), ValueError("bad flag")):
    with pytest.raises(type(error)) as caught:
      with paths.reporting_disk_full(os.fspath(tmp_path), [os.fspath(tmp_path / "*.partial*")]):
        raise error
    assert caught.value is error
  assert os.listdir(tmp_path) == ["x.partial-1"]


# ---- each tool against a full tmpfs -----------------------------------------------------------

@pytest.fixture
def disk(tmp_path):
  """A 1 MiB tmpfs mounted for the test (its real path); unmounted after."""
  mount = os.path.realpath(tmp_path / "disk")
  os.mkdir(mount)
  mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", mount],
                           capture_output=True, text=True, check=False)
  if mounted.returncode != 0:
    pytest.skip(f"a small tmpfs cannot be mounted here (needs root): "
                f"{mounted.stderr.strip() or mounted.returncode}")
  try:
    yield mount
  finally:
    subprocess.run(["umount", mount], check=False)


def _fill(disk, leave: int) -> None:
  """Fills `disk` until `leave` bytes are free."""
  stats = os.statvfs(disk)
  with open(os.path.join(disk, "filler"), "wb") as f:
    f.write(b"\0" * (stats.f_bavail * stats.f_frsize - leave))


def _run(module, *flags_):
  done = subprocess.run([sys.executable, "-m", module, *flags_], cwd=ROOT, env=ENV,
                        capture_output=True, text=True, check=False)
  assert done.returncode != 0, done.stdout[-2000:]
  assert "Traceback" not in done.stderr, done.stderr[-3000:]
  return done.stderr.strip().splitlines()[-1]


@pytest.mark.slow
def test_train_sentencepiece_on_a_full_disk(disk):
  _fill(disk, leave=8192)
  prefix = os.path.join(disk, "out", "spiece")
  line = _run("data_prep.train_sentencepiece", f"--input={CORPUS_GLOB}",
              f"--model_prefix={prefix}", "--vocab_size=500")
  assert line == (f"train_sentencepiece: no space left on {disk} while writing "
                  f"{prefix}.model")
  assert not [name for name in os.listdir(os.path.dirname(prefix))   # nothing half-written
              if name.startswith("spiece.")]


@pytest.mark.slow
def test_create_pretraining_data_on_a_full_disk(disk, spiece_model):
  _fill(disk, leave=8192)
  out = os.path.join(disk, "records")
  inputs = sorted(tf.io.gfile.glob(CORPUS_GLOB))[:6]
  for workers in ("1", "2"):
    line = _run("data_prep.create_pretraining_data",
                *pretrain_data_flags(inputs, spiece_model, out), f"--num_workers={workers}")
    assert line == f"create_pretraining_data: no space left on {disk} while writing {out}"
    assert os.listdir(out) == []              # no half-written shard, stats or manifest


@pytest.mark.slow
def test_a_checkpoint_write_on_a_full_disk(disk, spiece_model, tmp_path):
  run = os.path.join(disk, "run")
  line = _run("experiments.train", "--experiment=xlnet/classification",
              f"--config_file={DEMO}", "--mode=train", f"--model_dir={run}",
              "--params_override=" + ",".join(
                  [f"task.{data}.{key}={value}" for data in ("train_data", "validation_data")
                   for key, value in (("spiece_model", spiece_model),
                                      ("cache_dir", tmp_path / "cache"))]
                  + ["trainer.train_steps=3", "trainer.steps_per_loop=1",
                     "trainer.checkpoint_interval=1", "task.optimization.warmup_steps=1"]))
  assert line.startswith(f"train: no space left on {disk} while writing {run}/ckpt-1_temp/")
  assert sorted(os.listdir(run)) == ["params.yaml", "run_settings.json", "train"]


@pytest.fixture(scope="module")
def classifier_dir(spiece_model, tmp_path_factory):
  """A model directory of a small classifier (vocabulary 4000), as run_classifier writes."""
  directory = os.fspath(tmp_path_factory.mktemp("classifier") / "model")
  spec = ClassifierSpec(task_name="movie_reviews",
                        labels=("negative", "positive"), max_seq_length=32)
  model = build_classifier(small_config(n_token=4000), 2, dropout_rate=0.0)
  model_directory.save(model, directory, spec, spiece_model)
  return directory


@pytest.mark.slow
def test_export_on_a_full_disk(disk, classifier_dir):
  _fill(disk, leave=300_000)
  export_dir = os.path.join(disk, "export")
  line = _run("experiments.export_saved_model", f"--model_dir={classifier_dir}",
              f"--export_dir={export_dir}")
  assert line.startswith(f"export_saved_model: no space left on {disk} while writing "
                         f"{export_dir}.partial-")
  assert os.listdir(disk) == ["filler"]


@pytest.mark.slow
def test_convert_on_a_full_disk(disk, classifier_dir):
  _fill(disk, leave=300_000)
  output = os.path.join(disk, "hf")
  line = _run("xlnet_tf.convert", f"--source={classifier_dir}", "--to=huggingface",
              f"--output={output}")
  assert line.startswith(f"xlnet_tf.convert: no space left on {disk} while writing "
                         f"{output}.partial-")
  assert os.listdir(disk) == ["filler"]


@pytest.mark.slow
def test_a_released_flag_wrapper_on_a_full_disk(disk, spiece_model, tmp_path):
  """run_classifier (and run_squad, run_race: the same decorator, released_flags) writing its
  first checkpoint into a 1 MiB --model_dir."""
  pretrained = tmp_path / "pretrained"
  save_pretrained(build_pretrainer(small_config(n_token=4000)), str(pretrained), spiece_model)
  run = os.path.join(disk, "run")
  line = _run("experiments.run_classifier", "--do_train=True", "--task_name=movie_reviews",
              f"--output_dir={tmp_path / 'out'}", f"--model_dir={run}",
              f"--init_checkpoint={pretrained}", "--max_seq_length=32",
              "--train_batch_size=8", "--train_steps=2", "--warmup_steps=1",
              "--iterations=1", "--save_steps=1")
  assert line.startswith(f"run_classifier: no space left on {disk} while writing {run}/")
  assert not [name for name in os.listdir(run) if "_temp" in name or ".partial" in name]
