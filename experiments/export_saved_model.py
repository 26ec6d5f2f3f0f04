r"""Exports a fine-tuned classifier as a SavedModel that serves raw text.

  xlnet-export --model_dir=runs/sst2 --export_dir=export/sst2
  saved_model_cli run --dir export/sst2 --tag_set serve --signature_def serving_default \
      --input_exprs 'text_a=["a gripping, beautifully acted film"]'

(`python -m experiments.export_saved_model ...` works the same from a checkout.)
--model_dir is run_classifier's --model_dir (the model is in MODEL_DIR/final) or that
`final` directory itself. See `xlnet_tf.serving.classifier_export` for the signatures.
serving_default pads each batch to its bucket (the smallest of 16, 24, 32, 48, ...,
max_seq_length holding its longest text); --fixed_length pads every text to max_seq_length
instead (the same predictions at a higher cost; the reference in
experiments/benchmark_serving.py). Texts of any length are read whole, in segments of
max_seq_length through the Transformer-XL memory (--mem_len positions: by default the
model's own, else max_seq_length); --truncate exports the released behaviour instead,
truncation at max_seq_length. The paths are checked before the model is loaded: a bad one
ends the run with one line naming the flag.
"""

from xlnet_tf import console

console.start()  # before TensorFlow is imported: the log levels of --verbosity

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from experiments import common_flags  # noqa: E402
from xlnet_tf.serving import classifier_export  # noqa: E402

FLAGS = flags.FLAGS
common_flags.define_flags(
    ("model_dir", "export_dir", "spiece_model_file"),
    notes={"model_dir": "run_classifier's --model_dir, or its final/ directory",
           "spiece_model_file": "default: MODEL_DIR/spiece.model"})
common_flags.define_network_flags(
    ("mem_len",), notes={"mem_len": "the memory whole texts are read through; default: "
                                    "classifier.json's mem_len, else max_seq_length"},
    lower_bounds={"mem_len": 1}, mem_len=None)
_PAIR = flags.DEFINE_bool("pair", None, "serving_default takes text_a and text_b (default: "
                          "by task, true for GLUE pair tasks).")
_FIXED = flags.DEFINE_bool("fixed_length", False, "serving_default pads every text to "
                           "max_seq_length (default: each batch to its bucket).")
_TRUNCATE = flags.DEFINE_bool("truncate", False, "serving_default truncates texts at "
                              "max_seq_length, as released (default: reads them whole "
                              "through the memory).")
flags.mark_flags_as_required(["model_dir", "export_dir"])


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  try:
    model_dir = classifier_export.export_fine_tuned(
        FLAGS.model_dir, FLAGS.export_dir, pair=_PAIR.value,
        spiece_model=FLAGS.spiece_model_file, bucketed=False if _FIXED.value else None,
        whole_text=not _TRUNCATE.value, mem_len=FLAGS.mem_len)
  except (ValueError, OSError) as e:
    raise SystemExit(f"export_saved_model: {e}") from None
  print(f"exported {model_dir} to {FLAGS.export_dir}")


def run():
  """The console command `xlnet-export` (pyproject.toml's [project.scripts])."""
  console.run(main, __name__)


if __name__ == "__main__":
  run()
