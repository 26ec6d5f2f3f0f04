"""Training never loses or silently corrupts work (issue 15, the training items): no
non-finite checkpoint (a diverging pretraining run: slow), dropout masks a function of
(seed, step, replica), a pretraining rerun with another model refused naming the setting,
the directory lock exclusive and reentrant, impossible optimizer settings refused, clear
errors of the command lines (slow). What the driver does for every task (exact resume with
dropout, reruns with other settings refused, the lock of a model directory, a non-finite
loss, checkpoints at multiples of the interval, kill -9 and rerun):
tests/tasks/test_driver.py; resume with memories: tests/training/test_pretraining.py."""

import glob
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from helpers import pretrain_config
from helpers import pretrain_options
from helpers import run_pretraining
from helpers import small_config
from xlnet_tf import model_directory
from xlnet_tf import paths
from xlnet_tf.layers.step_dropout import StepDropout
from xlnet_tf.layers.step_dropout import step_seed
from xlnet_tf.layers.step_dropout import training_seed
from xlnet_tf.training import loop
from xlnet_tf.training import run_directory
from xlnet_tf.training.checkpointing import GuardedCheckpointManager
from xlnet_tf.model_directory import NonFiniteError
from xlnet_tf.models.xlnet_classifier import ClassifierSpec
from xlnet_tf.models.xlnet_classifier import build_classifier

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _config(records_dir, **changes):
  """One layer, dropout on, and a memory longer than the reuse part (16 rows carry
  over)."""
  return pretrain_config(records_dir, **{"n_layer": 1, "dropout": 0.1, "dropatt": 0.1,
                                         "mem_len": 48, **changes})


def _pretrain(records_dir, model_dir, config=None, **options):
  config = config or _config(records_dir)
  values = dict(model_dir=str(model_dir), train_steps=8, learning_rate=1e-3,
                warmup_steps=1, steps_per_loop=1, save_steps=4, seed=7)
  values.update(options)
  return run_pretraining(tf.distribute.get_strategy(), config, records_dir,
                         pretrain_options(**values))


def _checkpoint_steps(model_dir):
  return sorted(int(p.split("-")[-1].split(".")[0])
                for p in glob.glob(os.path.join(str(model_dir), "ckpt-*.index")))


def _cli(args, **kwargs):
  return subprocess.run([sys.executable, "-m"] + args, cwd=ROOT, capture_output=True,
                        text=True, check=False, **kwargs)


# ---- 2. no checkpoint with a non-finite value -------------------------------------------

def test_a_checkpoint_with_a_non_finite_variable_is_never_written(tmp_path):
  variable = tf.Variable([1.0, 2.0])
  step = tf.Variable(0, dtype=tf.int64)
  checkpoint = tf.train.Checkpoint(v=variable, step=step)
  manager = GuardedCheckpointManager(checkpoint, str(tmp_path), max_to_keep=5,
                                     step_counter=step, save_steps=1,
                                     variables=lambda: [variable])
  step.assign(1)
  good = manager.save()
  assert good and good.endswith("ckpt-1")
  step.assign(2)
  variable.assign([1.0, np.nan])
  with pytest.raises(NonFiniteError, match=r"step 2: 1 variable\(s\) hold NaN.*The last "
                                           r"good checkpoint is .*ckpt-1"):
    manager.save()
  assert _checkpoint_steps(tmp_path) == [1]
  assert tf.train.latest_checkpoint(str(tmp_path)) == good


@pytest.mark.slow
def test_pretraining_that_diverges_leaves_only_finite_checkpoints(pretraining_records,
                                                                  tmp_path):
  """The reported case: a huge learning rate, a checkpoint every step. Training must stop
  with a message naming the step and the last good checkpoint, and every checkpoint on
  disk must be finite (before: ckpt-31 held 33 non-finite variables)."""
  records_dir, _ = pretraining_records
  run = tmp_path / "run"
  with pytest.raises(NonFiniteError, match=r"before step \d+|step \d+:") as stopped:
    _pretrain(records_dir, run, train_steps=400, learning_rate=1e3, warmup_steps=50,
              save_steps=1, max_checkpoints=1000, config=_config(records_dir, dropout=0.0,
                                                                 dropatt=0.0))
  assert "last good checkpoint" in str(stopped.value)
  steps = _checkpoint_steps(run)
  assert steps, "no checkpoint at all"
  for step in steps:
    reader = tf.train.load_checkpoint(os.path.join(str(run), f"ckpt-{step}"))
    for name, _ in tf.train.list_variables(os.path.join(str(run), f"ckpt-{step}")):
      value = reader.get_tensor(name)
      if np.issubdtype(np.asarray(value).dtype, np.floating):
        assert np.all(np.isfinite(value)), (step, name)
  assert f"ckpt-{steps[-1]}" in str(stopped.value)


def test_a_fine_tuned_model_with_nan_weights_is_not_saved(tmp_path):
  spec = ClassifierSpec(task_name="t", labels=("a", "b"))
  model = build_classifier(small_config(), 2)
  model({"input_ids": tf.zeros([1, 4], tf.int32)})
  model.encoder.word_embedding.assign(
      tf.fill(tf.shape(model.encoder.word_embedding), np.nan))
  with pytest.raises(NonFiniteError, match="nothing was written"):
    model_directory.save(model, str(tmp_path / "final"), spec, None)
  assert not (tmp_path / "final").exists()


# ---- 3. interrupted + resumed = uninterrupted, with dropout on --------------------------

