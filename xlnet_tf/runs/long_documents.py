"""Reading whole speeches through the memory against reading one segment of them (issue 30;
python -m experiments.long_documents).

The task: the era of a State of the Union address (1900-1932, 1933-1980, 1981-2021) from its
text alone (the year and the president's name are in the file name, not in the text). The
method, the settings and what the figures mean are the command's
(`experiments/long_documents.py`, its --help); this module holds the code it runs.
"""

import dataclasses
import glob
import json
import os
import re
import time
from typing import Any, Callable, Dict, List, Sequence

import numpy as np
from official.core import exp_factory
from official.core import task_factory

from xlnet_tf import paths
from xlnet_tf import settings_record
from xlnet_tf.data import feature_cache
from xlnet_tf.data import sample_data
from xlnet_tf.runs import demo as demo_run
from xlnet_tf.tasks import classification
from xlnet_tf.tasks import train_lib

SPEECHES_GLOB = sample_data.path("sotu", "*.txt")
# (label, first year, last year): the New Deal (1933) and the Reagan years (1981) as turns
ERAS = (("1900-1932", 1900, 1932), ("1933-1980", 1933, 1980), ("1981-2021", 1981, 2021))

# How a run reads a speech: the task settings of xlnet/classification that differ.
READINGS = {
    "first": {"mem_len": 0, "read_from": "start"},      # its first segment (as released)
    "last": {"mem_len": 0, "read_from": "end"},         # its last segment
    "whole": {},                                         # all of it, through the memory
    # the same, each training batch any 8 speeches (not 8 of one length bucket)
    "whole_mixed": {"bucket_by_segments": False},
}


@dataclasses.dataclass(frozen=True)
class EraSettings:
  """The fine-tuning budget, the same for every reading; the matrix of runs (folds, seeds,
  readings) besides."""
  folds: int = 3
  seeds: Sequence[int] = (0, 1, 2)
  readings: Sequence[str] = ("first", "last", "whole", "whole_mixed")
  segment_length: int = 128          # max_seq_length: the pieces of a segment
  mem_len: int = 128                 # the memory of the whole reading
  batch_size: int = 8
  steps: int = 80
  learning_rate: float = 1e-3       # warmed up over the first tenth of the steps


# The fields of the matrix: not settings of one run (a finished run is reused whatever
# others the matrix adds).
_MATRIX_FIELDS = ("folds", "seeds", "readings")


def era_of(year: int) -> str:
  for label, first, last in ERAS:
    if first <= year <= last:
      return label
  raise ValueError(f"year {year} is outside the eras {ERAS}")


def speeches() -> List[Dict[str, Any]]:
  """The bundled speeches in file-name order: id (the file name's stem), year, era, text,
  and whether the demo's pretraining held it out (`demo_run.make_sotu_corpus`)."""
  paths = sorted(glob.glob(SPEECHES_GLOB))
  if not paths:
    raise FileNotFoundError(f"{SPEECHES_GLOB}: the bundled speeches are missing")
  rows = []
  for index, path in enumerate(paths):
    stem = os.path.splitext(os.path.basename(path))[0]
    year = int(re.match(r"(\d{4})_", stem).group(1))
    with open(path, encoding="utf-8") as f:
      text = " ".join(f.read().split())
    rows.append({"id": stem, "year": year, "era": era_of(year), "text": text,
                 "held_out_of_pretraining": (index % demo_run.HELD_OUT_EVERY ==
                                             demo_run.HELD_OUT_REMAINDER)})
  return rows


FOLD_FILE = "fold.json"           # what a fold directory was made of


def fold_of(index: int, folds: int) -> int:
  """Speech `index` (file-name order) is tested in fold index mod folds: every fold spans
  the 122 years."""
  return index % folds


