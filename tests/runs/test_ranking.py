"""The ranking comparison (`runs.ranking_folds`, experiments/ranking_folds.py) at tiny
size: every query tested once over the folds, the figures those of ir-measures on the
written runs, finished folds reused; and the latency of its models
(`benchmarks.ranking_latency`, experiments/benchmark_ranking.py)."""

import json
import os

import ir_measures
import pytest

import helpers
from kind_tests.ranker import write_ranking_sample
from xlnet_tf.benchmarks import ranking_latency
from xlnet_tf.data import trec_files
from xlnet_tf.runs import ranking_folds

MEASURES = {"ndcg@20": ir_measures.nDCG(dcg="exp-log2") @ 20, "err@20": ir_measures.ERR @ 20,
            "map": ir_measures.AP, "p@20": ir_measures.P @ 20}


def test_rankers_are_named_or_refused():
  assert ranking_folds.embedding_layer("bm25") is None
  assert ranking_folds.embedding_layer("knrm_static") == 0
  assert ranking_folds.embedding_layer("knrm_contextual") == -1
  assert ranking_folds.embedding_layer("knrm_layer1") == 1
  with pytest.raises(ValueError, match="unknown ranker 'knrm'"):
    ranking_folds.embedding_layer("knrm")


@pytest.mark.slow
def test_every_query_is_tested_once_and_scored_by_ir_measures(spiece_model, tmp_path):
  files = write_ranking_sample(tmp_path / "collection", chapters=range(1, 9))
  model_dir = helpers.write_pretrained_dir(tmp_path / "pretrained", spiece_model)
  data = f"queries={files['queries']},qrels={files['qrels']}"
  override = ",".join(
      [f"task.documents={files['documents']}", "task.max_seq_length=32", "task.mem_len=32",
       "trainer.train_steps=4", "trainer.steps_per_loop=2",
       "trainer.checkpoint_interval=2", "task.train_data.global_batch_size=8"] +
      [f"task.{split}.{kv}" for split in ("train_data", "validation_data")
       for kv in data.split(",")])
  settings = ranking_folds.RankingSettings(params_override=override, folds=2,
                                           rankers=("bm25", "knrm_static"))
  work = str(tmp_path / "work")
  results = ranking_folds.compare(work, model_dir, settings, command="test",
                                  report=lambda _: None)

  # Every query with candidates is in each ranker's run ("Loomings.", query 1, matches no
  # passage of these 8 chapters: it has none and counts 0, here as in ir-measures).
  qrels = list(ir_measures.read_trec_qrels(files["qrels"]))
  for ranker in ("bm25", "knrm_static"):
    run = list(ir_measures.read_trec_run(os.path.join(work, f"{ranker}.trec")))
    assert sorted({r.query_id for r in run}, key=int) == [str(c) for c in range(2, 9)]
    measured = ir_measures.calc_aggregate(list(MEASURES.values()), qrels, run)
    for key, measure in MEASURES.items():
      assert results["rankers"][ranker][key] == pytest.approx(measured[measure], abs=1e-5)
  # the same candidates: the reranked run holds each query's BM25 candidates
  bm25 = trec_files.read_run(os.path.join(work, "bm25.trec"))
  static = trec_files.read_run(os.path.join(work, "knrm_static.trec"))
  assert {q: sorted(d for d, _ in r) for q, r in bm25.items()} == {
      q: sorted(d for d, _ in r) for q, r in static.items()}
  timed = ranking_latency.measure(work, ranking_latency.rankers_in(work),
                                  report=lambda _: None)
  assert list(timed) == ["machine", "knrm_static"]
  assert timed["knrm_static"]["documents"] > 0 and timed["knrm_static"]["queries"] == 8
  assert timed["knrm_static"]["rerank_ms_per_query"] > 0
  assert json.load(open(os.path.join(work, "timing.json")))["knrm_static"] == timed[
      "knrm_static"]
  # The floor: the candidates shuffled (seeded, so the same twice).
  for key in MEASURES:
    row = results["random_order"][key]
    assert 0.0 <= row["min"] <= row["mean"] <= row["max"] <= 1.0
  again = ranking_folds.random_order(trec_files.read_qrels(files["qrels"]), bm25)
  for key in MEASURES:
    assert again[key] == pytest.approx(results["random_order"][key], abs=1e-9)
  assert json.load(open(os.path.join(work, "results.json")))["queries"] == 8

  # A rerun reuses the finished folds.
  fold_run = os.path.join(work, "knrm_static", "fold0", "run_test.trec")
  stamp = os.path.getmtime(fold_run)
  again = ranking_folds.compare(work, model_dir, settings, command="test",
                                report=lambda _: None)
  assert os.path.getmtime(fold_run) == stamp
  assert again["rankers"]["knrm_static"]["ndcg@20"] == results["rankers"]["knrm_static"][
      "ndcg@20"]
