"""Collapse (issue 28): a fine-tuning run whose training loss has not left the labels' prior
loss is reported in one line, and --restarts=N starts it again with the next seed, recorded
in the run settings, MODEL_DIR/collapse.json and the model card, resumed exactly."""

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from helpers import small_config
from xlnet_tf.data import classifier_tasks
from xlnet_tf.tasks import classification
from xlnet_tf.tasks import train_lib as driver
from xlnet_tf.training import collapse
from xlnet_tf.training import run_directory

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEMO = os.path.join(ROOT, "experiments", "configs", "classification_demo.yaml")
# lr 1e-9 (or 3e-5 for 4 steps) cannot leave the prior loss: a deterministic collapse.
COLLAPSING = ("task.optimization.learning_rate=1e-9,trainer.train_steps=8,"
              "trainer.steps_per_loop=2,trainer.checkpoint_interval=2,"
              "task.optimization.collapse_check_steps=4")
RESTARTING = ("task.optimization.learning_rate=3e-5,trainer.train_steps=10,"
              "trainer.steps_per_loop=2,trainer.checkpoint_interval=2,"
              "task.optimization.collapse_check_steps=4,task.optimization.restarts=1")
CAUSES = ("likely causes: a pretrained model that learnt no context (its held-out "
          "pretraining loss near the unigram entropy of its targets: docs/small-models.md), "
          "a learning rate too small or too large, too few steps, labels the text does not "
          "predict; ")


def _params(spiece_model, cache_dir, override):
  return driver.parse_params(
      classification.KIND.experiment, [DEMO],
      f"task.train_data.spiece_model={spiece_model},"
      f"task.validation_data.spiece_model={spiece_model},"
      f"task.train_data.cache_dir={cache_dir},task.validation_data.cache_dir={cache_dir},"
      + override)


def _movie_review_prior_loss():
  """H(prior) of the bundled movie reviews' training labels, counted from the examples."""
  examples = classifier_tasks.get_task("movie_reviews").configure(None).read(None, "train")
  counts = {}
  for example in examples:
    counts[example.label] = counts.get(example.label, 0) + 1
  total = sum(counts.values())
  return -sum(c / total * math.log(c / total) for c in counts.values()), len(set(
      counts.values())) == 1


def _expected_line(loss, step, then):
  prior, balanced = _movie_review_prior_loss()
  note = "ln 2" if balanced else "the entropy of the label prior"
  return (f"fine-tuning collapsed: training loss {loss:.3f} at step {step} has not left the "
          f"majority-class loss {prior:.3f} ({note}); " + CAUSES + then)


def test_reference_loss_is_the_prior_entropy_or_the_label_variance():
  balanced = collapse.reference_loss([0, 1, 1, 0], is_regression=False)
  assert balanced["loss"] == pytest.approx(math.log(2)) and balanced["note"] == "ln 2"
  skewed = collapse.reference_loss([0, 0, 0, 1], is_regression=False)
  assert skewed["loss"] == pytest.approx(-(0.75 * math.log(0.75) + 0.25 * math.log(0.25)))
  assert skewed["note"] == "the entropy of the label prior"
  assert collapse.reference_loss([1.0, 3.0], is_regression=True)["loss"] == pytest.approx(1.0)
  assert collapse.check_step(None, 1000) == 200 and collapse.check_step(None, 30) == 15


def test_impossible_collapse_settings_are_refused_naming_the_flag(spiece_model, tmp_path):
  for override, message in (
      ("task.optimization.restarts=-1", "--restarts must be >= 0, got -1"),
      ("task.optimization.collapse_check_steps=-2",
       "--collapse_check_steps must be >= 0 (0: no check), got -2"),
      ("task.optimization.collapse_check_steps=0,task.optimization.restarts=1",
       "--restarts=1 needs the collapse check, which is off")):
    params = _params(spiece_model, str(tmp_path / "features"), override)
    with pytest.raises(driver.ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
      driver.run(params, "train", str(tmp_path / "run"))
  assert not os.path.exists(tmp_path / "run")


def test_a_collapsing_run_warns_through_the_driver(spiece_model, tmp_path):
  params = _params(spiece_model, str(tmp_path / "features"), COLLAPSING)
  summary = driver.run(params, "train", str(tmp_path / "run"))["train"]
  assert summary["step"] == 8 and len(summary["losses"]) == 4      # loops end at 2, 4, 6, 8
  assert summary["collapse_warnings"] == [
      _expected_line(summary["losses"][1], 4, "--restarts=N retries with the next seed")]
  assert not os.path.exists(tmp_path / "run" / collapse.RECORD_FILE)   # restarts 0: warns only
  options = json.loads((tmp_path / "run" / "run_settings.json").read_text())["options"]
  assert "restarts" not in options and "collapse_check_steps" not in options
  card = (tmp_path / "run" / "final" / "README.md").read_text()
  assert "- **Fine-tuning seed**: 0 (attempt 1 of at most 1)" in card


@pytest.mark.slow
def test_a_run_that_learns_does_not_warn(spiece_model, tmp_path):
  params = _params(spiece_model, str(tmp_path / "features"),
                   "task.train_data.max_examples=64,task.optimization.learning_rate=3e-3,"
                   "trainer.train_steps=30,trainer.steps_per_loop=10,"
                   "trainer.checkpoint_interval=30,task.optimization.collapse_check_steps=30")
  summary = driver.run(params, "train", str(tmp_path / "run"))["train"]
  prior, _ = _movie_review_prior_loss()
  assert summary["losses"][-1] < collapse.THRESHOLD * prior          # it learned ...
  assert "collapse_warnings" not in summary                           # ... and is not warned


def _final_weights(model_dir):
  reader = tf.train.load_checkpoint(os.path.join(model_dir, "final", "model.ckpt"))
  return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()}


