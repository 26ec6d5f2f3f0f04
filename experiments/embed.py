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

from xlnet_tf.inference import embedding  # noqa: E402

_MODEL_DIR = flags.DEFINE_string("model_dir", None, "A pretrained model directory "
                                 "(xlnet_config.json, model.ckpt, spiece.model).")
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
_MAX_SEQ_LENGTH = flags.DEFINE_integer("max_seq_length", 128, "--model_dir: the segment "
                                       "length (an export has its own).", lower_bound=3)
_MEM_LEN = flags.DEFINE_integer("mem_len", None, "--model_dir: the memory's positions "
                                "(default: max_seq_length).", lower_bound=1)
_BATCH_SIZE = flags.DEFINE_integer("batch_size", embedding.BATCH_SIZE, "Texts per call.",
                                   lower_bound=1)
_OVERWRITE = flags.DEFINE_bool("overwrite", False, "Replace an existing --output.")
_PROGRESS = flags.DEFINE_bool("progress", True, "A progress bar on stderr (when there is "
                              "more than one batch).")


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  try:                                             # everything checkable, before the model
    if bool(_MODEL_DIR.value) == bool(_SAVED_MODEL.value):
      raise embedding.EmbedInputError("give one of --model_dir and --saved_model")
    texts = embedding.read_texts(_INPUT.value or [], _UNIT.value)
    if _MODEL_DIR.value:
      embedding.check_model_dir(_MODEL_DIR.value)
    else:
      embedding.check_saved_model(_SAVED_MODEL.value)
    output = _OUTPUT.value or embedding.default_output(_INPUT.value, _PER_TOKEN.value)
    embedding.check_output(output, _PER_TOKEN.value, _OVERWRITE.value)
    if _MODEL_DIR.value:
      embedder = embedding.Embedder.from_model_dir(_MODEL_DIR.value, _MAX_SEQ_LENGTH.value,
                                                   _MEM_LEN.value)
    else:
      embedder = embedding.Embedder.from_saved_model(_SAVED_MODEL.value)
    batches = -(-len(texts.texts) // _BATCH_SIZE.value)
    progress = (embedding.ProgressBar(len(texts.texts))
                if _PROGRESS.value and batches > 1 else None)
    outputs = embedding.embed(embedder, texts.texts, _POOLING.value, _PER_TOKEN.value,
                              _BATCH_SIZE.value, texts.sources, progress)
    embedding.write_outputs(output, outputs, _PER_TOKEN.value, _OVERWRITE.value)
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
