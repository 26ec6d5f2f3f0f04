"""pretrain_dataset: the expanded masks, the batches per replica and memory consistency."""

import os

import numpy as np
import pytest
import tensorflow as tf

from helpers import PRETRAIN_SETTINGS
from xlnet_tf import masks
from xlnet_tf.data.pretrain_reader import pretrain_dataset
from xlnet_tf.data import pretrain_records
from xlnet_tf.data.pretrain_reader import replica_row_order
from xlnet_tf.data.tokenization import CLS_ID
from xlnet_tf.data.tokenization import SEP_ID

ROWS = PRETRAIN_SETTINGS.rows


def _batches(dataset, count):
  return [{k: v.numpy() for k, v in batch.items()} for batch in dataset.take(count)]


def _context(pipelines, pipeline_id, replicas):
  return tf.distribute.InputContext(num_input_pipelines=pipelines,
                                    input_pipeline_id=pipeline_id,
                                    num_replicas_in_sync=replicas)


def _expected_visibility(ids, ranks, targets):
  """Who may see whom in a pretraining row, written from the definition (not the code).

  Returns (query [T, T], content [T, T]) booleans: row i may attend to column j.
  """
  seq_len, reuse = len(ids), ROWS.reuse_len
  is_target = np.zeros(seq_len, bool)
  is_target[targets] = True
  ranked = is_target | np.isin(ids, [SEP_ID, CLS_ID])
  half = (np.arange(seq_len) >= reuse).astype(int)
  query = np.zeros([seq_len, seq_len], bool)
  for i in range(seq_len):
    for j in range(seq_len):
      if half[j] < half[i]:
        query[i, j] = True                       # the new half sees all of the reuse half
      elif half[j] == half[i]:
        if not ranked[j]:
          query[i, j] = True                     # context: seen by everyone in its half
        elif ranked[i]:
          query[i, j] = ranks[j] < ranks[i]      # earlier in the factorization order
          if not is_target[i] and ranks[j] == ranks[i]:
            query[i, j] = True                   # a <sep>/<cls> sees itself
  content = query | np.eye(seq_len, dtype=bool)
  return query, content


def test_masks_of_every_row_follow_the_definition(pretraining_records):
  dataset = pretrain_dataset(pretraining_records[0], ROWS.bsz_per_host, repeat=False,
                             shuffle_shards=False)
  checked = 0
  for batch in _batches(dataset, 3):
    query = ~masks.query_attention_mask(ROWS.seq_len, 0, batch["input_mask"],
                                        batch["perm_mask"]).numpy()
    content = ~masks.content_attention_mask(tf.constant(~query), ROWS.seq_len, 0).numpy()
    for b in range(ROWS.bsz_per_host):
      ids = batch["input_ids"][b]
      positions = np.argmax(batch["target_mapping"][b], axis=-1)[batch["target_mask"][b] > 0]
      rank = _ranks_of(pretraining_records[0], batch["stream_index"][b],
                       batch["stream_step"][b])
      want_query, want_content = _expected_visibility(ids, rank, positions)
      np.testing.assert_array_equal(query[b][positions], want_query[positions])
      np.testing.assert_array_equal(content[b], want_content)
      # The stated invariants, directly.
      assert not query[b][positions, positions].any()           # a target never sees itself
      assert content[b][np.arange(ROWS.seq_len), np.arange(ROWS.seq_len)].all()
      assert not content[b][:ROWS.reuse_len, ROWS.reuse_len:].any()   # reuse half: no new
      context = np.setdiff1d(np.flatnonzero(~np.isin(ids, [SEP_ID, CLS_ID])), positions)
      for lo, hi in ((0, ROWS.reuse_len), (ROWS.reuse_len, ROWS.seq_len)):
        rows = context[(context >= lo) & (context < hi)]
        cols = positions[(positions >= lo) & (positions < hi)]
        assert not content[b][np.ix_(rows, cols)].any()        # context sees no target
      np.testing.assert_array_equal(batch["target"][b][:len(positions)], ids[positions])
      checked += 1
  assert checked == 3 * ROWS.bsz_per_host


