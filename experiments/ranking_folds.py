r"""The paper's document ranking (issue 31): BM25 alone, K-NRM over the word-embedding
table, K-NRM over the contextual embeddings of a frozen pretrained XLNet; the same
candidates (BM25's top 100), the same query folds.

  python -m experiments.ranking_folds --init_checkpoint=runs/demo/pretrain/final \
    --work_dir=runs/ranking          (results: docs/benchmarks.md, "Document ranking")

The collection is the experiment's (experiments/configs/ranking_demo.yaml: the bundled
Moby-Dick collection, constructed: the chapter titles as queries over the chapters'
passages; --params_override=task.documents=...,task.train_data.queries=... for another).
Every query is tested once: --folds folds (query i in fold i mod folds), each K-NRM trained
on the other folds by the xlnet/ranking experiment, its test folds' runs joined and scored
once with ir-measures (NDCG@20 and ERR@20 by the TREC Web Track's gdeval, MAP, P@20).
--rankers takes knrm_layer<k> too (hidden state k). Finished runs are reused. The time to
embed and to rerank, with these runs' models: python -m experiments.benchmark_ranking.

The runs are xlnet_tf/runs/ranking_folds.py.
"""

import sys

from xlnet_tf import console  # noqa: E402

console.start()  # before TensorFlow is imported: the log levels of --verbosity

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from experiments import common_flags  # noqa: E402
from xlnet_tf import settings_record  # noqa: E402
from xlnet_tf.runs import ranking_folds  # noqa: E402

_DEFAULTS = ranking_folds.RankingSettings()
FLAGS = flags.FLAGS
_CONFIG = flags.DEFINE_string("config_file", _DEFAULTS.config_file,
                              "The xlnet/ranking experiment's YAML.")
_OVERRIDE = flags.DEFINE_string("params_override", "", "Overrides of the experiment.")
common_flags.define_flags(
    ("work_dir", "init_checkpoint", "folds", "rankers"),
    notes={"init_checkpoint": "the pretrained model directory or preset name",
           "folds": "the queries'",
           "rankers": f"any of {list(ranking_folds.RANKERS)} or knrm_layer<k>"},
    work_dir="runs/ranking", init_checkpoint="runs/demo/pretrain/final",
    folds=_DEFAULTS.folds, rankers=list(_DEFAULTS.rankers))


def main(argv):
  del argv
  if not FLAGS.rankers:
    raise app.UsageError("--rankers is empty: name at least one of "
                         f"{list(ranking_folds.RANKERS)} or knrm_layer<k>")
  for name in FLAGS.rankers:
    try:
      ranking_folds.embedding_layer(name)                # an unknown name, before any work
    except ValueError as e:
      raise app.UsageError(f"--rankers: {e}") from None
  if FLAGS.folds < 2:
    raise app.UsageError(f"--folds must be >= 2, got {FLAGS.folds}")
  settings = ranking_folds.RankingSettings(config_file=_CONFIG.value,
                                           params_override=_OVERRIDE.value,
                                           folds=FLAGS.folds, rankers=tuple(FLAGS.rankers))
  try:
    ranking_folds.compare(FLAGS.work_dir, FLAGS.init_checkpoint, settings,
                          command=" ".join(["python -m experiments.ranking_folds"] +
                                           sys.argv[1:]))
  except settings_record.SettingsMismatch as e:
    raise SystemExit(f"ranking_folds: {e}") from None


if __name__ == "__main__":
  app.run(main)
