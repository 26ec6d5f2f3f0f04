"""The Model Garden task layer for SQuAD (xlnet/squad): experiment registry, YAML configs,
the evaluation (answers decoded over every window of a question, official EM/F1, the SQuAD
2.0 null threshold), and the kind's one step through the driver: trained, evaluated,
best/ and final/ written (run_squad's model directory), another doc_stride refused,
exported, and the export answering as the task decodes (in-process; in a fresh process:
slow); run_squad's released flag names (slow). (The driver's resume, best model and export
rules: tests/tasks/test_driver.py.)

A tiny random model on the bundled real questions (data_prep/sample_data/qa/squad.json),
windows of 64 pieces every 24 (the one step's: 32 every 16): each question spreads over
several windows."""

import glob
import json
import os

from official.core import exp_factory
from official.core import task_factory
import numpy as np
import pytest

import helpers
from helpers import squad_window_outputs
from xlnet_tf.configs import XLNetConfig
from xlnet_tf.data import squad
from xlnet_tf.data import tokenization
from xlnet_tf.evaluation import squad_metrics
from xlnet_tf.evaluation import squad_postprocess
from xlnet_tf.tasks import squad as squad_task
from xlnet_tf.tasks import train_lib as driver
from xlnet_tf.training import run_directory

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIGS = sorted(glob.glob(os.path.join(ROOT, "experiments", "configs", "squad_*.yaml")))
DEMO = os.path.join(ROOT, "experiments", "configs", "squad_demo.yaml")
SAMPLE = os.path.join(ROOT, "data_prep", "sample_data", "qa", "squad.json")


def _demo_params(spiece_model, cache_dir, override="", predict_file=SAMPLE,
                 train_file=SAMPLE):
  return driver.parse_params(
      squad_task.KIND.experiment, [DEMO],
      f"task.train_file={train_file},task.predict_file={predict_file},"
      f"task.train_data.spiece_model={spiece_model},"
      f"task.validation_data.spiece_model={spiece_model},"
      f"task.train_data.cache_dir={cache_dir},task.validation_data.cache_dir={cache_dir}"
      + override)


def _v2_file(path):
  """The sample with a constructed unanswerable question over a real passage (SQuAD 2.0)."""
  with open(SAMPLE) as f:
    data = json.load(f)
  data["data"][0]["paragraphs"][0]["qas"].append(
      {"id": "constructed-unanswerable", "answers": [], "is_impossible": True,
       "question": "Which astronaut studied at the Grotto in 1990?"})
  path.write_text(json.dumps(data))
  return str(path)


def _short_contexts_file(path, sp, max_pieces):
  """The sample's questions over a part of their passage around the answer that fits one
  window (`max_pieces` pieces): real text, real questions, one window each."""
  paragraphs = []
  for example in squad.read_squad(SAMPLE)[0]:
    answer, context = example.answers[0], example.context
    begin, end = answer.start, answer.end
    words_before = context[:begin].split(" ")[-12:]
    words_after = context[end:].split(" ")[:12]
    while True:
      left, right = " ".join(words_before), " ".join(words_after)
      text = left + context[begin:end] + right
      if len(tokenization.encode_ids(sp, text)) <= max_pieces:
        break
      if len(words_after) >= len(words_before):
        words_after = words_after[:-1]
      else:
        words_before = words_before[1:]
    paragraphs.append({"context": text, "qas": [
        {"id": example.qas_id, "question": example.question,
         "answers": [{"text": answer.text, "answer_start": len(left)}]}]})
  path.write_text(json.dumps({"data": [{"title": "short", "paragraphs": paragraphs}]}))
  return str(path)


