"""A small XLNet learns a few real SQuAD questions to EM 100 through the whole path
(windows -> head -> loss -> decoding -> official EM), and answers a constructed
unanswerable question with the null answer (SQuAD 2.0)."""

import os

import numpy as np
import pytest
import tensorflow as tf

from helpers import small_config
from xlnet_tf.data import squad
from xlnet_tf.data import squad_features
from xlnet_tf.data import tokenization
from xlnet_tf.evaluation import squad_metrics
from xlnet_tf.evaluation import squad_postprocess
from xlnet_tf.models.xlnet_squad import build_squad_model
from xlnet_tf.training import optimization
from xlnet_tf.training.squad_training import predict_squad
from xlnet_tf.training.squad_training import train_squad
from xlnet_tf.training.squad_training import window_arrays

SQUAD = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                     "data_prep", "sample_data", "qa", "squad.json")


@pytest.mark.slow
def test_overfits_real_questions_and_learns_the_null_answer(spiece_model):
  sp = tokenization.load_spiece(spiece_model)
  examples, _ = squad.read_squad(SQUAD)
  examples.append(squad.SquadExample(                 # constructed over a real passage
      "constructed-unanswerable", "Which astronaut studied at the Grotto in 1990?",
      examples[0].context, (), True))
  windows = [w for e in examples for w in squad_features.squad_windows(
      sp, e, max_seq_length=192, doc_stride=64, max_query_length=32, is_training=True)]
  assert len(windows) > len(examples)                 # answers are decoded across windows
  tf.keras.utils.set_random_seed(0)
  model = build_squad_model(small_config(n_token=4000, d_model=64, n_head=4, d_head=16,
                                         d_inner=128), start_n_top=3, end_n_top=3,
                            dropout_rate=0.0)
  optimizer = optimization.build_optimizer(2e-3, 300, 20, weight_decay=0.0)
  arrays = window_arrays(windows)
  losses = train_squad(model, optimizer, arrays, batch_size=len(windows), steps=300)
  assert losses[-1] < 0.05 * losses[0], (losses[0], losses[-1])

  outputs = predict_squad(model, arrays)
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
  repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
  result = subprocess.run(
      [sys.executable, "-m", "experiments.run_squad", "--do_train", "--do_predict",
       f"--train_file={SQUAD}", f"--predict_file={SQUAD}",
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


def test_mirrored_fine_tuning_equals_one_device(spiece_model):
  """Two replicas on the same global batches make the same updates as one device."""
  import json
  import subprocess
  import sys
  root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
  env = {**os.environ, "PYTHONPATH": root}
  result = subprocess.run(
      [sys.executable, os.path.join(root, "tests", "mirrored_squad_run.py"), spiece_model,
       SQUAD, "4"], cwd=root, env=env, capture_output=True, text=True, timeout=600)
  assert result.returncode == 0, result.stderr[-3000:]
  runs = json.loads(result.stdout.strip().splitlines()[-1])
  assert runs["mirrored"]["replicas"] == 2 and runs["same_initial_weights"]
  np.testing.assert_allclose(runs["mirrored"]["losses"], runs["one_device"]["losses"],
                             rtol=1e-5)
  assert runs["max_weight_change"] > 1e-3                 # the runs did train
  assert runs["max_weight_difference"] < 1e-3 * runs["max_weight_change"]
