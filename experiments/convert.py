r"""Command line: xlnet-convert --source SRC --output OUT [--overwrite] [options]
              xlnet-convert --to huggingface --source MODEL_DIR --output HF_DIR

  # a HuggingFace task model -> our model directory of its task + a raw-text SavedModel
  xlnet-convert --source hf/xlnet-sst2 --output runs/sst2 --saved_model exports/sst2
  # a released pretrained model, or a HuggingFace directory -> the pretrained layout
  xlnet-convert --source xlnet_cased_L-24_H-1024_A-16 --output converted/large
  # the model_dir of the original's run_classifier.py -> a fine-tuned classifier directory
  xlnet-convert --source orig_runs/imdb --model_config_path \
      xlnet_cased_L-24_H-1024_A-16/xlnet_config.json --spiece_model_file \
      xlnet_cased_L-24_H-1024_A-16/spiece.model --max_seq_length 512 --output runs/imdb/final
  # one of our model directories -> a HuggingFace transformers directory
  xlnet-convert --to huggingface --source runs/sst2 --output hf/sst2_export

The parity with HuggingFace (of an HF import, and of an export loaded back) and reading a
pytorch_model.bin need torch and transformers, the package's [huggingface] extra (from a
checkout: pip install '.[huggingface]'); without them the parity is "not measured".

(`python -m xlnet_tf.convert ...` and `python -m experiments.convert ...` work the same.)
The head of a fine-tuned checkpoint is found by its variable names (see
`xlnet_tf.convert.task_heads`); the flags after --overwrite give what a checkpoint does not
record. Errors about the paths, the files and the variables (an --output inside --source, a
truncated weight file, a head that does not fit, ...) end the run with exit status 1 and one
line naming the flag, the file or the variable.
"""

from xlnet_tf import console

console.start()  # before TensorFlow is imported: the log levels of --verbosity

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from experiments import common_flags  # noqa: E402
from xlnet_tf import paths  # noqa: E402
from xlnet_tf import task_kind  # noqa: E402
from xlnet_tf.tasks import all_tasks  # noqa: E402,F401  (registers the task kinds)
from xlnet_tf.convert.importer import ConvertOptions  # noqa: E402
from xlnet_tf.convert.importer import convert  # noqa: E402
from xlnet_tf.convert.heads import summary  # noqa: E402
from xlnet_tf.convert import to_huggingface  # noqa: E402

FLAGS = flags.FLAGS
_SOURCE = flags.DEFINE_string(
    "source", None, "A released XLNet directory (xlnet_config.json + xlnet_model.ckpt.*), the "
    "model_dir of the original's fine-tuning scripts (model.ckpt-N.* + checkpoint; give "
    "--model_config_path) or a HuggingFace XLNet directory (config.json + model.safetensors "
    "or pytorch_model.bin).")
_OUTPUT = flags.DEFINE_string(
    "output", None, "Directory to create: the pretrained layout (xlnet_config.json, "
    "model.ckpt.*, spiece.model if known, conversion.json), or with a task head the "
    "fine-tuned model directory of the task (+ classifier.json or squad.json).")
_TO = flags.DEFINE_enum(
    "to", "xlnet_tf", ["xlnet_tf", "huggingface"],
    "xlnet_tf: import --source (released, fine-tuned TF1 or HuggingFace) into our layout. "
    "huggingface: export --source, one of our model directories (pretrained, classifier, "
    "squad, qa_simple, race or tagger), as a HuggingFace transformers XLNet directory "
    "(config.json, model.safetensors, spiece.model + tokenizer files, README.md; see "
    "xlnet_tf.convert.to_huggingface).")
_TASK = flags.DEFINE_enum(
    "task", "auto", ["auto", "pretrained", *task_kind.head_kinds()],
    "auto: a TF1 checkpoint without mask_emb and model/lm_loss/bias (written by the "
    "original's fine-tuning scripts) converts with its task head, if it has one; otherwise "
    "the pretrained layout; a HuggingFace task model converts with its head. pretrained: "
    "the encoder alone. classifier/squad/race/tagger/qa_simple: that head (tagger and "
    "qa_simple: HuggingFace's XLNetForTokenClassification, XLNetForQuestionAnsweringSimple).")
_TASK_NAME = flags.DEFINE_string(
    "task_name", None, "The classification head to load when there are several: the <task> "
    "of model/classification_<task> (or regression_<task>).")
_SUMMARY_TYPE = flags.DEFINE_enum(
    "summary_type", None, list(summary.SUMMARY_TYPES), "The original's --summary_type "
    "(default: attn if the checkpoint has its variables, else last).")
_KEEP_ACCENTS = flags.DEFINE_bool(
    "keep_accents", False, "The text keeps its accents (a HuggingFace directory: "
    "tokenizer_config.json's keep_accents).")
_SAVED_MODEL = flags.DEFINE_string(
    "saved_model", None, "Also export the converted model as a raw-text SavedModel into this "
    "new (or empty) directory, outside --source and --output (xlnet_tf.serving; with the "
    "model card README.md).")
_VERSION_2 = flags.DEFINE_bool(
    "version_2_with_negative", True, "SQuAD: the model answers 'no answer' (v2.0) when its "
    "answer-class logit exceeds the threshold; --noversion_2_with_negative for v1.1.")
