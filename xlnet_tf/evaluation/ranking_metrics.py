"""The measures of document ranking, computed by `ir_measures` (MacAvaney et al., ECIR 2022),
never here: NDCG@k and ERR@k as the TREC Web Track computes them (its `gdeval.pl`, which
ir_measures ships and runs with perl), MAP and P@k by trec_eval (ir_measures'
pytrec_eval provider).

  >>> result = evaluate_run(qrels, run)     # {qid: {docid: grade}}, {qid: [(docid, score)]}
  >>> result["ndcg@20"], result["err@20"], result["map"], result["p@20"]
  >>> result["num_queries"], result["per_query"]["42"]["ndcg@20"]

The measures (`MEASURES`; the cutoff k, 20 by default, a parameter):
  ndcg@k  `nDCG(dcg='exp-log2')@k`: gains 2^grade - 1 discounted by log(rank + 1), over
          the DCG of the ideal order of the query's judged grades (gdeval).
  err@k   `ERR@k`: the cascade sum_r R_r / r * prod_{i<r} (1 - R_i) with R = (2^grade - 1)
          / 2^4 (gdeval divides by 16, its highest allowed grade 4, whatever the qrels'
          highest grade: a document of grade 1 stops 1/16 of the users).
  map     `AP`: average precision over the whole ranking, relevant = grade >= 1.
  p@k     `P@k`: relevant documents among the first k, over k.
gdeval prints 5 decimals: ndcg and err are exact to 5e-6.

Which queries are averaged: those of the qrels with at least one document of grade >= 1
(`num_queries`). A query with no relevant document has no NDCG (gdeval skips it) and is
left out of all four; a query of that set the run does not rank counts 0 in all four; a
run's query without judgments is ignored. The result lists each kind of query left out or
counted 0, so that none is silently lost.

The ranking: each query's documents by score, highest first, equal scores in the order
given (`trec_files.read_run` gives a file's rank order; `trec_files.ranked` orders by
docid). Both trec_eval and gdeval would reorder equal scores by docid, descending; the
documents are handed to them with scores that are strictly decreasing in that order, so
that the four measures see the ranking that is evaluated.

gdeval reads only numeric topic ids (it dies with "format error" on others) and grades up
to 4: the qids are renamed 1..N for the measures and back, and a grade above 4 is refused
(ValueError, naming the query and document) when ndcg or err is asked for. Negative
grades (e.g. ClueWeb's -2, spam) count as 0 in all four measures.
"""

from typing import Any, Dict, Iterable, List, Sequence, Tuple

import ir_measures

# short name -> ir_measures measure, given the cutoff; provider.
MEASURES = ("ndcg", "err", "map", "p")
_GDEVAL = ("ndcg", "err")
MAX_GDEVAL_GRADE = 4


def measure_key(name: str, cutoff: int) -> str:
  """The result's key of a measure: "map", else name@cutoff ("ndcg@20")."""
  return name if name == "map" else f"{name}@{cutoff}"


def _ir_measure(name: str, cutoff: int):
  if name == "ndcg":
    return ir_measures.nDCG(dcg="exp-log2") @ cutoff
  if name == "err":
    return ir_measures.ERR @ cutoff
  if name == "map":
    return ir_measures.AP
  return ir_measures.P @ cutoff


def ordered(documents: Sequence[Tuple[str, float]]) -> List[str]:
  """The docids by score, highest first, equal scores in the given order."""
  positions = sorted(range(len(documents)), key=lambda i: (-float(documents[i][1]), i))
  return [documents[i][0] for i in positions]


def evaluate_run(qrels: Dict[str, Dict[str, int]],
                 run: Dict[str, Sequence[Tuple[str, float]]],
                 measures: Iterable[str] = MEASURES, cutoff: int = 20) -> Dict[str, Any]:
  """The measures of `run` ({qid: [(docid, score), ...]}) against `qrels` ({qid: {docid:
  grade}}), averaged over the qrels' queries with a relevant document (module doc).

  Returns:
    {measure key: mean, ... (e.g. "ndcg@20", "err@20", "map", "p@20"),
     "num_queries": the number averaged over,
     "per_query": {qid: {measure key: value}} (every averaged query, in the qrels' order),
     "missing_from_run": [qids averaged as 0: judged relevant documents, nothing ranked],
     "without_relevant": [qids of the qrels left out: no document of grade >= 1],
     "not_judged": [qids of the run left out: not in the qrels]}

  Raises:
    ValueError: an unknown measure, a cutoff < 1, a docid twice in a query's ranking, a
      grade above 4 with ndcg or err asked for, or no query with a relevant document.
  """
  measures = list(measures)
  unknown = [m for m in measures if m not in MEASURES]
  if unknown or not measures:
    raise ValueError(f"evaluate_run: expected measures among {MEASURES}, got {measures}")
  if int(cutoff) < 1:
    raise ValueError(f"evaluate_run: expected a cutoff >= 1, got {cutoff}")
  cutoff = int(cutoff)
  evaluated = [qid for qid, judged in qrels.items() if any(g >= 1 for g in judged.values())]
  if not evaluated:
    raise ValueError("evaluate_run: the qrels judge no document relevant (grade >= 1): "
                     "no query to evaluate")
  if any(m in _GDEVAL for m in measures):
    for qid in evaluated:
      for docid, grade in qrels[qid].items():
        if grade > MAX_GDEVAL_GRADE:
          raise ValueError(
              f"evaluate_run: query {qid}, document {docid}: grade {grade}; NDCG and ERR "
              f"as gdeval computes them take grades up to {MAX_GDEVAL_GRADE}")
  number = {qid: str(i) for i, qid in enumerate(evaluated, 1)}
  mapped_qrels = {number[qid]: {docid: int(g) for docid, g in qrels[qid].items()}
                  for qid in evaluated}
  mapped_run = {}
  for qid in evaluated:
    documents = run.get(qid) or []
    docids = ordered(documents)
    if len(set(docids)) != len(docids):
      twice = sorted({d for d in docids if docids.count(d) > 1})
      raise ValueError(f"evaluate_run: query {qid} ranks {twice} more than once")
    if docids:
      mapped_run[number[qid]] = {docid: float(len(docids) - i)
                                 for i, docid in enumerate(docids)}
  keys = {measure_key(m, cutoff): _ir_measure(m, cutoff) for m in measures}
  by_measure = {measure: key for key, measure in keys.items()}
  values = {qid: {key: 0.0 for key in keys} for qid in evaluated}
  qid_of = {n: qid for qid, n in number.items()}
  groups = [(ir_measures.gdeval, [keys[measure_key(m, cutoff)] for m in measures
                                  if m in _GDEVAL]),
            (ir_measures.pytrec_eval, [keys[measure_key(m, cutoff)] for m in measures
                                       if m not in _GDEVAL])]
  if mapped_run:
    for provider, provided in groups:
      if provided:
        for metric in provider.iter_calc(provided, mapped_qrels, mapped_run):
          values[qid_of[metric.query_id]][by_measure[metric.measure]] = float(metric.value)
  result = {key: sum(values[qid][key] for qid in evaluated) / len(evaluated)
            for key in keys}
  result.update({
      "num_queries": len(evaluated),
      "per_query": values,
      "missing_from_run": [qid for qid in evaluated if not run.get(qid)],
      "without_relevant": [qid for qid in qrels if qid not in number],
      "not_judged": [qid for qid in run if qid not in qrels],
  })
  return result
