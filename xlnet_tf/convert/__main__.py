"""Command line: python -m xlnet_tf.convert --source SRC --output OUT [--overwrite]

Errors about the paths and the files (an --output inside --source, a truncated weight file,
...) end the run with exit status 1 and one line naming the flag or the file.
"""

from absl import app
from absl import flags

from xlnet_tf.convert import convert

_SOURCE = flags.DEFINE_string(
    "source", None, "A released XLNet directory (xlnet_config.json + xlnet_model.ckpt.*) or "
    "a HuggingFace XLNet directory (config.json + model.safetensors or pytorch_model.bin).")
_OUTPUT = flags.DEFINE_string(
    "output", None, "Directory to create with xlnet_config.json, model.ckpt.*, spiece.model "
    "(if the source has one) and conversion.json.")
_OVERWRITE = flags.DEFINE_bool(
    "overwrite", False, "Replace --output if it exists and is the output of a previous "
    "conversion (has conversion.json and only the files a conversion writes).")
flags.mark_flags_as_required(["source", "output"])


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  try:
    report = convert(_SOURCE.value, _OUTPUT.value, overwrite=_OVERWRITE.value)
  except (ValueError, OSError, ImportError) as e:
    raise SystemExit(f"xlnet_tf.convert: {e}") from None
  print(f"{report['source_kind']} checkpoint {report['source']} -> {_OUTPUT.value}: "
        f"{report['variables']} variables, {report['parameters']:,} parameters"
        + (f", {len(report['skipped_task_head_variables'])} task-head variables left out"
           if report["skipped_task_head_variables"] else ""))


if __name__ == "__main__":
  app.run(main)
