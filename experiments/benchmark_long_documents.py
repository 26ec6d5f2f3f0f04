r"""Long documents (issue 30): does reading a whole speech through the memory pay, and what
does it cost to serve?

  python -m experiments.benchmark_long_documents --part=accuracy --work_dir=runs/long_docs
  (results: docs/benchmarks.md, "Long documents")
  python -m experiments.benchmark_long_documents --part=serving

accuracy: the era of a State of the Union address (1900-1932: 33 speeches, 1933-1980: 49,
  1981-2021: 41, the 123 bundled ones) from its text. The era is a label the text itself
  carries from its first paragraph to its last (the issues, institutions, wars and words
  of the time), so every reading has something to go on, and a reader that sees more of
  the speech can gather more evidence; the speeches are long (1,666 to 49,075 pieces of
  the demo's 4,000-piece vocabulary), so one segment is a small part of one.
  The two turns are the New Deal (1933) and the Reagan years (1981). One pretrained model
  (by default the demo's small model pretrained on the speeches, `DemoSettings.for_size(
  "small", corpus="sotu")`, 2 layers of 128, which never saw the 12 speeches it holds out;
  --init_checkpoint takes another), fine-tuned with the same budget four ways:
    first  the first segment of each speech (the released truncation)
    last   its last segment
    whole  the whole speech, segment by segment through the memory; its training
           batches each from one bucket of segment counts (the default)
    whole_mixed  the same with batches of any speeches (task.bucket_by_segments=False):
           the speeches' length goes with their era, so a bucket's batch is skewed to an
           era
  Every speech is tested once: FOLDS folds (speech i in fold i mod FOLDS), each fold a
  fine-tuning run per reading and seed on the others. Reported: accuracy over all 123 and
  over the 12 that pretraining never saw, mean [min, max] over the seeds.
serving: milliseconds per document for raw text of 1k, 4k and 16k pieces served whole: the
  whole-document export (segments of --serving_segment_length through a memory of as many
  positions: linear in the length) against an export that reads the whole text in one
  segment without memory (its max_seq_length = the length: quadratic), where that fits in
  --memory_budget_gb; see xlnet_tf/benchmarks/document_serving.py.

The runs are xlnet_tf/pipelines/long_documents.py (finished runs are reused: an interrupted
benchmark continues where it stopped).
"""


import os

from xlnet_tf import console  # noqa: E402

console.start()  # before TensorFlow is imported: the log levels of --verbosity

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from xlnet_tf.benchmarks import document_serving  # noqa: E402
from xlnet_tf.pipelines import long_documents  # noqa: E402

_DEFAULTS = long_documents.EraSettings()
_PART = flags.DEFINE_enum("part", "accuracy", ["accuracy", "serving"], "What to measure.")
_WORK_DIR = flags.DEFINE_string("work_dir", "runs/long_documents", "Where the runs go.")
_INIT = flags.DEFINE_string("init_checkpoint", "", "Pretrained model directory (default: "
                            "pretrain the demo's small model on the speeches).")
_SEEDS = flags.DEFINE_list("seeds", [str(s) for s in _DEFAULTS.seeds], "Fine-tuning seeds.")
_FOLDS = flags.DEFINE_integer("folds", _DEFAULTS.folds, "Folds (>= 2).")
_READINGS = flags.DEFINE_list("readings", list(_DEFAULTS.readings),
                              f"Any of {list(long_documents.READINGS)}.")
_STEPS = flags.DEFINE_integer("steps", _DEFAULTS.steps, "Fine-tuning steps per run.")
_BATCH = flags.DEFINE_integer("batch_size", _DEFAULTS.batch_size, "Speeches per batch.")
_LR = flags.DEFINE_float("learning_rate", _DEFAULTS.learning_rate, "Peak learning rate.")
_SEGMENT = flags.DEFINE_integer("segment_length", _DEFAULTS.segment_length,
                                "Pieces per segment (max_seq_length).")
_MEM_LEN = flags.DEFINE_integer("mem_len", _DEFAULTS.mem_len, "The whole reading's memory.")
# --part=serving
_N_LAYER = flags.DEFINE_integer("n_layer", 12, "serving: layers.")
_D_MODEL = flags.DEFINE_integer("d_model", 768, "serving: hidden size (heads of 64).")
_LENGTHS = flags.DEFINE_list("lengths", ["1024", "4096", "16384"],
                             "serving: document lengths N in pieces.")
_SERVING_SEGMENT = flags.DEFINE_integer("serving_segment_length", 512,
                                        "serving: the whole export's segment (and memory).")
_CALLS = flags.DEFINE_integer("calls", 3, "serving: timed calls per row.")
_BUDGET = flags.DEFINE_float("memory_budget_gb", 12.0, "serving: one pass is run only where "
                             "its attention per layer fits this.")
_SPIECE = flags.DEFINE_string("spiece_model", None, "serving: SentencePiece model (default: "
                              "the released one if present, else trained on the bundled "
                              "corpus).")


def serving_main():
  try:
    lengths = [int(n) for n in _LENGTHS.value]
  except ValueError:
    raise app.UsageError(f"--lengths must be integers, got {_LENGTHS.value}") from None
  if not lengths or min(lengths) <= _SERVING_SEGMENT.value:
    raise app.UsageError(f"--lengths must be longer than --serving_segment_length "
                         f"({_SERVING_SEGMENT.value}), got {lengths}")
  for flag, least in ((_N_LAYER, 1), (_D_MODEL, 64), (_CALLS, 1), (_SERVING_SEGMENT, 8)):
    if flag.value < least:
      raise app.UsageError(f"--{flag.name} must be >= {least}, got {flag.value}")
  work = os.path.join(_WORK_DIR.value, "serving")
  os.makedirs(work, exist_ok=True)
  document_serving.run(work, _N_LAYER.value, _D_MODEL.value, lengths,
                       _SERVING_SEGMENT.value, _CALLS.value, _BUDGET.value, _SPIECE.value)


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  if _PART.value == "serving":
    serving_main()
    return
  try:
    seeds = [int(s) for s in _SEEDS.value]
  except ValueError:
    raise app.UsageError(f"--seeds must be integers, got {_SEEDS.value}") from None
  unknown = [r for r in _READINGS.value if r not in long_documents.READINGS]
  if unknown or not _READINGS.value:
    raise app.UsageError(f"--readings: expected some of {list(long_documents.READINGS)}, "
                         f"got {_READINGS.value}")
  for flag, least in ((_FOLDS, 2), (_STEPS, 1), (_BATCH, 1), (_SEGMENT, 8), (_MEM_LEN, 1)):
    if flag.value < least:
      raise app.UsageError(f"--{flag.name} must be >= {least}, got {flag.value}")
  settings = long_documents.EraSettings(
      folds=_FOLDS.value, seeds=tuple(seeds), readings=tuple(_READINGS.value),
      segment_length=_SEGMENT.value, mem_len=_MEM_LEN.value, batch_size=_BATCH.value,
      steps=_STEPS.value, learning_rate=_LR.value)
  command = ("python -m experiments.benchmark_long_documents --part=accuracy "
             f"--seeds={','.join(map(str, seeds))} --folds={settings.folds} "
             f"--readings={','.join(settings.readings)} --steps={settings.steps} "
             f"--batch_size={settings.batch_size} --learning_rate={settings.learning_rate:g} "
             f"--segment_length={settings.segment_length} --mem_len={settings.mem_len}")
  long_documents.benchmark(_WORK_DIR.value, _INIT.value, settings, command)


if __name__ == "__main__":
  app.run(main)
