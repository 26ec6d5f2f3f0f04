"""The driver (`tasks.train_lib`, experiments/train.py) does for every task what it does for
the small task of tests/mock_task.py, so its features are tested once, here: exact resume
with dropout and gradient accumulation (in-process; killed with SIGKILL and rerun from the
command line, slow), the evaluation mode, the best model kept by train_and_eval (its metric
higher or lower is better), the export (of best/, else final/; never over an export), the
run settings recorded and a rerun with others refused, the model directory's lock,
bfloat16 with accumulation, a non-finite loss stopping with only finite checkpoints,
checkpoints at multiples of the checkpoint interval, and two replicas training like one
device (slow).

What each task kind adds (its data position on resume, its evaluation, its model directory
and export) is tested per kind: tests/tasks/test_every_kind.py and the one-step test of
tests/tasks/test_tasks_<kind>.py.
"""

import glob
import json
import os
import shutil
import signal
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

import helpers
import mock_task
from xlnet_tf import model_directory
from xlnet_tf import paths
from xlnet_tf.data import classifier_features
from xlnet_tf.data import tokenization
from xlnet_tf.data.classifier_examples import InputExample
from xlnet_tf.models.xlnet_classifier import ClassifierSpec
from xlnet_tf.tasks import train_lib as driver
from xlnet_tf.training import run_directory
from xlnet_tf.training.trainer import NonFiniteLossError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TESTS = os.path.join(ROOT, "tests")
ACCUMULATE = "task.optimization.grad_accum_steps=2"


def _checkpoint_steps(model_dir):
  return sorted(int(p.rsplit("-", 1)[1].split(".")[0])
                for p in glob.glob(os.path.join(str(model_dir), "ckpt-*.index")))


def _events(model_dir, split="validation"):
  return glob.glob(os.path.join(str(model_dir), split, "events.out.tfevents.*"))


@pytest.fixture(scope="module")
def trained(spiece_model, tmp_path_factory):
  """A train_and_eval run of the mock experiment (6 steps, dropout 0.1, two micro-batches a
  step, an evaluation every 2 steps): (params, model directory, what the run returned, the
  number of validation event files right after it)."""
  model_dir = str(tmp_path_factory.mktemp("mock") / "run")
  params = mock_task.params(spiece_model, ACCUMULATE)
  out = driver.run(params, "train_and_eval", model_dir)
  return params, model_dir, out, len(_events(model_dir))


@pytest.fixture(scope="module")
def resumed(spiece_model, tmp_path_factory):
  """The same run stopped at step 3 and run again (train_and_eval both times), its best
  model chosen by the validation loss (lower is better): (params, model directory, the
  first part's summary, whether final/ existed after it, the second part's summary)."""
  model_dir = str(tmp_path_factory.mktemp("mock") / "run")
  params = mock_task.params(spiece_model, ACCUMULATE + ",task.metric=validation_loss")
  first = driver.run(params, "train_and_eval", model_dir, stop_at_step=3)["train"]
  final_after_stop = os.path.exists(os.path.join(model_dir, driver.FINAL_DIR))
  second = driver.run(params, "train_and_eval", model_dir)["train"]
  return params, model_dir, first, final_after_stop, second


def test_resume_is_exact_with_dropout_and_accumulation(trained, resumed):
  """A run stopped at step 3 (mid-way between checkpoints, a micro-batch pair and dropout
  masks drawn per step) and run again gives the uninterrupted run's losses exactly (the
  evaluations in between change no training number)."""
  straight = trained[2]["train"]
  _, _, first, final_after_stop, second = resumed
  assert straight["step"] == 6 and len(straight["losses"]) == 6
  assert first["step"] == 3 and not final_after_stop              # final/ at the end only
  assert second["start_step"] == 3 and second["step"] == 6
  assert first["losses"] + second["losses"] == straight["losses"]      # exact resume


