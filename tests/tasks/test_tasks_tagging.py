"""The Model Garden task layer for tagging (xlnet/tagging): experiment registry, YAML configs,
compile/fit, and the kind's one step through the driver: trained, evaluated on the bundled
Brown split, best/ (the model it scored) and final/ written, exported, and the export
tagging raw text as the Python model does (words, tags, ids, counts, probabilities; held-out
sentences cut by max_seq_length and edge cases; in-process, and in a fresh process: slow).
(The driver's resume, best model and export rules: tests/tasks/test_driver.py.)"""

import glob
import json
import os

from official.core import exp_factory
from official.core import task_factory
import numpy as np
import pytest
import tensorflow as tf

import helpers
from xlnet_tf import model_directory
from xlnet_tf.configs import XLNetConfig
from xlnet_tf.data import brown
from xlnet_tf.data import tagging_features
from xlnet_tf.data import tokenization
from xlnet_tf.evaluation import tagging_metrics
from xlnet_tf.tasks import tagging
from xlnet_tf.tasks import train_lib as driver
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


SEQ = 16                                 # the one step's max_seq_length


@pytest.fixture(scope="module")
def one_step(spiece_model, tmp_path_factory):
  """The demo (1 layer) at max_seq_length SEQ trained one step by train_and_eval, then
  exported: (params, model directory, what train_and_eval returned, the export
  directory)."""
  work = tmp_path_factory.mktemp("tagging")
  params = _demo_params(spiece_model, str(work / "features"),
                        f",task.max_seq_length={SEQ},trainer.train_steps=1,"
                        "trainer.steps_per_loop=1,trainer.checkpoint_interval=1,"
                        "trainer.validation_interval=1,task.optimization.warmup_steps=0")
  run_dir = str(work / "run")
  out = driver.run(params, "train_and_eval", run_dir)
  return params, run_dir, out, driver.run(params, "export", run_dir)["export"]


def _texts():
  """(texts, their words): real held-out sentences (most lose words to max_seq_length, the
  longest of the test split among them) and edge cases: no words, odd whitespace, a word
  without pieces (a lone combining mark)."""
  test = brown.split_sentences(brown.read_brown())["test"]
  sentences = [list(s.words) for s in test[:40]]
  sentences.append(list(max(test, key=lambda s: len(s.words)).words))
  texts = [" ".join(words) for words in sentences]
  texts += ["", "  The\u00a0jury\tsaid \u3000 it ", "\u0301 Amélie ``naïve''"]
  return texts, [text.split() for text in texts]


def _check_served(one_step, spiece_model, served):
  """The export gives best/'s words, tags, tag ids, counts and probabilities (each word's
  first piece) of `_texts()`."""
  _, run_dir, _, _ = one_step
  texts, words = _texts()
  model, spec = model_directory.load(os.path.join(run_dir, "best"), TaggerSpec)
  sp = tokenization.load_spiece(spiece_model)
  expected = tagging.predict_tags(model, sp, words, spec)
  labels = list(spec.labels)
  untagged = 0
  for k, (text_words, tags) in enumerate(zip(words, expected)):
    n = len(text_words)
    assert served["num_words"][k] == n and served["words"][k][:n] == text_words, k
    assert served["tags"][k][:n] == [t or "" for t in tags], k
    assert served["num_tagged"][k] == sum(t is not None for t in tags)
    assert served["tag_ids"][k][:n] == [labels.index(t) if t else -1 for t in tags]
    untagged += n - served["num_tagged"][k]
  assert untagged > 0                                              # truncation exercised
  assert served["num_words"][len(texts) - 3] == 0                 # "" has no words
  assert served["words"][len(texts) - 2][:4] == ["The", "jury", "said", "it"]
  encoded = list(tagging_features.encode_sentences(
      sp, [tagging_features.TaggedSentence(str(k), tuple(w)) for k, w in enumerate(words)],
      SEQ))
  inputs = {key: tf.constant(np.stack([f[key] for f in encoded]))
            for key in tagging_features.MODEL_INPUTS}
  probabilities = tf.nn.softmax(model(inputs)["logits"]).numpy()
  worst = 0.0
  for k, features in enumerate(encoded):
    positions = features["word_positions"]
    got = np.array(served["probabilities"][k])[:len(positions)]
    worst = max(worst, float(np.abs(got - probabilities[k, positions]).max(initial=0.0)))
  assert worst <= 1e-5


def test_one_step_evaluates_and_exports(one_step, spiece_model):
  params, run_dir, out, export_dir = one_step
  metrics = out["eval"]
  assert out["train"]["step"] == 1 and len(out["train"]["evals"]) == 1
  assert metrics["num_examples"] == 342
  assert 0.0 <= metrics["accuracy"] <= 1.0 and metrics["words"] > 0
  assert os.path.exists(os.path.join(run_dir, "final", TaggerSpec.FILE))
  task = task_factory.get_task(params.task)
  best_model, spec = model_directory.load(os.path.join(run_dir, "best"), TaggerSpec)
  assert spec == task.spec
  best = json.loads(open(os.path.join(run_dir, "best", "eval_results.json")).read())
  assert task.evaluate(best_model)["accuracy"] == best["accuracy"]   # the model it scored
  assert export_dir == os.path.join(run_dir, "export")
  _check_served(one_step, spiece_model,
                helpers.serve_in_process(export_dir, {"text": _texts()[0]}))


@pytest.mark.slow
def test_the_export_serves_in_a_fresh_process(one_step, spiece_model, tmp_path):
  """The same texts in a fresh process with TensorFlow and tensorflow-text only."""
  _check_served(one_step, spiece_model,
                helpers.serve_fresh(one_step[3], {"text": _texts()[0]}, tmp_path))


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
