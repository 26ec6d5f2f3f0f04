"""run_classifier and export_saved_model from the command line, on the real movie reviews
(slow: command lines; a 1-layer pretrained model, 4 training steps)."""

import csv
import json
import os
import subprocess
import sys

import pytest

from helpers import serve_fresh
from helpers import small_config
from xlnet_tf import build_pretrainer
from xlnet_tf import save_pretrained

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _run(args, cwd=ROOT):
  result = subprocess.run([sys.executable, "-m"] + args, cwd=cwd, capture_output=True,
                          text=True, check=False)
  assert result.returncode == 0, result.stderr[-4000:]
  return result


@pytest.mark.slow
def test_fine_tune_evaluate_predict_export_and_serve(spiece_model, tmp_path):
  pretrained = tmp_path / "pretrained"
  save_pretrained(build_pretrainer(small_config(n_layer=1, n_token=4000)), str(pretrained),
                  spiece_model)
  out, model_dir = tmp_path / "out", tmp_path / "run"
  common = ["--task_name=movie_reviews", f"--output_dir={out}", f"--model_dir={model_dir}",
            "--max_seq_length=32"]
  _run(["experiments.run_classifier", "--do_train", "--do_eval", "--do_predict",
        f"--init_checkpoint={pretrained}", "--train_batch_size=16", "--grad_accum_steps=2",
        "--train_steps=4", "--warmup_steps=2", "--learning_rate=1e-3",
        "--lr_layer_decay_rate=0.75", "--iterations=2", "--save_steps=2"] + common)

  results = json.loads((out / "eval_results_dev.json").read_text())
  assert results["num_examples"] == 1019 and 0.0 <= results["accuracy"] <= 1.0
  with open(out / "movie_reviews_test_predictions.tsv", encoding="utf-8") as f:
    rows = list(csv.reader(f, delimiter="\t"))
  assert rows[0] == ["index", "prediction"] and len(rows) == 1 + 1081
  assert {r[1] for r in rows[1:]} <= {"negative", "positive"}
  assert (model_dir / "final" / "classifier.json").exists()
  assert (model_dir / "ckpt-4.index").exists()

  # The cached features are reused by a second evaluation (same settings, same file).
  features = sorted(os.listdir(out / "features"))
  _run(["experiments.run_classifier", "--do_eval"] + common +
       [f"--spiece_model_file={spiece_model}"])
  assert sorted(os.listdir(out / "features")) == features

  export_dir = tmp_path / "saved_model"
  _run(["experiments.export_saved_model", f"--model_dir={model_dir}",
        f"--export_dir={export_dir}"])
  labels = serve_fresh(export_dir, {"text_a": ["a gripping film", "dull and far too long"]},
                       tmp_path)["label"]                      # TensorFlow (+ text) only
  assert len(labels) == 2 and set(labels) <= {"negative", "positive"}


@pytest.mark.slow
def test_bad_flags_and_inputs_fail_clearly(spiece_model, tmp_path):
  result = subprocess.run(
      [sys.executable, "-m", "experiments.run_classifier", "--task_name=sst-2",
       f"--output_dir={tmp_path / 'out'}", f"--model_dir={tmp_path / 'run'}", "--do_train",
       f"--data_dir={tmp_path / 'missing'}", f"--spiece_model_file={spiece_model}",
       f"--model_config_path={tmp_path / 'none.json'}"],
      cwd=ROOT, capture_output=True, text=True, check=False)
  assert result.returncode != 0
  assert (f"run_classifier: --model_config_path: {tmp_path / 'none.json'} does not exist"
          in result.stderr)
  assert not (tmp_path / "out" / "features").exists()        # failed before any work
