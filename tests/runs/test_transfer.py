"""The transfer runner (issue 28; experiments/transfer.py, xlnet_tf/runs/transfer.py): the
speeches corpus it pretrains on and its results table. Its runs: at tiny size,
tests/runs/test_tiny_pipelines.py; the demo's pipeline at demo size, pretrained against
random weights, tests/runs/test_demo_size.py."""

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
