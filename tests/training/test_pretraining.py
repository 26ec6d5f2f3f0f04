"""Pretraining on the bundled corpus: learning (slow), exact resume with memories and
dropout, distribution (slow), the optimiser's schedule and weight decay, half precision
(slow), bad data named before any work (its command line: slow)."""

import glob
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from helpers import pretrain_config
from helpers import pretrain_options
from helpers import read_records
from helpers import run_pretraining
from xlnet_tf import build_pretrainer
from xlnet_tf import load_pretrained
from xlnet_tf import save_pretrained
from xlnet_tf.configs import XLNetConfig
from xlnet_tf.data import pretrain_records
from xlnet_tf.training import optimization

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _run(records_dir, model_dir, config=None, **options):
  config = config or pretrain_config(records_dir)
  defaults = dict(model_dir=str(model_dir), train_steps=8, learning_rate=1e-3,
                  warmup_steps=2, steps_per_loop=1, save_steps=4)
  defaults.update(options)
  return run_pretraining(tf.distribute.get_strategy(), config, records_dir,
                         pretrain_options(**defaults))


def _unigram_entropy(records_dir):
  """Entropy (nats) of the target tokens' own distribution over every record: the loss
  of the best model that ignores context."""
  counts = {}
  for shard in pretrain_records.load_manifest(records_dir)["shards"]:
    for row in read_records(shard["path"]):
      positions = row["target_positions"][row["target_positions"] >= 0]
      for token in row["input_ids"][positions]:
        counts[token] = counts.get(token, 0) + 1
  p = np.array(list(counts.values()), float)
  p /= p.sum()
  return float(-(p * np.log(p)).sum())


@pytest.mark.slow
def test_a_small_model_learns_well_below_the_unigram_entropy(pretraining_records, tmp_path):
  """The unigram entropy of the targets (about 6.0 nats here) is the loss of the best model
  that ignores the context; the model starts near log(4000) = 8.3 and must end 0.75 nats
  below the unigram entropy, i.e. really use the context (measured: 5.0 after 1000 steps
  of 8 rows, about 35 s on 2 cores). The optimizer is the released one (weight decay, so
  no Adam bias correction: early updates are several times larger than corrected ones),
  hence the long warmup; lr 2e-3 with 100 warmup steps stays at the unigram entropy."""
  records_dir, _ = pretraining_records
  entropy = _unigram_entropy(records_dir)
  config = pretrain_config(records_dir, d_model=128, n_head=4, d_head=32, d_inner=256)
  summary = _run(records_dir, tmp_path / "run", config, train_steps=1000, learning_rate=1.5e-3,
                 warmup_steps=500, steps_per_loop=100, save_steps=1000)
  final = float(np.mean(summary["losses"][-2:]))
  print(f"unigram entropy {entropy:.3f} nats, loss {summary['losses']}")
  assert summary["losses"][0] > entropy                    # it starts above it ...
  assert final < entropy - 0.75, (final, entropy)          # ... and ends well below

  tags = set()
  for path in glob.glob(str(tmp_path / "run" / "train" / "events*")):
    for event in tf.compat.v1.train.summary_iterator(path):
      tags.update(v.tag for v in event.summary.value)
  assert {"loss", "learning_rate", "grad_norm", "tokens_per_sec"} <= tags
  exported = load_pretrained(summary["final_dir"])
  assert os.path.exists(os.path.join(summary["final_dir"], "spiece.model"))
  assert exported.config == config
  np.testing.assert_array_equal(exported.encoder.word_embedding.numpy(),
                                tf.train.load_variable(
                                    tf.train.latest_checkpoint(str(tmp_path / "run")),
                                    "model/encoder/word_embedding.Slookup_table/"
                                    ".ATTRIBUTES/VARIABLE_VALUE"))


def _memory(model_dir, step):
  return tf.train.load_variable(os.path.join(str(model_dir), f"ckpt-{step}"),
                                "memories/saved/.ATTRIBUTES/VARIABLE_VALUE")


@pytest.mark.slow
def test_resume_continues_exactly_like_an_uninterrupted_run(pretraining_records, tmp_path):
  """Dropout and attention dropout 0.1, mem_len 48 > reuse_len 32 (16 rows of each memory
  carry over to the next step; 2 layers: the second layer's memory holds hidden states): a
  run stopped at step 3 of 6 and run again gives the uninterrupted losses and memories.
  (Before: with dropout every loss after the restart differed, up to 0.1.)"""
  records_dir, _ = pretraining_records
  config = pretrain_config(records_dir, mem_len=48, dropout=0.1, dropatt=0.1)
  whole = _run(records_dir, tmp_path / "whole", config, train_steps=6, save_steps=1, seed=7)
  first = _run(records_dir, tmp_path / "split", config, train_steps=6, stop_at_step=3,
               save_steps=1, seed=7)
  second = _run(records_dir, tmp_path / "split", config, train_steps=6, save_steps=1, seed=7)
  assert second["start_step"] == 3 and second["step"] == 6
  resumed = first["losses"] + second["losses"]
  assert len(resumed) == len(whole["losses"]) == 6
  np.testing.assert_allclose(resumed, whole["losses"], rtol=1e-6, atol=0)
  # The memories were restored: step 4's memory starts with the end of step 3's.
  at_3, at_4 = _memory(tmp_path / "split", 3), _memory(tmp_path / "split", 4)
  assert np.abs(at_3).max() > 0.1
  np.testing.assert_array_equal(at_4[:, :, :16], at_3[:, :, 32:])
  np.testing.assert_allclose(_memory(tmp_path / "split", 6), _memory(tmp_path / "whole", 6),
                             rtol=0, atol=1e-5)
  # Dropout is really on: the same steps without it give other losses.
  plain = _run(records_dir, tmp_path / "plain", config.replace(dropout=0.0, dropatt=0.0),
               train_steps=6, stop_at_step=2, save_steps=1, seed=7)
  assert abs(plain["losses"][1] - whole["losses"][1]) > 1e-4


