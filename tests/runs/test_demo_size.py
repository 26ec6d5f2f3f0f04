"""The demo's pipeline (xlnet_tf/runs/demo.py) at its demo size, run once (slow, the module's
fixture `demo_size`, ~15 minutes on 2 cores): pretrained against random weights on the
held-out movie-review sentences (issue 28), every stage end to end to the served
predictions, and `make demo`'s command line on the same work directory (finished stages
reused, other settings refused, --force redoing every stage). The stage logic alone, with
stub stages: tests/runs/test_demo_stages.py.

The run: SentencePiece and pretraining records from the shuffled TRAIN-split review
sentences, 3,000 pretraining steps of a 2 x 128 model, then fine-tuning on the train split
with two seeds from the pretrained weights and two from random weights, everything else
equal; then the SavedModel export and its served predictions. Held out: the dev and test
splits together (2,100 sentences), which neither SentencePiece nor pretraining ever saw.

At this size pretraining's gain is smaller than the fine-tuning seeds' spread, so the test
does not claim it; it claims what issue 28 asks: the pretrained start never collapses and
never does worse than random weights by more than a point. Measured on 2026-11-26 with the
small-model recipe (Adam with bias correction, docs/small-models.md) and fine-tuning lr
1e-3: pretrained 74.7% / 75.8% (seeds 0 / 1), random init 74.9% / 74.4%, mean +0.6 points
(at lr 5e-4: -0.6, at 2e-3: +0.2; experiments/README.md); pretraining loss 6.79 -> 5.04.
With the released optimizer and 300 warmup steps it was 75.0% vs 74.6%, and one
clean-clone CI run on 2026-11-24 gave 74.62% vs 74.64%. What the test asserts holds with
room: pretraining learned (its loss falls by more than 1.5 nats), both inits learned the
task (more than 15 points above the majority class, no run collapsed: last training loss
below 0.98 ln 2), and the pretrained weights fine-tune at least as well as random ones
within 1 point (means of the two seeds).
"""

import json

import pytest

from probe import probe
from xlnet_tf.runs import demo as demo_run
from xlnet_tf.runs import transfer

pytestmark = pytest.mark.slow

# `make demo`'s preset with two fine-tuning seeds (python -m experiments.demo
# --finetune_seeds=0,1): pretrained and random weights, each fine-tuned with seeds 0 and 1.
SETTINGS = demo_run.DemoSettings(finetune_seeds=(0, 1), compare_random_init=True)


@pytest.fixture(scope="module")
def demo_size(tmp_path_factory):
  """(work directory, {stage: summary}, the progress lines) of every stage at demo size."""
  work = tmp_path_factory.mktemp("demo_size")
  lines = []
  summaries = demo_run.run_all(str(work), SETTINGS, report=lines.append)
  return work, summaries, lines


def test_pretrained_fine_tunes_as_well_as_random_init_on_held_out_sentiment(demo_size):
  _, summaries, _ = demo_size
  finetune = summaries["finetune"]
  print("\nheld-out accuracy (dev + test), per fine-tuning seed:")
  for run in finetune["runs"]:
    print(f"  {run['init']:>11} seed {run['seed']}: held-out {run['held_out']:.2%} "
          f"(dev {run['dev']:.2%}, test {run['test']:.2%})")
  pretrained, random_init = finetune["pretrained"], finetune["random_init"]
  print(f"  mean: pretrained {pretrained['held_out']:.2%}, random init "
        f"{random_init['held_out']:.2%}; pretraining loss "
        f"{summaries['pretrain']['first_loss']:.2f} -> "
        f"{summaries['pretrain']['final_loss']:.2f}")
  majority = max(finetune["majority"].values())
  pretrain = summaries["pretrain"]
  assert pretrain["final_loss"] < pretrain["first_loss"] - 1.5, pretrain
  assert random_init["held_out"] > majority + 0.15      # a fair baseline that learned
  assert pretrained["held_out"] > majority + 0.15
  assert pretrained["held_out"] > random_init["held_out"] - 0.01, finetune["runs"]
  assert all(run["final_loss"] < transfer.COLLAPSED_LOSS for run in finetune["runs"]), (
      finetune["runs"])


def test_every_stage_runs_to_the_served_predictions(demo_size):
  work, _, lines = demo_size
  for number, stage in enumerate(demo_run.STAGES, 1):
    assert any(line.startswith(f"[{number}/7] {stage}: done in") for line in lines), lines
    assert (work / stage / "stage.json").exists()
  # The SavedModel classified raw strings (incl. empty and non-ASCII) in a fresh process.
  served = json.loads((work / "serve" / "stage.json").read_text())["summary"]
  predictions = served["predictions"]
  assert [p["text"] for p in predictions][-2:] == ["Ein großartiger Film.", ""]
  for p in predictions:
    assert p["label"] in ("negative", "positive")
    assert abs(sum(p["probabilities"]) - 1.0) < 1e-3


def test_the_command_reuses_finished_stages_refuses_other_settings_and_forces(demo_size):
  """Last in this module: its --force run redoes the fixture's stages (at 4 steps)."""
  work, _, _ = demo_size
  command = [f"--work_dir={work}", "--finetune_seeds=0,1"]
  again, refused, forced = probe("experiments.demo", [
      command,
      [*command, "--pretrain_steps=4"],
      [f"--work_dir={work}", "--pretrain_steps=4", "--finetune_steps=4", "--finetune_seeds=0",
       "--nocompare_random_init", "--force"]])
  assert again.returncode == 0, again.stderr[-5000:]
  assert again.stdout.count("reusing") == 7, again.stdout
  assert "| finetune |" in again.stdout and "majority" in again.stdout
  assert (work / "summary.md").read_text().startswith("| stage | wall time | result |")
  # A changed setting is refused before any work, naming it; --force redoes every stage.
  assert refused.returncode != 0
  assert "holds the pretrain stage of a run with other settings" in refused.stderr
  assert "pretrain_steps: 3000 recorded, 4 now" in refused.stderr
  assert "[1/7]" not in refused.stdout
  assert forced.returncode == 0, forced.stderr[-5000:]
  assert "reusing" not in forced.stdout and "[1/7] corpus: done in" in forced.stdout
