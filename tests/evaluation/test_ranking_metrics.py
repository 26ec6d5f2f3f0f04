"""xlnet_tf.evaluation.ranking_metrics against the measures worked out by hand on a small
run: NDCG@20 with gains 2^g - 1 over log2(rank + 1) normalized by the ideal order, ERR@20 as
gdeval.pl computes it (R = (2^g - 1) / 2^4, its MAX_JUDGMENT), AP and P@20; the set of
queries averaged; qids gdeval could not read; ties in the given order."""

import math

import pytest

from xlnet_tf.evaluation import ranking_metrics

# gdeval prints its values with 5 decimals.
GDEVAL = 5e-6

QRELS = {
    "query-A": {"d1": 2, "d2": 1, "d3": 0, "d4": 1},   # d4 relevant, never retrieved
    "topic-B": {"e1": 1},
    "C": {"f1": 3, "f2": 0},                            # judged relevant, not in the run
    "D": {"g1": 0, "g2": -2},                           # nothing relevant: left out
}
RUN = {
    "query-A": [("d3", 3.0), ("d1", 2.0), ("d5", 1.5), ("d2", 1.0)],  # grades 0 2 0 1
    "topic-B": [("e1", 5.0), ("e2", 4.0)],                             # grades 1 0
    "D": [("g1", 1.0)],
    "E": [("h1", 1.0)],                                                 # not judged
}

# query-A: DCG = (2^2-1)/log2(3) + (2^1-1)/log2(5); ideal order 2, 1, 1.
NDCG_A = (3 / math.log2(3) + 1 / math.log2(5)) / (3 / math.log2(2) + 1 / math.log2(3)
                                                  + 1 / math.log2(4))
# ERR: rank 2 stops 3/16 of the users (1/2 each), rank 4 1/16 of the remaining 13/16 (1/4).
ERR_A = (3 / 16) / 2 + (13 / 16) * (1 / 16) / 4
AP_A = (1 / 2 + 2 / 4) / 3           # relevant at ranks 2 and 4 of 3 relevant
P20_A = 2 / 20
# topic-B: its one relevant document first.
NDCG_B, ERR_B, AP_B, P20_B = 1.0, 1 / 16, 1.0, 1 / 20


def test_the_measures_match_the_hand_computation():
  result = ranking_metrics.evaluate_run(QRELS, RUN)
  per_query = result["per_query"]
  assert list(per_query) == ["query-A", "topic-B", "C"]
  assert per_query["query-A"]["ndcg@20"] == pytest.approx(NDCG_A, abs=GDEVAL)
  assert per_query["query-A"]["err@20"] == pytest.approx(ERR_A, abs=GDEVAL)
  assert per_query["query-A"]["map"] == pytest.approx(AP_A, abs=1e-12)
  assert per_query["query-A"]["p@20"] == pytest.approx(P20_A, abs=1e-12)
  assert per_query["topic-B"] == pytest.approx(
      {"ndcg@20": NDCG_B, "err@20": ERR_B, "map": AP_B, "p@20": P20_B}, abs=GDEVAL)
  assert per_query["C"] == {"ndcg@20": 0.0, "err@20": 0.0, "map": 0.0, "p@20": 0.0}
  # The mean is over the 3 queries with a relevant document, C counting 0.
  assert result["num_queries"] == 3
  assert result["ndcg@20"] == pytest.approx((NDCG_A + NDCG_B + 0) / 3, abs=GDEVAL)
  assert result["err@20"] == pytest.approx((ERR_A + ERR_B + 0) / 3, abs=GDEVAL)
  assert result["map"] == pytest.approx((AP_A + AP_B + 0) / 3, abs=1e-12)
  assert result["p@20"] == pytest.approx((P20_A + P20_B + 0) / 3, abs=1e-12)
  assert result["missing_from_run"] == ["C"]
  assert result["without_relevant"] == ["D"]
  assert result["not_judged"] == ["E"]


def test_the_cutoff_is_a_parameter():
  result = ranking_metrics.evaluate_run(QRELS, RUN, cutoff=2, measures=("ndcg", "p"))
  assert set(result) - {"num_queries", "per_query", "missing_from_run", "without_relevant",
                        "not_judged"} == {"ndcg@2", "p@2"}
  # query-A's first two: grades 0, 2; the ideal's first two: 2, 1.
  assert result["per_query"]["query-A"]["ndcg@2"] == pytest.approx(
      (3 / math.log2(3)) / (3 + 1 / math.log2(3)), abs=GDEVAL)
  assert result["per_query"]["query-A"]["p@2"] == pytest.approx(1 / 2)


def test_qids_gdeval_would_misread_are_kept_apart():
  # gdeval reads a topic as what follows its last "-": both would be topic 1.
  qrels = {"x-1": {"a": 1}, "y-1": {"b": 1}}
  run = {"x-1": [("a", 1.0)], "y-1": [("c", 2.0), ("b", 1.0)]}
  per_query = ranking_metrics.evaluate_run(qrels, run)["per_query"]
  assert per_query["x-1"]["ndcg@20"] == pytest.approx(1.0, abs=GDEVAL)
  assert per_query["y-1"]["ndcg@20"] == pytest.approx(1 / math.log2(3), abs=GDEVAL)
  assert per_query["y-1"]["err@20"] == pytest.approx((1 / 16) / 2, abs=GDEVAL)
  assert per_query["y-1"]["map"] == pytest.approx(1 / 2)


def test_equal_scores_keep_the_given_order():
  # trec_eval and gdeval would put "z" (the larger docid) first; the given order ranks
  # "a", the relevant one, first.
  qrels = {"1": {"a": 1}}
  result = ranking_metrics.evaluate_run(qrels, {"1": [("a", 1.0), ("z", 1.0)]})
  assert result["map"] == 1.0
  assert result["ndcg@20"] == pytest.approx(1.0, abs=GDEVAL)
  reversed_order = ranking_metrics.evaluate_run(qrels, {"1": [("z", 1.0), ("a", 1.0)]})
  assert reversed_order["map"] == 0.5


def test_refusals():
  with pytest.raises(ValueError, match=r"query q, document d: grade 5; NDCG and ERR as "
                                       r"gdeval computes them take grades up to 4"):
    ranking_metrics.evaluate_run({"q": {"d": 5}}, {"q": [("d", 1.0)]})
  # MAP and P alone do not go through gdeval.
  assert ranking_metrics.evaluate_run({"q": {"d": 5}}, {"q": [("d", 1.0)]},
                                      measures=("map",))["map"] == 1.0
  with pytest.raises(ValueError, match="no query to evaluate"):
    ranking_metrics.evaluate_run({"q": {"d": 0}}, {"q": [("d", 1.0)]})
  with pytest.raises(ValueError, match=r"query q ranks \['d'\] more than once"):
    ranking_metrics.evaluate_run({"q": {"d": 1}}, {"q": [("d", 1.0), ("d", 0.5)]})
  with pytest.raises(ValueError, match="expected measures among"):
    ranking_metrics.evaluate_run({"q": {"d": 1}}, {"q": [("d", 1.0)]}, measures=("mrr",))
