"""The demo's stages, from bundled text to a served SavedModel, each reusable when done.

  corpus    the TRAIN split of the bundled movie-review sentences, shuffled (optionally
            with the bundled Moby-Dick chapters); or (corpus "sotu") the bundled State of
            the Union speeches, one sentence per line, every tenth speech held out
  spiece    SentencePiece on that corpus
  records   pretraining TFRecords (data_prep.pipeline); and held-out records (1 pass) of
            the held-out speeches
  pretrain  a small XLNet: the xlnet/pretraining experiment (xlnet_tf.tasks.train_lib);
            with held-out records, its held-out loss against the unigram entropy of the
            held-out targets (the loss of the best model that ignores the context)
  finetune  sentiment classification from the pretrained weights (and, for comparison,
            from a random start): the xlnet/classification experiment; accuracy on the
            held-out dev and test splits
  export    a SavedModel serving raw text (xlnet_tf.serving.classifier_export)
  serve     experiments/classify_text.py in a fresh process (it imports only TensorFlow
            and tensorflow-text)

Every stage writes its outputs into WORK_DIR/<stage>/ and, last, `stage.json` (its
settings and summary). A stage whose `stage.json` holds the same settings is reused; one
that holds other settings is refused before any work, listing them
(`settings_record.check`: another work directory, or `force` to redo every stage); a stage
that runs again makes every later stage run again. Nothing of the dev and test sentences
reaches SentencePiece or pretraining.

  >>> settings = DemoSettings.for_size("tiny")
  >>> summaries = run_all("/tmp/demo", settings)          # {stage: summary dict}

`demo` is `make demo` (python -m experiments.demo): every stage, then the predictions, the
summary table (also WORK_DIR/summary.md) and where the artefacts went, printed. The
runners of experiments/ (ablation, transfer, precision_curves) share these stages
(xlnet_tf.runs.ablation, transfer; xlnet_tf.runs.precision_curves).
"""

import collections
import dataclasses
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from absl import logging
import numpy as np

from data_prep import pipeline
from data_prep import train_sentencepiece
from data_prep.pretraining_rows import RowSettings
from official.core import exp_factory
from official.core import task_factory
from xlnet_tf import paths
from xlnet_tf import settings_record
from xlnet_tf.configs import XLNetConfig
from xlnet_tf.data import classifier_tasks
from xlnet_tf.data import pretrain_reader
from xlnet_tf.data import pretrain_records
from xlnet_tf.data import sample_data
from xlnet_tf.serving import classifier_export
from xlnet_tf.tasks import classification
from xlnet_tf.tasks import pretraining
from xlnet_tf.tasks import train_lib

MOBY_DICK_GLOB = sample_data.path("moby_dick", "chapter_*.txt")
SOTU_GLOB = sample_data.path("sotu", "*.txt")
CORPORA = ("reviews", "sotu")
# corpus "sotu": the speeches in file-name order whose index is HELD_OUT_REMAINDER mod
# HELD_OUT_EVERY are held out (12 of 123, ~115k words; 111 speeches, ~776k words, left).
HELD_OUT_EVERY, HELD_OUT_REMAINDER = 10, 5
HELD_OUT_DIR = "heldout"            # under WORK_DIR/corpus and WORK_DIR/records
# A speech is one line; SentencePiece skips overlong lines, so one sentence per line.
SENTENCE_END = re.compile(r'(?<=[.?!])\s+(?=["A-Z])')
# Run as a script (it imports nothing of xlnet_tf): the entry point experiments/classify_text.py,
# beside the xlnet_tf package in a checkout and in an installed wheel alike.
_PACKAGES_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLASSIFY_TEXT = os.path.join(_PACKAGES_DIR, "experiments", "classify_text.py")
TASK = "movie_reviews"
STAGES = ("corpus", "spiece", "records", "pretrain", "finetune", "export", "serve")
DEMO_SENTENCES = (
    "A gripping, beautifully acted film that stays with you.",
    "Ninety minutes of tedium with a plot that makes no sense.",
    "The performances are warm and funny, and the ending is earned.",
    "A dull, lifeless remake that wastes its talented cast.",
    "Ein großartiger Film.",
    "",
)