def write_folds(data_dir: str, rows: Sequence[Dict[str, Any]], folds: int) -> List[str]:
  """DATA_DIR/fold<k>/{train,dev}.jsonl for the generic task ({"id", "text", "label"});
  returns the fold directories. Each is written whole (`paths.atomic_output`) and records
  what it was made of (FOLD_FILE: the number of folds, the speeches' hash), which a rerun
  into DATA_DIR compares (`settings_record.check`) before reusing it."""
  wanted = {"folds": folds, "rows_sha256": feature_cache.rows_sha256(
      [row["id"], row["text"], row["era"]] for row in rows)}
  directories = []
  for fold in range(folds):
    directory = os.path.join(data_dir, f"fold{fold}")
    directories.append(directory)
    if os.path.isdir(directory) and settings_record.check(
        os.path.join(directory, FOLD_FILE), wanted,
        subject=f"{directory} holds a fold of other speeches or folds",
        remedy="Give another --work_dir."):
      continue
    with paths.atomic_output(directory) as partial:
      os.makedirs(partial)
      for split, wanted in (("train", False), ("dev", True)):
        with open(os.path.join(partial, f"{split}.jsonl"), "w", encoding="utf-8") as f:
          for index, row in enumerate(rows):
            if (fold_of(index, folds) == fold) == wanted:
              f.write(json.dumps({"id": row["id"], "text": row["text"],
                                  "label": row["era"]}) + "\n")
      settings_record.write(os.path.join(partial, FOLD_FILE), wanted)
  return directories


