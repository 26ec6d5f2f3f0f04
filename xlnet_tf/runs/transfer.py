"""Does a pretrained start fine-tune at least as well as random weights? (issue 28; python -m
experiments.transfer)

The method, the settings and what the figures mean are the command's
(`experiments/transfer.py`, its --help); this module holds the code it runs.
"""

import dataclasses
import json
import math
import os
from typing import Sequence

from absl import logging
import numpy as np

from xlnet_tf import paths
from xlnet_tf.runs import demo as demo_run
from xlnet_tf.training import collapse

# Pretraining's Adam bias correction per recipe.
RECIPES = {"small": "always", "released": "released"}
# A last fine-tuning loss this high learnt nothing (fine-tuning's own collapse check on
# two balanced classes).
COLLAPSED_LOSS = collapse.THRESHOLD * math.log(2)
MAJORITY_MARGIN = 0.01                  # accuracy within 1 point of the majority class
ALLOWED_LOSS = 0.01                     # pretrained may trail random init by 1 point

def collapsed(run) -> bool:
  return (run["final_loss"] is None or run["final_loss"] >= COLLAPSED_LOSS
          or run["held_out"] < run["held_out_majority"] + MAJORITY_MARGIN)


def run_matrix(work_dir: str, base: demo_run.DemoSettings, recipes, lrs, seeds,
               report=print):
  """Runs (or reuses) the data, one pretraining per recipe and the fine-tuning runs;
  returns (pretraining summaries per recipe, fine-tuning runs)."""
  data_dir = os.path.join(work_dir, "data")
  demo_run.run_all(data_dir, base, stages=("corpus", "spiece", "records"),
                   report=lambda line: report(f"data: {line}"))
  pretrained = {}
  for recipe in recipes:
    settings = dataclasses.replace(base, pretrain_adam_bias_correction=RECIPES[recipe])
    run_dir = os.path.join(work_dir, f"pretrain-{recipe}")
    demo_run.link_stages(run_dir, {s: data_dir for s in ("corpus", "spiece", "records")})
    pretrained[recipe] = demo_run.run_all(
        run_dir, settings, stages=("pretrain",),
        report=lambda line, r=recipe: report(f"pretrain {r}: {line}"))["pretrain"]

  starts = [(f"pretrained-{r}", r) for r in recipes] + [("random_init", None)]
  runs = []
  for lr in lrs:
    for seed in seeds:
      for name, recipe in starts:
        settings = dataclasses.replace(
            base, finetune_lr=lr, finetune_seeds=(seed,), compare_random_init=False,
            pretrain_adam_bias_correction=RECIPES[recipe] if recipe else
            base.pretrain_adam_bias_correction,
            pretrain_steps=base.pretrain_steps if recipe else 0)
        run_dir = os.path.join(work_dir, "finetune", f"{name}-lr{lr:g}-seed{seed}")
        sources = {"spiece": data_dir}
        if recipe:
          sources["pretrain"] = os.path.join(work_dir, f"pretrain-{recipe}")
        demo_run.link_stages(run_dir, sources)
        summary = demo_run.run_all(
            run_dir, settings, stages=("finetune",),
            report=lambda line, n=name: report(f"{n} lr {lr:g} seed {seed}: {line}"))
        [run] = summary["finetune"]["runs"]
        runs.append({"start": name, "recipe": recipe, "lr": lr, "seed": seed,
                     **{k: run[k] for k in ("held_out", "dev", "test",
                                            "held_out_majority", "final_loss")},
                     "collapsed": collapsed(run)})
  return pretrained, runs


def _accuracy_cell(runs) -> str:
  values = [100 * r["held_out"] for r in runs]
  return f"{np.mean(values):.1f} [{min(values):.1f}, {max(values):.1f}]"


def results_table(pretrained, runs) -> list:
  """Markdown lines: the pretraining table (held-out loss where there is one) and the
  fine-tuning table per recipe and learning rate."""
  lines = []
  if any("held_out" in p for p in pretrained.values()):
    lines += ["| recipe | held-out PLM loss | unigram entropy of its targets | ratio | "
              "pretraining loss (last loop) |", "|---|---|---|---|---|"]
    for recipe, p in pretrained.items():
      h = p["held_out"]
      lines.append(f"| {recipe} | {h['loss']:.3f} | {h['unigram_entropy']:.3f} | "
                   f"{h['ratio']:.3f} | {p['final_loss']:.3f} |")
    lines.append("")
  majority = runs[0]["held_out_majority"]
  lines += [f"Held-out accuracy % (dev + test; majority class {100 * majority:.1f}), mean "
            f"[min, max] over {len({r['seed'] for r in runs})} fine-tuning seed(s):", "",
            "| recipe | fine-tuning lr | pretrained | random init | difference (points) | "
            "collapsed (pretrained, random) | pretrained >= random - 1, none collapsed |",
            "|---|---|---|---|---|---|---|"]
  for recipe in pretrained:
    for lr in dict.fromkeys(r["lr"] for r in runs):
      mine = [r for r in runs if r["recipe"] == recipe and r["lr"] == lr]
      random_init = [r for r in runs if r["recipe"] is None and r["lr"] == lr]
      difference = 100 * (np.mean([r["held_out"] for r in mine])
                          - np.mean([r["held_out"] for r in random_init]))
      count = lambda rs: f"{sum(r['collapsed'] for r in rs)}/{len(rs)}"
      holds = difference >= -100 * ALLOWED_LOSS and not any(r["collapsed"] for r in mine)
      lines.append(f"| {recipe} | {lr:g} | {_accuracy_cell(mine)} | "
                   f"{_accuracy_cell(random_init)} | {difference:+.1f} | "
                   f"{count(mine)}, {count(random_init)} | {'yes' if holds else 'NO'} |")
  return lines


def transfer(work_dir: str, corpus: str, size: str, recipes: Sequence[str],
             lrs: Sequence[float], seeds: Sequence[int], command: str):
  """Runs (or reuses) `run_matrix` at the `size` preset on `corpus`; writes
  WORK_DIR/results.json and results.md (headed by `command`, the command line), prints the
  tables; returns (pretraining summaries per recipe, fine-tuning runs)."""
  logging.set_verbosity(logging.WARNING)
  work_dir = os.path.abspath(work_dir)
  base = demo_run.DemoSettings.for_size(size, corpus=corpus)
  pretrained, runs = run_matrix(work_dir, base, recipes, lrs, seeds,
                                report=lambda line: print(line, flush=True))
  table = results_table(pretrained, runs)
  paths.write_text(os.path.join(work_dir, "results.json"), json.dumps(
      {"command": command, "settings": dataclasses.asdict(base),
       "pretraining": pretrained, "runs": runs}, indent=2) + "\n")
  paths.write_text(os.path.join(work_dir, "results.md"),
                   f"Command: `{command}`\n\n" + "\n".join(table) + "\n")
  print("\n".join(table))
  print(f"\nwrote {work_dir}/results.md, results.json")
  return pretrained, runs
