"""The time the ranking task takes to embed a collection and to rerank a query's candidates
(python -m experiments.benchmark_ranking), with the models of a finished fold comparison
(`xlnet_tf.runs.ranking_folds.compare`, python -m experiments.ranking_folds).

For each K-NRM ranker of the comparison, its fold-0 run is read back as it ran (its
params.yaml) with a fresh embedding cache: the seconds to embed the queries and the
collection's candidates into it, then the milliseconds to rerank one query's candidates
from the cached embeddings with its fold-0 model (the mean after the first query, whose
call also builds the graph).
"""

import os
import time
from typing import Any, Callable, Dict, List, Sequence

from official.core import task_factory

from xlnet_tf import paths
from xlnet_tf.benchmarks.timing import cpu_description
from xlnet_tf.tasks import ranking
from xlnet_tf.tasks import train_lib

FOLD = "fold0"          # the comparison's run whose model is timed


def rankers_in(work_dir: str) -> List[str]:
  """The K-NRM rankers of the comparison in `work_dir`: those with a finished fold-0 run."""
  if not os.path.isdir(work_dir):
    return []
  return sorted(name for name in os.listdir(work_dir) if os.path.isdir(
      os.path.join(work_dir, name, FOLD, train_lib.FINAL_DIR)))


def measure(work_dir: str, rankers: Sequence[str],
            report: Callable[[str], None] = print) -> Dict[str, Any]:
  """{ranker: its timings} for each of `rankers` (finished in `work_dir`), embedded into a
  fresh cache WORK_DIR/timing-<n>; writes WORK_DIR/timing.json."""
  runs = len([n for n in os.listdir(work_dir) if n.startswith("timing-")])
  cache_dir = os.path.join(work_dir, f"timing-{runs}")
  results: Dict[str, Any] = {"machine": cpu_description()}
  for ranker in rankers:
    run_dir = os.path.join(work_dir, ranker, FOLD)
    params = train_lib.parse_params(
        ranking.KIND.experiment, [os.path.join(run_dir, "params.yaml")],
        f"task.train_data.cache_dir={cache_dir},task.validation_data.cache_dir={cache_dir}")
    task = task_factory.get_task(params.task)
    data = params.task.validation_data
    queries = task.embeddings(data, "queries")
    documents = task.embeddings(data, "documents")
    model = task.load_model_dir(os.path.join(run_dir, train_lib.FINAL_DIR))
    rank = task.query_ranker(model, data)
    split = task.split_data(data)
    seconds = []
    for qid in split.queries:
      if split.candidates.get(qid):
        start = time.perf_counter()
        rank(qid)
        seconds.append(time.perf_counter() - start)
    steady = seconds[1:] or seconds
    results[ranker] = {
        "queries": len(queries), "embed_queries_seconds": queries.info["seconds"],
        "documents": len(documents), "pieces": int(documents.lengths.sum()),
        "embed_documents_seconds": documents.info["seconds"],
        "rerank_ms_per_query": 1000 * sum(steady) / max(1, len(steady))}
    report(f"{ranker}: " + ", ".join(f"{k} {v:.1f}" if isinstance(v, float) else f"{k} {v}"
                                     for k, v in results[ranker].items()))
  paths.write_json(os.path.join(work_dir, "timing.json"), results, indent=1)
  return results