_SQUAD = "SQuAD: the original's flag"
common_flags.define_flags(
    ("overwrite", "model_config_path", "spiece_model_file", "labels", "max_seq_length",
     "uncased", "max_query_length", "doc_stride", "start_n_top", "end_n_top",
     "null_score_diff_threshold"),
    notes={"overwrite": "if it is the output of a previous conversion: has conversion.json "
                        "and only the files a conversion writes",
           "model_config_path": "for a TF1 directory without one: the original's "
                                "fine-tuning model_dir",
           "spiece_model_file": "copied into --output; default: SRC/spiece.model if "
                                "present; the SavedModel export needs it",
           "labels": "of a classifier; default: the original's labels for its own tasks "
                     "mnli_matched, mnli_mismatched, imdb, yelp5; else 0..C-1",
           "max_seq_length": "the original's --max_seq_length; default: its default, 128 "
                             "for run_classifier, 512 for run_squad and run_race",
           "uncased": "the original's --uncased; a HuggingFace directory: "
                      "tokenizer_config.json's do_lower_case",
           "max_query_length": _SQUAD, "doc_stride": _SQUAD, "start_n_top": _SQUAD,
           "end_n_top": _SQUAD,
           "null_score_diff_threshold": "SQuAD: the threshold recorded for the export; "
                                        "default there: 0"},
    max_seq_length=None)
flags.mark_flags_as_required(["source", "output"])


# The flags of an import (--to xlnet_tf); an export reads everything from --source.
_IMPORT_ONLY = ("task", "model_config_path", "spiece_model_file", "task_name", "labels",
                "summary_type", "max_seq_length", "uncased", "max_query_length", "doc_stride",
                "start_n_top", "end_n_top", "version_2_with_negative",
                "null_score_diff_threshold", "keep_accents", "saved_model")


def export_main() -> None:
  """--to huggingface: `to_huggingface.export_to_huggingface`, one line per outcome."""
  given = [f"--{name}" for name in _IMPORT_ONLY
           if name in flags.FLAGS and flags.FLAGS[name].present]
  try:
    if given:
      raise ValueError(f"{', '.join(given)}: these describe an import (--to xlnet_tf); "
                       f"--to huggingface reads the model, its spec and spiece.model from "
                       f"--source")
    with paths.reporting_disk_full(_OUTPUT.value):
      report = to_huggingface.export_to_huggingface(_SOURCE.value, _OUTPUT.value,
                                                    overwrite=FLAGS.overwrite)
  except (ValueError, OSError, ImportError, FloatingPointError) as e:
    raise SystemExit(f"xlnet_tf.convert: {e}") from None
  print(f"{report['source_model']} model directory {report['source']} -> {_OUTPUT.value}: "
        f"HuggingFace {report['architecture']}, {report['tensors']} tensors, "
        f"{report['parameters']:,} parameters; parity: {report['parity']}")
  for note in report["notes"]:
    print(f"  note: {note}")


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  if _TO.value == "huggingface":
    export_main()
    return
  try:
    options = ConvertOptions(
        task=_TASK.value, model_config_path=FLAGS.model_config_path,
        spiece_model_file=FLAGS.spiece_model_file, task_name=_TASK_NAME.value,
        labels=FLAGS.labels, summary_type=_SUMMARY_TYPE.value,
        max_seq_length=FLAGS.max_seq_length, uncased=FLAGS.uncased,
        keep_accents=_KEEP_ACCENTS.value,
        max_query_length=FLAGS.max_query_length, doc_stride=FLAGS.doc_stride,
        start_n_top=FLAGS.start_n_top, end_n_top=FLAGS.end_n_top,
        version_2_with_negative=_VERSION_2.value,
        null_score_diff_threshold=FLAGS.null_score_diff_threshold)
    with paths.reporting_disk_full(_OUTPUT.value):
      report = convert(_SOURCE.value, _OUTPUT.value, overwrite=FLAGS.overwrite,
                       options=options, saved_model=_SAVED_MODEL.value)
  except (ValueError, OSError, ImportError, FloatingPointError) as e:
    raise SystemExit(f"xlnet_tf.convert: {e}") from None
  kind = report["output_kind"]
  head = report.get("task_head")
  what = "pretrained model" if head is None else f"{kind} model directory"
  if head and head.get("scope"):
    what += f" ({head['scope']}/logit"
    what += ", regression)" if head["is_regression"] else f", labels {head['labels']})"
  print(f"{report['source_kind']} checkpoint {report['source']} -> {_OUTPUT.value}: {what}, "
        f"{report['variables']} variables, {report['parameters']:,} parameters"
        + (f", {len(report['skipped_task_head_variables'])} task-head variables left out"
           if report["skipped_task_head_variables"] else ""))
  for name, meaning in report["absent"].items():
    print(f"  absent: {name}: {meaning}")
  for note in report["notes"]:
    print(f"  note: {note}")
  print(f"  parity: {report['parity']['text']}")
  if report.get("saved_model"):
    print(f"  SavedModel: {report['saved_model']}")


def run():
  """`xlnet-convert` (pyproject.toml's [project.scripts]), `python -m experiments.convert`
  and `python -m xlnet_tf.convert` (xlnet_tf/convert/__main__.py)."""
  console.run(main, __name__)


if __name__ == "__main__":
  run()
