"""experiments/hf_pretraining_steps.py: ours and HuggingFace's XLNetLMHeadModel stepped on
the same records give the same curve, and the curves are written as JSON.

Run as a command (its absl flags would clash with experiments/plots.py's in one process).
"""

import json
import os
import subprocess
import sys

import pytest

from helpers import LOSS_TOLERANCE

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TINY = ["--n_layer=2", "--d_model=32", "--n_head=2", "--d_head=16", "--d_inner=64",
        "--mem_len=16", "--threads=1"]


def _run(*args):
  return subprocess.run([sys.executable, "-m", "experiments.hf_pretraining_steps", *TINY,
                         *args], cwd=ROOT, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_both_curves_agree_and_are_written(pretraining_records, tmp_path):
  """10 steps, Adam corrected and decayed (the combination the parity tests do not step):
  the per-step losses agree to the parity tests' tolerance (20 steps there), as the
  same computation in float32 should."""
  records, _ = pretraining_records
  output = tmp_path / "curves" / "always.json"
  done = _run(f"--train_data={records}", f"--output={output}", "--steps=10",
              "--train_steps=30", "--warmup_steps=3", "--learning_rate=1e-3",
              "--adam_bias_correction=always", "--print_every=5")
  assert done.returncode == 0, done.stderr[-3000:]
  assert "   10 " in done.stdout and "mean |ours - HF|" in done.stdout, done.stdout
  result = json.loads(output.read_text())
  assert os.listdir(output.parent) == ["always.json"]          # no temporary left
  ours, theirs = result["losses"]["ours"], result["losses"]["hf"]
  assert len(ours) == len(theirs) == 10
  errors = [abs(a - b) / max(1.0, abs(b)) for a, b in zip(ours, theirs)]
  assert max(errors) <= LOSS_TOLERANCE, list(zip(ours, theirs))
  assert ours[-1] < ours[0] - 0.1          # it trains (8.30 -> 8.14: corrected Adam is slow)
  assert result["max_abs_difference"] == pytest.approx(
      max(abs(a - b) for a, b in zip(ours, theirs)))
  assert (result["adam_bias_correction"], result["config"]["mem_len"]) == ("always", 16)


@pytest.mark.slow
def test_refuses_to_write_into_the_records(pretraining_records):
  """The command refuses an --output inside --train_data in one line (status 1) and leaves
  the records as they were."""
  records, _ = pretraining_records
  before = sorted(os.listdir(records))
  done = _run(f"--train_data={records}", f"--output={os.path.join(records, 'c.json')}")
  assert done.returncode == 1
  assert done.stderr.strip().splitlines()[-1] == (
      f"hf_pretraining_steps: --output {os.path.join(records, 'c.json')} lies inside "
      f"--train_data {records}; write it elsewhere (the records are only read)")
  assert sorted(os.listdir(records)) == before
