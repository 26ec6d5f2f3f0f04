"""experiments/pretraining_diagnostics.py (xlnet_tf/benchmarks/pretraining_diagnostics.py):
its numbers against independent numpy computations, the JSON it writes, and the inputs it
refuses before any work."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from xlnet_tf.benchmarks import pretraining_diagnostics as diag
from helpers import pretrain_config
from xlnet_tf.data.pretrain_reader import pretrain_dataset
from xlnet_tf.data.pretrain_records import data_settings
from xlnet_tf.data.pretrain_records import load_manifest
from xlnet_tf.data.tokenization import CLS_ID, SEP_ID
from xlnet_tf.models.xlnet_pretrainer import build_pretrainer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_span_split_on_a_hand_made_layout():
  positions = np.array([[3, 4, 5, 9, 12, 13, 20, -1],
                        [0, 2, 4, 5, 7, 30, -1, -1]])
  valid = positions >= 0
  assert diag.in_multi_token_span(positions, valid).tolist() == [
      [True, True, True, False, True, True, False, False],
      [False, False, True, True, False, False, False, False]]


def _loop_attention(probs, visible, key_ids, own_key, weights, num_tokens):
  """The per-head means of `attention_sums`, one query row at a time."""
  rows, heads, queries, keys = probs.shape
  memory = keys - num_tokens
  means = []
  for n in range(heads):
    sums, count, ratio_sum, ratio_count = dict.fromkeys(
        ("entropy", "sep", "cls", "self", "neighbours"), 0.0), 0.0, 0.0, 0.0
    for b in range(rows):
      for q in range(queries):
        if not weights[b, q]:
          continue
        p = probs[b, n, q]
        h = -sum(x * np.log(x) for x in p if x > 0)
        sums["entropy"] += h
        seen = int(visible[b, q].sum())
        if seen > 1:
          ratio_sum, ratio_count = ratio_sum + h / np.log(seen), ratio_count + 1
        sums["sep"] += sum(p[k] for k in range(keys) if key_ids[b, k] == SEP_ID)
        sums["cls"] += sum(p[k] for k in range(keys) if key_ids[b, k] == CLS_ID)
        own = own_key[b, q]
        sums["self"] += p[own]
        sums["neighbours"] += sum(p[k] for k in (own - 1, own + 1)
                                  if memory <= k < memory + num_tokens)
        count += 1
    means.append({**{k: v / count for k, v in sums.items()},
                  "entropy_ratio": ratio_sum / ratio_count})
  return means


def test_attention_measures_equal_a_row_by_row_recomputation():
  rng = np.random.default_rng(0)
  rows, heads, tokens, memory = 2, 3, 6, 4
  keys = memory + tokens
  visible = rng.random([rows, tokens, keys]) < 0.6
  visible[:, 0, :] = False
  visible[:, 0, memory + 2] = True                       # a row that sees one key
  visible[:, 1:, 0] = True
  scores = rng.normal(size=[rows, heads, tokens, keys]) * 2
  probs = np.where(visible[:, None], np.exp(scores), 0.0)
  probs /= probs.sum(-1, keepdims=True)
  key_ids = rng.integers(0, 10, [rows, keys])            # ids 3 (<cls>) and 4 (<sep>) among them
  key_ids[:, :memory] = -1
  key_ids[0, memory + 3] = SEP_ID
  own_key = np.broadcast_to(np.arange(tokens) + memory, [rows, tokens])
  weights = np.ones([rows, tokens])
  weights[1, 2] = 0
  sums = diag.attention_sums(probs, visible, key_ids, own_key, weights, tokens)
  measured = diag.finish_attention(sums, "content")
  expected = _loop_attention(probs, visible, key_ids, own_key, weights, tokens)
  for got, want in zip(measured, expected):
    assert got.keys() == want.keys()
    for name in want:
      assert got[name] == pytest.approx(want[name], rel=1e-9, abs=1e-12), name
  assert diag.finish_attention(sums, "query")[0]["self"] is None


def _run_dir(path, records, config, **data_changes):
  """A pretraining model directory: run_settings.json as the driver writes it, and
  ckpt-7 of `model` (written by the caller)."""
  os.makedirs(path)
  data = data_settings(load_manifest(records))
  data["settings"] = {**data["settings"], **data_changes}
  with open(os.path.join(path, "run_settings.json"), "w") as f:
    json.dump({"config": config.to_dict(), "data": data,
               "options": {"objective": "plm", "learning_rate": 1e-3}, "replicas": 1}, f)
  return str(path)


@pytest.mark.slow                    # 9-43 s measured on the shared 2-core machine
def test_losses_and_lm_bias_gradient_on_a_model_that_predicts_target_frequencies(
    pretraining_records, tmp_path):
  """Zero embedding, LM bias = log of the held-out targets' frequencies: every prediction
  is that distribution, so the loss, the context-free loss and the targets' unigram
  entropy are one number; the LM bias gradient of the training batch is p - its targets'
  frequencies."""
  records, _ = pretraining_records
  config = pretrain_config(records)
  held_out = list(pretrain_dataset(records, 8, shuffle_shards=False, repeat=False).take(2))
  targets = np.concatenate([b["target"].numpy()[b["target_mask"].numpy() > 0]
                            for b in held_out])
  counts = np.bincount(targets, minlength=config.n_token)
  p = counts / counts.sum()
  entropy = -np.sum(p[p > 0] * np.log(p[p > 0]))

  model = build_pretrainer(config)
  model.encoder.word_embedding.assign(np.zeros([config.n_token, config.d_model], np.float32))
  model.lm_head.bias.assign(np.where(counts > 0, np.log(np.maximum(p, 1e-30)), -1e4)
                            .astype(np.float32))
  run_dir = _run_dir(tmp_path / "run", records, config)
  tf.train.Checkpoint(model=model).write(os.path.join(run_dir, "ckpt-7"))

  output = str(tmp_path / "out" / "diag.json")
  os.makedirs(os.path.dirname(output))
  report = diag.diagnose(run_dir, records, records, output, num_batches=2, grad_batches=1)
  assert os.listdir(os.path.dirname(output)) == ["diag.json"]          # no temporary left
  with open(output) as f:
    assert json.load(f) == json.loads(json.dumps(report))
  (checkpoint,) = report["checkpoints"]
  loss = checkpoint["loss"]
  assert loss["targets"] == len(targets)
  assert loss["loss"] == pytest.approx(entropy, rel=1e-5)
  assert loss["context_free"] == pytest.approx(entropy, rel=1e-5)
  assert loss["unigram"] == pytest.approx(entropy, rel=1e-9)

  train = held_out[0]                                 # --train_records: the same records
  train_targets = train["target"].numpy()[train["target_mask"].numpy() > 0]
  train_p = np.bincount(train_targets, minlength=config.n_token) / len(train_targets)
  lm_bias = checkpoint["gradients"]["groups"]["lm_bias"]
  assert lm_bias["grad_norm"] == pytest.approx(np.linalg.norm(p - train_p), rel=1e-4)
  assert lm_bias["weight_rms"] == pytest.approx(
      np.sqrt(np.mean(model.lm_head.bias.numpy().astype(np.float64) ** 2)), rel=1e-6)
  assert list(checkpoint["gradients"]["groups"]) == [
      "word_embedding", "mask_emb",
      *[f"layer_{i}/{part}" for i in range(2) for part in (
          "attention", "attention_layer_norm", "feed_forward", "feed_forward_layer_norm",
          "relative_biases")], "lm_bias"]
  assert checkpoint["embedding"]["top_share"] is None         # a zero embedding has none


def test_another_layout_and_a_bad_model_dir_are_refused_before_any_work(
    pretraining_records, tmp_path, monkeypatch):
  """Records of another layout, a directory without run settings and a checkpoint that is
  not there are refused before a model is built, and no output is written. (The command
  line's one-line refusal of a missing --model_dir: the slow test below.)"""
  records, _ = pretraining_records
  monkeypatch.setattr(diag, "build_pretrainer", lambda *a: pytest.fail("work was done"))
  config = pretrain_config(records)
  run_dir = _run_dir(tmp_path / "run", records, config, reuse_len=16)
  with open(os.path.join(run_dir, "ckpt-7.index"), "w"):
    pass
  output = str(tmp_path / "diag.json")
  with pytest.raises(ValueError) as refused:
    diag.diagnose(run_dir, records, records, output)
  assert str(refused.value) == (
      f"--records {records}: made with reuse_len=32, the run in {run_dir} with "
      f"reuse_len=16; the measures need records of the run's layout")

  not_a_run = tmp_path / "empty"
  not_a_run.mkdir()
  with pytest.raises(FileNotFoundError, match=r"--model_dir .*empty: no run_settings.json"):
    diag.diagnose(str(not_a_run), records, records, output)
  with pytest.raises(FileNotFoundError, match=r"--checkpoints: no ckpt-9 in .* \[7\]"):
    diag.diagnose(run_dir, records, records, output, steps=["9"])
  assert not os.path.exists(output)


@pytest.mark.slow
def test_a_missing_model_dir_is_refused_by_the_command_in_one_line(pretraining_records,
                                                                   tmp_path):
  """`python -m experiments.pretraining_diagnostics` with a --model_dir that does not exist
  ends with status 1 and one line naming it, and writes no output."""
  records, _ = pretraining_records
  output = str(tmp_path / "diag.json")
  missing = str(tmp_path / "nowhere")
  stopped = subprocess.run(
      [sys.executable, "-m", "experiments.pretraining_diagnostics", f"--model_dir={missing}",
       f"--records={records}", f"--train_records={records}", f"--output={output}"],
      cwd=ROOT, capture_output=True, text=True, timeout=300,
      env={**os.environ, "PYTHONPATH": ROOT, "TF_CPP_MIN_LOG_LEVEL": "3"})
  assert stopped.returncode == 1, stopped.stderr[-2000:]
  assert stopped.stderr.strip().splitlines()[-1] == (
      f"pretraining_diagnostics: --model_dir {missing}: no such directory (expected the "
      f"model directory of a pretraining run of experiments.train)")
  assert not os.path.exists(output)
