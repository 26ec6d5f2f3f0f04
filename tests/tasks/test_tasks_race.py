"""The Model Garden task layer for RACE (xlnet/race): experiment registry, YAML configs, the
in-graph inputs of the export against `race_features`, and the kind's run through the
driver: trained, evaluated per level, best/ (which learnt the questions) and final/
written, another max_qa_length refused, exported, and both signatures of the export giving
best/'s logits (in-process; in a fresh process: slow); run_race's flags (slow). (The
driver's resume, best model and export rules: tests/tasks/test_driver.py.)

No RACE data is bundled: the data is `helpers.write_race_sample`'s small RACE-layout
directory (real Moby-Dick passages, questions written for the tests), the same 7 questions
as train and as dev split.
"""

import glob
import json
import os
import re
import subprocess
import sys

from official.core import exp_factory
from official.core import task_factory
import numpy as np
import pytest
import tensorflow as tf

from helpers import run_fresh
from helpers import run_in_process
from helpers import write_race_sample
from xlnet_tf import model_directory
from xlnet_tf.configs import XLNetConfig
from xlnet_tf.data import race
from xlnet_tf.data import tokenization
from xlnet_tf.models.xlnet_multiple_choice import OPTION_INPUTS
from xlnet_tf.models.xlnet_multiple_choice import XLNetMultipleChoice
from xlnet_tf.serving import race_export
from xlnet_tf.serving.text_encoder import XLNetTextEncoder
from xlnet_tf.tasks import race as race_task
from xlnet_tf.tasks import train_lib as driver
from xlnet_tf.training import run_directory
from xlnet_tf.models.xlnet_multiple_choice import RaceSpec

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIGS = sorted(glob.glob(os.path.join(ROOT, "experiments", "configs", "race_*.yaml")))
DEMO = os.path.join(ROOT, "experiments", "configs", "race_demo.yaml")
T, QA = 64, 16                         # the demo's max_seq_length, max_qa_length


@pytest.fixture(scope="module")
def race_dir(tmp_path_factory):
  root = tmp_path_factory.mktemp("race") / "RACE"
  write_race_sample(root, splits=("train", "dev"))
  return str(root)


def _demo_params(spiece_model, data_dir, cache_dir, override=""):
  return driver.parse_params(
      race_task.KIND.experiment, [DEMO],
      f"task.data_dir={data_dir},"
      f"task.train_data.spiece_model={spiece_model},"
      f"task.validation_data.spiece_model={spiece_model},"
      f"task.train_data.cache_dir={cache_dir},task.validation_data.cache_dir={cache_dir}"
      + override)


def _questions(data_dir, split="dev"):
  return race.read_race(data_dir, split)


def test_experiment_is_registered():
  params = exp_factory.get_exp_config("xlnet/race")
  assert isinstance(params.task, race_task.RaceConfig)
  # The released run_race.py's defaults.
  task = params.task
  assert (task.optimization.learning_rate, task.optimization.adam_epsilon,
          task.optimization.warmup_steps, task.optimization.weight_decay,
          task.optimization.lr_layer_decay_rate) == (2e-5, 1e-6, 0, 0.0, 1.0)
  assert (task.train_data.global_batch_size, task.validation_data.global_batch_size) == (8, 32)
  assert (task.max_seq_length, task.max_qa_length, task.uncased) == (512, 128, False)
  assert task.train_data.shuffle_buffer_size == 2048 and task.validation_data.split == "dev"
  assert list(task.levels) == ["middle", "high"] and task.data_dir == ""
  assert (params.trainer.train_steps, params.trainer.steps_per_loop) == (12000, 1000)
  race_obj = task_factory.get_task(params.task)
  assert isinstance(race_obj, race_task.RaceTask)
  assert race_obj.loss_fn() is race_task.multiple_choice_loss and race_obj.METRIC == "accuracy"
  assert race_obj.INPUT_KEYS == OPTION_INPUTS
  with pytest.raises(NotImplementedError, match="experiments.train"):
    race_obj.train_step({}, None, None)
  with pytest.raises(ValueError, match="task.levels"):
    task_factory.get_task(params.task.replace(levels=["elementary"]))
  with pytest.raises(ValueError, match="task.max_qa_length"):
    task_factory.get_task(params.task.replace(max_qa_length=0))


