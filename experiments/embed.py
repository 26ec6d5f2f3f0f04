r"""Embeds texts of any length: one vector per input line, or per whole file.

  xlnet-embed --model_dir=converted/xlnet_base --input=reviews.txt --output=reviews.npy
  xlnet-embed --saved_model=exports/encoder --input=speech.txt --unit=file --pooling=mean
  xlnet-embed --model_dir=converted/xlnet_base --input=a.txt --input=b.txt --unit=file \
      --per_token --output=tokens.npz

(`python -m experiments.embed ...` works the same from a checkout.) The texts are read
whole through the Transformer-XL memory by the encoder's `serving_document`, of an export
(--saved_model) or built here from a pretrained model directory (--model_dir; the same
numbers). See `xlnet_tf.inference.embedding` for the poolings and the output formats:
.npy float32 [N, D]; with --per_token an .npz of `embeddings`, `token_embeddings`,
`token_ids` and `offsets`. Every input, the model location and the output are checked
before the model is loaded: a bad one ends the run with one line naming it. The output is
written under a temporary name and renamed when complete; an existing one is refused
unless --overwrite.
"""

from xlnet_tf import console

console.start()  # before TensorFlow is imported: the log levels of --verbosity

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from experiments import common_flags  # noqa: E402
from xlnet_tf.inference import embedding  # noqa: E402

FLAGS = flags.FLAGS
common_flags.define_flags(
    ("model_dir", "max_seq_length", "batch_size", "overwrite"),
    notes={"model_dir": "a pretrained model directory: xlnet_config.json, model.ckpt, "
                        "spiece.model",
           "max_seq_length": "--model_dir: the segment length; an export has its own",
           "batch_size": "texts per call"},
    lower_bounds={"max_seq_length": 3, "batch_size": 1},
    max_seq_length=128, batch_size=embedding.BATCH_SIZE)
common_flags.define_network_flags(
    ("mem_len",), notes={"mem_len": "--model_dir: the memory's positions; default: "
                                    "max_seq_length"},
    lower_bounds={"mem_len": 1}, mem_len=None)
_SAVED_MODEL = flags.DEFINE_string("saved_model", None, "An encoder export with the "
                                   "signature serving_document (instead of --model_dir).")
_INPUT = flags.DEFINE_multi_string("input", None, "UTF-8 text file(s); repeat the flag for "
                                   "several.")
_OUTPUT = flags.DEFINE_string("output", None, "The .npy file (.npz with --per_token); "
                              "default: INPUT.npy (INPUT.npz) for one input.")
_UNIT = flags.DEFINE_enum("unit", "line", list(embedding.UNITS), "One vector per input line "
                          "(blank lines included: row i is line i) or per whole file.")
_POOLING = flags.DEFINE_enum("pooling", "cls", list(embedding.POOLINGS), "cls: the vector at "
                             "the document's final <cls>; mean: the average of its pieces' "
                             "vectors.")
_PER_TOKEN = flags.DEFINE_bool("per_token", False, "Also write every piece's vector (an .npz "
                               "with embeddings, token_embeddings, token_ids, offsets).")
_PROGRESS = flags.DEFINE_bool("progress", True, "A progress bar on stderr (when there is "
                              "more than one batch).")


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  try:
    output, outputs = embedding.embed_files(
        _INPUT.value or [], _OUTPUT.value, model_dir=FLAGS.model_dir,
        saved_model=_SAVED_MODEL.value, unit=_UNIT.value, pooling=_POOLING.value,
        per_token=_PER_TOKEN.value, max_seq_length=FLAGS.max_seq_length,
        mem_len=FLAGS.mem_len, batch_size=FLAGS.batch_size, overwrite=FLAGS.overwrite,
        progress=_PROGRESS.value)
  except (ValueError, OSError) as e:
    raise SystemExit(f"xlnet-embed: {e}") from None
  rows, dim = outputs["embeddings"].shape
  print(f"wrote {output}: {rows} vectors of {dim} ({_POOLING.value}"
        f"{', per token' if _PER_TOKEN.value else ''})")


def run():
  """The console command `xlnet-embed` (pyproject.toml's [project.scripts])."""
  console.run(main, __name__)


if __name__ == "__main__":
  run()
