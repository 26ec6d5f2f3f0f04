"""A small XLNet learns a few real SQuAD questions to EM 100 through the whole path of the
xlnet/squad task (windows cached as TFRecords -> head -> loss -> the driver's training ->
decoding -> official EM), and answers a constructed unanswerable question with the null
answer (SQuAD 2.0); run_squad's command line trains, predicts, scores and exports, and names
a bad sample data file before any work. All slow. (Two replicas train like one device:
tests/tasks/test_driver.py.)"""

import json
import os

from official.core import task_factory
import pytest
import tensorflow as tf

from helpers import small_config
from helpers import squad_window_outputs
from xlnet_tf.data import feature_cache
from xlnet_tf.data import squad
from xlnet_tf.evaluation import squad_metrics
from xlnet_tf.evaluation import squad_postprocess
from xlnet_tf.tasks import squad as squad_task
from xlnet_tf.tasks import train_lib as driver

SQUAD = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                     "data_prep", "sample_data", "qa", "squad.json")
UNANSWERABLE = "Which astronaut studied at the Grotto in 1990?"


def _with_unanswerable(path):
  """The sample with a constructed unanswerable question over its first passage, last."""
  with open(SQUAD) as f:
    data = json.load(f)
  first = data["data"][0]["paragraphs"][0]["context"]
  data["data"][-1]["paragraphs"].append({"context": first, "qas": [
      {"id": "constructed-unanswerable", "question": UNANSWERABLE, "answers": [],
       "is_impossible": True}]})
  path.write_text(json.dumps(data))
  return str(path)


@pytest.mark.slow
def test_overfits_real_questions_and_learns_the_null_answer(spiece_model, tmp_path):
  v2 = _with_unanswerable(tmp_path / "squad_v2.json")
  examples, _ = squad.read_squad(v2)
  assert examples[-1].qas_id == "constructed-unanswerable"
  assert examples[-1].context == examples[0].context
  config = small_config(n_token=4000, d_model=64, n_head=4, d_head=16, d_inner=128)
  cache = str(tmp_path / "features")
  data = f"spiece_model={spiece_model},cache_dir={cache}"

  def params(global_batch_size):
    return driver.parse_params(squad_task.KIND.experiment, None, ",".join([
        f"task.train_file={v2}", f"task.predict_file={v2}", "task.max_seq_length=192",
        "task.doc_stride=64", "task.max_query_length=32", "task.start_n_top=3",
        "task.end_n_top=3",
        *(f"task.model.{k}={getattr(config, k)}" for k in (
            "n_layer", "d_model", "n_head", "d_head", "d_inner", "n_token", "dropout",
            "dropatt")),
        *(f"task.{split}.{kv}" for split in ("train_data", "validation_data")
          for kv in data.split(",")),
        f"task.train_data.global_batch_size={global_batch_size}",
        "task.optimization.learning_rate=2e-3", "task.optimization.warmup_steps=20",
        "task.optimization.weight_decay=0.0", "task.optimization.adam_epsilon=1e-6",
        "task.optimization.lr_layer_decay_rate=1.0", "trainer.train_steps=300",
        "trainer.steps_per_loop=1", "trainer.checkpoint_interval=300"]))

  # Every training window in each step (the batch is the whole cache).
  task = task_factory.get_task(params(1).task)
  num_windows = feature_cache.read_cache_info(
      task.features_path(task.task_config.train_data))["num_examples"]
  assert num_windows > len(examples)                  # answers are decoded across windows
  run = params(num_windows)
  losses = driver.run(run, "train", str(tmp_path / "run"))["train"]["losses"]
  assert len(losses) == 300
  assert losses[-1] < 0.05 * losses[0], (losses[0], losses[-1])

  # The fine-tuned model (MODEL_DIR/final) on the windows it learnt, streamed in order from
  # their cache, decoded with the null threshold 0 (SQuAD 2.0: the task trained the answer
  # class, the file having an unanswerable question).
  task = task_factory.get_task(run.task)
  assert task.version_2
  model = task.load_model_dir(str(tmp_path / "run" / "final"))
  windows, outputs = squad_window_outputs(model, examples, spiece_model,
                                          tmp_path / "predict", 192, 64, 32,
                                          is_training=True)
  assert len(windows) == num_windows
  answers, nbest, null_scores = squad_postprocess.decode(examples, windows, outputs,
                                                         null_threshold=0.0)
  gold = squad.gold_answers(examples)
  scores = squad_metrics.evaluate(gold, answers, version="2.0")
  print(f"\nafter 300 steps: loss {losses[0]:.2f} -> {losses[-1]:.4f}; {scores}")
  assert scores["HasAns_exact"] == 100.0 and scores["NoAns_exact"] == 100.0
  for example in examples[:-1]:                       # the exact gold text, not a superset
    assert answers[example.qas_id] == example.answers[0].text
    assert null_scores[example.qas_id] < 0.0
  assert answers["constructed-unanswerable"] == ""
  assert null_scores["constructed-unanswerable"] > 0.0
  assert all(len(n) >= 1 for n in nbest.values())