def test_eval_mode_writes_results_and_refuses_another_model(trained, spiece_model):
  params, model_dir, _, _ = trained
  metrics = driver.run(params, "eval", model_dir)["eval"]
  written = json.loads(open(os.path.join(model_dir, "eval_results_dev.json")).read())
  assert written == metrics
  assert metrics["step"] == 6 and metrics["checkpoint"] == "ckpt-6"   # the newest
  assert metrics["num_examples"] == 64 and 0.0 <= metrics["accuracy"] <= 1.0
  assert _events(model_dir)
  assert os.path.exists(os.path.join(model_dir, "params.yaml"))
  # A config of another model is refused before the checkpoint is read, naming the setting;
  # settings that do not shape the model may differ.
  other = mock_task.params(spiece_model, ACCUMULATE + ",task.model.n_layer=2")
  with pytest.raises(run_directory.RunSettingsError) as raised:
    driver.run(other, "eval", model_dir)
  assert "evaluating reads its checkpoint" in str(raised.value)
  assert "config.n_layer: 1 in the directory, 2 now" in str(raised.value)
  same = mock_task.params(spiece_model, ACCUMULATE + ",task.optimization.learning_rate=0.5")
  assert driver.run(same, "eval", model_dir)["eval"]["step"] == 6


def test_train_and_eval_keeps_the_best_model(trained, resumed):
  params, model_dir, out, validation_events = trained
  evals = out["train"]["evals"]
  assert len(evals) == 3 and out["eval"] == evals[-1]          # at steps 2, 4 and 6
  assert validation_events == 1
  best_dir = os.path.join(model_dir, driver.BEST_DIR)
  best = json.loads(open(os.path.join(best_dir, driver.RESULTS_FILE)).read())
  accuracies = [e["accuracy"] for e in evals]
  assert best["accuracy"] == max(accuracies)                   # higher is better
  assert best["step"] == 2 * (1 + accuracies.index(max(accuracies)))
  assert os.path.exists(os.path.join(best_dir, ClassifierSpec.FILE))
  # best/ is a model directory like final/, with the evaluation that chose it.
  final_dir = os.path.join(model_dir, driver.FINAL_DIR)
  assert sorted(os.listdir(best_dir)) == sorted(os.listdir(final_dir) + [driver.RESULTS_FILE])
  cached = driver._with_default_cache(params, model_dir)  # pylint: disable=protected-access
  task = mock_task.MockTask(cached.task)
  again = task.evaluate(task.load_model_dir(best_dir))          # the model it scored
  assert again["accuracy"] == best["accuracy"]
  assert again["validation_loss"] == pytest.approx(best["validation_loss"], rel=1e-6)

  # Lower is better (the validation loss), across a resume: the best of both parts.
  _, resumed_dir, first, _, second = resumed
  evals = first["evals"] + second["evals"]
  steps = [2, 3, 4, 6]                           # every 2 steps, and at the stop
  assert len(evals) == len(steps)
  best = json.loads(open(os.path.join(resumed_dir, driver.BEST_DIR,
                                      driver.RESULTS_FILE)).read())
  losses = [e["validation_loss"] for e in evals]
  assert best["validation_loss"] == min(losses)
  assert best["step"] == steps[losses.index(min(losses))]


def test_export_takes_best_else_final_and_never_overwrites(trained, spiece_model, tmp_path,
                                                           monkeypatch):
  params, model_dir, _, _ = trained
  export_dir = driver.run(params, "export", model_dir)["export"]
  assert export_dir == os.path.join(model_dir, driver.EXPORT_DIR)
  card = open(os.path.join(export_dir, "README.md"), encoding="utf-8").read()
  assert f"- **Source**: {os.path.join(model_dir, driver.BEST_DIR)}\n" in card
  assert not any(".partial-" in name for name in os.listdir(model_dir))
  # The export serves what best/ computes.
  texts = [e.text_a for e in mock_task.examples("dev", 4)]
  served = helpers.serve_in_process(export_dir, {"text_a": texts})
  best_model, spec = model_directory.load(os.path.join(model_dir, driver.BEST_DIR),
                                          ClassifierSpec)
  sp = tokenization.load_spiece(spiece_model)
  features = [classifier_features.encode_example(
      sp, InputExample("x", t, None, spec.labels[0]), spec.max_seq_length, spec.labels)
      for t in texts]
  logits = best_model({k: np.stack([f[k] for f in features])
                       for k in ("input_ids", "segment_ids", "input_mask")})["logits"]
  np.testing.assert_allclose(served["probabilities"], tf.nn.softmax(logits).numpy(),
                             atol=1e-5)
  with pytest.raises(FileExistsError, match="not empty"):       # an export is never replaced
    driver.run(params, "export", model_dir)

  # A run without evaluations (no best/) exports final/.
  train_only = tmp_path / "train_only"
  shutil.copytree(os.path.join(model_dir, driver.FINAL_DIR), train_only / driver.FINAL_DIR)
  sources = []

  def export(self, source, partial):
    del self
    sources.append(source)
    os.makedirs(partial, exist_ok=True)
    open(os.path.join(partial, "saved_model.pb"), "w").close()
    return partial
  monkeypatch.setattr(mock_task.MockTask, "export", export)
  driver.run(params, "export", str(train_only))
  assert sources == [str(train_only / driver.FINAL_DIR)]