_RANK_CACHE = {}


def _ranks_of(records_dir, stream_index, stream_step):
  """perm_rank of a row, read from the first shard (unshuffled, first pass)."""
  if records_dir not in _RANK_CACHE:
    from helpers import read_records   # pylint: disable=g-import-not-at-top
    manifest = pretrain_records.load_manifest(records_dir)
    _RANK_CACHE[records_dir] = read_records(manifest["shards"][0]["path"])
  rows = _RANK_CACHE[records_dir]
  row = rows[stream_step * ROWS.bsz_per_host + stream_index]
  assert row["stream_index"] == stream_index and row["stream_step"] == stream_step
  return row["perm_rank"]


@pytest.mark.parametrize("replicas", [1, 2, 4])
def test_each_replica_keeps_its_streams_and_gets_forward_then_backward(pretraining_records,
                                                                       replicas):
  """One input pipeline feeding `replicas` replicas (batches go round-robin to replicas):
  a replica always gets the same streams, one step further each time, and its batch is
  [forward streams, the same streams reversed] whatever num_core_per_host was."""
  batch_size = ROWS.bsz_per_host // replicas
  dataset = pretrain_dataset(pretraining_records[0], batch_size,
                             _context(1, 0, replicas), repeat=False, shuffle_shards=False)
  batches = _batches(dataset, 6 * replicas)
  per_core = ROWS.bsz_per_host // ROWS.num_core_per_host
  for r in range(replicas):
    mine = batches[r::replicas]
    slots = mine[0]["stream_index"]
    forward, backward = slots[:batch_size // 2], slots[batch_size // 2:]
    assert np.all(forward % per_core < per_core // 2)              # forward streams
    np.testing.assert_array_equal(backward, forward + per_core // 2)   # their reversals
    for step, batch in enumerate(mine):
      np.testing.assert_array_equal(batch["stream_index"], slots)
      assert np.all(batch["stream_step"] == step)
      assert batch["perm_mask"].shape == (batch_size, ROWS.seq_len, ROWS.seq_len)
      assert batch["target_mapping"].shape == (batch_size, ROWS.num_predict, ROWS.seq_len)


def test_pipelines_read_whole_shards_and_shuffling_keeps_streams(pretraining_records):
  manifest = pretrain_records.load_manifest(pretraining_records[0])
  steps = {s["path"]: s["steps"] for s in manifest["shards"]}
  for pipeline_id in range(2):
    dataset = pretrain_dataset(pretraining_records[0], ROWS.bsz_per_host,
                               _context(2, pipeline_id, 2), shuffle_shards=True, seed=3)
    batches = _batches(dataset, 2 * max(steps.values()) + 3)
    previous = None
    slots = replica_row_order(ROWS.bsz_per_host, ROWS.num_core_per_host, True, 1)
    for batch in batches:
      np.testing.assert_array_equal(batch["stream_index"], slots)   # [all fwd, all bwd]
      step = batch["stream_step"][0]
      assert np.all(batch["stream_step"] == step)
      assert previous is None or step in (previous + 1, 0)    # a stream continues or a new
      previous = step                                          # shard starts at step 0


def test_batch_size_that_would_split_streams_is_an_error(pretraining_records):
  with pytest.raises(ValueError, match=r"batch_size 3 x 1 replica\(s\) per input pipeline "
                                       r"= 3, but the records hold bsz_per_host = 8"):
    pretrain_dataset(pretraining_records[0], 3)
  with pytest.raises(FileNotFoundError, match="no manifest.json"):
    pretrain_dataset(os.path.dirname(pretraining_records[1][0]), 8)   # text, not records


def test_replica_row_order_without_bi_data_is_the_identity():
  np.testing.assert_array_equal(replica_row_order(8, 2, False, 4), np.arange(8))
  np.testing.assert_array_equal(replica_row_order(8, 2, True, 1), [0, 1, 4, 5, 2, 3, 6, 7])
