"""The Model Garden task layer for classification: experiment registry, YAML configs, strict
overrides, and the driver (experiments/train.py) training, evaluating and resuming."""

import glob
import json
import os
import subprocess
import sys

from official.core import exp_factory
from official.core import task_factory
import numpy as np
import pytest
import tensorflow as tf

from helpers import serve_fresh
from xlnet_tf import model_directory
from xlnet_tf.configs import XLNetConfig
from xlnet_tf.data import classifier_features
from xlnet_tf.data import classifier_tasks
from xlnet_tf.data import tokenization
from xlnet_tf.tasks import classification
from xlnet_tf.tasks import train_lib as driver
from xlnet_tf.training import run_directory
from xlnet_tf.models.xlnet_classifier import ClassifierSpec

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIGS = sorted(glob.glob(os.path.join(ROOT, "experiments", "configs", "classification_*.yaml")))
DEMO = os.path.join(ROOT, "experiments", "configs", "classification_demo.yaml")


def _demo_params(spiece_model, cache_dir, override=""):
  return driver.parse_params(
      classification.KIND.experiment, [DEMO],
      f"task.train_data.spiece_model={spiece_model},"
      f"task.validation_data.spiece_model={spiece_model},"
      f"task.train_data.cache_dir={cache_dir},task.validation_data.cache_dir={cache_dir}"
      + override)


def test_experiment_is_registered():
  params = exp_factory.get_exp_config("xlnet/classification")
  assert isinstance(params.task, classification.ClassificationConfig)
  assert params.task.optimization.learning_rate == 1e-5        # RunOptions' default
  task = task_factory.get_task(params.task)
  assert isinstance(task, classification.ClassificationTask)
  with pytest.raises(NotImplementedError, match="experiments.train"):
    task.train_step({}, None, None)                  # says which trainer to use instead


def test_every_yaml_parses_and_builds_its_task(tmp_path):
  assert {os.path.basename(p) for p in CONFIGS} >= {"classification_base_glue.yaml",
                                                    "classification_demo.yaml"}
  base = XLNetConfig(n_layer=12, d_model=768, n_head=12, d_head=64, d_inner=3072)
  base.to_json_file(str(tmp_path / "xlnet_config.json"))       # a stand-in base checkpoint
  for path in CONFIGS:
    params = driver.parse_params(classification.KIND.experiment, [path],
                                 f"task.init_checkpoint={tmp_path}"
                                 if "base_glue" in path else None)
    task = task_factory.get_task(params.task)
    config = task.xlnet_config()
    assert config.mem_len == 0 and config.attn_type == "bi"
    if "base_glue" in path:
      assert task.spec.is_regression and task.task_spec.name == "sts-b"
      assert config.d_model == 768 and params.trainer.train_steps == 1200
      assert task.spiece_model(params.task.train_data) == str(tmp_path / "spiece.model")
    else:
      model = task.build_model()
      assert model.num_classes == 2 and config.n_layer == 1


def test_a_typo_in_a_config_key_is_an_error_naming_it(tmp_path):
  with pytest.raises(KeyError, match="lerning_rate"):
    driver.parse_params(classification.KIND.experiment, [DEMO],
                        "task.optimization.lerning_rate=0.1")
  bad = tmp_path / "bad.yaml"
  bad.write_text("task:\n  modle:\n    n_layer: 2\n")
  with pytest.raises(KeyError, match="modle"):
    driver.parse_params(classification.KIND.experiment, [DEMO, str(bad)])
  # The command line says the same and fails.
  result = subprocess.run(
      [sys.executable, "-m", "experiments.train", "--experiment=xlnet/classification",
       f"--config_file={DEMO}", "--params_override=task.train_data.globl_batch_size=4",
       "--mode=train", f"--model_dir={tmp_path / 'run'}"],
      cwd=ROOT, capture_output=True, text=True, check=False)
  assert result.returncode != 0 and "globl_batch_size" in result.stderr
  assert not os.path.exists(tmp_path / "run" / "run_settings.json")
  # A missing config file and an unknown experiment are named in one line, no traceback.
  for flags_, message in (
      ([f"--config_file={tmp_path / 'nope.yaml'}", "--experiment=xlnet/classification"],
       f"train: --config_file {tmp_path / 'nope.yaml'}: no such file"),
      (["--experiment=xlnet/nothing"],
       "train: --experiment 'xlnet/nothing' is not registered")):
    result = subprocess.run(
        [sys.executable, "-m", "experiments.train", *flags_, "--mode=train",
         f"--model_dir={tmp_path / 'run2'}"],
        cwd=ROOT, capture_output=True, text=True, check=False)
    assert result.returncode != 0 and message in result.stderr, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    assert not os.path.exists(tmp_path / "run2")


