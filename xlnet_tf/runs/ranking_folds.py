"""The paper's ranking comparison on a collection, by query folds (issue 31;
python -m experiments.ranking_folds): BM25 alone, K-NRM over the model's word-embedding
table (context-free) and K-NRM over its contextual embeddings, with the same candidates and
the same folds.

Each ranker is trained once per fold by the driver (`train_lib.run`, the xlnet/ranking
experiment, `task.fold` = f) on the other folds' queries and evaluated on fold f; the test
folds' runs together are the ranker's run over every query, scored once by
`evaluation.ranking_metrics` (NDCG@20 and ERR@20 by gdeval, MAP, P@20), as is the candidates'
own ranking (BM25). The embeddings are cached in one directory for every fold and ranker
(computed once per model, layer and collection). Finished runs are reused. The time to
embed and to rerank is measured by `xlnet_tf.benchmarks.ranking_latency`.
"""

import dataclasses
import json
import os
import random
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from official.core import task_factory

from xlnet_tf import paths
from xlnet_tf import settings_record
from xlnet_tf.data import trec_files
from xlnet_tf.evaluation import ranking_metrics
from xlnet_tf.tasks import ranking
from xlnet_tf.tasks import train_lib

FOLD_SETTINGS = "fold_settings.json"     # what a fold's finished run was made with
# ranker name -> the embedding layer K-NRM reads (None: the candidates' own order, BM25's
# unless the experiment gives a candidate run)
RANKERS = {"bm25": None, "knrm_static": 0, "knrm_contextual": -1}


@dataclasses.dataclass(frozen=True)
class RankingSettings:
  """The comparison: the experiment's config file and overrides, the folds, the rankers
  (names of RANKERS, or "knrm_layer<k>" for hidden state k)."""
  config_file: str = "experiments/configs/ranking_demo.yaml"
  params_override: str = ""
  folds: int = 5
  rankers: Sequence[str] = tuple(RANKERS)


def embedding_layer(ranker: str) -> Optional[int]:
  """The layer a ranker's K-NRM reads (None for bm25); ValueError for an unknown name."""
  if ranker in RANKERS:
    return RANKERS[ranker]
  if ranker.startswith("knrm_layer") and ranker[len("knrm_layer"):].lstrip("-").isdigit():
    return int(ranker[len("knrm_layer"):])
  raise ValueError(f"unknown ranker {ranker!r}: expected one of {list(RANKERS)} or "
                   f"knrm_layer<k>")


def fold_params(settings: RankingSettings, init_checkpoint: str, cache_dir: str,
                fold: int, layer: int):
  """The experiment of one fold's run."""
  ours = (f"task.init_checkpoint={init_checkpoint},task.embedding_layer={layer},"
          f"task.folds={settings.folds},task.fold={fold},"
          f"task.train_data.cache_dir={cache_dir},task.validation_data.cache_dir={cache_dir}")
  override = ",".join(o for o in (settings.params_override, ours) if o)
  return train_lib.resolve_init_checkpoint(
      train_lib.parse_params(ranking.KIND.experiment, [settings.config_file], override))


def _reused_run(model_dir: str, run_file: str, settings: Dict[str, Any]) -> bool:
  """Whether the fold's finished run (`run_file`) was made with `settings` (recorded in
  MODEL_DIR/fold_settings.json); a finished run of other settings is refused, listing
  them (`settings_record.check`)."""
  if not os.path.exists(run_file):
    return False
  return settings_record.check(
      os.path.join(model_dir, FOLD_SETTINGS), settings,
      subject=f"{model_dir} holds a finished run of other settings",
      remedy="Give another --work_dir.")


RANDOM_DRAWS = 20       # shuffles of the candidates: what a ranker that knows nothing gets


def random_order(qrels: Dict[str, Dict[str, int]],
                 candidates: Dict[str, List[Tuple[str, float]]]) -> Dict[str, Dict[str, float]]:
  """{measure: {"mean", "min", "max"}} of each query's candidates shuffled (seeds 0 to
  RANDOM_DRAWS - 1): the floor a reranker of these candidates must clear."""
  values = {key: [] for key in ranking.MEASURES}
  for seed in range(RANDOM_DRAWS):
    rng = random.Random(seed)
    run = {}
    for qid, ranked in sorted(candidates.items()):
      docids = [docid for docid, _ in ranked]
      rng.shuffle(docids)
      run[qid] = [(docid, float(len(docids) - i)) for i, docid in enumerate(docids)]
    measured = ranking_metrics.evaluate_run(qrels, run, cutoff=ranking.CUTOFF)
    for key in ranking.MEASURES:
      values[key].append(measured[key])
  return {key: {"mean": sum(v) / len(v), "min": min(v), "max": max(v)}
          for key, v in values.items()}