def test_dropout_masks_are_a_function_of_seed_step_and_replica():
  layer = StepDropout(0.5)
  x = tf.ones([4, 64])

  def masks(seed):
    with training_seed(seed):
      return [layer(x, training=True).numpy() for _ in range(2)]

  first, again = masks(step_seed(7, 3, 0)), masks(step_seed(7, 3, 0))
  np.testing.assert_array_equal(first, again)               # same (seed, step, replica)
  assert not np.array_equal(first[0], first[1])             # two calls, two masks
  for other in (step_seed(7, 4, 0), step_seed(7, 3, 1), step_seed(8, 3, 0),
                step_seed(7, 3, 0, micro_batch=1)):
    assert not np.array_equal(masks(other)[0], first[0])
  kept = np.mean(first[0] > 0)
  assert 0.35 < kept < 0.65 and set(np.unique(first[0])) <= {0.0, 2.0}
  # Outside the context it is Keras' Dropout, and off at inference.
  np.testing.assert_array_equal(layer(x, training=False).numpy(), x.numpy())


# ---- 4. a rerun with other settings is refused, listing what differs ---------------------

def test_pretraining_rerun_with_another_model_config_names_the_setting(pretraining_records,
                                                                       tmp_path):
  """Before: a raw TensorFlow restore error about memory_0:0."""
  records_dir, _ = pretraining_records
  _pretrain(records_dir, tmp_path / "run", train_steps=2, save_steps=2)
  with pytest.raises(run_directory.RunSettingsError, match=r"config.mem_len: 48 in the "
                                                           r"directory, 16 now"):
    _pretrain(records_dir, tmp_path / "run", train_steps=2,
              config=_config(records_dir, mem_len=16))


# ---- 5. one run per model directory ------------------------------------------------------

def test_directory_lock_is_exclusive_reentrant_and_released(tmp_path):
  lock = paths.DirectoryLock(str(tmp_path / "d"), "test").acquire()
  inner = paths.DirectoryLock(str(tmp_path / "d"), "test").acquire()     # same process
  inner.release()
  assert (tmp_path / "d" / paths.LOCK_NAME).exists()
  result = subprocess.run(
      [sys.executable, "-c", "import sys; from xlnet_tf import paths; "
       "paths.DirectoryLock(sys.argv[1], 'other').acquire()", str(tmp_path / "d")],
      cwd=ROOT, capture_output=True, text=True, check=False)
  assert result.returncode != 0 and "DirectoryLockedError" in result.stderr
  assert f"pid {os.getpid()}" in result.stderr
  lock.release()
  assert not (tmp_path / "d" / paths.LOCK_NAME).exists()


# ---- 6. impossible optimizer settings ----------------------------------------------------

@pytest.mark.parametrize("changes, message", [
    ({"learning_rate": -1e-3}, r"--learning_rate must be > 0, got -0.001"),
    ({"learning_rate": 0.0}, r"--learning_rate must be > 0, got 0.0"),
    ({"learning_rate": float("nan")}, r"--learning_rate must be > 0, got nan"),
    ({"warmup_steps": -1}, r"--warmup_steps must be >= 0"),
    ({"weight_decay": -0.1}, r"--weight_decay must be >= 0"),
    ({"adam_epsilon": 0.0}, r"--adam_epsilon must be > 0"),
    ({"clip_norm": -1.0}, r"--clip must be > 0"),
    ({"min_lr_ratio": 2.0}, r"--min_lr_ratio must be in \[0, 1\]"),
    ({"save_steps": 0}, r"--save_steps must be >= 1"),
])
def test_impossible_optimizer_settings_are_refused(changes, message):
  with pytest.raises(ValueError, match=message):
    pretrain_options(model_dir="unused", train_steps=10, **changes)
  with pytest.raises(ValueError, match=message):
    loop.RunOptions(model_dir="unused", train_steps=10, **changes)


@pytest.mark.slow
def test_negative_learning_rate_on_the_command_line_trains_nothing(pretraining_records,
                                                                   tmp_path):
  """Before: gradient ascent, exit 0, loss 8,577."""
  records_dir, _ = pretraining_records
  result = _cli(["experiments.pretrain", f"--train_data={records_dir}",
                 f"--model_dir={tmp_path / 'run'}", "--learning_rate=-0.001",
                 "--train_steps=5"])
  assert result.returncode != 0
  assert "pretrain: --learning_rate must be > 0, got -0.001" in result.stderr
  assert not (tmp_path / "run").exists()


# ---- 8 / 13. path errors before any work -------------------------------------------------

@pytest.mark.slow
def test_bad_model_dir_and_missing_init_checkpoint_are_named_before_any_work(
    pretraining_records, tmp_path):
  records_dir, _ = pretraining_records
  a_file = tmp_path / "a_file"
  a_file.write_text("x")
  result = _cli(["experiments.pretrain", f"--train_data={records_dir}",
                 f"--model_dir={a_file / 'run'}"])
  assert result.returncode != 0
  assert f"pretrain: --model_dir: {a_file / 'run'} lies under {a_file}, which is a file" \
      in result.stderr
  result = _cli(["experiments.run_classifier", "--do_train", "--task_name=movie_reviews",
                 "--init_checkpoint=/nonexistent", f"--output_dir={tmp_path / 'out'}",
                 f"--model_dir={tmp_path / 'run'}"])
  assert result.returncode != 0
  assert ("run_classifier: --init_checkpoint: /nonexistent does not exist"
          in result.stderr), result.stderr[-2000:]
  assert "--spiece_model_file" not in result.stderr          # no usage text
  assert not (tmp_path / "out").exists() and not (tmp_path / "run").exists()
  result = _cli(["experiments.run_classifier", "--do_train", "--task_name=movie_reviews",
                 f"--output_dir={a_file}", f"--model_dir={tmp_path / 'run'}"])
  assert result.returncode != 0
  assert f"run_classifier: --output_dir: {a_file} is a file" in result.stderr