@pytest.mark.slow
def test_mirrored_on_two_devices_matches_one_device(pretraining_records, tmp_path):
  records_dir, _ = pretraining_records
  init = tmp_path / "init"
  save_pretrained(build_pretrainer(pretrain_config(records_dir)), str(init))
  output = subprocess.run(
      [sys.executable, os.path.join(ROOT, "tests", "mirrored_pretraining_run.py"),
       records_dir, str(init), str(tmp_path / "work"), "5"],
      cwd=ROOT, capture_output=True, text=True, check=False,
      env={**os.environ, "PYTHONPATH": ROOT})
  assert output.returncode == 0, output.stderr[-3000:]
  runs = json.loads(output.stdout.strip().splitlines()[-1])
  one, mirrored = runs["one_device"], runs["mirrored"]
  assert (one["replicas"], mirrored["replicas"]) == (1, 2)
  assert len(one["losses"]) == 5
  one_memory, mirrored_memory = np.array(one["memory"]), np.array(mirrored["memory"])
  loss_error = np.max(np.abs(np.subtract(mirrored["losses"], one["losses"])) /
                      np.abs(one["losses"]))
  memory_error = (np.abs(mirrored_memory - one_memory).max() /
                  max(1.0, np.abs(one_memory).max()))
  print(f"losses {one['losses']}; max relative difference: losses {loss_error:.2e}, "
        f"memories {memory_error:.2e}")
  assert loss_error <= 1e-4 and memory_error <= 1e-4


def test_schedule_and_weight_decay_selection_by_name():
  schedule = optimization.learning_rate_schedule(2.0, train_steps=110, warmup_steps=10)
  np.testing.assert_allclose([float(schedule(s)) for s in (0, 5, 10, 60, 110)],
                             [0.0, 1.0, 2.0, 1.0, 0.0], atol=1e-6)

  model = build_pretrainer(XLNetConfig(n_layer=2, d_model=8, n_head=2, d_head=4, d_inner=16,
                                       n_token=30))
  names = {v.name.replace(":0", "") for v in model.trainable_variables}
  decayed = {n for n in names if optimization.uses_weight_decay(n)}
  assert names - decayed == {
      f"transformer/layer_{i}/{part}" for i in range(2)
      for part in ("rel_attn/LayerNorm/gamma", "rel_attn/LayerNorm/beta",
                   "ff/LayerNorm/gamma", "ff/LayerNorm/beta", "ff/layer_1/bias",
                   "ff/layer_2/bias")} | {"lm_loss/bias"}
  assert {"transformer/r_w_bias", "transformer/r_r_bias", "transformer/r_s_bias",
          "transformer/seg_embed", "transformer/mask_emb/mask_emb",
          "transformer/word_embedding/lookup_table", "transformer/layer_0/rel_attn/q/kernel",
          "transformer/layer_1/ff/layer_2/kernel"} <= decayed

  # The optimizer applies exactly that: with zero gradients only decay moves a weight.
  optimizer = optimization.build_optimizer(1.0, train_steps=10, warmup_steps=0,
                                           weight_decay=0.1)
  before = [v.numpy().copy() for v in model.trainable_variables]
  optimizer.apply_gradients([(tf.zeros_like(v), v) for v in model.trainable_variables])
  for variable, old in zip(model.trainable_variables, before):
    moved = not np.allclose(variable.numpy(), old)
    name = variable.name.replace(":0", "")
    assert moved == (name in decayed and np.abs(old).max() > 0), name


@pytest.mark.slow
def test_half_precision_trains(pretraining_records, tmp_path):
  """bfloat16 and float16 pretraining with memories: finite losses. (A non-finite loss
  stopping with nothing non-finite written: tests/tasks/test_driver.py.)"""
  records_dir, _ = pretraining_records
  for precision in ("bfloat16", "mixed_float16"):
    summary = _run(records_dir, tmp_path / precision, train_steps=3, precision=precision)
    assert np.all(np.isfinite(summary["losses"])) and len(summary["losses"]) == 3


def test_bad_data_fails_before_any_model_is_built(tmp_path):
  with pytest.raises(FileNotFoundError, match="no manifest.json"):
    pretrain_records.check_data(str(tmp_path))


@pytest.mark.slow
def test_a_length_contradicting_the_records_fails_before_any_work(tmp_path,
                                                                  pretraining_records):
  records_dir, _ = pretraining_records
  result = subprocess.run(
      [sys.executable, "-m", "experiments.pretrain", f"--train_data={records_dir}",
       f"--model_dir={tmp_path / 'run'}", "--seq_len=128"],
      cwd=ROOT, capture_output=True, text=True, check=False)
  assert result.returncode != 0
  assert "--seq_len=128 contradicts the records" in result.stderr
  assert not (tmp_path / "run").exists()
