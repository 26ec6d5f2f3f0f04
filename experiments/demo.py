r"""The end-to-end demo on the bundled data: `make demo` (about 3 minutes on 2 idle CPU cores).

  python -m experiments.demo --work_dir=runs/demo            # reuses finished stages
  python -m experiments.demo --work_dir=runs/demo --force    # redoes every stage
  python -m experiments.demo --size=tiny --work_dir=/tmp/d   # the CI smoke-test size

SentencePiece -> pretraining TFRecords -> pretraining a small XLNet -> fine-tuning on the
bundled movie-review sentences (and from a random start, for comparison) -> SavedModel
export -> classifying raw sentences in a fresh process. See xlnet_tf/runs/demo.py.
Prints each stage's progress and where its artefacts went, then a summary table, also
written to WORK_DIR/summary.md.
"""


from xlnet_tf import console  # noqa: E402

console.start()  # before TensorFlow is imported: the log levels of --verbosity

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from experiments import common_flags  # noqa: E402
from xlnet_tf import settings_record  # noqa: E402
from xlnet_tf.runs import demo  # noqa: E402

FLAGS = flags.FLAGS
_SIZE = flags.DEFINE_enum("size", "demo", ["demo", "small", "tiny"], "Preset sizes "
                          "(DemoSettings.for_size).")
_FORCE = flags.DEFINE_bool("force", False, "Redo every stage, even those already done (a "
                           "rerun with other settings is refused without it).")
common_flags.define_flags(
    ("work_dir", "pretrain_steps", "finetune_steps"),
    notes={"work_dir": "every stage's", "pretrain_steps": "override the preset",
           "finetune_steps": "override the preset"},
    work_dir="runs/demo", pretrain_steps=None, finetune_steps=None)
_FINETUNE_SEEDS = flags.DEFINE_list("finetune_seeds", None, "Fine-tune once per seed "
                                    "(default: by preset, one seed).")
_MOBY = flags.DEFINE_bool("include_moby_dick", None, "Pretrain on Moby-Dick too.")
_COMPARE = flags.DEFINE_bool("compare_random_init", None, "Also fine-tune from a random "
                             "start (default: by preset; on for 'demo').")


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  overrides = {name: flag.value for name, flag in (
      ("pretrain_steps", FLAGS["pretrain_steps"]),
      ("finetune_steps", FLAGS["finetune_steps"]),
      ("compare_random_init", _COMPARE), ("include_moby_dick", _MOBY))
      if flag.value is not None}
  if _FINETUNE_SEEDS.value:
    overrides["finetune_seeds"] = tuple(int(seed) for seed in _FINETUNE_SEEDS.value)
  try:
    demo.demo(FLAGS.work_dir, _SIZE.value, force=_FORCE.value, **overrides)
  except settings_record.SettingsMismatch as e:
    raise SystemExit(f"demo: {e}") from None


if __name__ == "__main__":
  app.run(main)