def test_experiment_is_registered():
  params = exp_factory.get_exp_config("xlnet/squad")
  assert isinstance(params.task, squad_task.SquadConfig)
  # The released run_squad.py's recipe.
  optimization = params.task.optimization
  assert (optimization.learning_rate, optimization.lr_layer_decay_rate,
          optimization.warmup_steps, optimization.adam_epsilon) == (3e-5, 0.75, 1000, 1e-6)
  assert params.task.train_data.global_batch_size == 48
  assert params.trainer.train_steps == 8000 and params.trainer.steps_per_loop == 1000
  assert (params.task.max_seq_length, params.task.doc_stride, params.task.max_query_length,
          params.task.max_answer_length) == (512, 128, 64, 64)
  assert params.task.version_2_with_negative is None
  task = task_factory.get_task(params.task)
  assert isinstance(task, squad_task.SquadTask)
  assert task.METRIC == "f1" and task.METRIC_HIGHER_IS_BETTER
  assert "start_positions" in task.INPUT_KEYS          # the end is conditioned on it
  with pytest.raises(NotImplementedError, match="experiments.train"):
    task.train_step({}, None, None)
  with pytest.raises(ValueError, match="task.train_file is empty"):
    task.check(training=True)
  with pytest.raises(ValueError, match="task.doc_stride"):
    task_factory.get_task(params.task.replace(doc_stride=0))


def test_every_squad_yaml_parses_and_builds_its_task(tmp_path, spiece_model):
  assert {os.path.basename(p) for p in CONFIGS} >= {"squad_demo.yaml", "squad_v2_large.yaml"}
  large = XLNetConfig(n_layer=24, d_model=1024, n_head=16, d_head=64, d_inner=4096)
  large.to_json_file(str(tmp_path / "xlnet_config.json"))     # a stand-in large checkpoint
  for path in CONFIGS:
    is_large = "v2_large" in path
    params = driver.parse_params(squad_task.KIND.experiment, [path],
                                 f"task.init_checkpoint={tmp_path}" if is_large
                                 else f"task.train_file={SAMPLE}")
    task = task_factory.get_task(params.task)
    assert isinstance(task, squad_task.SquadTask)
    config = task.xlnet_config()
    assert config.mem_len == 0 and config.attn_type == "bi"
    if is_large:
      assert config.d_model == 1024 and params.trainer.train_steps == 8000
      assert task.version_2 and params.task.max_seq_length == 512
      assert params.task.optimization.lr_layer_decay_rate == 0.75
      assert task.spiece_model(params.task.train_data) == str(tmp_path / "spiece.model")
    else:
      model = task.build_model()
      assert config.n_layer == 1 and model.head.start_n_top == 3
      assert not task.version_2                         # the sample is SQuAD 1.1
      assert task.loss_fn() is squad_task.squad_loss_sum    # answer class too, as released


def test_demo_config_finds_the_bundled_sample_from_any_directory(tmp_path, monkeypatch):
  """squad_demo.yaml names its data "sample_data:qa/squad.json" (the bundled sample,
  found through the package), not a path relative to the checkout: it works from another
  working directory, as from an installed package."""
  monkeypatch.chdir(tmp_path)
  params = driver.parse_params(squad_task.KIND.experiment, [DEMO], "")
  assert params.task.train_file == params.task.predict_file == "sample_data:qa/squad.json"
  task = task_factory.get_task(params.task)
  for data in (params.task.train_data, params.task.validation_data):
    assert os.path.samefile(task.data_file(data), SAMPLE)
  assert len(task.examples(params.task.train_data)) == 5
  assert not task.version_2                              # read from the sample: SQuAD 1.1
  # A real path is taken as it is; a bad sample name is refused, naming the key.
  params.task.predict_file = "dev.json"
  assert task_factory.get_task(params.task).data_file(params.task.validation_data) == "dev.json"
  params.task.train_file = "sample_data:../squad.json"
  with pytest.raises(ValueError, match=r"^task.train_file: sample_data:\.\./squad.json: "
                                       r"expected sample_data:PATH"):
    task_factory.get_task(params.task).data_file(params.task.train_data)