@dataclasses.dataclass(frozen=True)
class DemoSettings:
  """Sizes of every stage (`for_size` has the presets)."""
  # The pretraining text: the train-split review sentences (shuffled), and Moby-Dick too
  # with include_moby_dick (at this compute budget the out-of-domain novel dilutes
  # pretraining: fine-tuning gains less from it; see experiments/README.md). Or (corpus
  # "sotu") the State of the Union speeches, out of domain, with held-out speeches.
  corpus: str = "reviews"
  include_moby_dick: bool = False
  # SentencePiece and records
  vocab_size: int = 4000
  seq_len: int = 64
  reuse_len: int = 32
  bsz: int = 16
  num_predict: int = 11
  perm_size: int = 32
  mask_alpha: int = 6              # K: about 1 token in K is predicted
  max_span: int = 5                # 1: single-token targets (no span-based prediction)
  bi_data: bool = True
  num_passes: int = 2
  data_workers: int = 2
  # model
  n_layer: int = 2
  d_model: int = 128
  n_head: int = 4
  d_inner: int = 256
  mem_len: int = 32
  dropout: float = 0.1
  # pretraining (pretrain_steps 0: no pretraining, fine-tuning starts from random weights)
  objective: str = "plm"           # or "mlm", the BERT-style baseline of the ablation
  pretrain_steps: int = 3000
  pretrain_lr: float = 1e-3
  pretrain_warmup: int = 100
  # The small-model recipe (docs/small-models.md): Adam with bias correction. As released
  # (none with weight decay) the early updates are up to 3x the learning rate, and a model
  # this small stalls at the unigram entropy after 100 warmup steps.
  pretrain_adam_bias_correction: str = "always"
  # fine-tuning
  finetune_steps: int = 400
  finetune_lr: float = 1e-3
  finetune_batch: int = 32
  max_seq_length: int = 64
  summary_type: str = "mean"
  train_examples: int = 0          # 0: the whole train split (8,468 sentences)
  compare_random_init: bool = True
  finetune_seeds: Tuple[int, ...] = (0,)
  seed: int = 0                    # of the corpus order, the records and pretraining

  def __post_init__(self):
    if self.corpus not in CORPORA:
      raise ValueError(f"corpus must be one of {list(CORPORA)}, got {self.corpus!r}")
    if self.include_moby_dick and self.corpus != "reviews":
      raise ValueError(f"include_moby_dick adds Moby-Dick to the corpus 'reviews', not to "
                       f"{self.corpus!r}")

  @classmethod
  def for_size(cls, size: str, **overrides) -> "DemoSettings":
    """'demo' (about 15 minutes on 2 cores), 'small' (the small-model recipe of
    experiments/configs/pretraining_small.yaml, issue 28) or 'tiny' (CI smoke test, about a
    minute)."""
    presets = {
        "demo": {},
        "small": dict(n_layer=2, d_model=128, n_head=2, d_inner=256, mem_len=64,
                      seq_len=128, reuse_len=64, bsz=8, num_predict=21, perm_size=64,
                      num_passes=4, pretrain_steps=2000, pretrain_lr=1e-3,
                      pretrain_warmup=100, pretrain_adam_bias_correction="always",
                      max_seq_length=64, finetune_batch=32, finetune_steps=400,
                      summary_type="last"),
        "tiny": dict(vocab_size=1000, pretrain_steps=20, pretrain_warmup=2, n_layer=1,
                     d_model=32, n_head=2, d_inner=64, num_passes=1, finetune_steps=20,
                     train_examples=256, compare_random_init=False),
    }
    if size not in presets:
      raise ValueError(f"--size must be one of {sorted(presets)}, got {size!r}")
    return dataclasses.replace(cls(), **{**presets[size], **overrides})

  def model_config(self) -> XLNetConfig:
    return XLNetConfig(n_layer=self.n_layer, d_model=self.d_model, n_head=self.n_head,
                       d_head=self.d_model // self.n_head, d_inner=self.d_inner,
                       n_token=self.vocab_size, dropout=self.dropout, dropatt=self.dropout,
                       mem_len=self.mem_len, reuse_len=self.reuse_len, bi_data=self.bi_data)

  def row_settings(self) -> RowSettings:
    return RowSettings(seq_len=self.seq_len, reuse_len=self.reuse_len,
                       num_predict=self.num_predict, bsz_per_host=self.bsz,
                       num_core_per_host=1, bi_data=self.bi_data, perm_size=self.perm_size,
                       mask_alpha=self.mask_alpha, max_span=self.max_span)


