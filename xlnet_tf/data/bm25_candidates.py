"""The candidates a reranker reorders: each query's top k documents by BM25, computed by the
`bm25s` library (Lù 2024), cached as a TREC run.

  >>> candidates = bm25_candidates(queries, documents, k=100, cache_dir="cache")
  >>> candidates["42"][:2]
  [('md-042-01', 17.93...), ('md-042-05', 15.2...)]

Texts are tokenized by `bm25s.tokenize`: lower-cased, words of two or more word
characters, bm25s' English stopwords removed, stemmed by PyStemmer's English (Porter 2,
"snowball") stemmer. Scores are bm25s' defaults (`BM25_PARAMETERS`: k1 1.5, b 0.75, the
"lucene" variant, as `bm25s.BM25()` has them). Every document of the collection is scored
(`BM25.get_scores_from_ids`) and the k best kept (k capped at the collection's size),
equal scores ordered by docid descending (as trec_eval and gdeval read a run), so the
order never depends on a top-k selection's ties. A document that matches no term of the
query (score 0) is not a candidate, as a Lucene search returns only matching documents: a
query with fewer than k matching documents has fewer candidates, and a query whose every
term is a stopword or unknown has none.

With `cache_dir`, the candidates are kept as `bm25-k<k>-<key[:16]>.run` (a TREC run, tag
"bm25") beside its `.json` sidecar (the settings, the key, the counts, how long the
retrieval took); `key` is the SHA-256 of everything that changes the result: the
documents and the queries (ids and texts, in order), k, the tokenization, the BM25
parameters and bm25s' version. A cache is read when its sidecar holds the same key; both
files are written under temporary names and renamed, the run first.
"""

import os
import time
from typing import Any, Dict, List, Optional, Tuple

import bm25s
import numpy as np
import Stemmer

from xlnet_tf import settings_record
from xlnet_tf.data import feature_cache
from xlnet_tf.data import storage
from xlnet_tf.data import trec_files

# bm25s.BM25()'s defaults, recorded in the sidecar (and checked against the library's
# defaults by the tests).
BM25_PARAMETERS = {"k1": 1.5, "b": 0.75, "method": "lucene"}
TOKENIZATION = {"lower": True, "stopwords": "en", "stemmer": "english (PyStemmer)",
                "token_pattern": r"(?u)\b\w\w+\b"}
RUN_TAG = "bm25"
FORMAT = "xlnet_tf.bm25_candidates.v3"   # v3: matching documents only, ties by docid desc


def cache_settings(queries: Dict[str, str], documents: Dict[str, str],
                   k: int) -> Dict[str, Any]:
  """Everything the candidates depend on, and "key", its SHA-256."""
  settings = {
      "format": FORMAT,
      "documents_sha256": feature_cache.rows_sha256(documents.items()),
      "queries_sha256": feature_cache.rows_sha256(queries.items()),
      "k": int(k),
      "tokenization": TOKENIZATION,
      "bm25": BM25_PARAMETERS,
      "bm25s_version": bm25s.__version__,
  }
  settings["key"] = storage.settings_key(settings)
  return settings


def _tokenize(texts: List[str], return_ids: bool):
  return bm25s.tokenize(texts, lower=TOKENIZATION["lower"], stopwords="en",
                        stemmer=Stemmer.Stemmer("english"), return_ids=return_ids,
                        show_progress=False, token_pattern=TOKENIZATION["token_pattern"])


def retrieve(queries: Dict[str, str], documents: Dict[str, str],
             k: int) -> Dict[str, List[Tuple[str, float]]]:
  """{qid: [(docid, BM25 score), ...]}: the k best matching documents of each query, best
  first (equal scores by docid descending, as `trec_files.ranked` and the TREC tools order
  them), with no cache."""
  docids = list(documents)
  retriever = bm25s.BM25(**BM25_PARAMETERS)
  retriever.index(_tokenize([documents[d] for d in docids], return_ids=True),
                  show_progress=False)
  by_docid = np.argsort(np.array(docids, dtype=object), kind="stable")
  rank_of_docid = np.empty(len(docids), dtype=np.int64)
  rank_of_docid[by_docid] = np.arange(len(docids))
  query_tokens = _tokenize(list(queries.values()), return_ids=False)
  candidates = {}
  for qid, tokens in zip(queries, query_tokens):
    scores = retriever.get_scores_from_ids(retriever.get_tokens_ids(list(tokens)))
    order = np.lexsort((-rank_of_docid, -scores.astype(np.float64)))[:k]
    candidates[qid] = [(docids[i], float(scores[i])) for i in order if scores[i] > 0]
  return candidates


def bm25_candidates(queries: Dict[str, str], documents: Dict[str, str], k: int = 100,
                    cache_dir: Optional[str] = None,
                    name: str = "bm25") -> Dict[str, List[Tuple[str, float]]]:
  """{qid: [(docid, BM25 score), ...]}: each query's min(k, len(documents)) best
  documents, best first, in the order of `queries`; read from `cache_dir` when a cache of
  the same inputs is there, else computed (and cached there when `cache_dir` is given).

  `name` starts the cache's file name (one cache directory may hold the candidates of
  several collections).

  Raises:
    ValueError: k < 1, no documents, or no queries (before anything is read or computed).
  """
  if int(k) < 1:
    raise ValueError(f"bm25_candidates: expected k >= 1, got {k}")
  if not documents:
    raise ValueError("bm25_candidates: the collection has no documents")
  if not queries:
    raise ValueError("bm25_candidates: no queries")
  k = min(int(k), len(documents))
  if cache_dir is None:
    return retrieve(queries, documents, k)
  settings = cache_settings(queries, documents, k)
  path = os.path.join(cache_dir, f"{name}-k{k}-{settings['key'][:16]}.run")
  if storage.exists(path) and settings_record.check(
      path + ".json", settings, common_only=True,
      subject=f"the BM25 candidates {path} were retrieved from other inputs",
      remedy=f"Delete {path} and {path}.json to retrieve them again."):
    run = trec_files.read_run(path)
    return {qid: run.get(qid, []) for qid in queries}
  storage.makedirs(cache_dir)
  start = time.time()
  candidates = retrieve(queries, documents, k)
  seconds = time.time() - start
  trec_files.write_run(path, candidates, RUN_TAG)
  settings_record.write(path + ".json", {**settings, "num_queries": len(queries),
                                         "num_documents": len(documents),
                                         "seconds": round(seconds, 3)})
  return candidates