def test_the_decode_is_one_decode_of_every_window(spiece_model, tmp_path):
  """The task's decoding (question by question, windows re-made and checked against the
  cache) equals one `squad_postprocess.decode` of every Python-made window with the
  model's outputs on them (read from their own cache in other batches); windows out of
  order are refused."""
  params = _demo_params(spiece_model, str(tmp_path / "features"))
  task = task_factory.get_task(params.task)
  model = task.build_model()
  path = task.features_path(params.task.validation_data)
  cached = task.window_outputs(model, params.task.validation_data, path)
  examples = task.examples()
  answers, nbest, null_scores = task.decode(examples, cached)

  windows, outputs = squad_window_outputs(model, examples, spiece_model, tmp_path / "other",
                                          64, 24, 16)
  assert len(cached["window_id"]) == len(windows)
  expected = squad_postprocess.decode(examples, windows, outputs)
  assert answers == expected[0] and nbest.keys() == expected[1].keys()
  for qid, candidates in expected[1].items():
    assert [(c.text, c.start_char) for c in nbest[qid]] == [
        (c.text, c.start_char) for c in candidates]
    np.testing.assert_allclose([c.score for c in nbest[qid]],
                               [c.score for c in candidates], atol=1e-5)
    assert null_scores[qid] == pytest.approx(expected[2][qid], abs=1e-5)
  final, threshold, metrics = task.score(examples, answers, null_scores)
  assert final == answers and threshold is None                # SQuAD 1.1
  assert metrics == squad_metrics.evaluate(squad.gold_answers(examples), answers,
                                           version="1.1")

  swapped = dict(cached, window_id=cached["window_id"][::-1].copy())
  with pytest.raises(ValueError, match="differ from the cached"):
    task.decode(examples, swapped)


def test_v2_null_threshold_is_searched_applied_and_kept(spiece_model, tmp_path):
  v2 = _v2_file(tmp_path / "v2.json")
  params = _demo_params(spiece_model, str(tmp_path / "features"), predict_file=v2,
                        train_file=v2)
  task = task_factory.get_task(params.task)
  assert task.version_2                                  # from the data
  model = task.build_model()
  metrics = task.evaluate(model)
  threshold = metrics["null_score_diff_threshold"]
  assert threshold == metrics["best_f1_thresh"]
  assert metrics["f1"] == pytest.approx(metrics["best_f1"])   # METRIC: F1 at that threshold
  assert metrics["NoAns_total"] == 1 and metrics["HasAns_total"] == 5

  out = tmp_path / "out"
  results = task.write_predictions(model, str(out))
  assert results == {"null_score_diff_threshold": threshold,
                     **{k: v for k, v in metrics.items() if k != "null_score_diff_threshold"}}
  assert json.loads((out / "eval_results.json").read_text()) == results
  answers = json.loads((out / "predictions.json").read_text())
  null_odds = json.loads((out / "null_odds.json").read_text())
  nbest = json.loads((out / "nbest_predictions.json").read_text())
  assert sorted(answers) == sorted(null_odds) == sorted(nbest)
  for qid, answer in answers.items():                # "" exactly above the threshold
    expected = "" if null_odds[qid] > threshold else (nbest[qid][0]["text"] if nbest[qid]
                                                      else "")
    assert answer == expected

  # The model directory keeps the threshold of the evaluation, for the export.
  task.save_model_dir(model, str(tmp_path / "best"), metrics)
  settings = json.loads((tmp_path / "best" / "squad.json").read_text())
  assert settings["version_2_with_negative"] is True
  assert settings["null_score_diff_threshold"] == threshold
  task.save_model_dir(model, str(tmp_path / "final"), None)
  assert "null_score_diff_threshold" not in json.loads(
      (tmp_path / "final" / "squad.json").read_text())
  squad_task.record_threshold(str(tmp_path / "final"), -1.5)
  assert json.loads((tmp_path / "final" / "squad.json").read_text())[
      "null_score_diff_threshold"] == -1.5

  # A given threshold is applied as is.
  fixed = task_factory.get_task(params.task.replace(null_score_diff_threshold=-1e9))
  assert set(fixed.predict(model).answers.values()) == {""}
  # The loss has the answer-class term (v1.1 and v2.0 alike, as the released run_squad.py:
  # 0.5 x the sigmoid cross-entropy of is_impossible).
  outputs = {"start_logits": np.zeros([2, 4], np.float32),
             "end_logits": np.zeros([2, 4], np.float32),
             "cls_logits": np.zeros([2], np.float32)}
  batch = {"start_positions": np.array([1, 2]), "end_positions": np.array([1, 3]),
           "is_impossible": np.array([0.0, 1.0], np.float32)}
  total, count = task.loss_fn()(outputs, batch)
  total_v1, _ = squad_task.squad_loss_sum(outputs, batch, answer_class=False)
  assert float(count) == 2.0
  assert float(total_v1) == pytest.approx(2 * np.log(4.0), rel=1e-6)
  assert float(total - total_v1) == pytest.approx(2 * 0.5 * np.log(2.0), rel=1e-6)