def finetune(run_dir: str, pretrained_dir: str, fold_dir: str, reading: str, seed: int,
             settings: EraSettings) -> Dict[str, Any]:
  """One xlnet/classification run (`train_lib.run`) and its predictions on the fold's dev
  split: {"predictions": {speech id: era}, "final_loss", "seconds"}. A finished run (its
  result.json, which records its settings) is read back instead."""
  result_path = os.path.join(run_dir, "result.json")
  wanted = {"pretrained": pretrained_dir, "fold": fold_dir, "reading": reading, "seed": seed,
            **{key: value for key, value in dataclasses.asdict(settings).items()
               if key not in _MATRIX_FIELDS}}
  if settings_record.check(result_path, wanted, field="settings",
                           subject=f"{run_dir} holds a finished run of other settings",
                           remedy="Give another --work_dir."):
    return settings_record.read(result_path)
  start = time.time()
  params = exp_factory.get_exp_config(classification.KIND.experiment)
  data = {"spiece_model": os.path.join(pretrained_dir, "spiece.model"),
          "cache_dir": os.path.join(fold_dir, "features")}
  params.override({
      "task": {"init_checkpoint": pretrained_dir, "task_name": "generic",
               "data_dir": fold_dir, "max_seq_length": settings.segment_length,
               "mem_len": settings.mem_len, **READINGS[reading],
               "labels": [label for label, _, _ in ERAS],
               "train_data": {**data, "global_batch_size": settings.batch_size,
                              "seed": seed},
               "validation_data": {**data, "global_batch_size": settings.batch_size},
               "optimization": {"learning_rate": settings.learning_rate, "seed": seed,
                                "warmup_steps": settings.steps // 10}},
      "trainer": {"train_steps": settings.steps, "steps_per_loop": settings.steps,
                  "checkpoint_interval": settings.steps}})
  trained = train_lib.run(params, "train", run_dir)["train"]
  task = task_factory.get_task(params.task)
  model = task.load_model_dir(os.path.join(run_dir, train_lib.FINAL_DIR))
  examples, predictions = task.predict(model, "dev")
  ids = [json.loads(line)["id"] for line in open(os.path.join(fold_dir, "dev.jsonl"),
                                                 encoding="utf-8")]
  assert len(ids) == len(examples)
  result = {"predictions": {i: task.spec.labels[int(p)] for i, p in zip(ids, predictions)},
            "final_loss": trained["losses"][-1] if trained["losses"] else None,
            "seconds": time.time() - start}
  settings_record.write(result_path, {**result, "settings": wanted})
  return result


def run_matrix(work_dir: str, pretrained_dir: str, settings: EraSettings,
               report: Callable[[str], None] = print) -> Dict[str, Any]:
  """Every (reading, seed, fold) run; returns per reading and seed the accuracy over all
  speeches (each tested in its fold) and over the speeches pretraining never saw."""
  rows = speeches()
  fold_dirs = write_folds(os.path.join(work_dir, "data"), rows, settings.folds)
  era = {row["id"]: row["era"] for row in rows}
  unseen = {row["id"] for row in rows if row["held_out_of_pretraining"]}
  results = {}
  for reading in settings.readings:
    for seed in settings.seeds:
      predictions, seconds, losses = {}, 0.0, []
      for fold, fold_dir in enumerate(fold_dirs):
        run = finetune(os.path.join(work_dir, "runs", f"{reading}-seed{seed}-fold{fold}"),
                       pretrained_dir, fold_dir, reading, seed, settings)
        predictions.update(run["predictions"])
        seconds += run["seconds"]
        losses.append(run["final_loss"])
        report(f"{reading} seed {seed} fold {fold}: {run['seconds']:.0f} s, last loss "
               f"{run['final_loss']:.3f}")
      assert set(predictions) == set(era), "every speech is tested once"
      correct = {i: predictions[i] == era[i] for i in era}
      results[f"{reading}/{seed}"] = {
          "reading": reading, "seed": seed,
          "accuracy": float(np.mean(list(correct.values()))),
          "accuracy_unseen": float(np.mean([correct[i] for i in unseen])),
          "speeches": len(correct), "unseen": len(unseen), "seconds": seconds,
          "final_losses": losses}
  counts = {label: sum(1 for row in rows if row["era"] == label) for label, _, _ in ERAS}
  return {"runs": results, "era_counts": counts,
          "majority": max(counts.values()) / len(rows)}


def summary_table(results: Dict[str, Any], settings: EraSettings) -> List[str]:
  """The markdown table: per reading, accuracy mean [min, max] over seeds."""
  first = next(iter(results["runs"].values()))
  lines = [f"| reading | accuracy, all {first['speeches']} speeches (each in its fold) | the "
           f"{first['unseen']} pretraining never saw | seconds per run |", "|---|---|---|---|"]
  for reading in settings.readings:
    runs = [r for r in results["runs"].values() if r["reading"] == reading]

    def spread(key):
      values = [100 * r[key] for r in runs]
      return f"{np.mean(values):.1f} [{min(values):.1f}, {max(values):.1f}]"
    seconds = np.mean([r["seconds"] / settings.folds for r in runs])
    lines.append(f"| {reading} | {spread('accuracy')} | {spread('accuracy_unseen')} | "
                 f"{seconds:.0f} |")
  return lines


def pretrained_model(work_dir: str, report: Callable[[str], None] = print) -> str:
  """The demo's small model pretrained on the speeches (`DemoSettings.for_size("small",
  corpus="sotu")`: 12 speeches held out; reused when done); returns its final/."""
  settings = demo_run.DemoSettings.for_size("small", corpus="sotu")
  demo_run.run_all(work_dir, settings,
                   stages=("corpus", "spiece", "records", "pretrain"),
                   report=lambda line: report(f"pretrain: {line}"))
  return os.path.join(demo_run.stage_dir(work_dir, "pretrain"), train_lib.FINAL_DIR)


def compare_readings(work_dir: str, init_checkpoint: str, settings: EraSettings, command: str,
                     report: Callable[[str], None] = print) -> Dict[str, Any]:
  """The pretrained model (`init_checkpoint`, or `pretrained_model`), every run of
  `run_matrix`; writes WORK_DIR/results.json and results.md (headed by `command`)."""
  os.makedirs(work_dir, exist_ok=True)
  pretrained_dir = init_checkpoint or pretrained_model(os.path.join(work_dir, "pretrain"),
                                                       report)
  results = run_matrix(work_dir, pretrained_dir, settings, report)
  results["settings"] = dataclasses.asdict(settings)
  results["pretrained"] = pretrained_dir
  paths.write_text(os.path.join(work_dir, "results.json"), json.dumps(results, indent=1))
  counts = ", ".join(f"{label} {n}" for label, n in results["era_counts"].items())
  lines = [f"Command: `{command}`", "",
           f"Eras: {counts} (majority {100 * results['majority']:.1f}%). Held-out accuracy "
           f"%, mean [min, max] over seeds {list(settings.seeds)}; {settings.folds} folds, "
           f"segments of {settings.segment_length} pieces, memory {settings.mem_len}, "
           f"batch {settings.batch_size}, {settings.steps} steps at lr "
           f"{settings.learning_rate:g}:", ""] + summary_table(results, settings)
  paths.write_text(os.path.join(work_dir, "results.md"), "\n".join(lines) + "\n")
  report("\n".join(lines))
  return results
