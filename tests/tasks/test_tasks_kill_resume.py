"""The acceptance test of the task layer, for every task: the driver's command line
killed with SIGKILL in the middle of a run (between two checkpoints), then run again with
the same command, gives per-step losses (from the TensorBoard events) equal to those of a
run that was never interrupted (memories, dropout and the data position included)."""

import glob
import os
import subprocess
import sys

import numpy as np
import pytest

import helpers

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIGS = os.path.join(ROOT, "experiments", "configs")
STEPS = 12
LOOP = f"trainer.train_steps={STEPS},trainer.steps_per_loop=1,trainer.checkpoint_interval=2"


def _command(experiment, config_file, override, model_dir):
  return [sys.executable, "-m", "experiments.train", f"--experiment={experiment}",
          f"--config_file={os.path.join(CONFIGS, config_file)}",
          f"--params_override={override},{LOOP}", "--mode=train", f"--model_dir={model_dir}"]


def _killed_and_rerun_equals_uninterrupted(experiment, config_file, override, tmp_path):
  whole = tmp_path / "whole"
  done = subprocess.run(_command(experiment, config_file, override, whole), cwd=ROOT,
                        capture_output=True, text=True, check=False)
  assert done.returncode == 0, done.stderr[-3000:]

  split = tmp_path / "split"
  killed = _command(experiment, config_file, override, split)
  helpers.run_killed_at_step("experiments.train", killed[3:], step=7, cwd=ROOT)
  steps = sorted(int(p.rsplit("-", 1)[1].split(".")[0])
                 for p in glob.glob(str(split / "ckpt-*.index")))
  assert steps == [2, 4, 6], steps                 # killed in step 7, before ckpt-8
  rerun = subprocess.run(_command(experiment, config_file, override, split), cwd=ROOT,
                         capture_output=True, text=True, check=False)
  assert rerun.returncode == 0, rerun.stderr[-3000:]

  expected, resumed = helpers.tensorboard_losses(whole), helpers.tensorboard_losses(split)
  assert len(expected) == len(resumed) == STEPS
  np.testing.assert_allclose(resumed, expected, rtol=1e-6, atol=1e-6)
  assert os.path.isdir(split / "final")


@pytest.mark.slow
def test_killed_and_rerun_equals_uninterrupted(demo_run, tmp_path):
  """For every trained task kind (`trained_kind`, from the registry; its run: conftest's
  `demo_run`)."""
  _killed_and_rerun_equals_uninterrupted(*demo_run, tmp_path)


@pytest.mark.slow
def test_killed_and_rerun_document_classifier_equals_uninterrupted(spiece_model, tmp_path):
  """The classifier reading whole documents through the memory (task.mem_len > 0:
  classification_long_demo.yaml, bucketed batches, dropout on, also inside the loop over
  the segments read without gradient)."""
  _killed_and_rerun_equals_uninterrupted(
      "xlnet/classification", "classification_long_demo.yaml",
      f"task.train_data.spiece_model={spiece_model},"
      f"task.validation_data.spiece_model={spiece_model},"
      "task.model.dropout=0.1,task.model.dropatt=0.1", tmp_path)
