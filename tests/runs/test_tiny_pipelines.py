"""The transfer and ablation runners at tiny size (slow: pretraining, fine-tuning, a command
line), their text, SentencePiece and pretraining records made once (`tiny_data`) and linked
into both (`demo_run.link_stages`, as the runners link their own shared stages)."""

import json
import os
import subprocess
import sys

import pytest

from helpers import png_size
from xlnet_tf.runs import demo as demo_run
from xlnet_tf.runs import transfer

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA_STAGES = ("corpus", "spiece", "records")


@pytest.fixture(scope="module")
def tiny_data(tmp_path_factory):
  """A work directory with the tiny preset's corpus, spiece and records stages (the stages
  of every tiny run below: they differ only in pretraining and fine-tuning settings)."""
  data_dir = str(tmp_path_factory.mktemp("tiny_data"))
  demo_run.run_all(data_dir, demo_run.DemoSettings.for_size("tiny"), stages=DATA_STAGES,
                   report=lambda line: None)
  return data_dir


# A tiny model (1 x 32) pretrained 600 steps at lr 3e-3 with 10 warmup steps, then fine-tuned
# 200 steps on 2,000 labelled sentences, from it and from random weights.
TINY_TRANSFER = dict(pretrain_steps=600, pretrain_warmup=10, pretrain_lr=3e-3,
                     finetune_steps=200, finetune_lr=2e-3, train_examples=2000)


@pytest.mark.slow
def test_a_pretrained_start_does_not_collapse_at_tiny_size(tmp_path, tiny_data):
  """Issue 28's failure, at tiny size: pretrained with the released optimizer (Adam
  uncorrected: early updates ~3x the learning rate) at these settings, the start
  fine-tunes to the majority class (measured, fine-tuning seeds 0 and 1: loss 0.688, 0.690
  vs ln 2 = 0.693; held-out 54.5%, 53.6%, majority 50.0%); with the small-model recipe (bias
  correction) it learns the task (loss 0.559, 0.566; 64.2%, 65.0%; random weights 68.0%,
  67.2%). A tiny model learns no context in 600 steps (pretraining loss 5.6 with either
  recipe), so there is no gain to claim: the test asks that the start is not broken.
  Fine-tuning's loss leaves ln 2 (< 0.98 ln 2), held-out accuracy is 8 points above the
  majority class (measured 14-15; collapsed 4-5) and the pretrained start is within 6
  points of random weights (measured -3.8, -2.2; collapsed -13.5). Shorter or hotter
  pretraining separates the recipes less well: 300 steps at 1e-3 or 3e-3, the released
  recipe does not collapse (60.9%, 60.6%); at 5e-3 or 1e-2 it does, but the corrected
  recipe's start then fine-tunes to 59-63% with seed 1's loss 0.659, near the line."""
  base = demo_run.DemoSettings.for_size("tiny", **TINY_TRANSFER)
  # run_matrix's data stages ("data"), made by the fixture.
  demo_run.link_stages(str(tmp_path / "data"), {stage: tiny_data for stage in DATA_STAGES})
  pretrained, runs = transfer.run_matrix(str(tmp_path), base, ["small"],
                                         [TINY_TRANSFER["finetune_lr"]], [0],
                                         report=lambda line: None)
  start, random_init = runs
  print(f"\npretraining {pretrained['small']['first_loss']:.2f} -> "
        f"{pretrained['small']['final_loss']:.2f}; fine-tuning loss, held-out accuracy "
        f"(majority {start['held_out_majority']:.1%}): pretrained "
        f"{start['final_loss']:.3f}, {start['held_out']:.1%}; random init "
        f"{random_init['final_loss']:.3f}, {random_init['held_out']:.1%}")
  assert start["start"] == "pretrained-small" and random_init["start"] == "random_init"
  assert start["final_loss"] < transfer.COLLAPSED_LOSS, \
      f"the pretrained start collapsed: fine-tuning loss {start['final_loss']:.3f} >= 0.98 ln 2"
  assert start["held_out"] > start["held_out_majority"] + 0.08, \
      f"held-out {start['held_out']:.1%}: near the majority class"
  assert start["held_out"] >= random_init["held_out"] - 0.06, runs
  assert not start["collapsed"]


@pytest.mark.slow
def test_ablation_grid_runner_writes_its_table_and_plot(tmp_path, tiny_data):
  work = tmp_path / "ablation"
  # The runner's shared text and vocabulary, and both variants' records (plm_k6 and mlm
  # differ only in pretraining): the fixture's.
  demo_run.link_stages(str(work / "shared"), {"corpus": tiny_data, "spiece": tiny_data})
  for variant in ("plm_k6", "mlm"):
    demo_run.link_stages(str(work / f"{variant}-seed0"), {"records": tiny_data})
  result = subprocess.run([sys.executable, "-m", "experiments.ablation", "--size=tiny",
                           "--variants=plm_k6,mlm", "--seeds=0", "--pretrain_steps=2",
                           "--finetune_steps=2", f"--work_dir={work}"], cwd=REPO,
                          capture_output=True, text=True, timeout=1200)
  assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
  stdout = result.stdout
  # The fixture's stages were reused (shared corpus and spiece, each variant's records).
  assert stdout.count("reusing") == 4, stdout
  table = (work / "results.md").read_text()
  assert "python -m experiments.ablation --size=tiny --seeds=0 --variants=plm_k6,mlm" in table
  rows = [line for line in table.splitlines() if line.startswith("| plm_k6 |")
          or line.startswith("| mlm |")]
  assert len(rows) == 2, table
  runs = json.loads((work / "results.json").read_text())
  assert {r["variant"] for r in runs} == {"plm_k6", "mlm"}
  assert all(0.0 <= r["dev"] <= 1.0 and r["pretrain_loss"] > 0 for r in runs)
  assert [r["settings"]["objective"] for r in runs] == ["plm", "mlm"]
  width, height = png_size(work / "ablation.png")
  assert width > 0 and height > 0
  assert "results.md" in stdout