@pytest.mark.slow
def test_restart_with_the_next_seed_is_recorded_and_resumes_exactly(spiece_model, tmp_path):
  cache = str(tmp_path / "features")
  params = _params(spiece_model, cache, RESTARTING)
  whole = tmp_path / "whole"
  summary = driver.run(params, "train", str(whole))["train"]
  record = json.loads((whole / collapse.RECORD_FILE).read_text())
  assert record["attempt"] == 1 and record["moving"] is False
  [abandoned] = record["abandoned"]
  assert (abandoned["attempt"], abandoned["seed"], abandoned["step"]) == (0, 0, 4)
  assert record["check"]["step"] == 4 and record["check"]["collapsed"] is True
  assert summary["collapse_warnings"] == [
      _expected_line(abandoned["loss"], 4, "restarting with seed 1"),
      _expected_line(record["check"]["loss"], 4,
                     "no restart left (--restarts=1): finishing this attempt")]
  # The abandoned attempt's checkpoints moved aside; the current attempt's are in MODEL_DIR.
  assert os.path.exists(whole / "abandoned" / "attempt-0" / "ckpt-2.index")
  assert os.path.exists(whole / "ckpt-10.index") and not os.path.exists(whole / "ckpt-2.index")
  options = json.loads((whole / "run_settings.json").read_text())["options"]
  assert (options["restarts"], options["collapse_check_steps"], options["seed"]) == (1, 4, 0)
  assert "attempt" not in options
  card = (whole / "final" / "README.md").read_text()
  prior, _ = _movie_review_prior_loss()
  assert "- **Fine-tuning seed**: 1 (attempt 2 of at most 2)" in card
  assert (f"- **Abandoned attempts (collapsed)**: seed 0: training loss "
          f"{abandoned['loss']:.4f} at step 4 (reference: the majority-class loss "
          f"{prior:.4f})") in card

  split = tmp_path / "split"                 # stopped in the second attempt, then rerun
  first = driver.run(params, "train", str(split), stop_at_step=6)["train"]
  assert first["step"] == 6
  assert json.loads((split / collapse.RECORD_FILE).read_text())["attempt"] == 1
  second = driver.run(params, "train", str(split))["train"]
  assert second["start_step"] == 6 and second["step"] == 10
  assert first["losses"] + second["losses"] == summary["losses"]
  expected, resumed = _final_weights(whole), _final_weights(split)
  assert sorted(expected) == sorted(resumed)
  for name, value in expected.items():
    np.testing.assert_array_equal(resumed[name], value, err_msg=name)

  other = _params(spiece_model, cache, RESTARTING.replace("restarts=1", "restarts=2"))
  with pytest.raises(run_directory.RunSettingsError,
                     match=r"options\.restarts: 1 in the directory, 2 now"):
    driver.run(other, "train", str(split))


@pytest.mark.slow
def test_run_classifier_prints_the_collapse_line(spiece_model, tmp_path):
  config = tmp_path / "xlnet_config.json"
  small_config(n_token=4000).to_json_file(str(config))
  result = subprocess.run(
      [sys.executable, "-m", "experiments.run_classifier", "--do_train",
       "--task_name=movie_reviews", f"--output_dir={tmp_path / 'out'}",
       f"--model_dir={tmp_path / 'run'}", f"--model_config_path={config}",
       f"--spiece_model_file={spiece_model}", "--max_seq_length=32", "--train_batch_size=16",
       "--learning_rate=1e-9", "--train_steps=4", "--iterations=2", "--save_steps=2",
       "--collapse_check_steps=2"],
      cwd=ROOT, capture_output=True, text=True, check=False)
  assert result.returncode == 0, result.stderr[-3000:]
  [line] = [text for text in result.stdout.splitlines()
            if text.startswith("fine-tuning collapsed")]
  loss = float(line.split("training loss ", 1)[1].split(" ", 1)[0])
  assert line == _expected_line(loss, 2, "--restarts=N retries with the next seed")
  assert line in result.stderr                    # and logged (absl logging.warning)