def test_every_race_yaml_parses_and_builds_its_task(tmp_path, spiece_model, race_dir):
  assert {os.path.basename(p) for p in CONFIGS} >= {"race_demo.yaml", "race_large.yaml"}
  large = XLNetConfig(n_layer=24, d_model=1024, n_head=16, d_head=64, d_inner=4096)
  large.to_json_file(str(tmp_path / "xlnet_config.json"))      # a stand-in Large checkpoint
  for path in CONFIGS:
    params = driver.parse_params(race_task.KIND.experiment, [path],
                                 f"task.init_checkpoint={tmp_path}"
                                 if "large" in path else None)
    task = task_factory.get_task(params.task)
    config = task.xlnet_config()
    assert config.mem_len == 0 and config.attn_type == "bi"
    if "large" in path:
      assert config.d_model == 1024 and params.trainer.train_steps == 12000
      assert params.task.optimization.warmup_steps == 1000
      assert params.task.train_data.global_batch_size == 8
      assert task.spiece_model(params.task.train_data) == str(tmp_path / "spiece.model")
    else:
      model = task.build_model()
      assert isinstance(model, XLNetMultipleChoice) and config.n_layer == 1
  # The demo needs a data directory: training without one is refused before any work.
  params = driver.parse_params(race_task.KIND.experiment, [DEMO],
                               f"task.train_data.spiece_model={spiece_model}")
  with pytest.raises(driver.ConfigError, match="task.data_dir is empty"):
    driver.run(params, "train", str(tmp_path / "run"))
  assert not os.path.exists(tmp_path / "run" / "run_settings.json")


def test_in_graph_inputs_equal_race_features(spiece_model, race_dir):
  examples = _questions(race_dir) + [
      # Several blanks, an empty option, an empty article; no blank, an empty question.
      race.RaceExample("e1", "", "_ sailed with _ on the _", ("Ahab", "", "Pequod", "x y"), 0),
      race.RaceExample("e2", "Call me Ishmael. " * 3, "", ("a", "b", "c", "d"), 1)]
  sp = tokenization.load_spiece(spiece_model)
  article = tf.constant([e.article for e in examples])
  question = tf.constant([e.question for e in examples])
  options = tf.constant([list(e.options) for e in examples])
  for uncased in (False, True):
    encoder = XLNetTextEncoder(spiece_model, lower=uncased)
    # The demo's sizes; the QA part cut to its last 8 pieces and the article to fit; a QA
    # limit above T - 3 (the QA part itself cut); everything fitting (left padding).
    for seq_len, qa_len in ((T, QA), (40, 8), (24, 30), (256, 128)):
      got = race_export.race_inputs(encoder, article, question, options, seq_len, qa_len)
      for i, example in enumerate(examples):
        expected = race.race_features(sp, example, seq_len, qa_len, uncased)
        for key in OPTION_INPUTS:
          np.testing.assert_array_equal(got[key][i].numpy(), expected[key],
                                        err_msg=f"{example.example_id} {key} T={seq_len} "
                                                f"QA={qa_len} uncased={uncased}")
  # The cases are there: cloze questions, a QA part longer than 8 pieces, cut articles
  # and a padded one.
  assert sum("_" in e.question for e in examples) >= 3
  qa = [tokenization.encode_ids(sp, tokenization.normalize_text(race.qa_text(e.question, o)))
        for e in examples for o in e.options]
  assert max(map(len, qa)) > 8
  features = [race.race_features(sp, e, 40, 8) for e in examples]
  assert any(f["input_mask"].sum() == 0 for f in features)         # cut to fit
  assert any(f["input_mask"].sum() > 0 for f in features)          # padded


