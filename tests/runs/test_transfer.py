"""Pretraining and fine-tuning from it (issue 28): the speeches corpus of the transfer runner
(experiments/transfer.py, xlnet_tf/runs/transfer.py) and its results table; a
pretrained start that must not collapse, at tiny size (slow); and the pipeline at its demo
size, pretrained against random weights on the held-out movie-review sentences (slow,
~3 min).

The run is the demo's pipeline (xlnet_tf/runs/demo.py) at its demo size:
SentencePiece and pretraining records from the shuffled TRAIN-split review sentences,
3,000 pretraining steps of a 2 x 128 model, then fine-tuning on the train split with two
seeds from the pretrained weights and two from random weights, everything else equal.
Held out: the dev and test splits together (2,100 sentences), which neither SentencePiece
nor pretraining ever saw.

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

import glob
import os
import re

import pytest

from xlnet_tf.runs import demo as demo_run
from xlnet_tf.runs import transfer


def test_the_speeches_corpus_holds_out_every_tenth_speech_one_sentence_per_line(tmp_path):
  settings = demo_run.DemoSettings(corpus="sotu")
  summary = demo_run.run_all(str(tmp_path), settings, stages=("corpus",),
                             report=lambda line: None)["corpus"]
  speeches = sorted(os.path.basename(p) for p in glob.glob(demo_run.SOTU_GLOB))
  assert len(speeches) == 123
  pretraining = sorted(os.path.basename(p)
                       for p in glob.glob(demo_run.corpus_glob(str(tmp_path))))
  held_out = sorted(os.path.basename(p)
                    for p in glob.glob(demo_run.held_out_glob(str(tmp_path))))
  assert held_out == speeches[5::10] and len(held_out) == 12
  assert sorted(pretraining + held_out) == speeches
  assert (summary["words"], summary["held_out_words"]) == (775668, 115147), summary
  with open(os.path.join(tmp_path, "corpus", "2021_joseph_r_biden_d.txt")) as f:
    lines = f.read().splitlines()
  assert len(lines) > 300 and max(len(line) for line in lines) < 2000
  assert all(re.match(r'["A-Z]', line) for line in lines[1:])   # split where one begins
  with pytest.raises(ValueError, match="corpus must be one of"):
    demo_run.DemoSettings(corpus="speeches")


@pytest.mark.slow
def test_pretrained_fine_tunes_as_well_as_random_init_on_held_out_sentiment(tmp_path):
  settings = demo_run.DemoSettings(finetune_seeds=(0, 1), compare_random_init=True)
  summaries = demo_run.run_all(str(tmp_path), settings,
                               stages=demo_run.STAGES[:5])
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


def _run(start, recipe, lr, seed, held_out, final_loss):
  return {"start": start, "recipe": recipe, "lr": lr, "seed": seed, "held_out": held_out,
          "held_out_majority": 0.5, "final_loss": final_loss,
          "collapsed": transfer.collapsed({"held_out": held_out, "held_out_majority": 0.5,
                                           "final_loss": final_loss})}


def test_the_transfer_table_marks_collapsed_runs_and_the_requirement():
  assert transfer.collapsed({"held_out": 0.70, "held_out_majority": 0.5, "final_loss": 0.68})
  assert transfer.collapsed({"held_out": 0.505, "held_out_majority": 0.5, "final_loss": 0.4})
  assert not transfer.collapsed({"held_out": 0.70, "held_out_majority": 0.5,
                                 "final_loss": 0.4})
  pretrained = {"small": {"final_loss": 5.0, "held_out": {"loss": 5.2, "unigram_entropy": 6.0,
                                                          "ratio": 5.2 / 6.0}},
                "released": {"final_loss": 6.1, "held_out": {"loss": 6.2,
                                                             "unigram_entropy": 6.0,
                                                             "ratio": 6.2 / 6.0}}}
  runs = [_run("pretrained-small", "small", 1e-3, 0, 0.75, 0.40),
          _run("pretrained-small", "small", 1e-3, 1, 0.73, 0.42),
          _run("pretrained-released", "released", 1e-3, 0, 0.50, 0.693),
          _run("pretrained-released", "released", 1e-3, 1, 0.74, 0.45),
          _run("random_init", None, 1e-3, 0, 0.74, 0.45),
          _run("random_init", None, 1e-3, 1, 0.73, 0.46)]
  table = "\n".join(transfer.results_table(pretrained, runs))
  assert "| small | 5.200 | 6.000 | 0.867 | 5.000 |" in table, table
  assert "| small | 0.001 | 74.0 [73.0, 75.0] | 73.5 [73.0, 74.0] | +0.5 | 0/2, 0/2 | yes |" \
      in table, table
  assert "| released | 0.001 | 62.0 [50.0, 74.0] | 73.5 [73.0, 74.0] | -11.5 | 1/2, 0/2 | NO |" \
      in table, table


# A tiny model (1 x 32) pretrained 600 steps at lr 3e-3 with 10 warmup steps, then fine-tuned
# 200 steps on 2,000 labelled sentences, from it and from random weights.
TINY_TRANSFER = dict(pretrain_steps=600, pretrain_warmup=10, pretrain_lr=3e-3,
                     finetune_steps=200, finetune_lr=2e-3, train_examples=2000)


@pytest.mark.slow
def test_a_pretrained_start_does_not_collapse_at_tiny_size(tmp_path):
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
