"""The paper's Table 6 in miniature (python -m experiments.ablation): pretraining
objectives and XLNet's parts, ablated at small scale on the demo's stages
(xlnet_tf.runs.demo).

The method, the settings and what the figures mean are the command's
(`experiments/ablation.py`, its --help); this module holds the code it runs.
"""

import dataclasses
import os
from typing import Sequence

from absl import logging
import numpy as np

from xlnet_tf import paths
from xlnet_tf.runs import demo as demo_run

VARIANTS = {
    "plm_k6": {},
    "plm_k7": dict(mask_alpha=7),
    "mlm": dict(objective="mlm"),
    "plm_no_memory": dict(mem_len=0),
    "plm_no_span": dict(max_span=1),
    "plm_no_bi_data": dict(bi_data=False),
    "no_pretraining": dict(pretrain_steps=0),
}

def variant_settings(name: str, size: str, seed: int, pretrain_steps: int,
                     finetune_steps: int) -> demo_run.DemoSettings:
  """The DemoSettings of one run: `seed` seeds the records, pretraining and fine-tuning;
  K = 7 also predicts proportionally fewer tokens."""
  base = demo_run.DemoSettings.for_size(
      size, pretrain_steps=pretrain_steps, finetune_steps=finetune_steps, seed=seed,
      finetune_seeds=(seed,), compare_random_init=False)
  overrides = dict(VARIANTS[name])
  if "mask_alpha" in overrides:
    overrides["num_predict"] = max(1, round(base.num_predict * base.mask_alpha
                                            / overrides["mask_alpha"]))
  if overrides.get("pretrain_steps", 1) == 0:
    overrides["pretrain_steps"] = 0
  return dataclasses.replace(base, **overrides)


def run_variant(work_dir: str, name: str, settings: demo_run.DemoSettings,
                shared_dir: str):
  """Runs (or reuses) one variant's records, pretraining and fine-tuning."""
  run_dir = os.path.join(work_dir, f"{name}-seed{settings.seed}")
  # The text and vocabulary are shared.
  demo_run.link_stages(run_dir, {stage: shared_dir for stage in ("corpus", "spiece")})
  stages = ("records", "pretrain", "finetune") if settings.pretrain_steps else ("finetune",)
  return demo_run.run_all(run_dir, settings, stages=stages,
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
  paths.write_figure(path, fig)
  plt.close(fig)


def ablate(work_dir: str, variants: Sequence[str], seeds: Sequence[int], size: str,
           pretrain_steps: int, finetune_steps: int, command: str) -> list:
  """Runs (or reuses) every variant at every seed (the text and vocabulary shared, in
  WORK_DIR/shared); writes WORK_DIR/results.json, results.md (headed by `command`, the
  command line) and ablation.png, prints the table; returns the runs."""
  logging.set_verbosity(logging.WARNING)
  work_dir = os.path.abspath(work_dir)
  shared_dir = os.path.join(work_dir, "shared")
  shared = demo_run.DemoSettings.for_size(size)
  demo_run.run_all(shared_dir, shared, stages=("corpus", "spiece"))

  runs = []
  for seed in seeds:
    for name in variants:
      settings = variant_settings(name, size, seed, pretrain_steps, finetune_steps)
      summaries = run_variant(work_dir, name, settings, shared_dir)
      accuracy = summaries["finetune"]["accuracy"]
      runs.append({"variant": name, "seed": seed, "dev": accuracy["dev"],
                   "test": accuracy["test"], "held_out": accuracy["held_out"],
                   "pretrain_loss": summaries.get("pretrain", {}).get("final_loss"),
                   "pretrain_seconds": summaries.get("pretrain", {}).get("seconds"),
                   "settings": dataclasses.asdict(settings)})
  paths.write_json(os.path.join(work_dir, "results.json"), runs)
  table = results_table(runs)
  paths.write_text(os.path.join(work_dir, "results.md"),
                   f"Command: `{command}`\n\n" + "\n".join(table) + "\n")
  plot(runs, os.path.join(work_dir, "ablation.png"))
  print("\n".join(table))
  print(f"\nwrote {work_dir}/results.md, results.json, ablation.png")
  return runs