def test_run_settings_are_recorded_and_refused(trained, resumed, spiece_model):
  params, model_dir, _, _ = trained
  settings = json.loads(open(os.path.join(model_dir, run_directory.SETTINGS_FILE)).read())
  task = mock_task.MockTask(params.task)
  assert settings["task"] == task.run_settings()
  assert settings["train_batch_size"] == 8 and settings["replicas"] == 1
  assert settings["options"]["learning_rate"] == 0.001
  with pytest.raises(run_directory.RunSettingsError,
                     match=r"(?s)What differs:.*options.learning_rate: 0.001 in the "
                           r"directory, 0.01 now"):
    driver.run(mock_task.params(spiece_model, ACCUMULATE +
                                ",task.optimization.learning_rate=0.01"), "train", model_dir)
  with pytest.raises(run_directory.RunSettingsError, match=r"train_data: '\w+' in the "):
    driver.run(mock_task.params(spiece_model, ACCUMULATE + ",task.num_examples=48"), "train",
               model_dir)
  # Settings that do not change the numbers may change: the finished run reruns, and has
  # nothing left to do (no step, no file).
  params, resumed_dir, _, _, _ = resumed
  listing = sorted(os.listdir(resumed_dir))
  again = driver.run(params.replace(trainer=params.trainer.replace(
      checkpoint_interval=1, steps_per_loop=2)), "train", resumed_dir)["train"]
  assert again == {"step": 6, "losses": [], "start_step": 6,
                   "final_dir": os.path.join(resumed_dir, driver.FINAL_DIR)}
  assert sorted(os.listdir(resumed_dir)) == listing


# A real DirectoryLock held by another live process.
_HOLD = ("import sys, time; from xlnet_tf import paths; "
         "paths.DirectoryLock(sys.argv[1], 'fine-tuning').acquire(); print('held', "
         "flush=True); time.sleep(120)")


def test_the_model_directory_is_locked(spiece_model, tmp_path):
  params = mock_task.params(spiece_model, "trainer.train_steps=2")
  run = tmp_path / "run"
  holder = subprocess.Popen([sys.executable, "-c", _HOLD, str(run)], cwd=ROOT,
                            stdout=subprocess.PIPE, text=True)
  try:
    assert holder.stdout.readline().strip() == "held"
    with pytest.raises(paths.DirectoryLockedError,
                       match=rf"is in use by another run: pid {holder.pid} on host"):
      driver.run(params, "train", str(run))
    assert not _checkpoint_steps(run)
  finally:
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
  summary = driver.run(params, "train", str(run))["train"]      # stale: taken over
  assert summary["step"] == 2 and not (run / paths.LOCK_NAME).exists()


def test_bfloat16_with_gradient_accumulation(spiece_model, tmp_path):
  """The precision and accumulation settings every task takes (each kind's own run of
  them: test_experiment_configs.py, slow)."""
  params = mock_task.params(spiece_model, "trainer.train_steps=2,trainer.checkpoint_interval=2,"
                            "task.optimization.precision=bfloat16," + ACCUMULATE)
  summary = driver.run(params, "train", str(tmp_path / "run"))["train"]
  assert summary["step"] == 2 and len(summary["losses"]) == 2
  assert np.all(np.isfinite(summary["losses"])), summary["losses"]
  assert tf_keras.mixed_precision.global_policy().name == "mixed_bfloat16"
  assert os.path.isdir(tmp_path / "run" / driver.FINAL_DIR)