# The one step's sizes: windows of 32 pieces every 16, questions cut at 8 pieces.
T, STRIDE, QUERY = 32, 16, 8


@pytest.fixture(scope="module")
def one_step(spiece_model, tmp_path_factory):
  """The demo (1 layer) with windows of T pieces trained one step by train_and_eval, then
  exported: (params, model directory, what train_and_eval returned, the export
  directory, the features' cache)."""
  work = tmp_path_factory.mktemp("squad")
  cache = str(work / "features")
  params = _demo_params(spiece_model, cache,
                        f",task.max_seq_length={T},task.doc_stride={STRIDE},"
                        f"task.max_query_length={QUERY},trainer.train_steps=1,"
                        "trainer.steps_per_loop=1,trainer.checkpoint_interval=1,"
                        "trainer.validation_interval=1,task.optimization.warmup_steps=0")
  run_dir = str(work / "run")
  out = driver.run(params, "train_and_eval", run_dir)
  return params, run_dir, out, driver.run(params, "export", run_dir)["export"], cache


def _served(one_step, spiece_model, tmp_path, serve):
  """The sample's questions over parts of their passages that fit one window: what the
  export serves (`serve(export_dir, inputs)`) and what the task predicts with best/."""
  params, run_dir, _, export_dir, cache = one_step
  sp = tokenization.load_spiece(spiece_model)
  short = _short_contexts_file(tmp_path / "short.json", sp, T - QUERY - 3)
  examples = squad.read_squad(short)[0]
  served = serve(export_dir, {"question": [e.question for e in examples],
                              "context": [e.context for e in examples]})
  checker = task_factory.get_task(params.task.replace(
      predict_file=short, validation_data=params.task.validation_data.replace(
          cache_dir=str(tmp_path / "features"))))
  predictions = checker.predict(checker.load_model_dir(os.path.join(run_dir, "best")))
  assert predictions.num_windows == len(examples)                  # one window each
  return examples, served, predictions


def _check_served(examples, served, predictions):
  """The export answers as the task decodes: answer text, start character, score."""
  assert "is_impossible" not in served                          # a SQuAD 1.1 model
  assert not any(served["paragraph_truncated"])
  assert served["answer_text"] == [predictions.answers[e.qas_id] for e in examples]
  assert any(served["answer_text"])
  for example, start, score in zip(examples, served["answer_start_char"], served["score"]):
    top = predictions.nbest[example.qas_id][0]
    assert start == top.start_char and score == pytest.approx(top.score, abs=1e-4)


