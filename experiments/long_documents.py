r"""Long documents (issue 30): does reading a whole speech through the memory pay?

  python -m experiments.long_documents --work_dir=runs/long_docs
  (results: docs/benchmarks.md, "Long documents"; what serving whole documents costs:
  python -m experiments.benchmark_long_documents)

The era of a State of the Union address (1900-1932: 33 speeches, 1933-1980: 49,
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
The runs are xlnet_tf/runs/long_documents.py (finished runs are reused: an interrupted
comparison continues where it stopped).
"""

from xlnet_tf import console  # noqa: E402

console.start()  # before TensorFlow is imported: the log levels of --verbosity

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from experiments import common_flags  # noqa: E402
from xlnet_tf import settings_record  # noqa: E402
from xlnet_tf.runs import long_documents  # noqa: E402

_DEFAULTS = long_documents.EraSettings()
FLAGS = flags.FLAGS
common_flags.define_flags(
    ("work_dir", "init_checkpoint", "seeds", "folds", "steps", "batch_size", "learning_rate"),
    notes={"init_checkpoint": "a pretrained model directory; default: pretrain the demo's "
                              "small model on the speeches",
           "seeds": "fine-tuning", "steps": "fine-tuning steps per run",
           "batch_size": "speeches per batch"},
    work_dir="runs/long_documents", init_checkpoint="",
    seeds=[str(s) for s in _DEFAULTS.seeds], folds=_DEFAULTS.folds, steps=_DEFAULTS.steps,
    batch_size=_DEFAULTS.batch_size, learning_rate=_DEFAULTS.learning_rate)
_READINGS = flags.DEFINE_list("readings", list(_DEFAULTS.readings),
                              f"Any of {list(long_documents.READINGS)}.")
_SEGMENT = flags.DEFINE_integer("segment_length", _DEFAULTS.segment_length,
                                "Pieces per segment (max_seq_length).")
common_flags.define_network_flags(("mem_len",), notes={"mem_len": "the whole reading's"},
                                  mem_len=_DEFAULTS.mem_len)


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  try:
    seeds = [int(s) for s in FLAGS.seeds]
  except ValueError:
    raise app.UsageError(f"--seeds must be integers, got {FLAGS.seeds}") from None
  unknown = [r for r in _READINGS.value if r not in long_documents.READINGS]
  if unknown or not _READINGS.value:
    raise app.UsageError(f"--readings: expected some of {list(long_documents.READINGS)}, "
                         f"got {_READINGS.value}")
  for name, least in (("folds", 2), ("steps", 1), ("batch_size", 1), ("segment_length", 8),
                      ("mem_len", 1)):
    if FLAGS[name].value < least:
      raise app.UsageError(f"--{name} must be >= {least}, got {FLAGS[name].value}")
  settings = long_documents.EraSettings(
      folds=FLAGS.folds, seeds=tuple(seeds), readings=tuple(_READINGS.value),
      segment_length=_SEGMENT.value, mem_len=FLAGS.mem_len, batch_size=FLAGS.batch_size,
      steps=FLAGS.steps, learning_rate=FLAGS.learning_rate)
  command = ("python -m experiments.long_documents "
             f"--seeds={','.join(map(str, seeds))} --folds={settings.folds} "
             f"--readings={','.join(settings.readings)} --steps={settings.steps} "
             f"--batch_size={settings.batch_size} --learning_rate={settings.learning_rate:g} "
             f"--segment_length={settings.segment_length} --mem_len={settings.mem_len}")
  try:
    long_documents.compare_readings(FLAGS.work_dir, FLAGS.init_checkpoint, settings, command)
  except settings_record.SettingsMismatch as e:
    raise SystemExit(f"long_documents: {e}") from None


if __name__ == "__main__":
  app.run(main)
