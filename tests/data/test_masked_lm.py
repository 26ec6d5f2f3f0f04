"""The masked-LM baseline objective: corruption, reader, model path (ablation issue)."""

import numpy as np
import pytest
import tensorflow as tf

from helpers import PRETRAIN_SETTINGS
from helpers import small_config
from xlnet_tf.data import layouts
from xlnet_tf.data import masked_lm
from xlnet_tf.data.pretrain_reader import pretrain_dataset
from xlnet_tf.data.tokenization import CLS_ID
from xlnet_tf.data.tokenization import MASK_ID
from xlnet_tf.data.tokenization import SEP_ID
from xlnet_tf.models.xlnet_pretrainer import build_pretrainer

ROWS = PRETRAIN_SETTINGS.rows


def _first_batches(path, count, objective, skip_steps=0):
  dataset = pretrain_dataset(path, ROWS.bsz_per_host, repeat=False, shuffle_shards=False,
                             objective=objective, skip_steps=skip_steps)
  return [{k: v.numpy() for k, v in b.items()} for b in dataset.take(count)]


def test_the_never_a_target_rule_is_one_function():
  """`layouts.is_functional` (used by the row writer, the reader's permutation mask and
  masked LM) gives the same answer on numpy arrays and on TF tensors, eager or traced."""
  ids = np.array([[5, SEP_ID, 9, CLS_ID], [CLS_ID, 0, SEP_ID, MASK_ID]])
  want = np.isin(ids, [SEP_ID, CLS_ID])
  np.testing.assert_array_equal(layouts.is_functional(ids), want)
  np.testing.assert_array_equal(layouts.is_functional(tf.constant(ids, tf.int32)), want)
  traced = tf.function(layouts.is_functional)(tf.constant(ids, tf.int32))
  np.testing.assert_array_equal(traced, want)
  mapped = tf.data.Dataset.from_tensors(ids).map(layouts.is_functional)
  np.testing.assert_array_equal(next(iter(mapped)), want)


def test_targets_and_80_10_10_corruption_on_real_rows(pretraining_records):
  plm = _first_batches(pretraining_records[0], 12, "plm")
  mlm = _first_batches(pretraining_records[0], 12, "mlm")
  num_targets = masked_lm.num_masked_lm_targets(ROWS.seq_len)
  assert num_targets == round(0.15 * ROWS.seq_len)
  kinds = {"mask": 0, "kept": 0, "random": 0}
  for p, m in zip(plm, mlm):
    assert "perm_mask" not in m
    original, corrupted = p["input_ids"], m["input_ids"]
    assert m["target_mapping"].shape == (ROWS.bsz_per_host, num_targets, ROWS.seq_len)
    np.testing.assert_array_equal(m["target_mapping"].sum(-1), 1.0)   # one position each
    positions = m["target_mapping"].argmax(-1)                          # [B, P]
    for row in range(len(original)):
      chosen = positions[row]
      assert len(set(chosen)) == num_targets
      assert not np.isin(original[row, chosen], [SEP_ID, CLS_ID]).any()
      np.testing.assert_array_equal(m["target"][row], original[row, chosen])
      others = np.setdiff1d(np.arange(ROWS.seq_len), chosen)
      np.testing.assert_array_equal(corrupted[row, others], original[row, others])
      for position in chosen:
        if corrupted[row, position] == MASK_ID:
          kinds["mask"] += 1
        elif corrupted[row, position] == original[row, position]:
          kinds["kept"] += 1                     # (a random draw of the same piece too)
        else:
          kinds["random"] += 1
          assert masked_lm.FIRST_TEXT_PIECE <= corrupted[row, position] < 4000
    np.testing.assert_array_equal(m["target_mask"], 1.0)
    for key in ("segment_ids", "input_mask", "stream_index", "stream_step"):
      np.testing.assert_array_equal(m[key], p[key])
  total = sum(kinds.values())                      # 12 batches x 8 rows x 10 = 960
  # Binomial sd at n=960: 0.013 (p=0.8), 0.0097 (p=0.1); bounds are about 4 sd.
  assert abs(kinds["mask"] / total - 0.8) < 0.05, kinds
  assert abs(kinds["random"] / total - 0.1) < 0.04, kinds
  assert abs(kinds["kept"] / total - 0.1) < 0.04, kinds


def test_corruption_is_a_function_of_seed_and_step(pretraining_records):
  path = pretraining_records[0]
  first = _first_batches(path, 4, "mlm")
  again = _first_batches(path, 4, "mlm")
  resumed = _first_batches(path, 2, "mlm", skip_steps=2)
  for a, b in zip(first, again):
    np.testing.assert_array_equal(a["input_ids"], b["input_ids"])
  for a, b in zip(first[2:], resumed):               # resuming reproduces steps 2 and 3
    np.testing.assert_array_equal(a["input_ids"], b["input_ids"])
    np.testing.assert_array_equal(a["target_mapping"], b["target_mapping"])
  assert not np.array_equal(first[0]["target_mapping"], first[1]["target_mapping"])
  other_seed = pretrain_dataset(path, ROWS.bsz_per_host, repeat=False, shuffle_shards=False,
                                objective="mlm", seed=5)
  batch = next(iter(other_seed))
  assert not np.array_equal(batch["target_mapping"].numpy(), first[0]["target_mapping"])


def test_mlm_logits_are_the_content_stream_at_the_targets():
  config = small_config()
  plm = build_pretrainer(config)
  mlm = build_pretrainer(config, "mlm")
  mlm.set_weights(plm.get_weights())
  rng = np.random.default_rng(0)
  input_ids = tf.constant(rng.integers(9, 50, size=[2, 12]), tf.int32)
  positions = np.array([[1, 4, 7], [0, 2, 11]])
  target_mapping = tf.one_hot(positions, 12, dtype=tf.float32)
  full = plm({"input_ids": input_ids})["logits"].numpy()               # [B, T, V], content
  outputs = mlm({"input_ids": input_ids, "target_mapping": target_mapping})
  assert "query" not in outputs
  expected = np.take_along_axis(full, positions[..., None], axis=1)
  np.testing.assert_allclose(outputs["logits"].numpy(), expected, atol=1e-6)
  assert mlm.get_config()["objective"] == "mlm"
  with pytest.raises(ValueError, match="objective must be 'plm', 'mlm' or 'clm', got 'bert'"):
    build_pretrainer(config, "bert")


def test_unknown_objective_is_an_error_before_reading(pretraining_records):
  with pytest.raises(ValueError, match=r"objective must be one of \('plm', 'mlm', 'clm'\), "
                                       r"got 'electra'"):
    pretrain_dataset(pretraining_records[0], ROWS.bsz_per_host, objective="electra")