# Which settings each stage depends on (besides the stages before it).
_STAGE_FIELDS = {
    "corpus": ("corpus", "include_moby_dick", "seed"),
    "spiece": ("vocab_size",),
    "records": ("seq_len", "reuse_len", "bsz", "num_predict", "perm_size", "mask_alpha",
                "max_span", "bi_data", "num_passes"),
    "pretrain": ("n_layer", "d_model", "n_head", "d_inner", "mem_len", "dropout",
                 "objective", "pretrain_steps", "pretrain_lr", "pretrain_warmup",
                 "pretrain_adam_bias_correction"),
    "finetune": ("finetune_steps", "finetune_lr", "finetune_batch", "max_seq_length",
                 "summary_type", "train_examples", "compare_random_init",
                 "finetune_seeds"),
    "export": (),
    "serve": (),
}


STAGE_FILE = "stage.json"           # a finished stage: its settings, summary and seconds


def stage_dir(work_dir: str, stage: str) -> str:
  return os.path.join(work_dir, stage)


def link_stages(work_dir: str, sources: Dict[str, str]) -> None:
  """WORK_DIR/<stage> as links to the same stage of other work directories ({stage:
  source work_dir}), for runners that share finished stages (the ablation and transfer pipelines);
  an existing link is kept."""
  os.makedirs(work_dir, exist_ok=True)
  for stage, source_dir in sources.items():
    link = stage_dir(work_dir, stage)
    if not os.path.islink(link):
      os.symlink(stage_dir(source_dir, stage), link)



# ---- the stages ------------------------------------------------------------------------------
# Each takes (work_dir, settings) and returns its summary (JSON-serialisable).

def split_sentences(text: str) -> List[str]:
  """One speech (one line) as its sentences."""
  return SENTENCE_END.split(text.strip())


def make_sotu_corpus(work_dir: str) -> Dict[str, Any]:
  """The State of the Union speeches, one sentence per line, in WORK_DIR/corpus (pretraining)
  and WORK_DIR/corpus/heldout (every HELD_OUT_EVERY-th speech)."""
  out = stage_dir(work_dir, "corpus")
  heldout = os.path.join(out, HELD_OUT_DIR)
  os.makedirs(heldout)
  speeches = sorted(glob.glob(SOTU_GLOB))
  if not speeches:
    raise FileNotFoundError(f"{SOTU_GLOB}: the bundled corpus is missing")
  words = {"pretraining": 0, "held_out": 0}
  for index, path in enumerate(speeches):
    held = index % HELD_OUT_EVERY == HELD_OUT_REMAINDER
    with open(path, encoding="utf-8") as f:
      text = f.read()
    with open(os.path.join(heldout if held else out, os.path.basename(path)), "w",
              encoding="utf-8") as f:
      f.write("\n".join(split_sentences(text)) + "\n")
    words["held_out" if held else "pretraining"] += len(text.split())
  files = sorted(glob.glob(corpus_glob(work_dir)))
  return {"files": len(files), "bytes": sum(os.path.getsize(p) for p in files),
          "words": words["pretraining"], "held_out_files": len(speeches) - len(files),
          "held_out_words": words["held_out"]}