def test_a_mismatched_size_and_checkpoint_are_refused(tmp_path):
  XLNetConfig(n_layer=2, d_model=16, n_head=2, d_head=8, d_inner=32).to_json_file(
      str(tmp_path / "xlnet_config.json"))
  params = driver.parse_params(classification.KIND.experiment, [DEMO],
                               f"task.init_checkpoint={tmp_path}")
  with pytest.raises(ValueError, match="n_layer=1 differs"):
    task_factory.get_task(params.task).xlnet_config()
  with pytest.raises(driver.ConfigError, match="n_layer=1 differs"):     # before any work
    driver.run(params, "train", str(tmp_path / "run"))
  assert not os.path.exists(tmp_path / "run" / "run_settings.json")


def test_demo_trains_resumes_exactly_and_evaluates(spiece_model, tmp_path):
  cache = str(tmp_path / "features")
  params = _demo_params(spiece_model, cache)
  straight = driver.run(params, "train", str(tmp_path / "straight"))["train"]
  assert straight["step"] == 20 and len(straight["losses"]) == 2

  run_dir = str(tmp_path / "run")
  first = driver.run(params, "train", run_dir, stop_at_step=10)["train"]
  assert first["step"] == 10
  second = driver.run(params, "train", run_dir)["train"]
  assert second["start_step"] == 10 and second["step"] == 20
  assert first["losses"] + second["losses"] == straight["losses"]   # exact resume

  checkpoints = sorted(os.listdir(run_dir))
  again = driver.run(params, "train", run_dir)["train"]            # nothing left to do
  assert again == {"step": 20, "losses": [], "start_step": 20,
                   "final_dir": os.path.join(run_dir, driver.FINAL_DIR)}
  assert sorted(os.listdir(run_dir)) == checkpoints

  metrics = driver.run(params, "eval", run_dir)["eval"]
  written = json.loads(open(os.path.join(run_dir, "eval_results_dev.json")).read())
  assert written == metrics
  assert metrics["step"] == 20 and metrics["num_examples"] == 1019
  assert 0.0 <= metrics["accuracy"] <= 1.0
  assert glob.glob(os.path.join(run_dir, "validation", "events.out.tfevents.*"))
  assert os.path.exists(os.path.join(run_dir, "params.yaml"))
  assert os.path.exists(os.path.join(run_dir, "final", "classifier.json"))

  with pytest.raises(run_directory.RunSettingsError, match="learning_rate"):
    driver.run(_demo_params(spiece_model, cache, ",task.optimization.learning_rate=0.1"),
               "train", run_dir)


