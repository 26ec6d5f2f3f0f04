"""Does bfloat16 pretraining learn like float32? Loss curves of short runs, side by side
(python -m experiments.precision_curves).

The demo's small model and records (xlnet_tf.runs.demo, demo size) are pretrained
for `steps` with precision float32 and with bfloat16 (the `mixed_bfloat16` policy:
bfloat16 matmuls and activations, float32 weights, optimizer and loss), each with every
seed (the seed sets the initial weights, dropout and the shard order); `jit_compile` runs
the compiled forward and backward pass (the XLA program a TPU runs). The run-to-run noise
is the spread between seeds; the precision effect is the difference of the precisions'
means (a seed's dropout draws differ between the two precisions, so runs are not paired).
`train_curves` writes WORK_DIR/results.json and WORK_DIR/precision_curves.png (loss per loop of
`steps_per_loop` steps).
"""

import os
from typing import Sequence

import numpy as np

from xlnet_tf import paths
from xlnet_tf import settings_record
from xlnet_tf.runs import demo as demo_run
from xlnet_tf.runs import pretraining

_PRECISIONS = ("float32", "bfloat16")


def run(work_dir: str, settings: demo_run.DemoSettings, precision: str, seed: int,
        steps: int, steps_per_loop: int, jit_compile: bool = False):
  """Per-loop mean losses of one pretraining run (reused if it already finished)."""
  run_dir = os.path.join(work_dir, f"{precision}-seed{seed}" + ("-xla" if jit_compile else ""))
  done = os.path.join(run_dir, "curve.json")
  wanted = {"steps": steps, "steps_per_loop": steps_per_loop, "precision": precision,
            "seed": seed, "jit_compile": jit_compile}
  if settings_record.check(done, wanted, subject=f"{run_dir} holds a finished run of other "
                           f"settings", remedy="Give another --work_dir.", field="settings"):
    return settings_record.read(done)["losses"]
  options = pretraining.pretrain_options(
      run_dir, steps, learning_rate=settings.pretrain_lr,
      warmup_steps=min(settings.pretrain_warmup, steps // 10), steps_per_loop=steps_per_loop,
      save_steps=steps, seed=seed, precision=precision, jit_compile=jit_compile)
  result = pretraining.pretrain(
      settings.model_config(),
      os.path.join(demo_run.stage_dir(work_dir, "records"), "data"), options)
  losses = result["losses"]
  settings_record.write(done, {"settings": wanted, "losses": losses})
  return losses


def compare(curves):
  """Per run the mean loss over the second half of its curve; per precision their mean and
  range. (Dropout draws differ between float32 and bfloat16 even with the same seed, so
  a seed's two runs are not noise-matched: the float32 range is the noise.)"""
  late = {f"{p}-seed{s}": float(np.mean(v[len(v) // 2:])) for (p, s), v in curves.items()}
  summary = {}
  for precision in _PRECISIONS:
    values = [v for k, v in late.items() if k.startswith(precision + "-")]
    summary[precision] = {"mean": float(np.mean(values)), "min": min(values),
                          "max": max(values)}
  return {"second_half_mean_loss": late, "by_precision": summary,
          "bfloat16_minus_float32": summary["bfloat16"]["mean"] - summary["float32"]["mean"]}


def plot(curves, steps_per_loop: int, path: str, jit_compile: bool = False) -> None:
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top

  fig, ax = plt.subplots(figsize=(7, 4), dpi=100)
  styles = {"float32": ("tab:blue", "-"), "bfloat16": ("tab:orange", "--")}
  for (precision, seed), losses in sorted(curves.items()):
    color, line = styles[precision]
    steps = steps_per_loop * np.arange(1, len(losses) + 1)
    ax.plot(steps, losses, color=color, linestyle=line, alpha=0.6 + 0.4 * (seed == 0),
            label=f"{precision}, seed {seed}")
  ax.set_xlabel("step")
  ax.set_ylabel(f"pretraining loss (mean over {steps_per_loop} steps)")
  ax.set_title("Permutation-LM pretraining, demo model: float32 vs mixed bfloat16"
               + (" (XLA)" if jit_compile else ""))
  ax.legend()
  fig.tight_layout()
  paths.write_figure(path, fig)
  plt.close(fig)


def train_curves(work_dir: str, steps: int, steps_per_loop: int, seeds: Sequence[int],
                 jit_compile: bool = False):
  """Runs (or reuses) the demo's data stages in `work_dir`, then pretraining per seed and
  precision; writes results.json and precision_curves.png there and prints the losses and
  the precisions' gap. Returns the curves {(precision, seed): per-loop losses}."""
  os.makedirs(work_dir, exist_ok=True)
  settings = demo_run.DemoSettings.for_size("demo")
  demo_run.run_all(work_dir, settings, stages=("corpus", "spiece", "records"),
                   report=lambda line: print(line, flush=True))
  curves = {}
  for seed in seeds:
    for precision in _PRECISIONS:
      try:
        curves[(precision, seed)] = run(work_dir, settings, precision, seed, steps,
                                        steps_per_loop, jit_compile)
      except ValueError as e:
        raise SystemExit(f"precision_curves: {e}") from None
      print(f"{precision} seed {seed}: loss {curves[(precision, seed)][0]:.3f} -> "
            f"{curves[(precision, seed)][-1]:.3f}", flush=True)
  gaps = compare(curves)
  plot(curves, steps_per_loop, os.path.join(work_dir, "precision_curves.png"),
       jit_compile)
  paths.write_json(os.path.join(work_dir, "results.json"), {
      "steps": steps, "steps_per_loop": steps_per_loop, "jit_compile": jit_compile,
      "curves": {f"{p}-seed{s}": v for (p, s), v in curves.items()}, **gaps}, indent=1)
  for precision, stats in gaps["by_precision"].items():
    print(f"{precision}: second-half mean loss {stats['mean']:.3f} "
          f"[{stats['min']:.3f}, {stats['max']:.3f}] over {len(seeds)} seeds")
  print(f"bfloat16 - float32: {gaps['bfloat16_minus_float32']:+.3f}")
  return curves