def make_corpus(work_dir: str, settings: DemoSettings) -> Dict[str, Any]:
  """Writes the pretraining text: the train-split review sentences (+ Moby-Dick), or the
  speeches (`make_sotu_corpus`)."""
  if settings.corpus == "sotu":
    return make_sotu_corpus(work_dir)
  out = stage_dir(work_dir, "corpus")
  if settings.include_moby_dick:
    chapters = sorted(glob.glob(MOBY_DICK_GLOB))
    if not chapters:
      raise FileNotFoundError(f"{MOBY_DICK_GLOB}: the bundled corpus is missing")
    for path in chapters:
      shutil.copy(path, out)
  train = classifier_tasks.get_task(TASK).read(None, "train")
  # The file is sorted by label; in that order neighbouring sentences would tell
  # pretraining their polarity. Shuffled, the text carries no label information.
  order = np.random.default_rng(settings.seed).permutation(len(train))
  with open(os.path.join(out, "movie_reviews_train.txt"), "w", encoding="utf-8") as f:
    f.write("\n".join(train[i].text_a for i in order) + "\n")
  files = sorted(glob.glob(os.path.join(out, "*.txt")))
  return {"files": len(files), "bytes": sum(os.path.getsize(p) for p in files),
          "review_sentences": len(train)}


def corpus_glob(work_dir: str) -> str:
  return os.path.join(stage_dir(work_dir, "corpus"), "*.txt")


def held_out_glob(work_dir: str) -> Optional[str]:
  """The held-out text of the corpus stage, or None when it holds nothing out."""
  directory = os.path.join(stage_dir(work_dir, "corpus"), HELD_OUT_DIR)
  return os.path.join(directory, "*.txt") if os.path.isdir(directory) else None


def held_out_records(work_dir: str) -> str:
  return os.path.join(stage_dir(work_dir, "records"), HELD_OUT_DIR)


def spiece_path(work_dir: str) -> str:
  return os.path.join(stage_dir(work_dir, "spiece"), "spiece.model")


def train_spiece(work_dir: str, settings: DemoSettings) -> Dict[str, Any]:
  path = train_sentencepiece.train(corpus_glob(work_dir),
                                   os.path.join(stage_dir(work_dir, "spiece"), "spiece"),
                                   settings.vocab_size)
  return {"model": path, "vocab_size": settings.vocab_size}


def make_records(work_dir: str, settings: DemoSettings) -> Dict[str, Any]:
  """The pretraining records; with held-out text, its records too (the same settings, one
  pass)."""
  data = pipeline.DataSettings(rows=settings.row_settings(), input_format="document_per_file",
                               num_passes=settings.num_passes, seed=settings.seed,
                               chunk_bytes=1 << 20)
  out = os.path.join(stage_dir(work_dir, "records"), "data")
  manifest = pipeline.create(data, [corpus_glob(work_dir)], spiece_path(work_dir), out,
                             num_workers=settings.data_workers)
  counts = manifest["counts"]
  summary = {"data": out, "tokens": counts["tokens"], "examples": counts["examples"],
             "steps": counts["steps"], "shards": counts["shards"]}
  heldout = held_out_glob(work_dir)
  if heldout:
    manifest = pipeline.create(dataclasses.replace(data, num_passes=1), [heldout],
                               spiece_path(work_dir), held_out_records(work_dir),
                               num_workers=settings.data_workers)
    summary["held_out"] = {"data": held_out_records(work_dir),
                           "tokens": manifest["counts"]["tokens"],
                           "steps": manifest["counts"]["steps"]}
  return summary


def _model_override(settings: DemoSettings) -> Dict[str, Any]:
  return {"n_layer": settings.n_layer, "d_model": settings.d_model,
          "n_head": settings.n_head, "d_head": settings.d_model // settings.n_head,
          "d_inner": settings.d_inner, "n_token": settings.vocab_size,
          "dropout": settings.dropout, "dropatt": settings.dropout}


