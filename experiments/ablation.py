r"""The paper's Table 6 in miniature: pretraining objectives and XLNet's parts, ablated.

  python -m experiments.ablation --work_dir=runs/ablation --seeds=0,1,2

Every variant pretrains the same small model for the same number of steps on the same
bundled text (the shuffled train-split movie-review sentences), then is fine-tuned on
the bundled sentiment task; accuracy is measured on the held-out dev and test splits.

  plm_k6          XLNet: permutation LM, K = 6 (1 token in 6 predicted), spans, memory,
                  bidirectional data
  plm_k7          the same with K = 7
  mlm             BERT-style denoising on the same rows and model: 15% of the tokens,
                  80% <mask> / 10% random / 10% kept, predicted from the content stream
  plm_no_memory   no Transformer-XL memory (mem_len 0)
  plm_no_span     single-token targets instead of spans (max_span 1)
  plm_no_bi_data  forward streams only
  no_pretraining  fine-tuning from random weights (the floor)

Writes WORK_DIR/results.md (median and range over seeds), results.json (every run) and
ablation.png. Stages already done are reused (see experiments/demo_pipeline.py).
"""

import dataclasses
import json
import os

from xlnet_tf import console

console.start()  # before TensorFlow is imported: the log levels of --verbosity

from absl import app  # noqa: E402
from absl import flags  # noqa: E402
import numpy as np  # noqa: E402

from experiments import demo_pipeline  # noqa: E402

VARIANTS = {
    "plm_k6": {},
    "plm_k7": dict(mask_alpha=7),
    "mlm": dict(objective="mlm"),
    "plm_no_memory": dict(mem_len=0),
    "plm_no_span": dict(max_span=1),
    "plm_no_bi_data": dict(bi_data=False),
    "no_pretraining": dict(pretrain_steps=0),
}

_WORK_DIR = flags.DEFINE_string("work_dir", "runs/ablation", "Where the runs go.")
_VARIANTS = flags.DEFINE_list("variants", list(VARIANTS), f"Any of {list(VARIANTS)}.")
_SEEDS = flags.DEFINE_list("seeds", ["0", "1", "2"], "One run per variant and seed.")
_SIZE = flags.DEFINE_enum("size", "demo", ["demo", "tiny"], "Preset sizes (the model, the "
                          "data); 'tiny' for a smoke test.")
_PRETRAIN_STEPS = flags.DEFINE_integer("pretrain_steps", 2000, "The compute budget of "
                                       "every variant.")
_FINETUNE_STEPS = flags.DEFINE_integer("finetune_steps", 400, "Fine-tuning steps.")


def variant_settings(name: str, size: str, seed: int, pretrain_steps: int,
                     finetune_steps: int) -> demo_pipeline.DemoSettings:
  """The DemoSettings of one run: `seed` seeds the records, pretraining and fine-tuning;
  K = 7 also predicts proportionally fewer tokens."""
  base = demo_pipeline.DemoSettings.for_size(
      size, pretrain_steps=pretrain_steps, finetune_steps=finetune_steps, seed=seed,
      finetune_seeds=(seed,), compare_random_init=False)
  overrides = dict(VARIANTS[name])
  if "mask_alpha" in overrides:
    overrides["num_predict"] = max(1, round(base.num_predict * base.mask_alpha
                                            / overrides["mask_alpha"]))
  if overrides.get("pretrain_steps", 1) == 0:
    overrides["pretrain_steps"] = 0
  return dataclasses.replace(base, **overrides)


def run_variant(work_dir: str, name: str, settings: demo_pipeline.DemoSettings,
                shared_dir: str):
  """Runs (or reuses) one variant's records, pretraining and fine-tuning."""
  run_dir = os.path.join(work_dir, f"{name}-seed{settings.seed}")
  # The text and vocabulary are shared.
  demo_pipeline.link_stages(run_dir, {stage: shared_dir for stage in ("corpus", "spiece")})
  stages = ("records", "pretrain", "finetune") if settings.pretrain_steps else ("finetune",)
  return demo_pipeline.run_all(run_dir, settings, stages=stages,
                               report=lambda line: print(f"{name} seed {settings.seed}: "
                                                         f"{line}", flush=True))


