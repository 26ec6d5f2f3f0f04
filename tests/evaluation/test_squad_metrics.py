"""Official SQuAD EM/F1 (v1.1 and v2.0) on hand-checked predictions for the real samples.

The gold answers are the bundled SQuAD questions (data_prep/sample_data/qa/squad.json);
the two unanswerable questions for v2.0 are constructed over the same passage. Every
expected number below was worked out by hand in the comments.
"""

import json
import os

import pytest

from xlnet_tf.evaluation import squad_metrics

SQUAD = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                     "data_prep", "sample_data", "qa", "squad.json")


def _gold():
  with open(SQUAD) as f:
    data = json.load(f)["data"]
  return {qa["id"]: [a["text"] for a in qa["answers"]]
          for article in data for paragraph in article["paragraphs"]
          for qa in paragraph["qas"]}


PREDICTIONS = {
    # gold "Saint Bernadette Soubirous": 2 of 2 predicted words right, 2 of 3 gold found:
    # P 1, R 2/3, F1 0.8; EM 0.
    "5733be284776f41900661182": "Saint Bernadette",
    # gold "a golden statue of the Virgin Mary": articles and "." normalise away: EM 1.
    "5733be284776f4190066117e": "The golden statue of the Virgin Mary.",
    # gold "1882": P 1/2, R 1, F1 2/3.
    "5733b1da4776f41900661068": "in 1882",
    # gold "Father Julius Nieuwl" (cut inside a word): only "julius" is common: P 1/2,
    # R 1/3, F1 0.4.
    "5733b1da4776f4190066106b": "Julius Nieuwland",
    # gold "an early wind tunnel": P 1, R 2/3, F1 0.8.
    "5733b1da4776f41900661067": "wind tunnel",
}


def test_v1_exact_match_and_f1_by_hand():
  scores = squad_metrics.evaluate(_gold(), PREDICTIONS)
  assert scores["total"] == 5
  assert scores["exact"] == pytest.approx(100 * 1 / 5)                       # 20.0
  assert scores["f1"] == pytest.approx(100 * (0.8 + 1 + 2 / 3 + 0.4 + 0.8) / 5)  # 73.33


def test_v1_missing_prediction_counts_as_wrong():
  predictions = dict(PREDICTIONS)
  del predictions["5733be284776f4190066117e"]                # the only exact match
  scores = squad_metrics.evaluate(_gold(), predictions)
  assert scores["exact"] == 0.0 and scores["missing"] == 1
  assert scores["f1"] == pytest.approx(100 * (0.8 + 2 / 3 + 0.4 + 0.8) / 5)


def test_v2_threshold_breakdown_and_best_threshold_by_hand():
  gold = _gold()
  gold["constructed-unanswerable-1"] = []      # "Who was the university's first woman president?"
  gold["constructed-unanswerable-2"] = []
  predictions = dict(PREDICTIONS, **{"constructed-unanswerable-1": "",
                                     "constructed-unanswerable-2": "Main Building"})
  na_probs = {"5733be284776f41900661182": 0.1, "5733be284776f4190066117e": 0.2,
              "5733b1da4776f41900661068": 0.6, "5733b1da4776f4190066106b": 0.3,
              "5733b1da4776f41900661067": 0.4, "constructed-unanswerable-1": 0.9,
              "constructed-unanswerable-2": 0.5}
  scores = squad_metrics.evaluate(gold, predictions, na_probs, na_threshold=0.55)
  # Above 0.55: "in 1882" (0.6) becomes "" -> 0; unanswerable-1 (0.9) is "" -> 1.
  # EM: statue 1 + unanswerable-1 1 = 2 of 7. F1: .8 + 1 + 0 + .4 + .8 + 1 + 0 = 4 of 7.
  assert scores["exact"] == pytest.approx(100 * 2 / 7)
  assert scores["f1"] == pytest.approx(100 * 4 / 7)
  assert scores["HasAns_total"] == 5 and scores["NoAns_total"] == 2
  assert scores["HasAns_exact"] == pytest.approx(20.0)
  assert scores["HasAns_f1"] == pytest.approx(100 * 3.0 / 5)
  assert scores["NoAns_exact"] == pytest.approx(50.0)
  assert scores["NoAns_f1"] == pytest.approx(50.0)
  # Best threshold, EM: start at 2 (everything null: both unanswerable right); in na order
  # 0.1 +0, 0.2 +1 -> 3 (best, threshold 0.2), 0.3 +0, 0.4 +0, 0.5 -1 (a non-null answer to
  # an unanswerable question), 0.6 +0, 0.9 +0.
  assert scores["best_exact"] == pytest.approx(100 * 3 / 7)
  assert scores["best_exact_thresh"] == pytest.approx(0.2)
  # F1: 2 -> 2.8 -> 3.8 -> 4.2 -> 5.0 (threshold 0.4) -> 4.0 -> 4.67 -> 4.67.
  assert scores["best_f1"] == pytest.approx(100 * 5 / 7)
  assert scores["best_f1_thresh"] == pytest.approx(0.4)


@pytest.mark.parametrize("prediction, gold, exact, f1", [
    ("", "", 1, 1.0),                    # v2.0: no answer against no answer
    ("the", "", 1, 1.0),                 # normalises to nothing
    ("Denver Broncos", "", 0, 0.0),
    ("Broncos, Denver", "Denver Broncos", 0, 1.0),   # bag of words
    # "the the cat" normalises to [cat]; against [cat, cat]: P 1, R 1/2, F1 2/3.
    ("the the cat", "cat cat", 0, 2 / 3),
])
def test_single_answers(prediction, gold, exact, f1):
  assert squad_metrics.exact_match(prediction, gold) == exact
  assert squad_metrics.f1_score(prediction, gold) == pytest.approx(f1)


def test_unknown_version_is_an_error():
  with pytest.raises(ValueError, match="version must be '1.1' or '2.0', got '3'"):
    squad_metrics.evaluate({"q": ["a"]}, {"q": "a"}, version="3")
