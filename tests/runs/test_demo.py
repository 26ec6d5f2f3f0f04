"""`make demo` at tiny size, and the ablation grid runner at tiny size (slow: CLI runs)."""

import json
import os
import subprocess
import sys

import pytest

from helpers import png_size

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _run(module, *args, timeout=1200):
  result = subprocess.run([sys.executable, "-m", module, *args], cwd=REPO,
                          capture_output=True, text=True, timeout=timeout)
  assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
  return result.stdout


@pytest.mark.slow
def test_demo_runs_end_to_end_and_reuses_finished_stages(tmp_path):
  work = tmp_path / "demo"
  stdout = _run("experiments.demo", "--size=tiny", f"--work_dir={work}")
  for number, stage in enumerate(("corpus", "spiece", "records", "pretrain", "finetune",
                                  "export", "serve"), 1):
    assert f"[{number}/7] {stage}: done in" in stdout
    assert (work / stage / "stage.json").exists()
  # The SavedModel classified raw strings (incl. empty and non-ASCII) in a fresh process.
  served = json.loads((work / "serve" / "stage.json").read_text())["summary"]
  predictions = served["predictions"]
  assert [p["text"] for p in predictions][-2:] == ["Ein großartiger Film.", ""]
  for p in predictions:
    assert p["label"] in ("negative", "positive")
    assert abs(sum(p["probabilities"]) - 1.0) < 1e-3
  assert "| finetune |" in stdout and "majority" in stdout
  assert (work / "summary.md").read_text().startswith("| stage | wall time | result |")

  again = _run("experiments.demo", "--size=tiny", f"--work_dir={work}")
  assert again.count("reusing") == 7, again
  # A changed setting is refused before any work, naming it; --force redoes every stage.
  refused = subprocess.run([sys.executable, "-m", "experiments.demo", "--size=tiny",
                            f"--work_dir={work}", "--pretrain_steps=4"], cwd=REPO,
                           capture_output=True, text=True, timeout=600)
  assert refused.returncode != 0
  assert "holds the pretrain stage of a run with other settings" in refused.stderr
  assert "pretrain_steps: 20 recorded, 4 now" in refused.stderr
  assert "[1/7]" not in refused.stdout
  forced = _run("experiments.demo", "--size=tiny", f"--work_dir={work}",
                "--pretrain_steps=4", "--force")
  assert "reusing" not in forced and "[1/7] corpus: done in" in forced


@pytest.mark.slow
def test_ablation_grid_runner_writes_its_table_and_plot(tmp_path):
  work = tmp_path / "ablation"
  stdout = _run("experiments.ablation", "--size=tiny", "--variants=plm_k6,mlm",
                "--seeds=0", "--pretrain_steps=2", "--finetune_steps=2",
                f"--work_dir={work}")
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