@pytest.mark.slow
def test_run_squad_command_trains_predicts_and_scores(spiece_model, tmp_path):
  import json
  import subprocess
  import sys
  from xlnet_tf.models.xlnet_pretrainer import build_pretrainer
  from xlnet_tf.pretrained import save_pretrained

  save_pretrained(build_pretrainer(small_config(n_token=4000)), str(tmp_path / "pre"),
                  spiece_model)
  repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
  result = subprocess.run(
      [sys.executable, "-m", "experiments.run_squad", "--do_train", "--do_predict",
       "--train_file=sample_data:qa/squad.json", f"--predict_file={SQUAD}",
       f"--init_checkpoint={tmp_path / 'pre'}", f"--model_dir={tmp_path / 'model'}",
       f"--output_dir={tmp_path / 'out'}", "--max_seq_length=320", "--doc_stride=64",
       "--do_export", f"--export_dir={tmp_path / 'export'}",
       "--train_steps=6", "--train_batch_size=4", "--learning_rate=1e-3"],
      cwd=repo, capture_output=True, text=True, timeout=900)
  assert result.returncode == 0, result.stderr[-3000:]
  predictions = json.loads((tmp_path / "out" / "predictions.json").read_text())
  assert sorted(predictions) == sorted(squad.gold_answers(squad.read_squad(SQUAD)[0]))
  scores = json.loads((tmp_path / "out" / "eval_results.json").read_text())
  assert scores["total"] == 5 and 0.0 <= scores["f1"] <= 100.0
  nbest = json.loads((tmp_path / "out" / "nbest_predictions.json").read_text())
  for qid, answer in predictions.items():     # the answer is the best of its n-best list
    assert nbest[qid][0]["text"] == answer
  # The SavedModel (every sample context fits one 320-piece window) gives the same answers.
  import tensorflow_text  # noqa: F401  pylint: disable=g-import-not-at-top,unused-import
  examples, _ = squad.read_squad(SQUAD)
  serve = tf.saved_model.load(str(tmp_path / "export")).signatures["serving_default"]
  served = serve(question=tf.constant([e.question for e in examples]),
                 context=tf.constant([e.context for e in examples]))
  assert "is_impossible" not in served                  # a v1.1 model
  assert not served["paragraph_truncated"].numpy().any()
  assert [t.decode() for t in served["answer_text"].numpy()] == \
      [predictions[e.qas_id] for e in examples]
  for example, start in zip(examples, served["answer_start_char"].numpy()):
    assert start == nbest[example.qas_id][0]["start_char"]


@pytest.mark.slow
def test_run_squad_names_a_bad_sample_data_file_before_any_work(spiece_model, tmp_path):
  import subprocess
  import sys
  repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
  def run(train_file):
    return subprocess.run(
        [sys.executable, "-m", "experiments.run_squad", "--do_train",
         f"--train_file={train_file}", f"--spiece_model_file={spiece_model}",
         f"--model_dir={tmp_path / 'model'}"],
        cwd=repo, capture_output=True, text=True, timeout=300)
  outside = run("sample_data:../README.md")
  assert outside.returncode != 0
  assert "--train_file: sample_data:../README.md: expected sample_data:PATH" in outside.stderr
  missing = run("sample_data:qa/nothing.json")
  assert missing.returncode != 0
  assert "qa/nothing.json" in missing.stderr and "SQuAD JSON file" in missing.stderr
  assert not (tmp_path / "model").exists()
