"""The ranking task's files and folds (`tasks.ranking`): the collection, and what a split
reads (`read_split`): its queries after the fold, their candidates (a TREC run's or BM25's
top k) and their judgments, read and checked.

  >>> documents = ranking_splits.read_collection(params.documents)   # "" : the bundled
  >>> files = ranking_splits.split_files(data.queries, data.qrels, data.candidates)
  >>> split = ranking_splits.read_split(files, lambda: documents, name="train_data",
  ...                                   training=True, num_candidates=100, folds=5, fold=0,
  ...                                   bm25_cache_dir=lambda: "features/bm25")

With `folds` > 0 the queries of one file are split into folds by their order in it (query
i is in fold i mod folds, `fold_of`): a training split keeps every fold but `fold`, an
evaluation split `fold` only. Errors name the task's field (`task.<name>...`) and the file.
"""

import dataclasses
import logging
from typing import Any, Callable, Dict, List, Tuple

from xlnet_tf.data import bm25_candidates
from xlnet_tf.data import sample_data
from xlnet_tf.data import storage
from xlnet_tf.data import trec_files
from xlnet_tf.evaluation import ranking_metrics

BUNDLED = "sample_data:ranking/moby_dick/"
BUNDLED_QUERIES = BUNDLED + "queries.tsv"
BUNDLED_DOCUMENTS = BUNDLED + "documents.jsonl"
BUNDLED_QRELS = BUNDLED + "qrels.txt"


@dataclasses.dataclass
class SplitData:
  """What a split reads: its queries (after the fold), their candidates and judgments,
  and the files' identities for the run settings."""
  queries: Dict[str, str]                         # qid -> text, this split's
  all_queries: Dict[str, str]                     # qid -> text, the whole file's
  candidates: Dict[str, List[Tuple[str, float]]]  # qid -> [(docid, score)], best first
  qrels: Dict[str, Dict[str, int]]                # this split's queries' judgments
  sources: Dict[str, Any]


def _resolve(value: str, bundled: str) -> str:
  return sample_data.resolve(value or bundled)


def read_collection(documents: str) -> Dict[str, str]:
  """docid -> text of the collection file `documents` ("": the bundled collection's)."""
  path = _resolve(documents, BUNDLED_DOCUMENTS)
  collection = trec_files.read_documents(path)
  if not collection:
    raise ValueError(f"task.documents: {path} holds no documents")
  return collection


def split_files(queries: str, qrels: str, candidates: str) -> Tuple[str, str, str]:
  """The paths of a split's queries, qrels ("": the bundled collection's) and candidate
  run ("": none, BM25's candidates)."""
  return (_resolve(queries, BUNDLED_QUERIES), _resolve(qrels, BUNDLED_QRELS),
          candidates and sample_data.resolve(candidates))


def fold_of(position: int, folds: int) -> int:
  """The fold of the query at `position` (0-based) of its file."""
  return position % folds


def read_split(files: Tuple[str, str, str], collection: Callable[[], Dict[str, str]], *,
               name: str, training: bool, num_candidates: int, folds: int, fold: int,
               bm25_cache_dir: Callable[[], str]) -> SplitData:
  """The split's queries, candidates and judgments, read and checked: every candidate must
  be in the collection; judged documents missing from it are reported (a warning and the
  sources' `judged_not_in_collection`).

  Args:
    files: (queries, qrels, run) paths (`split_files`); run "": BM25's candidates.
    collection: gives docid -> text of the collection, called once the queries and qrels
      are read and checked.
    name: the split's field in the task config ("train_data", "validation_data"), for
      errors and warnings.
    training: a training split (every fold but `fold`) or an evaluation split (`fold`).
    num_candidates: the candidates per query (the run's top k, or BM25's).
    folds, fold: the cross-validation (folds 0: the whole file is the split).
    bm25_cache_dir: gives the directory of the cached BM25 candidates (called only
      without a run).
  """
  queries_path, qrels_path, run_path = files
  all_queries = trec_files.read_queries(queries_path)
  qrels = trec_files.read_qrels(qrels_path)
  too_high = [(qid, docid, grade) for qid, judged in qrels.items()
              for docid, grade in judged.items() if grade > ranking_metrics.MAX_GDEVAL_GRADE]
  if too_high:
    raise ValueError(f"task.{name}.qrels: {qrels_path} judges "
                     f"{len(too_high)} documents above grade "
                     f"{ranking_metrics.MAX_GDEVAL_GRADE}, e.g. (qid, docid, grade) "
                     f"{too_high[:3]}; NDCG@20 and ERR@20 as gdeval computes them take "
                     f"grades up to {ranking_metrics.MAX_GDEVAL_GRADE}")
  documents = collection()
  if folds:
    keep_fold = (lambda f: f != fold) if training else (lambda f: f == fold)
    queries = {qid: text for i, (qid, text) in enumerate(all_queries.items())
               if keep_fold(fold_of(i, folds))}
  else:
    queries = dict(all_queries)
  if not queries:
    raise ValueError(f"task.{name}: no queries in {queries_path}"
                     + (f" for fold {fold}" if folds else ""))
  if run_path:
    run = trec_files.read_run(run_path)
    unknown = sorted({docid for ranking in run.values() for docid, _ in ranking
                      if docid not in documents})
    if unknown:
      raise ValueError(f"task.{name}.candidates: {run_path} ranks "
                       f"{len(unknown)} documents that are not in the collection "
                       f"(task.documents), e.g. {unknown[:5]}")
    candidates = {qid: run.get(qid, [])[:num_candidates] for qid in all_queries}
    candidate_source = {"run": run_path, "sha256": storage.sha256(run_path)}
  else:
    candidates = bm25_candidates.bm25_candidates(
        all_queries, documents, k=num_candidates, cache_dir=bm25_cache_dir())
    candidate_source = {"bm25": num_candidates}
  empty = [qid for qid in queries if not candidates.get(qid)]
  if empty:
    logging.warning("task.%s: %d queries have no candidates (they score 0), e.g. %s",
                    name, len(empty), empty[:5])
  split_qrels = {qid: qrels[qid] for qid in queries if qid in qrels}
  unjudged = [qid for qid in queries if qid not in qrels]
  if unjudged:
    logging.warning("%s: %d of the %s queries have no judgments (not evaluated, no "
                    "training pairs), e.g. %s", qrels_path, len(unjudged), name,
                    unjudged[:5])
  missing = trec_files.missing_judged_documents(split_qrels, documents)
  if missing:
    logging.warning("%s: %d judged documents of the %s queries are not in the "
                    "collection, e.g. %s; they count as relevant documents not found",
                    qrels_path, len(missing), name, missing[:5])
  sources = {"queries": storage.sha256(queries_path), "qrels": storage.sha256(qrels_path),
             "candidates": candidate_source, "folds": folds,
             "fold": fold if folds else None,
             "judged_not_in_collection": len(missing)}
  return SplitData(queries, all_queries, candidates, split_qrels, sources)
