"""SQuAD exact match and F1 as the official v1.1 and v2.0 evaluation scripts define them.

  >>> scores = evaluate(gold, predictions)                    # v1.1: answerable only
  >>> scores = evaluate(gold, predictions, na_probs, 0.5)     # v2.0, with a null threshold
  >>> scores["exact"], scores["f1"], scores["HasAns_f1"], scores["best_f1_thresh"]

Definitions (both versions): an answer is normalised by lower-casing, deleting ASCII
punctuation, deleting the words "a", "an", "the" and collapsing whitespace; EM is 1 when
the normalised strings are equal; F1 is the harmonic mean of precision and recall of the
normalised answers' word multisets. A question's score is the maximum over its gold
answers, the totals are means x 100. v2.0 differences: gold answers that normalise to ""
are dropped, a question with none left is unanswerable (its only gold answer is ""), an
empty prediction against an empty gold scores 1 (EM and F1); with no-answer probabilities
a prediction whose probability exceeds the threshold becomes "". `best_*` is the score at
the best threshold over the dev set, and `best_*_thresh` that threshold.
"""

import collections
import re
import string
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCTUATION = frozenset(string.punctuation)


def normalize_answer(text: str) -> str:
  """Lower case, no punctuation, no articles, single spaces (the official order)."""
  text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
  text = _ARTICLES.sub(" ", text)
  return " ".join(text.split())


def answer_tokens(text: str) -> List[str]:
  return normalize_answer(text).split() if text else []


def exact_match(prediction: str, gold: str) -> int:
  return int(normalize_answer(prediction) == normalize_answer(gold))


def f1_score(prediction: str, gold: str) -> float:
  predicted, expected = answer_tokens(prediction), answer_tokens(gold)
  if not predicted or not expected:
    return float(predicted == expected)        # both empty: 1 (v2.0 no-answer), else 0
  common = sum((collections.Counter(predicted) & collections.Counter(expected)).values())
  if common == 0:
    return 0.0
  precision, recall = common / len(predicted), common / len(expected)
  return 2 * precision * recall / (precision + recall)


def gold_answers(answers: Sequence[str], version: str) -> List[str]:
  """The gold answers a question is scored against (v2.0: [""] when unanswerable)."""
  if version == "1.1":
    return list(answers)
  kept = [answer for answer in answers if normalize_answer(answer)]
  return kept or [""]


def question_scores(gold: Mapping[str, Sequence[str]], predictions: Mapping[str, str],
                    version: str) -> Tuple[Dict[str, int], Dict[str, float]]:
  """({qid: EM}, {qid: F1}) of the predicted questions, each the max over its golds."""
  exact, f1 = {}, {}
  for qid, answers in gold.items():
    if qid not in predictions:
      continue
    golds = gold_answers(answers, version)
    exact[qid] = max(exact_match(predictions[qid], g) for g in golds)
    f1[qid] = max(f1_score(predictions[qid], g) for g in golds)
  return exact, f1


def _apply_threshold(scores, na_probs, has_answer, threshold):
  """A question predicted as unanswerable (na_prob > threshold) scores 1 iff it is."""
  return {qid: (float(not has_answer[qid]) if na_probs[qid] > threshold else score)
          for qid, score in scores.items()}


def _best_threshold(predictions, scores, na_probs, has_answer) -> Tuple[float, float]:
  """(best total x 100, its threshold): thresholds swept over the questions' na_probs."""
  total = len(scores)
  current = best = sum(1 for qid in scores if not has_answer[qid])   # all predicted null
  best_threshold = 0.0
  for qid in sorted(scores, key=lambda q: na_probs[q]):
    if has_answer[qid]:
      current += scores[qid]
    elif predictions[qid]:
      current -= 1
    if current > best:
      best, best_threshold = current, na_probs[qid]
  return 100.0 * best / max(total, 1), best_threshold


def evaluate(gold: Mapping[str, Sequence[str]], predictions: Mapping[str, str],
             na_probs: Optional[Mapping[str, float]] = None, na_threshold: float = 1.0,
             version: Optional[str] = None) -> Dict[str, float]:
  """The official totals.

  Args:
    gold: {question id: its gold answer texts} (empty for an unanswerable v2.0 question).
    predictions: {question id: predicted text} ("" predicts no answer).
    na_probs: {question id: probability of no answer} (v2.0; default all 0).
    na_threshold: predictions with na_prob above it become "".
    version: "1.1" or "2.0"; default "2.0" when a question has no gold answer or na_probs
      are given, else "1.1".
  Returns:
    exact, f1, total; for v2.0 also HasAns_/NoAns_ exact, f1, total, and best_exact,
    best_exact_thresh, best_f1, best_f1_thresh. Questions without a prediction count as
    wrong (as the official scripts do, with a warning there).
  """
  if version is None:
    version = "2.0" if na_probs is not None or any(not a for a in gold.values()) else "1.1"
  if version not in ("1.1", "2.0"):
    raise ValueError(f"version must be '1.1' or '2.0', got {version!r}")
  full = {qid: predictions.get(qid, "") for qid in gold}
  exact, f1 = question_scores(gold, full, version)
  missing = [qid for qid in gold if qid not in predictions]
  if version == "1.1":
    for qid in missing:
      exact[qid], f1[qid] = 0, 0.0
    return {"exact": _mean(exact.values()), "f1": _mean(f1.values()), "total": len(gold),
            "missing": len(missing)}

  na_probs = {qid: 0.0 for qid in gold} if na_probs is None else dict(na_probs)
  for qid in missing:
    na_probs.setdefault(qid, 0.0)
  has_answer = {qid: bool(answers) for qid, answers in gold.items()}
  exact_t = _apply_threshold(exact, na_probs, has_answer, na_threshold)
  f1_t = _apply_threshold(f1, na_probs, has_answer, na_threshold)
  result = {"exact": _mean(exact_t.values()), "f1": _mean(f1_t.values()),
            "total": len(gold), "missing": len(missing)}
  for name, wanted in (("HasAns", True), ("NoAns", False)):
    ids = [qid for qid in gold if has_answer[qid] == wanted]
    if ids:
      result[f"{name}_exact"] = _mean(exact_t[q] for q in ids)
      result[f"{name}_f1"] = _mean(f1_t[q] for q in ids)
      result[f"{name}_total"] = len(ids)
  result["best_exact"], result["best_exact_thresh"] = _best_threshold(full, exact, na_probs,
                                                                      has_answer)
  result["best_f1"], result["best_f1_thresh"] = _best_threshold(full, f1, na_probs,
                                                                has_answer)
  return result


def _mean(values: Iterable[float]) -> float:
  values = list(values)
  return 100.0 * sum(values) / len(values) if values else 0.0
