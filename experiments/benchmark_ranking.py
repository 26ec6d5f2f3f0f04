r"""The ranking task's time to embed a collection and to rerank a query's candidates, with
the models of a finished fold comparison (python -m experiments.ranking_folds):

  python -m experiments.benchmark_ranking --work_dir=runs/ranking
  (results: docs/benchmarks.md, "Document ranking")

For each K-NRM ranker of the comparison in --work_dir (default: every one that finished
its fold 0), its fold-0 run read back as it ran, with a fresh embedding cache
(WORK_DIR/timing-<n>): the seconds to embed the queries and the candidates, then the
milliseconds to rerank one query's candidates from the cached embeddings (the mean after
the first query, which also builds the graph); WORK_DIR/timing.json. Run it on quiet
cores. The measurement is xlnet_tf/benchmarks/ranking_latency.py.
"""

from xlnet_tf import console  # noqa: E402

console.start()  # before TensorFlow is imported: the log levels of --verbosity

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from experiments import common_flags  # noqa: E402
from xlnet_tf.benchmarks import ranking_latency  # noqa: E402

FLAGS = flags.FLAGS
common_flags.define_flags(
    ("work_dir", "rankers"),
    notes={"work_dir": "the fold comparison's: python -m experiments.ranking_folds",
           "rankers": "to time; default: every one with a finished fold 0 in --work_dir"},
    work_dir="runs/ranking", rankers=None)


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  found = ranking_latency.rankers_in(FLAGS.work_dir)
  rankers = FLAGS.rankers or found
  missing = [name for name in rankers if name not in found]
  if not rankers or missing:
    raise app.UsageError(
        f"--work_dir {FLAGS.work_dir}: no finished fold-0 run of "
        f"{missing or 'any K-NRM ranker'} (it has {found or 'none'}); run python -m "
        f"experiments.ranking_folds --work_dir={FLAGS.work_dir} first")
  ranking_latency.measure(FLAGS.work_dir, rankers)


if __name__ == "__main__":
  app.run(main)