def test_train_and_eval_keeps_the_best_model_and_exports_it(spiece_model, tmp_path):
  params = _demo_params(spiece_model, str(tmp_path / "features"),
                        ",trainer.validation_interval=10")
  run_dir = str(tmp_path / "run")
  out = driver.run(params, "train_and_eval", run_dir)
  evals = out["train"]["evals"]
  assert len(evals) == 2 and out["eval"] == evals[-1]           # at steps 10 and 20
  assert [len(glob.glob(os.path.join(run_dir, "validation", "events.out.tfevents.*")))] == [1]
  best = json.loads(open(os.path.join(run_dir, "best", "eval_results.json")).read())
  accuracies = [e["accuracy"] for e in evals]
  assert best["accuracy"] == max(accuracies)
  assert best["step"] == 10 * (1 + accuracies.index(max(accuracies)))
  assert os.path.exists(os.path.join(run_dir, "best", "classifier.json"))

  export_dir = driver.run(params, "export", run_dir)["export"]
  assert export_dir == os.path.join(run_dir, "export")
  texts = ["a gorgeous, witty, seductive movie.", "the plot is nothing but boilerplate."]
  served = serve_fresh(export_dir, {"text_a": texts}, tmp_path)
  best_model = model_directory.load(os.path.join(run_dir, "best"), ClassifierSpec)[0]
  sp = tokenization.load_spiece(spiece_model)
  task = task_factory.get_task(params.task)
  features = [classifier_features.encode_example(
      sp, classifier_tasks.InputExample("x", t, None, task.spec.labels[0]), 32,
      task.spec.labels) for t in texts]
  logits = best_model({k: np.stack([f[k] for f in features])
                       for k in ("input_ids", "segment_ids", "input_mask")})["logits"]
  np.testing.assert_allclose(served["probabilities"], tf.nn.softmax(logits).numpy(),
                             atol=1e-5)
  with pytest.raises(FileExistsError, match="not empty"):        # an export is never replaced
    driver.run(params, "export", run_dir)


def test_fit_takes_a_clipped_step(spiece_model, tmp_path):
  """compile/fit on the task's dataset: one step's loss is the task's mean cross-entropy
  and the gradient Adam receives (its first moment, (1 - beta_1) g) is that loss's
  gradient clipped by global norm, computed here by hand."""
  params = _demo_params(spiece_model, str(tmp_path / "features"),
                        ",task.optimization.clip_norm=0.05,task.optimization.warmup_steps=0")
  params = driver._with_default_cache(params, str(tmp_path))  # pylint: disable=protected-access
  task = task_factory.get_task(params.task)
  inputs, targets = next(iter(task.fit_inputs(params.task.train_data)))
  labels = targets["logits"]

  fitted = task.build_model()
  reference = task.build_model()
  reference.set_weights(fitted.get_weights())
  before = [w.numpy() for w in fitted.trainable_variables]
  task.compile_model(fitted, train_steps=20)
  history = fitted.fit(tf.data.Dataset.from_tensors((inputs, targets)), epochs=1, verbose=0)

  with tf.GradientTape() as tape:
    logits = reference(inputs, training=True)["logits"]
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))
  grads = tape.gradient(loss, reference.trainable_variables)
  used = [i for i, g in enumerate(grads) if g is not None]
  norm = float(tf.linalg.global_norm([grads[i] for i in used]))
  assert norm > 0.05 * 3                               # the clipping really clips here
  assert history.history["loss"][0] == pytest.approx(float(loss), rel=1e-5)
  optimizer = fitted.optimizer
  for i in used:
    first_moment = optimizer.get_slot(fitted.trainable_variables[i], "m").numpy()
    clipped = tf.convert_to_tensor(grads[i]).numpy() * 0.05 / norm
    np.testing.assert_allclose(first_moment, 0.1 * clipped, rtol=1e-3,
                               atol=1e-3 * float(np.abs(clipped).max()) + 1e-12)
  assert any(not np.allclose(a.numpy(), old) for a, old in zip(fitted.trainable_variables,
                                                               before))


def test_impossible_settings_are_refused_naming_the_key_before_any_work(spiece_model, tmp_path):
  cache = str(tmp_path / "features")
  run_dir = tmp_path / "run"
  for override, message in (
      (",task.optimization.learning_rate=-1", "learning_rate must be > 0, got -1"),
      (",task.train_data.global_batch_size=0",
       "task.train_data.global_batch_size must be >= 1, got 0"),
      (f",task.validation_data.spiece_model={tmp_path / 'none.model'}",
       f"task.validation_data.spiece_model: {tmp_path / 'none.model'} does not exist")):
    with pytest.raises(driver.ConfigError, match=message):
      driver.run(_demo_params(spiece_model, cache, override), "train_and_eval", str(run_dir))
    assert not run_dir.exists()
  (tmp_path / "file").write_text("")
  with pytest.raises(NotADirectoryError, match="which is a file, not a directory"):
    driver.run(_demo_params(spiece_model, cache), "train", str(tmp_path / "file" / "run"))
