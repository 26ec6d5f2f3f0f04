"""Training never loses or silently corrupts work (issue 15, the training items): no
non-finite checkpoint, exact resume with dropout on, reruns with other settings refused,
one run per model directory, impossible optimizer settings refused, clear path errors,
checkpoints at multiples of save_steps."""

import glob
import os
import signal
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

import helpers
from helpers import build_for_training
from helpers import pretrain_config
from helpers import pretrain_options
from helpers import run_pretraining
from helpers import small_config
from helpers import train_classifier
from xlnet_tf import model_directory
from xlnet_tf import paths
from xlnet_tf.data import classifier_features
from xlnet_tf.data import classifier_tasks
from xlnet_tf.data import feature_cache
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
  """Dropout on, and a memory longer than the reuse part (16 rows carry over)."""
  return pretrain_config(records_dir, **{"dropout": 0.1, "dropatt": 0.1, "mem_len": 48,
                                         **changes})


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


def test_pretraining_resumed_equals_uninterrupted_with_dropout(pretraining_records, tmp_path):
  """Before: with dropout every loss after the restart differed (up to 0.1)."""
  records_dir, _ = pretraining_records
  whole = _pretrain(records_dir, tmp_path / "whole", train_steps=8)
  first = _pretrain(records_dir, tmp_path / "split", train_steps=8, stop_at_step=3)
  second = _pretrain(records_dir, tmp_path / "split", train_steps=8)
  assert second["start_step"] == 3
  np.testing.assert_allclose(first["losses"] + second["losses"], whole["losses"], rtol=1e-6,
                             atol=1e-6)
  # Dropout is really on: the same steps without it give other losses.
  plain = _pretrain(records_dir, tmp_path / "plain", train_steps=8, stop_at_step=2,
                    config=_config(records_dir, dropout=0.0, dropatt=0.0))
  assert abs(plain["losses"][1] - whole["losses"][1]) > 1e-4


def _features(spiece_model, tmp_path, count=64):
  task = classifier_tasks.get_task("movie_reviews").configure(None)
  examples = task.read(None, "train")[:count]
  return classifier_features.cached_features(
      examples, spiece_model, 32, label_list=task.labels, task=task.name, split="train",
      cache_dir=str(tmp_path / "features"))


def _fine_tune(features, model_dir, config=None, grad_accum_steps=2, **options):
  config = config or small_config(n_token=4000, dropout=0.1, dropatt=0.1)
  values = dict(model_dir=str(model_dir), train_steps=10, learning_rate=1e-3,
                warmup_steps=1, steps_per_loop=1, save_steps=3, seed=3,
                grad_accum_steps=grad_accum_steps)
  values.update(options)
  options = loop.RunOptions(**values)
  spec = ClassifierSpec(task_name="movie_reviews", labels=("0", "1"),
                        max_seq_length=32)
  strategy = tf.distribute.get_strategy()
  tf_keras.utils.set_random_seed(1)
  model, optimizer = build_for_training(strategy, config, spec, options,
                                        dropout=config.dropout)
  return train_classifier(
      strategy, model, optimizer,
      lambda ctx: classifier_features.classifier_dataset(
          features, 4, True, seed=5, input_context=ctx, shuffle_buffer_size=1000),
      options, {"train_data": feature_cache.read_cache_info(features)["key"]})


def test_fine_tuning_resumed_equals_uninterrupted_with_dropout(spiece_model, tmp_path):
  """Before: the data restarted from the beginning and the dropout masks differed (98 of
  99 later losses differed)."""
  features = _features(spiece_model, tmp_path)
  whole = _fine_tune(features, tmp_path / "whole")
  first = _fine_tune(features, tmp_path / "split", stop_at_step=4)
  second = _fine_tune(features, tmp_path / "split")
  assert (first["step"], second["start_step"], second["step"]) == (4, 4, 10)
  assert len(whole["losses"]) == 10
  np.testing.assert_allclose(first["losses"] + second["losses"], whole["losses"], rtol=1e-6,
                             atol=1e-6)


