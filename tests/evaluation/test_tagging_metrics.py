"""Tagging metrics against hand computations (and seqeval / scikit-learn where installed)."""

import pytest

from xlnet_tf.evaluation import tagging_metrics as tm

# Two sentences of POS tags, 8 words; 6 right.
GOLD = [["at", "nn", "vbd", "at", "nn"], ["ppss", "vb", "nn"]]
PRED = [["at", "jj", "vbd", "at", "nn"], ["ppss", "nn", "nn"]]
# By hand, per tag (TP, FP, FN):
#   at (2, 0, 0) -> P 1, R 1, F1 1          nn  (2, 1, 1) -> P 2/3, R 2/3, F1 2/3
#   vbd (1, 0, 0) -> F1 1                   jj  (0, 1, 0) -> P 0, R 0 (no gold), F1 0
#   ppss (1, 0, 0) -> F1 1                  vb  (0, 0, 1) -> R 0, F1 0
# accuracy 6/8; micro: TP 6, FP 2, FN 2 -> F1 6/8; macro over the 6 tags:
#   (1 + 2/3 + 1 + 0 + 1 + 0) / 6 = 11/18.


def test_pos_metrics_by_hand():
  result = tm.tagging_metrics(GOLD, PRED)
  assert result["accuracy"] == pytest.approx(6 / 8)
  assert result["micro_f1"] == pytest.approx(6 / 8)
  assert result["macro_f1"] == pytest.approx(11 / 18)
  assert result["words"] == 8 and result["untagged"] == 0
  scores = tm.per_tag_scores(GOLD, PRED)
  assert list(scores) == ["at", "jj", "nn", "ppss", "vb", "vbd"]
  assert scores["nn"] == pytest.approx({"precision": 2 / 3, "recall": 2 / 3, "f1": 2 / 3,
                                        "support": 3})
  assert scores["jj"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 0}
  assert scores["vb"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 1}


def test_untagged_words_count_as_wrong():
  pred = [["at", "nn", "vbd", None, None], ["ppss", "vb", "nn"]]
  result = tm.tagging_metrics(GOLD, pred)
  # 6 right of 8; at: TP 1, FN 1; nn: TP 2, FN 1; no false positives anywhere.
  assert result["accuracy"] == pytest.approx(6 / 8)
  assert result["untagged"] == 2
  precision, recall = 6 / 6, 6 / 8
  assert result["micro_f1"] == pytest.approx(2 * precision * recall / (precision + recall))
  # at 2/3 (P 1, R 1/2), nn 4/5 (P 1, R 2/3), vbd, ppss, vb 1.
  assert result["macro_f1"] == pytest.approx((2 / 3 + 4 / 5 + 3) / 5)


# BIO: gold has PER(0-1), LOC(3), ORG(5-6); the prediction gets PER right, LOC with the
# wrong end (3-4), misses ORG and invents a MISC (7). An I- after O starts an entity.
GOLD_BIO = [["B-PER", "I-PER", "O", "B-LOC", "O", "B-ORG", "I-ORG", "O"]]
PRED_BIO = [["B-PER", "I-PER", "O", "B-LOC", "I-LOC", "O", "O", "I-MISC"]]


def test_bio_entities_by_hand():
  assert tm.bio_entities(GOLD_BIO[0]) == [("PER", 0, 1), ("LOC", 3, 3), ("ORG", 5, 6)]
  assert tm.bio_entities(PRED_BIO[0]) == [("PER", 0, 1), ("LOC", 3, 4), ("MISC", 7, 7)]
  assert tm.bio_entities(["I-PER", "B-PER", "I-LOC", "I-LOC", "O", "B-X"]) == [
      ("PER", 0, 0), ("PER", 1, 1), ("LOC", 2, 3), ("X", 5, 5)]
  scores = tm.entity_scores(GOLD_BIO, PRED_BIO)
  # 1 right of 3 predicted and of 3 gold: P = R = F1 = 1/3.
  assert (scores["precision"], scores["recall"], scores["f1"]) == pytest.approx(
      (1 / 3, 1 / 3, 1 / 3))
  assert scores["entities"] == 3
  assert scores["per_type"]["PER"]["f1"] == 1.0 and scores["per_type"]["LOC"]["f1"] == 0.0
  assert scores["per_type"]["MISC"]["support"] == 0
  result = tm.tagging_metrics(GOLD_BIO, PRED_BIO, scheme="bio")
  assert result["entity_f1"] == pytest.approx(1 / 3)
  assert result["accuracy"] == pytest.approx(4 / 8)               # words 0-3 right


def test_agrees_with_seqeval_and_sklearn():
  seqeval = pytest.importorskip("seqeval.metrics")
  sk_metrics = pytest.importorskip("sklearn.metrics")
  gold = GOLD_BIO + [["O", "B-PER", "I-PER", "I-PER"], ["B-LOC", "B-LOC", "O"]]
  pred = PRED_BIO + [["B-PER", "I-PER", "I-PER", "O"], ["B-LOC", "I-LOC", "O"]]
  scores = tm.entity_scores(gold, pred)
  assert scores["f1"] == pytest.approx(seqeval.f1_score(gold, pred))
  assert scores["precision"] == pytest.approx(seqeval.precision_score(gold, pred))
  assert scores["recall"] == pytest.approx(seqeval.recall_score(gold, pred))
  flat_gold = [t for s in GOLD for t in s]
  flat_pred = [t for s in PRED for t in s]
  f1 = tm.tag_f1(GOLD, PRED)
  assert f1["macro_f1"] == pytest.approx(
      sk_metrics.f1_score(flat_gold, flat_pred, average="macro", zero_division=0))
  assert f1["micro_f1"] == pytest.approx(sk_metrics.f1_score(flat_gold, flat_pred,
                                                             average="micro"))


def test_errors_name_the_sentence():
  with pytest.raises(ValueError, match="sentence 1: 3 gold tags but 2 predicted"):
    tm.tagging_metrics(GOLD, [PRED[0], ["ppss", "vb"]])
  with pytest.raises(ValueError, match="2 gold sentences but 1 predicted"):
    tm.tagging_metrics(GOLD, PRED[:1])
  with pytest.raises(TypeError, match="wrap a single sentence"):
    tm.tagging_metrics(["at"], ["at"])
  with pytest.raises(ValueError, match="scheme must be one of"):
    tm.tagging_metrics(GOLD, PRED, scheme="iob")