def results_table(runs) -> list:
  """Markdown lines: per variant the median [min, max] over seeds."""
  def cell(values, percent=True):
    values = [v for v in values if v is not None]
    if not values:
      return "n/a"
    fmt = (lambda v: f"{100 * v:.1f}") if percent else (lambda v: f"{v:.2f}")
    spread = f" [{fmt(min(values))}, {fmt(max(values))}]" if len(values) > 1 else ""
    return fmt(float(np.median(values))) + spread

  lines = ["| variant | seeds | pretraining loss (last loop) | held-out accuracy % | "
           "dev % | test % |", "|---|---|---|---|---|---|"]
  for name in dict.fromkeys(r["variant"] for r in runs):
    mine = [r for r in runs if r["variant"] == name]
    lines.append(f"| {name} | {len(mine)} | "
                 f"{cell([r['pretrain_loss'] for r in mine], percent=False)} | "
                 f"{cell([r['held_out'] for r in mine])} | "
                 f"{cell([r['dev'] for r in mine])} | {cell([r['test'] for r in mine])} |")
  return lines


def plot(runs, path: str) -> None:
  """Held-out accuracy per variant: each seed a dot, the median a bar."""
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top

  names = list(dict.fromkeys(r["variant"] for r in runs))
  fig, ax = plt.subplots(figsize=(7, 0.5 * len(names) + 1.5), dpi=100)
  for i, name in enumerate(names):
    values = [100 * r["held_out"] for r in runs if r["variant"] == name]
    ax.scatter(values, [i] * len(values), color="tab:blue", s=22,
               label="one seed" if i == 0 else None)
    ax.plot([np.median(values)] * 2, [i - 0.3, i + 0.3], color="tab:orange", linewidth=2,
            label="median" if i == 0 else None)
  ax.set_yticks(range(len(names)), names)
  ax.invert_yaxis()
  ax.set_xlabel("held-out accuracy (%): dev + test movie-review sentences (2,100)")
  ax.set_title("Pretraining ablation at small scale (dots: seeds, bars: medians)")
  ax.legend(loc="lower right")
  fig.tight_layout()
  fig.savefig(path)
  plt.close(fig)


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  unknown = [v for v in _VARIANTS.value if v not in VARIANTS]
  if unknown:
    raise app.UsageError(f"--variants: unknown {unknown}; choose from {list(VARIANTS)}")
  try:
    seeds = [int(s) for s in _SEEDS.value]
  except ValueError:
    raise app.UsageError(f"--seeds must be integers, got {_SEEDS.value}") from None
  work_dir = os.path.abspath(_WORK_DIR.value)
  shared_dir = os.path.join(work_dir, "shared")
  shared = demo_pipeline.DemoSettings.for_size(_SIZE.value)
  demo_pipeline.run_all(shared_dir, shared, stages=("corpus", "spiece"))

  runs = []
  for seed in seeds:
    for name in _VARIANTS.value:
      settings = variant_settings(name, _SIZE.value, seed, _PRETRAIN_STEPS.value,
                                  _FINETUNE_STEPS.value)
      summaries = run_variant(work_dir, name, settings, shared_dir)
      accuracy = summaries["finetune"]["accuracy"]
      runs.append({"variant": name, "seed": seed, "dev": accuracy["dev"],
                   "test": accuracy["test"], "held_out": accuracy["held_out"],
                   "pretrain_loss": summaries.get("pretrain", {}).get("final_loss"),
                   "pretrain_seconds": summaries.get("pretrain", {}).get("seconds"),
                   "settings": dataclasses.asdict(settings)})
  with open(os.path.join(work_dir, "results.json"), "w") as f:
    json.dump(runs, f, indent=2)
  table = results_table(runs)
  command = (f"python -m experiments.ablation --size={_SIZE.value} --seeds="
             f"{','.join(map(str, seeds))} --variants={','.join(_VARIANTS.value)} "
             f"--pretrain_steps={_PRETRAIN_STEPS.value} "
             f"--finetune_steps={_FINETUNE_STEPS.value}")
  with open(os.path.join(work_dir, "results.md"), "w") as f:
    f.write(f"Command: `{command}`\n\n" + "\n".join(table) + "\n")
  plot(runs, os.path.join(work_dir, "ablation.png"))
  print("\n".join(table))
  print(f"\nwrote {work_dir}/results.md, results.json, ablation.png")


if __name__ == "__main__":
  app.run(main)