def target_unigram_entropy(records_dir: str, objective: str) -> float:
  """Entropy (nats) of the target tokens' own distribution over one pass of the records:
  the loss of the best model that ignores the context."""
  manifest = pretrain_records.load_manifest(records_dir)
  counts = collections.Counter()
  for batch in pretrain_reader.pretrain_dataset(
      records_dir, manifest["settings"]["bsz_per_host"], shuffle_shards=False,
      repeat=False, manifest=manifest, objective=objective):
    counts.update(batch["target"].numpy()[batch["target_mask"].numpy() > 0].tolist())
  p = np.array(list(counts.values()), float) / sum(counts.values())
  return float(-(p * np.log(p)).sum())


def pretrain(work_dir: str, settings: DemoSettings) -> Dict[str, Any]:
  """The xlnet/pretraining experiment on the records (`tasks.train_lib`); the pretrained
  model directory is WORK_DIR/pretrain/final. With held-out records, the held-out loss
  after the last step (every held-out batch) against the targets' unigram entropy."""
  out = stage_dir(work_dir, "pretrain")
  heldout = held_out_records(work_dir)
  evaluates = os.path.isdir(heldout)
  params = exp_factory.get_exp_config(pretraining.KIND.experiment)
  params.override({
      "task": {"model": {**_model_override(settings), "mem_len": settings.mem_len},
               "train_data": {"input_path": os.path.join(stage_dir(work_dir, "records"),
                                                         "data")},
               "validation_data": {"input_path": heldout if evaluates else ""},
               "optimization": {"learning_rate": settings.pretrain_lr, "seed": settings.seed,
                                "warmup_steps": min(settings.pretrain_warmup,
                                                    settings.pretrain_steps // 10),
                                "objective": settings.objective,
                                "adam_bias_correction":
                                    settings.pretrain_adam_bias_correction}},
      "trainer": {"train_steps": settings.pretrain_steps,
                  "steps_per_loop": max(1, min(250, settings.pretrain_steps // 4)),
                  "checkpoint_interval": settings.pretrain_steps,
                  "validation_interval": settings.pretrain_steps,
                  "validation_steps": -1}})
  ran = train_lib.run(params, "train_and_eval" if evaluates else "train", out)
  result = ran["train"]
  summary = {"model_dir": os.path.join(out, train_lib.FINAL_DIR), "steps": result["step"],
             "first_loss": result["losses"][0] if result["losses"] else None,
             "final_loss": result["losses"][-1] if result["losses"] else None,
             "tokens_seen": result["step"] * settings.bsz * settings.seq_len}
  if evaluates:
    entropy = target_unigram_entropy(heldout, settings.objective)
    loss = float(ran["eval"]["loss"])
    summary["held_out"] = {"loss": loss, "unigram_entropy": entropy,
                           "ratio": loss / entropy, "targets": ran["eval"]["num_targets"]}
  return summary


def finetune_once(work_dir: str, settings: DemoSettings, init_checkpoint: Optional[str],
                  model_dir: str, seed: int):
  """(fine-tuned model directory, result) of one xlnet/classification run
  (`tasks.train_lib`); result has the accuracy on dev, test and both together
  ("held_out"), the majority-class accuracies and the final loss."""
  sp_path = spiece_path(work_dir)
  params = exp_factory.get_exp_config(classification.KIND.experiment)
  data = {"spiece_model": sp_path, "cache_dir": os.path.join(stage_dir(work_dir, "finetune"),
                                                             "features")}
  params.override({
      "task": {"init_checkpoint": init_checkpoint or "", "task_name": TASK,
               "max_seq_length": settings.max_seq_length,
               "model": {**_model_override(settings), "summary_type": settings.summary_type},
               # The file is sorted by label: a seeded random subset, not a prefix.
               "train_data": {**data, "global_batch_size": settings.finetune_batch,
                              "seed": seed, "max_examples": settings.train_examples,
                              "subset_seed": settings.seed},
               "validation_data": {**data, "global_batch_size": 256},
               "optimization": {"learning_rate": settings.finetune_lr, "seed": seed,
                                "warmup_steps": settings.finetune_steps // 10}},
      "trainer": {"train_steps": settings.finetune_steps,
                  "steps_per_loop": max(1, min(100, settings.finetune_steps)),
                  "checkpoint_interval": settings.finetune_steps}})
  trained = train_lib.run(params, "train", model_dir)["train"]
  task = task_factory.get_task(params.task)
  final = os.path.join(model_dir, train_lib.FINAL_DIR)
  model = task.load_model_dir(final)
  result = {"final_loss": trained["losses"][-1] if trained["losses"] else None}
  correct = total = 0
  held_out_labels = []
  for split in ("dev", "test"):
    metrics = task.evaluate(model, params.task.validation_data.replace(split=split))
    labels = np.array([task.spec.labels.index(e.label)
                       for e in task.task_spec.read(None, split)])
    result[split] = metrics["accuracy"]
    result[f"{split}_majority"] = float(max(labels.mean(), 1 - labels.mean()))
    correct += metrics["accuracy"] * metrics["num_examples"]
    total += metrics["num_examples"]
    held_out_labels.append(labels)
  result["held_out"] = correct / total
  labels = np.concatenate(held_out_labels)
  result["held_out_majority"] = float(max(labels.mean(), 1 - labels.mean()))
  return final, result


def finetune(work_dir: str, settings: DemoSettings) -> Dict[str, Any]:
  """Fine-tunes once per seed of `finetune_seeds` (from the pretrained weights, and from
  random ones with `compare_random_init`); saves the first pretrained run's model."""
  out = stage_dir(work_dir, "finetune")
  pretrained_dir = None
  if settings.pretrain_steps:
    pretrained_dir = os.path.join(stage_dir(work_dir, "pretrain"), train_lib.FINAL_DIR)
  inits = [("pretrained" if pretrained_dir else "random_init", pretrained_dir)]
  if settings.compare_random_init and pretrained_dir:
    inits.append(("random_init", None))
  final = os.path.join(out, "final")
  runs = []
  for seed in settings.finetune_seeds:
    for name, init in inits:
      model_dir, result = finetune_once(work_dir, settings, init,
                                        os.path.join(out, f"{name}-seed{seed}"), seed)
      runs.append({"init": name, "seed": seed, **result})
      if not os.path.exists(final):
        shutil.copytree(model_dir, final)
  summary = {"model_dir": final, "steps": settings.finetune_steps,
             "train_examples": settings.train_examples or None, "runs": runs,
             "majority": {k: runs[0][f"{k}_majority"] for k in ("dev", "test", "held_out")}}
  for name, _ in inits:
    mine = [r for r in runs if r["init"] == name]
    summary[name] = {key: float(np.mean([r[key] for r in mine]))
                     for key in ("dev", "test", "held_out", "final_loss")
                     if all(r[key] is not None for r in mine)}
  summary["accuracy"] = summary[inits[0][0]]
  return summary


def export_model(work_dir: str, settings: DemoSettings) -> Dict[str, Any]:
  out = os.path.join(stage_dir(work_dir, "export"), "saved_model")
  if os.path.exists(out):
    shutil.rmtree(out)
  classifier_export.export_classifier(os.path.join(stage_dir(work_dir, "finetune"), "final"), out)
  return {"saved_model": out}


def serve(work_dir: str, settings: DemoSettings,
          sentences=DEMO_SENTENCES) -> Dict[str, Any]:
  """Runs classify_text.py (it imports only TensorFlow and tensorflow-text) in a fresh
  interpreter, in an empty directory, without PYTHONPATH."""
  saved_model = os.path.join(stage_dir(work_dir, "export"), "saved_model")
  env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
  with tempfile.TemporaryDirectory() as empty:
    result = subprocess.run(
        [sys.executable, CLASSIFY_TEXT,
         "--saved_model", os.path.abspath(saved_model), "--json", *sentences],
        cwd=empty, env=env, capture_output=True, text=True, timeout=600)
  if result.returncode != 0:
    raise RuntimeError(f"classify_text.py failed (exit {result.returncode}):\n"
                       f"{result.stderr[-3000:]}")
  predictions = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
  if len(predictions) != len(sentences):
    raise RuntimeError(f"classify_text.py printed {len(predictions)} predictions for "
                       f"{len(sentences)} sentences:\n{result.stdout}")
  return {"predictions": predictions}


STAGE_FUNCTIONS: Dict[str, Callable[[str, DemoSettings], Dict[str, Any]]] = {
    "corpus": make_corpus, "spiece": train_spiece, "records": make_records,
    "pretrain": pretrain, "finetune": finetune, "export": export_model, "serve": serve,
}


def stage_settings(settings: DemoSettings, stage: str) -> Dict[str, Any]:
  """The settings that decide `stage`'s output, including all earlier stages'."""
  fields = [f for s in STAGES[:STAGES.index(stage) + 1] for f in _STAGE_FIELDS[s]]
  values = {f: getattr(settings, f) for f in fields}
  return {f: list(v) if isinstance(v, tuple) else v for f, v in values.items()}   # as JSON


def run_all(work_dir: str, settings: DemoSettings, force: bool = False,
            stages=STAGES, report: Callable[[str], None] = print) -> Dict[str, Dict]:
  """Runs (or reuses) `stages` in order; returns {stage: summary incl. seconds, reused}.
  A stage done before with the same settings is reused; one done with other settings is
  refused (`settings_record.SettingsMismatch`, listing them) before any work, unless
  `force`, which redoes every stage."""
  os.makedirs(work_dir, exist_ok=True)
  if not force:
    for stage in stages:
      marker = os.path.join(stage_dir(work_dir, stage), STAGE_FILE)
      settings_record.check(
          marker, stage_settings(settings, stage), subject=f"{stage_dir(work_dir, stage)} "
          f"holds the {stage} stage of a run with other settings",
          remedy="Give another --work_dir, or --force (make demo FORCE=1) to redo every "
                 "stage.", field="settings")
  summaries: Dict[str, Dict] = {}
  rerun = force
  for number, stage in enumerate(stages, 1):
    out = stage_dir(work_dir, stage)
    marker = os.path.join(out, STAGE_FILE)
    done = None if rerun else settings_record.read(marker)
    if done is not None:
      report(f"[{number}/{len(stages)}] {stage}: reusing {out} (done before; FORCE=1 redoes)")
      summaries[stage] = {**done["summary"], "seconds": done["seconds"], "reused": True}
      continue
    rerun = True                       # every later stage depends on this one
    if os.path.exists(out):
      shutil.rmtree(out)
    os.makedirs(out)
    report(f"[{number}/{len(stages)}] {stage}: running -> {out}")
    start = time.time()
    summary = STAGE_FUNCTIONS[stage](work_dir, settings)
    seconds = time.time() - start
    settings_record.write(marker, {"settings": stage_settings(settings, stage),
                                   "summary": summary, "seconds": seconds})
    logging.info("stage %s done in %.1f s: %s", stage, seconds, summary)
    report(f"[{number}/{len(stages)}] {stage}: done in {seconds:.0f} s")
    summaries[stage] = {**summary, "seconds": seconds, "reused": False}
  return summaries


def summary_table(summaries: Dict[str, Dict]) -> List[str]:
  """Markdown lines: stage, wall time, what it produced."""
  def fmt_loss(value):
    return "n/a" if value is None else f"{value:.3f}"

  rows = []
  for stage, s in summaries.items():
    if stage == "corpus" and "review_sentences" in s:
      what = f"{s['files']} files, {s['bytes'] / 1e6:.2f} MB ({s['review_sentences']} " \
             f"review sentences)"
    elif stage == "corpus":
      what = f"{s['files']} files, {s['bytes'] / 1e6:.2f} MB ({s['words']:,} words; held " \
             f"out {s['held_out_files']} files, {s['held_out_words']:,} words)"
    elif stage == "spiece":
      what = f"vocabulary {s['vocab_size']}"
    elif stage == "records":
      what = f"{s['tokens']:,} tokens -> {s['examples']:,} rows, {s['steps']:,} steps"
    elif stage == "pretrain":
      what = f"{s['steps']} steps, loss {fmt_loss(s['first_loss'])} -> " \
             f"{fmt_loss(s['final_loss'])}"
      if "held_out" in s:
        h = s["held_out"]
        what += f"; held-out loss {h['loss']:.3f} = {h['ratio']:.2f} x the targets' " \
                f"unigram entropy {h['unigram_entropy']:.3f}"
    elif stage == "finetune":
      a, seeds = s["accuracy"], len(s["runs"]) // (2 if "pretrained" in s and
                                                   "random_init" in s else 1)
      what = (f"{s['steps']} steps x {seeds} seed(s); held-out accuracy {a['held_out']:.1%} "
              f"(dev {a['dev']:.1%}, test {a['test']:.1%}; majority class "
              f"{s['majority']['dev']:.1%}, {s['majority']['test']:.1%})")
      if "pretrained" in s and "random_init" in s:
        r = s["random_init"]
        what += f"; from random init: {r['held_out']:.1%} (dev {r['dev']:.1%}, " \
                f"test {r['test']:.1%})"
    elif stage == "export":
      what = s["saved_model"]
    else:
      what = f"{len(s['predictions'])} sentences classified in a fresh process"
    reused = " (reused)" if s.get("reused") else ""
    rows.append(f"| {stage} | {s['seconds']:.0f} s{reused} | {what} |")
  return ["| stage | wall time | result |", "|---|---|---|", *rows]


def demo(work_dir: str, size: str, force: bool = False, **overrides) -> Dict[str, Dict]:
  """`make demo`: runs (or reuses) every stage of the `size` preset (with `overrides` of
  its DemoSettings) under `work_dir`, printing each stage's progress, the sentences the
  SavedModel classified, the summary table (also written to WORK_DIR/summary.md) and where
  the artefacts went. Returns the stages' summaries."""
  settings = DemoSettings.for_size(size, **overrides)
  work_dir = os.path.abspath(work_dir)
  print(f"xlnet_tf demo ({size}): every stage writes under {work_dir}", flush=True)
  logging.set_verbosity(logging.WARNING)

  def report(line):
    print(line, flush=True)

  summaries = run_all(work_dir, settings, force=force, report=report)

  print("\nRaw sentences classified by the SavedModel in a fresh process "
        "(tensorflow + tensorflow_text only):")
  for p in summaries["serve"]["predictions"]:
    print(f"  {p['label']:>8}  p={max(p['probabilities']):.3f}  {p['text']!r}")
  table = summary_table(summaries)
  total = sum(s["seconds"] for s in summaries.values() if not s.get("reused"))
  print("\n" + "\n".join(table))
  print(f"\nwall time of the stages run now: {total:.0f} s")
  paths.write_text(os.path.join(work_dir, "summary.md"), "\n".join(table) + "\n")
  saved_model = summaries["export"]["saved_model"]
  print(f"\nArtefacts: SentencePiece {spiece_path(work_dir)}\n"
        f"           records {summaries['records']['data']}\n"
        f"           pretrained model {summaries['pretrain']['model_dir']}\n"
        f"           fine-tuned model {summaries['finetune']['model_dir']}\n"
        f"           SavedModel {saved_model}\n"
        f"           summary {os.path.join(work_dir, 'summary.md')}\n"
        f"Try: {classify_command()} --saved_model={saved_model} \"What a fine film.\"")
  return summaries


def classify_command() -> str:
  """The console command `xlnet-classify` beside this interpreter (relative to the current
  directory when inside it, as .venv/bin/xlnet-classify), else the script from a checkout."""
  command = os.path.join(os.path.dirname(sys.executable), "xlnet-classify")
  if not os.path.exists(command):
    return f"{sys.executable} experiments/classify_text.py"
  relative = os.path.relpath(command)
  return command if relative.startswith("..") else relative
