"""The Model Garden task layer for tagging (xlnet/tagging): experiment registry, YAML configs,
and the driver training, resuming, evaluating, keeping the best model and exporting it."""

import glob
import json
import os

from official.core import exp_factory
from official.core import task_factory
import numpy as np
import pytest
import tensorflow as tf

from helpers import serve_fresh
from xlnet_tf import model_directory
from xlnet_tf.configs import XLNetConfig
from xlnet_tf.data import brown
from xlnet_tf.data import tagging_features
from xlnet_tf.data import tokenization
from xlnet_tf.evaluation import tagging_metrics
from xlnet_tf.tasks import tagging
from xlnet_tf.tasks import train_lib as driver
from xlnet_tf.training import run_directory
from xlnet_tf.models.xlnet_tagger import TaggerSpec

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIGS = sorted(glob.glob(os.path.join(ROOT, "experiments", "configs", "tagging_*.yaml")))
DEMO = os.path.join(ROOT, "experiments", "configs", "tagging_demo.yaml")


def _demo_params(spiece_model, cache_dir, override=""):
  return driver.parse_params(
      tagging.KIND.experiment, [DEMO],
      f"task.train_data.spiece_model={spiece_model},"
      f"task.validation_data.spiece_model={spiece_model},"
      f"task.train_data.cache_dir={cache_dir},task.validation_data.cache_dir={cache_dir}"
      + override)


def test_experiment_is_registered():
  params = exp_factory.get_exp_config("xlnet/tagging")
  assert isinstance(params.task, tagging.TaggingConfig)
  assert params.task.optimization.learning_rate == 1e-5        # RunOptions' default
  assert params.task.data_dir == "" and params.task.validation_data.split == "dev"
  task = task_factory.get_task(params.task)
  assert isinstance(task, tagging.TaggingTask)
  # The labels: the tags of the bundled subset's train split, in brown.tag_list's order.
  splits = brown.split_sentences(brown.read_brown())
  assert list(task.spec.labels) == brown.tag_list(splits["train"])
  assert task.spec.num_labels == 205 and task.spec.scheme == "tags"
  assert task.METRIC in tagging_metrics.tagging_metrics([["nn"]], [["nn"]])
  assert task.loss_fn() is tagging.tagging_loss
  assert task.INPUT_KEYS == tagging_features.MODEL_INPUTS
  with pytest.raises(NotImplementedError, match="experiments.train"):
    task.train_step({}, None, None)
  with pytest.raises(ValueError, match="task.scheme"):
    task_factory.get_task(params.task.replace(scheme="iob"))


def test_every_tagging_yaml_parses_and_builds_its_task(tmp_path):
  assert {os.path.basename(p) for p in CONFIGS} >= {"tagging_brown_base.yaml",
                                                    "tagging_demo.yaml"}
  base = XLNetConfig(n_layer=12, d_model=768, n_head=12, d_head=64, d_inner=3072)
  base.to_json_file(str(tmp_path / "xlnet_config.json"))       # a stand-in base checkpoint
  for path in CONFIGS:
    is_base = "brown_base" in path
    params = driver.parse_params(tagging.KIND.experiment, [path],
                                 f"task.init_checkpoint={tmp_path}" if is_base else None)
    task = task_factory.get_task(params.task)
    assert isinstance(task, tagging.TaggingTask)
    config = task.xlnet_config()
    assert config.mem_len == 0 and config.attn_type == "bi"
    if is_base:
      assert config.d_model == 768 and config.dropout == 0.1
      assert params.task.optimization.learning_rate == 2e-5
      assert params.task.max_seq_length == 128 and params.trainer.train_steps == 4300
      assert task.spiece_model(params.task.train_data) == str(tmp_path / "spiece.model")
    else:
      model = task.build_model()
      assert model.num_labels == task.spec.num_labels and config.n_layer == 1


def test_demo_trains_resumes_exactly_and_refuses_other_settings(spiece_model, tmp_path):
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
  assert os.path.exists(os.path.join(run_dir, "final", TaggerSpec.FILE))

  metrics = driver.run(params, "eval", run_dir)["eval"]
  assert json.loads(open(os.path.join(run_dir, "eval_results_dev.json")).read()) == metrics
  assert metrics["step"] == 20 and metrics["num_examples"] == 342
  assert 0.0 <= metrics["accuracy"] <= 1.0 and metrics["words"] > 0

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
  assert len(glob.glob(os.path.join(run_dir, "validation", "events.out.tfevents.*"))) == 1
  best = json.loads(open(os.path.join(run_dir, "best", "eval_results.json")).read())
  accuracies = [e["accuracy"] for e in evals]
  assert best["accuracy"] == max(accuracies)
  assert best["step"] == 10 * (1 + accuracies.index(max(accuracies)))

  task = task_factory.get_task(params.task)
  best_model, spec = model_directory.load(os.path.join(run_dir, "best"), TaggerSpec)
  assert spec == task.spec
  assert task.evaluate(best_model)["accuracy"] == best["accuracy"]   # the model it scored

  export_dir = driver.run(params, "export", run_dir)["export"]
  assert export_dir == os.path.join(run_dir, "export")
  # Real held-out sentences, the longest of the test split among them (words past
  # max_seq_length 64 get no tag).
  test = brown.split_sentences(brown.read_brown())["test"]
  sentences = [list(s.words) for s in test[:6]]
  sentences.append(list(max(test, key=lambda s: len(s.words)).words))
  served = serve_fresh(export_dir, {"text": [" ".join(w) for w in sentences]}, tmp_path)
  expected = tagging.predict_tags(
      best_model, tokenization.load_spiece(spiece_model), sentences, spec)
  assert any(None in tags for tags in expected)                  # truncation exercised
  for k, (words, tags) in enumerate(zip(sentences, expected)):
    n = len(words)
    assert served["num_words"][k] == n and served["words"][k][:n] == words, k
    assert served["tags"][k][:n] == [t or "" for t in tags], k
    assert served["num_tagged"][k] == sum(t is not None for t in tags), k
  with pytest.raises(FileExistsError, match="not empty"):        # an export is never replaced
    driver.run(params, "export", run_dir)


def test_fit_trains_on_the_task_loss(spiece_model, tmp_path):
  """compile/fit: the loss of a step is the task's (the mean over labelled words)."""
  params = driver._with_default_cache(  # pylint: disable=protected-access
      _demo_params(spiece_model, str(tmp_path / "features"),
                   ",task.optimization.warmup_steps=0"), str(tmp_path))
  task = task_factory.get_task(params.task)
  inputs, targets = next(iter(task.fit_inputs(params.task.train_data)))
  model = task.build_model()
  total, count = tagging.tagging_loss(model(inputs, training=False),
                                      {"label_ids": targets["logits"]})
  before = [w.numpy() for w in model.trainable_variables]
  task.compile_model(model, train_steps=10)
  history = model.fit(tf.data.Dataset.from_tensors((inputs, targets)), verbose=0)
  assert history.history["loss"][0] == pytest.approx(float(total / count), rel=1e-5)
  assert any(not np.allclose(w.numpy(), b) for w, b in zip(model.trainable_variables,
                                                           before))