def run_ranker(work_dir: str, settings: RankingSettings, init_checkpoint: str,
               ranker: str, report: Callable[[str], None] = print
               ) -> Dict[str, List[Tuple[str, float]]]:
  """The run over every query of one ranker: its folds trained and evaluated (bm25: the
  candidates of each fold's test queries)."""
  cache_dir = os.path.join(work_dir, "cache")
  layer = embedding_layer(ranker)
  merged: Dict[str, List[Tuple[str, float]]] = {}
  for fold in range(settings.folds):
    params = fold_params(settings, init_checkpoint, cache_dir, fold,
                         -1 if layer is None else layer)
    task = task_factory.get_task(params.task)
    data = params.task.validation_data
    if layer is None:                                       # BM25: the candidates' order
      split = task.split_data(data)
      merged.update({qid: split.candidates.get(qid, []) for qid in split.queries})
      continue
    model_dir = os.path.join(work_dir, ranker, f"fold{fold}")
    run_file = os.path.join(model_dir, f"run_{data.split}.trec")
    fold_settings = {"params": params.as_dict(), "ranker": ranker}
    if not _reused_run(model_dir, run_file, fold_settings):
      train_lib.run(params, "train", model_dir)
      model = task.load_model_dir(os.path.join(model_dir, train_lib.FINAL_DIR))
      run = task.rerank(model, data)
      settings_record.write(os.path.join(model_dir, FOLD_SETTINGS), fold_settings)
      trec_files.write_run(run_file, run, tag=ranker)
      report(f"{ranker} fold {fold}: trained and reranked")
    merged.update(trec_files.read_run(run_file))
  return merged


def compare(work_dir: str, init_checkpoint: str, settings: RankingSettings, command: str,
            report: Callable[[str], None] = print) -> Dict[str, Any]:
  """Every ranker over every fold; writes WORK_DIR/results.json, results.md and each
  ranker's run over all queries (WORK_DIR/<ranker>.trec)."""
  os.makedirs(work_dir, exist_ok=True)
  qrels: Dict[str, Dict[str, int]] = {}           # every fold's test queries' judgments
  for fold in range(settings.folds):
    params = fold_params(settings, init_checkpoint, os.path.join(work_dir, "cache"), fold,
                         -1)
    task = task_factory.get_task(params.task)
    split = task.split_data(params.task.validation_data)
    qrels.update(split.qrels)
  results: Dict[str, Any] = {"rankers": {}, "init_checkpoint": init_checkpoint,
                             "settings": dataclasses.asdict(settings),
                             "queries": len(split.all_queries),
                             "documents": len(task.collection())}
  for ranker in settings.rankers:
    run = run_ranker(work_dir, settings, init_checkpoint, ranker, report)
    trec_files.write_run(os.path.join(work_dir, f"{ranker}.trec"), run, tag=ranker)
    measured = ranking_metrics.evaluate_run(qrels, run, cutoff=ranking.CUTOFF)
    results["rankers"][ranker] = {
        **{key: measured[key] for key in ranking.MEASURES},
        "num_queries": measured["num_queries"]}
    report(f"{ranker}: " + ", ".join(f"{key} {measured[key]:.4f}"
                                     for key in ranking.MEASURES))
  if "bm25" in results["rankers"]:
    results["random_order"] = random_order(
        qrels, trec_files.read_run(os.path.join(work_dir, "bm25.trec")))
  paths.write_text(os.path.join(work_dir, "results.json"), json.dumps(results, indent=1))
  lines = [f"Command: `{command}`", "",
           f"{results['queries']} queries, {results['documents']} documents, "
           f"{settings.folds} folds; the top {params.task.num_candidates} candidates reranked "
           f"(bm25: the candidates' own order; BM25's unless the experiment gives a "
           f"candidate run).",
           "", "| ranker | NDCG@20 | ERR@20 | MAP | P@20 |", "|---|---|---|---|---|"]
  for ranker, row in results["rankers"].items():
    lines.append(f"| {ranker} | {row['ndcg@20']:.4f} | {row['err@20']:.4f} | "
                 f"{row['map']:.4f} | {row['p@20']:.4f} |")
  if "random_order" in results:
    row = results["random_order"]
    lines.append("| the candidates in a random order (" + str(RANDOM_DRAWS) + " draws: mean "
                 "[min, max]) | " + " | ".join(
                     f"{row[key]['mean']:.4f} [{row[key]['min']:.4f}, {row[key]['max']:.4f}]"
                     for key in ranking.MEASURES) + " |")
  paths.write_text(os.path.join(work_dir, "results.md"), "\n".join(lines) + "\n")
  report("\n".join(lines))
  return results
