r"""Does a pretrained start fine-tune at least as well as random weights? (issue 28)

  python -m experiments.transfer --work_dir=runs/transfer_sotu --corpus=sotu --size=small
  python -m experiments.transfer --work_dir=runs/transfer_reviews --corpus=reviews \
      --size=demo

One pretraining (seed 0) per recipe on the corpus, then fine-tuning on the bundled
movie-review sentiment task at every learning rate and seed, from each pretrained model
and from random weights (the same random-init runs for every recipe; everything else
equal). The stages are the demo's (xlnet_tf/runs/demo.py); the runner is
xlnet_tf/runs/transfer.py.

  corpus    sotu: the State of the Union speeches (out of domain), 12 of them held out;
            reviews: the demo's shuffled train-split review sentences (in domain)
  recipes   small: Adam with bias correction (the small-model recipe, docs/small-models.md);
            released: as released (no correction with weight decay)

A run is "collapsed" when its last fine-tuning loss is >= 0.98 ln 2 (it learnt nothing
beyond the class prior) or its held-out accuracy is within 1 point of the majority class.
The issue's requirement per recipe and learning rate: pretrained >= random init - 1 point
(means over seeds) and no pretrained run collapsed.

Writes WORK_DIR/results.md (held-out loss against the unigram entropy per recipe when the
corpus holds text out; held-out accuracy, dev + test, mean [min, max] over seeds per
learning rate) and results.json (every run). Finished stages are reused (their
stage.json), so an interrupted run continues where it stopped.
"""


from xlnet_tf import console  # noqa: E402

console.start()  # before TensorFlow is imported: the log levels of --verbosity

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from experiments import common_flags  # noqa: E402
from xlnet_tf import settings_record  # noqa: E402
from xlnet_tf.runs import demo  # noqa: E402
from xlnet_tf.runs import transfer  # noqa: E402

RECIPES = transfer.RECIPES

FLAGS = flags.FLAGS
_CORPUS = flags.DEFINE_enum("corpus", "sotu", list(demo.CORPORA),
                            "Pretraining text: 'sotu' (speeches, out of domain, with "
                            "held-out speeches) or 'reviews' (the demo's, in domain).")
_SIZE = flags.DEFINE_enum("size", "small", ["small", "demo", "tiny"],
                          "DemoSettings.for_size preset (the model, data and steps).")
_RECIPES = flags.DEFINE_list("recipes", list(RECIPES), f"Any of {list(RECIPES)}.")
_FINETUNE_LRS = flags.DEFINE_list("finetune_lrs", ["5e-4", "1e-3", "2e-3"],
                                  "Fine-tuning learning rates.")
common_flags.define_flags(("work_dir", "seeds"), notes={"seeds": "fine-tuning"},
                          work_dir="runs/transfer", seeds=["0", "1"])


def _parse(flag, values, kind, what):
  try:
    parsed = [kind(v) for v in values]
  except ValueError:
    raise app.UsageError(f"--{flag.name} must be {what}, got {values}") from None
  if not parsed:
    raise app.UsageError(f"--{flag.name} must be {what}, got nothing")
  return parsed


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  unknown = [r for r in _RECIPES.value if r not in RECIPES]
  if unknown or not _RECIPES.value:
    raise app.UsageError(f"--recipes: expected some of {list(RECIPES)}, got "
                         f"{_RECIPES.value}")
  lrs = _parse(_FINETUNE_LRS, _FINETUNE_LRS.value, float, "positive numbers")
  if any(lr <= 0 for lr in lrs):
    raise app.UsageError(f"--finetune_lrs must be positive numbers, got {lrs}")
  seeds = _parse(FLAGS["seeds"], FLAGS.seeds, int, "integers")
  command = (f"python -m experiments.transfer --corpus={_CORPUS.value} "
             f"--size={_SIZE.value} --recipes={','.join(_RECIPES.value)} "
             f"--finetune_lrs={','.join(_FINETUNE_LRS.value)} "
             f"--seeds={','.join(map(str, seeds))}")
  try:
    transfer.transfer(FLAGS.work_dir, _CORPUS.value, _SIZE.value, _RECIPES.value, lrs, seeds,
                      command)
  except settings_record.SettingsMismatch as e:
    raise SystemExit(f"transfer: {e}") from None


if __name__ == "__main__":
  app.run(main)