def test_one_step_evaluates_and_exports(one_step, spiece_model, tmp_path):
  params, run_dir, out, export_dir, cache = one_step
  metrics = out["eval"]
  assert out["train"]["step"] == 1 and len(out["train"]["evals"]) == 1
  assert metrics["total"] == metrics["num_examples"] == 5
  assert metrics["num_windows"] > 2 * 5                  # several windows a question
  assert 0.0 <= metrics["exact"] <= metrics["f1"] <= 100.0
  assert glob.glob(os.path.join(run_dir, "validation", "events.out.tfevents.*"))
  # MODEL_DIR/final is run_squad's model directory; best/ is one too.
  final = os.path.join(run_dir, "final")
  assert sorted(f for f in os.listdir(final) if not f.startswith("model.ckpt")) == [
      "spiece.model", "squad.json", "xlnet_config.json"]
  settings = json.loads(open(os.path.join(final, "squad.json")).read())
  assert settings == {"uncased": False, "max_seq_length": T, "doc_stride": STRIDE,
                      "max_query_length": QUERY, "start_n_top": 3, "end_n_top": 3,
                      "version_2_with_negative": False}
  assert os.path.exists(os.path.join(run_dir, "best", "squad.json"))
  # The windows are part of the run: another stride is refused.
  with pytest.raises(run_directory.RunSettingsError, match="doc_stride"):
    driver.run(_demo_params(spiece_model, cache, f",task.max_seq_length={T},"
                            f"task.doc_stride={STRIDE * 2},task.max_query_length={QUERY}"),
               "train", run_dir)
  assert export_dir == os.path.join(run_dir, "export")
  _check_served(*_served(one_step, spiece_model, tmp_path, helpers.serve_in_process))


@pytest.mark.slow
def test_the_export_serves_in_a_fresh_process(one_step, spiece_model, tmp_path):
  """The same questions in a fresh process with TensorFlow and tensorflow-text only."""
  (tmp_path / "fresh").mkdir()
  _check_served(*_served(one_step, spiece_model, tmp_path,
                         lambda export_dir, inputs: helpers.serve_fresh(
                             export_dir, inputs, tmp_path / "fresh")))


@pytest.mark.slow
def test_run_squad_takes_the_released_flag_names(spiece_model, tmp_path):
  """experiments/run_squad.py over train_lib with the released run_squad.py's flag names
  (--model_config_path and --spiece_model_file without --init_checkpoint: a random model;
  --iterations, --save_steps, --max_save, --predict_dir) on a SQuAD 2.0 file: the null
  threshold searched by --do_predict is kept in MODEL_DIR/final/squad.json for the export
  (run_squad's --do_export: tests/tasks/test_squad_training.py, test_convert_finetuned.py)."""
  import subprocess  # pylint: disable=g-import-not-at-top
  import sys  # pylint: disable=g-import-not-at-top
  v2 = _v2_file(tmp_path / "v2.json")
  XLNetConfig(n_layer=1, d_model=32, n_head=2, d_head=16, d_inner=64,
              n_token=4000).to_json_file(str(tmp_path / "xlnet_config.json"))
  model_dir, out = tmp_path / "model", tmp_path / "out"
  result = subprocess.run(
      [sys.executable, "-m", "experiments.run_squad", "--do_train", "--do_predict",
       f"--train_file={v2}", f"--predict_file={v2}",
       f"--model_config_path={tmp_path / 'xlnet_config.json'}",
       f"--spiece_model_file={spiece_model}", f"--model_dir={model_dir}",
       f"--predict_dir={out}", "--max_seq_length=64", "--doc_stride=24",
       "--max_query_length=16", "--train_steps=6", "--iterations=3", "--save_steps=3",
       "--max_save=1", "--train_batch_size=8", "--learning_rate=1e-3", "--dropout=0",
       "--dropatt=0"], cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
  assert result.returncode == 0, result.stderr[-3000:]
  assert sorted(glob.glob(str(model_dir / "ckpt-*.index"))) == [str(model_dir / "ckpt-6.index")]
  params = driver.parse_params(squad_task.KIND.experiment, [str(model_dir / "params.yaml")])
  assert (params.trainer.steps_per_loop, params.trainer.checkpoint_interval,
          params.trainer.max_to_keep) == (3, 3, 1)
  assert params.task.init_checkpoint == "" and params.task.model.d_model == 32
  results = json.loads((out / "eval_results.json").read_text())
  assert results["total"] == 6 and results["NoAns_total"] == 1
  settings = json.loads((model_dir / "final" / "squad.json").read_text())
  assert settings["version_2_with_negative"] is True
  assert settings["null_score_diff_threshold"] == results["null_score_diff_threshold"]
  assert sorted(json.loads((out / "predictions.json").read_text())) == sorted(
      squad.gold_answers(squad.read_squad(v2)[0]))
