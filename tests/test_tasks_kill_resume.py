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

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIGS = os.path.join(ROOT, "experiments", "configs")
STEPS = 12
LOOP = f"trainer.train_steps={STEPS},trainer.steps_per_loop=1,trainer.checkpoint_interval=2"


def _classification(spiece_model, records, tmp_path):
  del records, tmp_path
  return "xlnet/classification", "classification_demo.yaml", (
      f"task.train_data.spiece_model={spiece_model},"
      f"task.validation_data.spiece_model={spiece_model},"
      "task.model.dropout=0.1,task.model.dropatt=0.1")


def _pretraining(spiece_model, records, tmp_path):
  del spiece_model, tmp_path
  return "xlnet/pretraining", "pretraining_demo.yaml", (
      f"task.train_data.input_path={records},task.validation_data.input_path={records}")


def _tagging(spiece_model, records, tmp_path):
  del records, tmp_path
  return "xlnet/tagging", "tagging_demo.yaml", (
      f"task.train_data.spiece_model={spiece_model},"
      f"task.validation_data.spiece_model={spiece_model},"
      "task.model.dropout=0.1,task.model.dropatt=0.1")


def _squad(spiece_model, records, tmp_path):
  del records, tmp_path
  return "xlnet/squad", "squad_demo.yaml", (
      f"task.train_data.spiece_model={spiece_model},"
      f"task.validation_data.spiece_model={spiece_model},"
      "task.model.dropout=0.1,task.model.dropatt=0.1")


def _race(spiece_model, records, tmp_path):
  del records
  data_dir = tmp_path / "race"
  helpers.write_race_sample(data_dir, splits=("train", "dev"))
  return "xlnet/race", "race_demo.yaml", (
      f"task.data_dir={data_dir},task.train_data.spiece_model={spiece_model},"
      f"task.validation_data.spiece_model={spiece_model},"
      "task.model.dropout=0.1,task.model.dropatt=0.1")


TASKS = {"classification": _classification, "pretraining": _pretraining,
         "tagging": _tagging, "squad": _squad, "race": _race}


def _command(experiment, config_file, override, model_dir):
  return [sys.executable, "-m", "experiments.train", f"--experiment={experiment}",
          f"--config_file={os.path.join(CONFIGS, config_file)}",
          f"--params_override={override},{LOOP}", "--mode=train", f"--model_dir={model_dir}"]


@pytest.mark.slow
@pytest.mark.parametrize("task", sorted(TASKS))
def test_killed_and_rerun_equals_uninterrupted(task, spiece_model, pretraining_records,
                                               tmp_path):
  experiment, config_file, override = TASKS[task](spiece_model, pretraining_records[0],
                                                  tmp_path)
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
