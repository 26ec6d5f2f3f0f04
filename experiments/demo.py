r"""The end-to-end demo on the bundled data: `make demo` (about 3 minutes on 2 idle CPU cores).

  python -m experiments.demo --work_dir=runs/demo            # reuses finished stages
  python -m experiments.demo --work_dir=runs/demo --force    # redoes every stage
  python -m experiments.demo --size=tiny --work_dir=/tmp/d   # the CI smoke-test size

SentencePiece -> pretraining TFRecords -> pretraining a small XLNet -> fine-tuning on the
bundled movie-review sentences (and from a random start, for comparison) -> SavedModel
export -> classifying raw sentences in a fresh process. See experiments/demo_pipeline.py.
Prints each stage's progress and where its artefacts went, then a summary table, also
written to WORK_DIR/summary.md.
"""

import os
import sys

from xlnet_tf import console

console.start()  # before TensorFlow is imported: the log levels of --verbosity

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from experiments import demo_pipeline  # noqa: E402

_WORK_DIR = flags.DEFINE_string("work_dir", "runs/demo", "Where every stage writes.")
_SIZE = flags.DEFINE_enum("size", "demo", ["demo", "small", "tiny"], "Preset sizes "
                          "(DemoSettings.for_size).")
_FORCE = flags.DEFINE_bool("force", False, "Redo every stage, even those already done.")
_PRETRAIN_STEPS = flags.DEFINE_integer("pretrain_steps", None, "Override the preset.")
_FINETUNE_STEPS = flags.DEFINE_integer("finetune_steps", None, "Override the preset.")
_FINETUNE_SEEDS = flags.DEFINE_list("finetune_seeds", None, "Fine-tune once per seed "
                                    "(default: by preset, one seed).")
_MOBY = flags.DEFINE_bool("include_moby_dick", None, "Pretrain on Moby-Dick too.")
_COMPARE = flags.DEFINE_bool("compare_random_init", None, "Also fine-tune from a random "
                             "start (default: by preset; on for 'demo').")


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  overrides = {name: flag.value for name, flag in (
      ("pretrain_steps", _PRETRAIN_STEPS), ("finetune_steps", _FINETUNE_STEPS),
      ("compare_random_init", _COMPARE), ("include_moby_dick", _MOBY))
      if flag.value is not None}
  if _FINETUNE_SEEDS.value:
    overrides["finetune_seeds"] = tuple(int(seed) for seed in _FINETUNE_SEEDS.value)
  settings = demo_pipeline.DemoSettings.for_size(_SIZE.value, **overrides)
  work_dir = os.path.abspath(_WORK_DIR.value)
  print(f"xlnet_tf demo ({_SIZE.value}): every stage writes under {work_dir}", flush=True)

  def report(line):
    print(line, flush=True)

  summaries = demo_pipeline.run_all(work_dir, settings, force=_FORCE.value, report=report)

  print("\nRaw sentences classified by the SavedModel in a fresh process "
        "(tensorflow + tensorflow_text only):")
  for p in summaries["serve"]["predictions"]:
    print(f"  {p['label']:>8}  p={max(p['probabilities']):.3f}  {p['text']!r}")
  table = demo_pipeline.summary_table(summaries)
  total = sum(s["seconds"] for s in summaries.values() if not s.get("reused"))
  print("\n" + "\n".join(table))
  print(f"\nwall time of the stages run now: {total:.0f} s")
  with open(os.path.join(work_dir, "summary.md"), "w") as f:
    f.write("\n".join(table) + "\n")
  saved_model = summaries["export"]["saved_model"]
  print(f"\nArtefacts: SentencePiece {demo_pipeline.spiece_path(work_dir)}\n"
        f"           records {summaries['records']['data']}\n"
        f"           pretrained model {summaries['pretrain']['model_dir']}\n"
        f"           fine-tuned model {summaries['finetune']['model_dir']}\n"
        f"           SavedModel {saved_model}\n"
        f"           summary {os.path.join(work_dir, 'summary.md')}\n"
        f"Try: {_classify_command()} --saved_model={saved_model} \"What a fine film.\"")


def _classify_command() -> str:
  """The console command `xlnet-classify` beside this interpreter (relative to the current
  directory when inside it, as .venv/bin/xlnet-classify), else the script from a checkout."""
  command = os.path.join(os.path.dirname(sys.executable), "xlnet-classify")
  if not os.path.exists(command):
    return f"{sys.executable} experiments/classify_text.py"
  relative = os.path.relpath(command)
  return command if relative.startswith("..") else relative


if __name__ == "__main__":
  app.run(main)