# Calls both signatures of the export and one with 3 options per question (refused).
_SERVE_BOTH = r"""
loaded = tf.saved_model.load(request["export_dir"])
text = loaded.signatures["serving_default"](
    **{k: tf.constant(v) for k, v in request["text"].items()})
ids = loaded.signatures["serving_ids"](
    input_ids=tf.constant(request["ids"]["input_ids"], tf.int32),
    segment_ids=tf.constant(request["ids"]["segment_ids"], tf.int32),
    input_mask=tf.constant(request["ids"]["input_mask"], tf.float32))
try:
  loaded.signatures["serving_default"](
      article=tf.constant(["a"]), question=tf.constant(["b"]),
      options=tf.constant([["x", "y", "z"]]))
  refused = ""
except tf.errors.InvalidArgumentError as e:
  refused = e.message
result = {"text": {k: v.numpy().tolist() for k, v in text.items()
                   if k != "answer_letter"},
          "letters": [s.decode() for s in text["answer_letter"].numpy().tolist()],
          "ids_logits": ids["logits"].numpy().tolist(), "refused": refused}
"""


@pytest.fixture(scope="module")
def trained(spiece_model, race_dir, tmp_path_factory):
  """The demo trained by train_and_eval with a larger learning rate than the demo's (the
  model learns the 7 questions, so that the logits differ by much more than the 1e-5 they
  are compared at): 20 steps, evaluated at steps 10 and 20; then exported. (params, model
  directory, what train_and_eval returned, the export directory, the features' cache.)"""
  work = tmp_path_factory.mktemp("race_run")
  cache = str(work / "features")
  params = _demo_params(spiece_model, race_dir, cache,
                        ",task.optimization.learning_rate=0.01")
  run_dir = str(work / "run")
  out = driver.run(params, "train_and_eval", run_dir)
  return params, run_dir, out, driver.run(params, "export", run_dir)["export"], cache


def _request(trained, race_dir, spiece_model):
  """The dev questions as text and as ids (`race_features`), and best/'s logits [7, 4]."""
  _, run_dir, _, export_dir, _ = trained
  examples = _questions(race_dir)
  sp = tokenization.load_spiece(spiece_model)
  features = [race.race_features(sp, e, T, QA) for e in examples]
  batch = {k: np.stack([f[k] for f in features]) for k in OPTION_INPUTS}
  best_model = model_directory.load(os.path.join(run_dir, "best"), RaceSpec)[0]
  logits = best_model(batch, training=False)["logits"].numpy()               # [7, 4]
  request = {
      "export_dir": export_dir,
      "text": {"article": [e.article for e in examples],
               "question": [e.question for e in examples],
               "options": [list(e.options) for e in examples]},
      "ids": {k: v.tolist() for k, v in batch.items()}}
  return request, logits


def _check_served(served, logits):
  """Both signatures give best/'s logits; probabilities, answer and letters follow; 3
  options a question are refused."""
  np.testing.assert_allclose(served["text"]["logits"], logits, rtol=0, atol=1e-5)
  np.testing.assert_allclose(served["ids_logits"], logits, rtol=0, atol=1e-5)
  np.testing.assert_allclose(served["text"]["probabilities"],
                             tf.nn.softmax(logits).numpy(), atol=1e-5)
  assert served["text"]["answer"] == logits.argmax(-1).tolist()
  assert served["letters"] == ["ABCD"[a] for a in logits.argmax(-1)]
  assert "input options has shape [1, 3]; expected [batch, 4]" in served["refused"]