@pytest.mark.slow
def test_pretrain_cli_killed_and_rerun_gives_the_uninterrupted_losses(pretraining_records,
                                                                      tmp_path):
  """`kill -9` in the middle of a run, then the same command again: per-step losses (from
  the TensorBoard events) equal those of a run that was never interrupted."""
  records_dir, _ = pretraining_records
  config = tmp_path / "xlnet_config.json"
  _config(records_dir).to_json_file(str(config))
  common = [f"--train_data={records_dir}", f"--model_config={config}", "--train_steps=24",
            "--steps_per_loop=1", "--save_steps=2", "--learning_rate=1e-3",
            "--warmup_steps=2", "--seed=7", "--dropout=0.1", "--dropatt=0.1", "--mem_len=48"]
  assert _cli(["experiments.pretrain", f"--model_dir={tmp_path / 'whole'}"] + common
              ).returncode == 0
  split = tmp_path / "split"
  helpers.run_killed_at_step("experiments.pretrain", [f"--model_dir={split}"] + common,
                             step=11, cwd=ROOT)
  assert max(_checkpoint_steps(split)) == 10       # killed in step 11, before ckpt-12
  rerun = _cli(["experiments.pretrain", f"--model_dir={split}"] + common)
  assert rerun.returncode == 0, rerun.stderr[-3000:]

  whole = helpers.tensorboard_losses(tmp_path / "whole")
  resumed = helpers.tensorboard_losses(split)
  assert len(whole) == len(resumed) == 24
  np.testing.assert_allclose(resumed, whole, rtol=1e-6, atol=1e-6)


# ---- 4. a rerun with other settings is refused, listing what differs ---------------------

def test_fine_tuning_rerun_with_other_settings_is_refused(spiece_model, tmp_path):
  features = _features(spiece_model, tmp_path)
  _fine_tune(features, tmp_path / "run", train_steps=3)
  with pytest.raises(run_directory.RunSettingsError,
                     match=r"(?s)What differs:.*options.learning_rate: 0.001 in the "
                           r"directory, 0.01 now"):
    _fine_tune(features, tmp_path / "run", train_steps=3, learning_rate=1e-2)
  other_data = _features(spiece_model, tmp_path, count=48)
  with pytest.raises(run_directory.RunSettingsError, match=r"train_data: '\w+' in the "):
    _fine_tune(other_data, tmp_path / "run", train_steps=3)
  # Settings that do not change the numbers may change; the same run resumes (here: is done).
  again = _fine_tune(features, tmp_path / "run", train_steps=3, save_steps=1,
                     steps_per_loop=2)
  assert again["start_step"] == 3 and again["losses"] == []


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

_HOLD = ("import sys, time; from xlnet_tf import paths; "
         "paths.DirectoryLock(sys.argv[1], 'pretraining').acquire(); print('held', "
         "flush=True); time.sleep(120)")


def test_a_second_run_into_a_held_model_dir_is_refused_and_a_dead_ones_lock_is_taken(
    pretraining_records, tmp_path):
  records_dir, _ = pretraining_records
  run = tmp_path / "run"
  holder = subprocess.Popen([sys.executable, "-c", _HOLD, str(run)], cwd=ROOT,
                            stdout=subprocess.PIPE, text=True)
  try:
    assert holder.stdout.readline().strip() == "held"
    with pytest.raises(paths.DirectoryLockedError,
                       match=rf"is in use by another run: pid {holder.pid} on host"):
      _pretrain(records_dir, run, train_steps=2)
    assert not _checkpoint_steps(run)
  finally:
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
  summary = _pretrain(records_dir, run, train_steps=2, save_steps=2)   # stale: taken over
  assert summary["step"] == 2 and not (run / paths.LOCK_NAME).exists()


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


# ---- 16. checkpoints at multiples of save_steps ------------------------------------------

def test_checkpoints_are_written_at_multiples_of_save_steps_and_at_the_end(
    pretraining_records, tmp_path):
  """Before: loops of 3 steps and save_steps 4 saved at 3, 9 and the end."""
  records_dir, _ = pretraining_records
  summary = _pretrain(records_dir, tmp_path / "run", train_steps=10, steps_per_loop=3,
                      save_steps=4, max_checkpoints=10,
                      config=_config(records_dir, dropout=0.0, dropatt=0.0))
  assert summary["step"] == 10
  assert _checkpoint_steps(tmp_path / "run") == [4, 8, 10]

