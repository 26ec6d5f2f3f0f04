"""The Model Garden task layer for classification: experiment registry, YAML configs, strict
overrides (the command line's: slow), and the kind's one step through the driver: trained
and evaluated on the bundled movie reviews, best/ and final/ written, exported, and the
export serving what the Python model computes, also for a text read in segments through
the memory (in a fresh process: slow); compile/fit; settings refused before any work. (The
driver's resume, best model and export rules: tests/tasks/test_driver.py.)"""

import glob
import os
import subprocess
import sys

from official.core import exp_factory
from official.core import task_factory
import numpy as np
import pytest
import tensorflow as tf

import helpers
from xlnet_tf import model_directory
from xlnet_tf.configs import XLNetConfig
from xlnet_tf.data import classifier_features
from xlnet_tf.data import classifier_tasks
from xlnet_tf.data import document_features
from xlnet_tf.data import tokenization
from xlnet_tf.tasks import classification
from xlnet_tf.tasks import train_lib as driver
from xlnet_tf.models.xlnet_classifier import ClassifierSpec

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIGS = sorted(glob.glob(os.path.join(ROOT, "experiments", "configs", "classification_*.yaml")))
DEMO = os.path.join(ROOT, "experiments", "configs", "classification_demo.yaml")
SPEECH = os.path.join(ROOT, "data_prep", "sample_data", "sotu", "2021_joseph_r_biden_d.txt")


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


@pytest.mark.slow
def test_the_command_line_names_a_typo_a_missing_file_or_experiment(tmp_path):
  """The same key typo on the command line fails naming the key, before anything is
  written; a missing config file and an unknown experiment are named in one line, no
  traceback."""
  result = subprocess.run(
      [sys.executable, "-m", "experiments.train", "--experiment=xlnet/classification",
       f"--config_file={DEMO}", "--params_override=task.train_data.globl_batch_size=4",
       "--mode=train", f"--model_dir={tmp_path / 'run'}"],
      cwd=ROOT, capture_output=True, text=True, check=False)
  assert result.returncode != 0 and "globl_batch_size" in result.stderr
  assert not os.path.exists(tmp_path / "run" / "run_settings.json")
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


@pytest.fixture(scope="module")
def one_step(spiece_model, tmp_path_factory):
  """The demo (1 layer) at max_seq_length 16 trained one step by train_and_eval, then
  exported (--mode=export): (params, model directory, what train_and_eval returned, the
  export directory)."""
  work = tmp_path_factory.mktemp("classification")
  params = _demo_params(spiece_model, str(work / "features"),
                        ",task.max_seq_length=16,trainer.train_steps=1,"
                        "trainer.steps_per_loop=1,trainer.checkpoint_interval=1,"
                        "trainer.validation_interval=1,task.optimization.warmup_steps=0")
  run_dir = str(work / "run")
  out = driver.run(params, "train_and_eval", run_dir)
  return params, run_dir, out, driver.run(params, "export", run_dir)["export"]


REVIEWS = ["a gorgeous, witty, seductive movie.", "the plot is nothing but boilerplate."]


def _speech(sp, segments=3, length=16):
  """The opening of a State of the Union speech whose document takes `segments` segments
  of `length` pieces (whole words)."""
  words = open(SPEECH, encoding="utf-8").read().split()
  text = ""
  for n in range(1, len(words)):
    longer = " ".join(words[:n])
    if len(classifier_features.encode_text(sp, longer)) + 2 > segments * length:
      break
    text = longer
  assert len(classifier_features.encode_text(sp, text)) + 2 > (segments - 1) * length + 4
  return text


def _served(one_step, spiece_model, serve):
  """What the export serves for REVIEWS and a 3-segment speech (`serve(export_dir, inputs)`),
  and what the Python models compute: best/ for the reviews (max_seq_length pieces), best/
  with the serving memory (max_seq_length positions) for the speech's document layout."""
  _, run_dir, _, export_dir = one_step
  sp = tokenization.load_spiece(spiece_model)
  best_dir = os.path.join(run_dir, "best")
  best_model, spec = model_directory.load(best_dir, ClassifierSpec)
  features = [classifier_features.encode_example(
      sp, classifier_tasks.InputExample("x", t, None, spec.labels[0]), spec.max_seq_length,
      spec.labels) for t in REVIEWS]
  reviews = best_model({k: np.stack([f[k] for f in features])
                        for k in ("input_ids", "segment_ids", "input_mask")})["logits"]
  speech = _speech(sp)
  reader = model_directory.load(best_dir, ClassifierSpec, mem_len=spec.max_seq_length)[0]
  layout = document_features.document_layout(classifier_features.encode_text(sp, speech),
                                              None, spec.max_seq_length)
  assert layout[0].shape == (3, 16)                                 # 3 segments
  document = reader(dict(zip(("input_ids", "segment_ids", "input_mask"),
                             (tf.constant(a[None]) for a in layout))))["logits"]
  expected = tf.nn.softmax(tf.concat([reviews, document], 0)).numpy()
  return serve(export_dir, {"text_a": REVIEWS + [speech]}), expected


def test_one_step_evaluates_and_exports(one_step, spiece_model):
  _, run_dir, out, export_dir = one_step
  metrics = out["eval"]
  assert out["train"]["step"] == 1 and len(out["train"]["evals"]) == 1
  assert metrics["num_examples"] == 1019 and 0.0 <= metrics["accuracy"] <= 1.0
  for name in ("final", "best"):
    assert os.path.exists(os.path.join(run_dir, name, ClassifierSpec.FILE))
  assert os.path.exists(os.path.join(run_dir, "params.yaml"))
  assert export_dir == os.path.join(run_dir, "export")
  # Two reviews (one segment) and a speech read through the memory (3 segments): the
  # export serves the probabilities of the Python model.
  served, expected = _served(one_step, spiece_model, helpers.serve_in_process)
  np.testing.assert_allclose(served["probabilities"], expected, atol=1e-5, rtol=0)


@pytest.mark.slow
def test_the_export_serves_in_a_fresh_process(one_step, spiece_model, tmp_path):
  """The same requests in a fresh process with TensorFlow and tensorflow-text only."""
  served, expected = _served(one_step, spiece_model,
                             lambda export_dir, inputs: helpers.serve_fresh(export_dir, inputs,
                                                                           tmp_path))
  np.testing.assert_allclose(served["probabilities"], expected, atol=1e-5, rtol=0)


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
