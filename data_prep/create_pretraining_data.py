r"""Corpus -> pretraining TFRecords with offline targets and factorization orders.

  xlnet-create-pretraining-data \
      --input_glob='corpus/*.txt' --spiece_model=spiece.model --output_dir=records \
      --seq_len=512 --reuse_len=256 --bsz_per_host=32 --num_core_per_host=8 --bi_data \
      --num_predict=85 --num_passes=20 --num_workers=8

(`python -m data_prep.create_pretraining_data ...` works the same from a checkout.)

Writes `pretrain-c*-p*.tfrecord` shards (with `.stats.json` beside each) and, last,
`manifest.json` (or one `manifest.task-*.json` per --task_index), which
`xlnet_tf.data.pretrain_reader.pretrain_dataset` and `experiments/pretrain.py` read.
Rerunning the same command after a crash skips the finished shards and gives the same
output.
"""

from xlnet_tf import console

console.start()  # before TensorFlow is imported: the log levels of --verbosity

from absl import app  # noqa: E402
from absl import flags  # noqa: E402
from absl import logging  # noqa: E402

from data_prep import corpus  # noqa: E402
from data_prep import pipeline  # noqa: E402
from data_prep import sampling  # noqa: E402
from data_prep.pretraining_rows import RowSettings  # noqa: E402
from xlnet_tf import paths  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_list("input_glob", None, "Comma-separated globs of input text files.")
flags.DEFINE_enum("input_format", "sentence_per_line", list(corpus.INPUT_FORMATS),
                  "sentence_per_line: one sentence per line, a blank line ends a document "
                  "(the original format). document_per_file: each file is one document.")
flags.DEFINE_string("spiece_model", None, "SentencePiece model with the XLNet symbols.")
flags.DEFINE_string("output_dir", None, "Directory for the shards and the manifest.")
flags.DEFINE_integer("seq_len", 512, "Tokens per row.")
flags.DEFINE_integer("reuse_len", 256, "Tokens at the start of a row that the next step's "
                     "memory caches (the row's reuse part).")
flags.DEFINE_integer("bsz_per_host", 32, "Rows per step on one host (parallel streams).")
flags.DEFINE_integer("num_core_per_host", 8, "Cores (replicas) per host; with --bi_data "
                     "each core's rows are a forward half and its reversed copy.")
flags.DEFINE_bool("bi_data", True, "Add reversed streams (the second half of each core's "
                  "rows).")
flags.DEFINE_integer("num_predict", 85, "Predicted positions per row.")
flags.DEFINE_integer("mask_alpha", 6, "K = mask_alpha / mask_beta: a span of L units "
                     "has L * K tokens of context (see --span_context).")
flags.DEFINE_integer("mask_beta", 1, "See --mask_alpha.")
flags.DEFINE_integer("max_span", 5, "Longest span L (p(L) is proportional to 1/L).")
flags.DEFINE_enum("span_unit", "token", list(sampling.SPAN_UNITS),
                  "token: a span is L tokens starting at a word start (the released "
                  "code). word: a span is L whole words (the original's intent).")
flags.DEFINE_enum("span_context", "released", list(sampling.SPAN_CONTEXTS),
                  "released: a span of L units sits in L + L*K tokens (L*K of context "
                  "around it; the released code: about 1 in K+1 tokens are spans, single "
                  "random tokens fill up to --num_predict). paper: span and context take "
                  "L*K tokens together (about 1 in K tokens predicted).")
flags.DEFINE_integer("perm_size", None, "Block size of the factorization order within each "
                     "half; default --reuse_len (or --seq_len without reuse).")
flags.DEFINE_integer("num_passes", 1, "Passes over the corpus, each with new targets, "
                     "orders and B segments.")
flags.DEFINE_bool("uncased", False, "Lower-case the text.")
flags.DEFINE_bool("keep_accents", False, "Keep accents (the released models strip them).")
flags.DEFINE_bool("use_eod", True, "<eod> for every blank line (sentence_per_line, as "
                  "released: it joins the sentence before it) or after every file "
                  "(document_per_file).")
flags.DEFINE_integer("seed", 42, "Seed of every random choice.")
flags.DEFINE_integer("num_workers", 1, "Processes on this machine.")
flags.DEFINE_integer("task_index", 0, "This machine's share of the input (0-based).")
flags.DEFINE_integer("num_tasks", 1, "Machines sharing the input.")
flags.DEFINE_integer("chunk_bytes", 64 << 20, "Input bytes per unit of work (and per shard "
                     "per pass).")
flags.DEFINE_integer("max_line_chars", 100_000, "Longer lines are cut (and counted).")
flags.mark_flags_as_required(["input_glob", "spiece_model", "output_dir"])


def settings_from_flags() -> pipeline.DataSettings:
  perm_size = FLAGS.perm_size or FLAGS.reuse_len or FLAGS.seq_len
  rows = RowSettings(
      seq_len=FLAGS.seq_len, reuse_len=FLAGS.reuse_len, num_predict=FLAGS.num_predict,
      bsz_per_host=FLAGS.bsz_per_host, num_core_per_host=FLAGS.num_core_per_host,
      bi_data=FLAGS.bi_data, mask_alpha=FLAGS.mask_alpha, mask_beta=FLAGS.mask_beta,
      max_span=FLAGS.max_span, perm_size=perm_size, span_unit=FLAGS.span_unit,
      span_context=FLAGS.span_context)
  return pipeline.DataSettings(
      rows=rows, input_format=FLAGS.input_format, uncased=FLAGS.uncased,
      keep_accents=FLAGS.keep_accents, use_eod=FLAGS.use_eod, num_passes=FLAGS.num_passes,
      seed=FLAGS.seed, chunk_bytes=FLAGS.chunk_bytes, max_line_chars=FLAGS.max_line_chars)


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  try:
    with paths.reporting_disk_full(FLAGS.output_dir):
      manifest = pipeline.create(
          settings_from_flags(), FLAGS.input_glob, FLAGS.spiece_model, FLAGS.output_dir,
          num_workers=FLAGS.num_workers, task_index=FLAGS.task_index,
          num_tasks=FLAGS.num_tasks)
  except (ValueError, FileNotFoundError, NotADirectoryError, PermissionError,
          paths.DirectoryLockedError, paths.DiskFullError) as e:
    logging.error("%s", e)
    raise SystemExit(f"create_pretraining_data: {e}") from None
  print(summary(manifest, FLAGS.output_dir))


def summary(manifest, output_dir: str) -> str:
  """The closing line of a run (also of the Beam entry point)."""
  counts = manifest["counts"]
  return (f"{counts['documents']} documents, {counts['tokens']} tokens -> "
          f"{counts['examples']} examples ({counts['steps']} steps of "
          f"{manifest['settings']['bsz_per_host']} rows) in {counts['shards']} shards; "
          f"{counts['undecodable_lines']} lines with undecodable bytes, "
          f"{counts['overlong_lines']} overlong lines; manifest in {output_dir}")


def run():
  """The console command `xlnet-create-pretraining-data` (pyproject.toml's
  [project.scripts])."""
  console.run(main, __name__)


if __name__ == "__main__":
  run()