def test_a_non_finite_loss_stops_with_only_finite_checkpoints(spiece_model, tmp_path):
  # The loss turns NaN in the first loop: nothing is written.
  run = tmp_path / "nan"
  with pytest.raises(NonFiniteLossError, match=r"the loss became nan.*The last good "
                                               r"checkpoint is none"):
    driver.run(mock_task.params(spiece_model, "trainer.train_steps=20,"
                                "trainer.checkpoint_interval=2,trainer.steps_per_loop=2,"
                                "task.optimization.learning_rate=1e30"), "train", str(run))
  assert tf.train.latest_checkpoint(str(run)) is None
  # A run that diverges later, a checkpoint every step: it stops naming the step and the
  # last good checkpoint, and every checkpoint on disk is finite.
  run = tmp_path / "diverging"
  with pytest.raises(NonFiniteLossError, match=r"step \d+") as stopped:
    driver.run(mock_task.params(spiece_model, "trainer.train_steps=20,"
                                "trainer.checkpoint_interval=1,trainer.max_to_keep=100,"
                                "task.optimization.learning_rate=1e30,"
                                "task.optimization.warmup_steps=10"), "train", str(run))
  steps = _checkpoint_steps(run)
  assert steps, "no checkpoint at all"
  assert "last good checkpoint" in str(stopped.value)
  assert f"ckpt-{steps[-1]}" in str(stopped.value)
  for step in steps:
    prefix = os.path.join(str(run), f"ckpt-{step}")
    reader = tf.train.load_checkpoint(prefix)
    for name, _ in tf.train.list_variables(prefix):
      value = reader.get_tensor(name)
      if np.issubdtype(np.asarray(value).dtype, np.floating):
        assert np.all(np.isfinite(value)), (step, name)


def test_checkpoints_at_multiples_of_the_checkpoint_interval(spiece_model, tmp_path):
  """Before: loops of 3 steps and a checkpoint every 4 saved at 3, 9 and the end."""
  params = mock_task.params(spiece_model, "trainer.train_steps=10,trainer.steps_per_loop=3,"
                            "trainer.checkpoint_interval=4,trainer.max_to_keep=10")
  assert driver.run(params, "train", str(tmp_path / "run"))["train"]["step"] == 10
  assert _checkpoint_steps(tmp_path / "run") == [4, 8, 10]


@pytest.mark.slow
def test_killed_and_rerun_equals_uninterrupted(spiece_model, tmp_path):
  """The driver's command line (tests/mock_task_main.py: experiments.train with the mock
  registered) killed with SIGKILL in step 7 of 12, between two checkpoints, then run again
  with the same command: per-step losses (from the TensorBoard events) equal those of a run
  never interrupted (dropout on, two micro-batches a step)."""
  env = {**os.environ, "PYTHONPATH": os.pathsep.join(
      p for p in (ROOT, TESTS, os.environ.get("PYTHONPATH")) if p)}

  def command(model_dir):
    return [f"--experiment={mock_task.EXPERIMENT}", "--mode=train", f"--model_dir={model_dir}",
            "--params_override=" + ",".join((
                mock_task.spiece_override(spiece_model), ACCUMULATE,
                "trainer.train_steps=12,trainer.steps_per_loop=1,"
                "trainer.checkpoint_interval=2"))]

  def run(model_dir):
    done = subprocess.run([sys.executable, "-m", "mock_task_main", *command(model_dir)],
                          cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-3000:]

  whole, split = tmp_path / "whole", tmp_path / "split"
  run(whole)
  helpers.run_killed_at_step("mock_task_main", command(split), step=7, cwd=ROOT, env=env)
  assert _checkpoint_steps(split) == [2, 4, 6]          # killed in step 7, before ckpt-8
  run(split)
  expected, resumed = helpers.tensorboard_losses(whole), helpers.tensorboard_losses(split)
  assert len(expected) == len(resumed) == 12
  np.testing.assert_allclose(resumed, expected, rtol=1e-6, atol=1e-6)
  assert os.path.isdir(split / driver.FINAL_DIR)


@pytest.mark.slow
def test_two_replicas_train_like_one_device(spiece_model, tmp_path):
  """Two replicas (MirroredStrategy on 2 logical CPUs) on the same global batches make the
  same updates as one device (tests/mirrored_run.py, a process of its own)."""
  result = subprocess.run(
      [sys.executable, os.path.join(TESTS, "mirrored_run.py"), spiece_model, str(tmp_path),
       "4"], cwd=ROOT, env={**os.environ, "PYTHONPATH": ROOT}, capture_output=True,
      text=True, timeout=600, check=False)
  assert result.returncode == 0, result.stderr[-3000:]
  runs = json.loads(result.stdout.strip().splitlines()[-1])
  assert runs["mirrored"]["replicas"] == 2 and runs["same_initial_weights"]
  np.testing.assert_allclose(runs["mirrored"]["losses"], runs["one_device"]["losses"],
                             rtol=1e-5)
  assert runs["max_weight_change"] > 1e-3                 # the runs did train
  assert runs["max_weight_difference"] < 1e-3 * runs["max_weight_change"]