def test_one_step_evaluates_and_exports(trained, spiece_model, race_dir):
  """The kind's one-step test, with 20 steps: the checks of the export need a model that
  tells the options apart."""
  _, run_dir, out, export_dir, cache = trained
  evals = out["train"]["evals"]
  assert len(evals) == 2 and out["eval"] == evals[-1]           # at steps 10 and 20
  metrics = out["eval"]
  assert metrics["num_examples"] == metrics["total"] == 7
  assert (metrics["middle_total"], metrics["high_total"]) == (4, 3)   # from the cache's levels
  assert metrics["accuracy"] == pytest.approx(
      (4 * metrics["middle_accuracy"] + 3 * metrics["high_accuracy"]) / 7)
  assert np.isfinite(metrics["validation_loss"])
  best = json.loads(open(os.path.join(run_dir, "best", "eval_results.json")).read())
  accuracies = [e["accuracy"] for e in evals]
  assert best["accuracy"] == max(accuracies) > 0.5
  assert {"middle_accuracy", "high_accuracy", "total"} <= set(best)
  assert os.path.exists(os.path.join(run_dir, "best", "race.json"))
  final = os.path.join(run_dir, "final")
  assert sorted(os.listdir(final)) == sorted([
      "xlnet_config.json", "race.json", "spiece.model", "model.ckpt.index",
      "model.ckpt.data-00000-of-00001"])
  spec = json.loads(open(os.path.join(final, "race.json")).read())
  assert spec == {"task": "race", "max_seq_length": T, "max_qa_length": QA,
                  "uncased": False, "levels": ["middle", "high"], "summary_type": "last",
                  "use_proj": True}
  model, loaded = model_directory.load(final, RaceSpec)
  assert isinstance(model, XLNetMultipleChoice) and loaded.max_qa_length == QA
  with pytest.raises(run_directory.RunSettingsError, match="max_qa_length"):
    driver.run(_demo_params(spiece_model, race_dir, cache,
                            ",task.optimization.learning_rate=0.01,task.max_qa_length=12"),
               "train", run_dir)

  assert export_dir == os.path.join(run_dir, "export")
  card = open(os.path.join(export_dir, "README.md"), encoding="utf-8").read()
  assert f"- **Source**: {os.path.join(run_dir, 'best')}\n" in card
  assert "- **Labels** (id: name): 0: A, 1: B, 2: C, 3: D" in card
  assert re.search(r"- \*\*Parity\*\*: max \|diff\| [0-9.e+-]+ of logits, probabilities", card)
  request, logits = _request(trained, race_dir, spiece_model)
  assert np.ptp(logits, axis=1).max() > 0.05                  # a model that tells options apart
  _check_served(run_in_process(_SERVE_BOTH, request), logits)


@pytest.mark.slow
def test_the_export_serves_in_a_fresh_process(trained, spiece_model, race_dir, tmp_path):
  """Both signatures in a fresh process with TensorFlow and tensorflow-text only."""
  request, logits = _request(trained, race_dir, spiece_model)
  _check_served(run_fresh(_SERVE_BOTH, request, tmp_path), logits)


@pytest.mark.slow
def test_run_race_flags_make_the_same_experiment(spiece_model, race_dir, tmp_path):
  """experiments/run_race.py: released flag names on the same run as the driver's."""
  params = _demo_params(spiece_model, race_dir, str(tmp_path / "features"))
  run_dir = str(tmp_path / "run")
  driver.run(params, "train", run_dir, stop_at_step=10)
  task_config = task_factory.get_task(params.task).xlnet_config()
  task_config.to_json_file(str(tmp_path / "xlnet_config.json"))
  flags_ = [f"--data_dir={race_dir}", f"--model_dir={run_dir}",
            f"--output_dir={tmp_path / 'out'}", f"--spiece_model_file={spiece_model}",
            f"--model_config_path={tmp_path / 'xlnet_config.json'}",
            f"--max_seq_length={T}", f"--max_qa_length={QA}", "--train_batch_size=4",
            "--eval_batch_size=8", "--learning_rate=1e-3", "--warmup_steps=2",
            "--train_steps=20", "--iterations=10", "--save_steps=10", "--dropout=0.0",
            "--dropatt=0.0"]
  result = subprocess.run([sys.executable, "-m", "experiments.run_race", "--do_train",
                           "--do_eval", *flags_], cwd=ROOT, capture_output=True, text=True,
                          timeout=600, check=False)
  assert result.returncode == 0, result.stderr[-3000:]
  # The flags made the driver's run: it resumed the run at step 10 (the run settings,
  # checked on resume, are equal) and evaluated the newest checkpoint.
  assert "trained steps 10 -> 20" in result.stdout, result.stdout[-2000:]
  written = json.loads((tmp_path / "out" / "eval_results_dev.json").read_text())
  assert written["step"] == 20 and written["total"] == 7
  assert written == json.loads(open(os.path.join(run_dir, "eval_results_dev.json")).read())
  # --do_export alone: the sizes and the SentencePiece model are MODEL_DIR/final's.
  result = subprocess.run([sys.executable, "-m", "experiments.run_race", "--do_export",
                           f"--model_dir={run_dir}", f"--export_dir={tmp_path / 'export'}"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
  assert result.returncode == 0, result.stderr[-3000:]
  assert f"exported {os.path.join(run_dir, 'final')} to {tmp_path / 'export'}" in result.stdout
  assert os.path.exists(tmp_path / "export" / "saved_model.pb")
