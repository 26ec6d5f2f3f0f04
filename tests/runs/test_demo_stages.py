"""`make demo`'s stage logic (xlnet_tf/runs/demo.py `run_all`, `demo`) with stub stages:
finished stages reused, a changed setting refused before any work, `force` redoing every
stage. The real stages, the command line and its flags: tests/runs/test_demo_size.py."""

import pytest

from xlnet_tf import settings_record
from xlnet_tf.runs import demo as demo_run

# What each stub returns: the keys `summary_table` and `demo`'s printout read.
_SUMMARIES = {
    "corpus": {"files": 1, "bytes": 1000, "review_sentences": 10},
    "spiece": {"vocab_size": 1000},
    "records": {"tokens": 100, "examples": 10, "steps": 2, "data": "records/*.tfrecord"},
    "pretrain": {"steps": 20, "first_loss": 7.0, "final_loss": 6.5, "model_dir": "pretrain"},
    "finetune": {"steps": 20, "runs": [{"seed": 0}],
                 "accuracy": {"held_out": 0.6, "dev": 0.6, "test": 0.6},
                 "majority": {"dev": 0.5, "test": 0.5}, "model_dir": "finetune"},
    "export": {"saved_model": "export/saved_model"},
    "serve": {"predictions": [{"text": "", "label": "positive",
                               "probabilities": [0.4, 0.6]}]},
}


@pytest.fixture
def calls(monkeypatch):
  """The stages called, in order; every stage a stub."""
  called = []
  for stage in demo_run.STAGES:
    def stub(work_dir, settings, stage=stage):
      del work_dir, settings
      called.append(stage)
      return _SUMMARIES[stage]
    monkeypatch.setitem(demo_run.STAGE_FUNCTIONS, stage, stub)
  return called


def test_demo_reuses_finished_stages_refuses_other_settings_and_force_redoes_all(
    tmp_path, calls, capsys):
  work = tmp_path / "demo"
  demo_run.demo(str(work), "tiny")
  first = capsys.readouterr().out
  assert calls == list(demo_run.STAGES)
  for number, stage in enumerate(demo_run.STAGES, 1):
    assert f"[{number}/7] {stage}: done in" in first
    assert (work / stage / "stage.json").exists()
  assert "| finetune |" in first and "majority" in first
  assert (work / "summary.md").read_text().startswith("| stage | wall time | result |")

  calls.clear()
  demo_run.demo(str(work), "tiny")
  again = capsys.readouterr().out
  assert again.count("reusing") == 7, again
  assert calls == []

  # A changed setting is refused before any work, naming it.
  with pytest.raises(settings_record.SettingsMismatch) as refused:
    demo_run.demo(str(work), "tiny", pretrain_steps=4)
  assert "holds the pretrain stage of a run with other settings" in str(refused.value)
  assert "pretrain_steps: 20 recorded, 4 now" in str(refused.value)
  assert "[1/7]" not in capsys.readouterr().out
  assert calls == []

  # force redoes every stage, from the first.
  demo_run.demo(str(work), "tiny", force=True, pretrain_steps=4)
  forced = capsys.readouterr().out
  assert "reusing" not in forced and "[1/7] corpus: done in" in forced
  assert calls == list(demo_run.STAGES)
