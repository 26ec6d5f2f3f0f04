r"""Trains a SentencePiece model with the XLNet recipe and the released special ids.

  xlnet-train-sentencepiece --input 'corpus/*.txt' --model_prefix out/spiece --vocab_size 32000

(`python -m data_prep.train_sentencepiece ...` works the same from a checkout.)

Writes `out/spiece.model` and `out/spiece.vocab`. The recipe is the released one: unigram,
character coverage 0.99995, control symbols <cls> <sep> <pad> <mask> <eod> and user-defined
symbols <eop> . ( ) " - – £ €, so that ids 0..8 are
<unk> <s> </s> <cls> <sep> <pad> <mask> <eod> <eop> as in the released spiece.model.

Both files are written under temporary names and renamed when complete, holding a lock on
the prefix: a second run into the same --model_prefix is refused, and so is an existing
model unless --overwrite is given (records made with the old model are then refused by
pretraining: their manifest records its checksum).

Input: text files, one sentence or paragraph per line; blank lines are skipped. Every line
goes through `xlnet_tf.data.tokenization.normalize_text` (with --uncased / --keep_accents),
so the trainer sees exactly what encoding will see. Large corpora are sampled: at most
--input_sentence_size lines (chosen at random) are used.
"""

import glob
import os
import sys
from typing import Iterator, List, Optional, Sequence, Tuple, Union

from absl import app
from absl import flags
from absl import logging
import sentencepiece as spm

from xlnet_tf import console
from xlnet_tf import paths
from xlnet_tf.data import tokenization

# <unk>, <s>, </s>, the control and the user-defined symbols; --vocab_size must be larger.
NUM_RESERVED_IDS = 3 + len(tokenization.CONTROL_SYMBOLS) + len(tokenization.USER_DEFINED_SYMBOLS)

DEFAULT_INPUT_SENTENCE_SIZE = 10_000_000
DEFAULT_MAX_SENTENCE_LENGTH = 4192  # bytes, SentencePiece's default


def expand_inputs(input_files: Union[str, Sequence[str]]) -> List[str]:
  """Sorted, de-duplicated files matching comma-separated globs (a str) or a list of globs.

  Raises:
    ValueError: no glob given, or a glob that matches no file (named).
  """
  if isinstance(input_files, str):
    patterns = [p.strip() for p in input_files.split(",") if p.strip()]
  else:
    patterns = list(input_files)
  if not patterns:
    raise ValueError("--input: no file or glob given")
  files = []
  for pattern in patterns:
    matches = sorted(m for m in glob.glob(pattern) if os.path.isfile(m))
    if not matches:
      hint = paths.glob_hint(pattern)
      raise ValueError(f"--input: no file matches {pattern!r}" + (f".{hint}" if hint else ""))
    files.extend(matches)
  return sorted(set(files))


def numbered_lines(files: Sequence[str], lower: bool = False,
                   keep_accents: bool = False) -> Iterator[Tuple[str, int, str]]:
  """(file, line number from 1, line) of the non-blank lines of `files`, each through
  `normalize_text`. Raises ValueError for a file that is not UTF-8 (naming the file and
  line)."""
  for path in files:
    with open(path, encoding="utf-8") as f:
      line_number = 0
      try:
        for line_number, line in enumerate(f, 1):
          line = tokenization.normalize_text(line, lower=lower, keep_accents=keep_accents)
          if line:
            yield path, line_number, line
      except UnicodeDecodeError as e:
        raise ValueError(f"--input: {path} is not UTF-8 text ({e}; last line read: "
                         f"{line_number})") from None


def _where(location: Tuple[str, int, int]) -> str:
  path, line_number, num_bytes = location
  return f"line {line_number} of {path} ({num_bytes} bytes)"


def check_lines(files: Sequence[str], max_sentence_length: int, lower: bool = False,
                keep_accents: bool = False) -> None:
  """Reads up to the first line the trainer can use (usually the first line).

  Raises:
    ValueError: the files hold no text, or every line is longer than
      `max_sentence_length` bytes (SentencePiece would skip them all and fail with
      "[!sentences_.empty()]"), naming the first such line and the flag.
  """
  too_long: Optional[Tuple[str, int, int]] = None
  for path, line_number, line in numbered_lines(files, lower, keep_accents):
    num_bytes = len(line.encode("utf-8"))
    if num_bytes <= max_sentence_length:
      return
    too_long = too_long or (path, line_number, num_bytes)
  if too_long is None:
    raise ValueError(f"--input: the {len(files)} matching file(s) contain no text "
                     f"(only blank lines), e.g. {files[0]}")
  raise ValueError(
      f"--input: every line is longer than --max_sentence_length ({max_sentence_length} "
      f"bytes), e.g. {_where(too_long)}; SentencePiece skips such lines, which would leave "
      f"it nothing to train on. Raise --max_sentence_length, or split the text into one "
      f"sentence or paragraph per line")


def check_model_prefix(model_prefix: str) -> None:
  """Raises a clear error (naming --model_prefix) if PREFIX.model and PREFIX.vocab cannot
  be written: a prefix naming a directory ("out/"), a directory in the way, a path under
  a file, an unwritable or read-only location. Creates nothing."""
  if not model_prefix or model_prefix.endswith(("/", os.sep)):
    raise ValueError(f"--model_prefix {model_prefix!r} must be a path prefix such as "
                     f"out/spiece (writes out/spiece.model and out/spiece.vocab), not a "
                     f"directory")
  for suffix in (".model", ".vocab"):
    paths.check_output_file(model_prefix + suffix, "--model_prefix")


def check_replaceable(model_prefix: str, overwrite: bool) -> None:
  """Raises FileExistsError (naming --model_prefix and the file) if PREFIX.model or
  PREFIX.vocab exists and `overwrite` is false."""
  existing = [model_prefix + suffix for suffix in (".model", ".vocab")
              if os.path.exists(model_prefix + suffix)]
  if existing and not overwrite:
    raise FileExistsError(f"--model_prefix {model_prefix}: {existing[0]} exists; pass "
                          f"--overwrite to replace it (records made with it would then be "
                          f"refused by pretraining), or choose another prefix")


def lock(model_prefix: str) -> paths.DirectoryLock:
  """The lock of one --model_prefix (in its directory; other prefixes there are free)."""
  directory = os.path.dirname(os.path.abspath(model_prefix))
  return paths.DirectoryLock(directory, purpose="train_sentencepiece",
                             name=f".lock-{os.path.basename(model_prefix)}")


def train(input_files: Union[str, Sequence[str]], model_prefix: str, vocab_size: int,
          uncased: bool = False, keep_accents: bool = False,
          input_sentence_size: int = DEFAULT_INPUT_SENTENCE_SIZE,
          max_sentence_length: int = DEFAULT_MAX_SENTENCE_LENGTH,
          num_threads: int = None, verbose: bool = False, overwrite: bool = False) -> str:
  """Trains the model, checks it with `load_spiece` and returns the path of the .model file.

  PREFIX.model and PREFIX.vocab are written under temporary names (`paths.partial_path` of
  the prefix, with .model and .vocab) and renamed when the model has passed the check,
  holding `lock(model_prefix)`, under which a killed run's temporaries are removed.

  Args:
    input_files: comma-separated globs (str) or a list of globs/paths of UTF-8 text files.
    model_prefix: output path without extension; `.model` and `.vocab` are written.
    vocab_size: number of pieces, including the 17 reserved ones.
    uncased: lower-case the text (train an uncased model).
    keep_accents: keep accents (by default they are stripped, as in the released models).
    input_sentence_size: train on at most this many lines, sampled at random (0 = all).
      The sample differs from run to run (SentencePiece's seed does not reach its sampler);
      a corpus with fewer lines is used whole and gives the same model every time.
    max_sentence_length: lines longer than this many bytes are skipped by the trainer.
    num_threads: trainer threads; default all CPUs.
    verbose: show SentencePiece's training log.
    overwrite: replace an existing PREFIX.model / PREFIX.vocab.
  Raises:
    ValueError: a glob matching no file, input files without any text or with every line
      longer than max_sentence_length, a vocab_size not larger than the reserved ids, a
      model_prefix naming a directory, or a trained model without the released special ids.
    NotADirectoryError, IsADirectoryError, PermissionError: PREFIX.model or PREFIX.vocab
      cannot be written (checked before training).
    FileExistsError: PREFIX.model or PREFIX.vocab exists and `overwrite` is false.
    paths.DirectoryLockedError: another run is writing the same prefix.
  """
  if vocab_size <= NUM_RESERVED_IDS:
    raise ValueError(
        f"--vocab_size {vocab_size} is too small: {NUM_RESERVED_IDS} ids are reserved for "
        f"<unk> <s> </s>, the control symbols {' '.join(tokenization.CONTROL_SYMBOLS)} and the "
        f"user-defined symbols {' '.join(tokenization.USER_DEFINED_SYMBOLS)}")
  if input_sentence_size < 0 or max_sentence_length <= 0:
    raise ValueError(f"--input_sentence_size must be >= 0 (got {input_sentence_size}) and "
                     f"--max_sentence_length > 0 (got {max_sentence_length})")
  check_model_prefix(model_prefix)
  files = expand_inputs(input_files)
  check_lines(files, max_sentence_length, lower=uncased, keep_accents=keep_accents)
  with lock(model_prefix):
    check_replaceable(model_prefix, overwrite)     # under the lock: no run ends meanwhile
    if os.path.isfile(model_prefix + ".model"):
      logging.warning("--overwrite: replacing %s (sha256 %s); records made with it are "
                      "refused by pretraining until recreated with the new model",
                      model_prefix + ".model",
                      tokenization.spiece_sha256(model_prefix + ".model"))
    for stale in glob.glob(glob.escape(model_prefix) + ".partial-*"):   # a killed run's
      os.remove(stale)
    partial = paths.partial_path(model_prefix)
    try:
      stats = _train_partial(files, partial, vocab_size, uncased, keep_accents,
                             input_sentence_size, max_sentence_length, num_threads, verbose)
      try:
        sp = tokenization.load_spiece(partial + ".model")  # raises if an id differs
      except ValueError:
        paths.check_space_left(model_prefix + ".model")   # the trainer reports no failed write
        raise
      for suffix in (".vocab", ".model"):                 # the model last: it marks completion
        os.replace(partial + suffix, model_prefix + suffix)
    finally:
      for suffix in (".model", ".vocab"):
        if os.path.exists(partial + suffix):
          os.remove(partial + suffix)

  path = model_prefix + ".model"
  used = min(stats["lines"] - stats["too_long"], input_sentence_size or sys.maxsize)
  print(f"wrote {path}: vocab size {sp.get_piece_size()}, trained on {used} of "
        f"{stats['lines']} lines from {len(files)} file(s)"
        + (f" ({stats['too_long']} lines longer than --max_sentence_length "
           f"{max_sentence_length} bytes skipped, e.g. {_where(stats['first_too_long'])})"
           if stats["too_long"] else ""))
  print("special ids: " + " ".join(
      f"{piece}={sp.piece_to_id(piece)}" for piece in tokenization.SPECIAL_PIECES))
  return path


def _train_partial(files, model_prefix, vocab_size, uncased, keep_accents,
                   input_sentence_size, max_sentence_length, num_threads, verbose):
  """Runs the trainer on the lines of `files` into `model_prefix`; returns the line counts
  ({"lines", "too_long", "first_too_long"}), turning the trainer's errors into clear ones."""
  stats = {"lines": 0, "too_long": 0, "error": None, "first_too_long": None}

  def lines():
    try:
      for path, line_number, line in numbered_lines(files, lower=uncased,
                                                    keep_accents=keep_accents):
        stats["lines"] += 1
        num_bytes = len(line.encode("utf-8"))
        if num_bytes > max_sentence_length:
          stats["too_long"] += 1
          stats["first_too_long"] = stats["first_too_long"] or (path, line_number, num_bytes)
        yield line
    except Exception as e:  # the trainer would turn it into a RuntimeError: keep the original
      stats["error"] = e
      raise

  try:
    _run_trainer(lines(), model_prefix, vocab_size, input_sentence_size, max_sentence_length,
                 num_threads, verbose)
  except RuntimeError as e:
    if stats["error"] is not None:
      raise stats["error"] from None
    if "Vocabulary size too high" in str(e):
      raise ValueError(f"--vocab_size {vocab_size} is too large for the input "
                       f"({stats['lines']} lines): {e}") from None
    if "sentences_.empty()" in str(e):
      raise ValueError(
          f"--input: SentencePiece kept none of the {stats['lines']} lines ({stats['too_long']} "
          f"longer than --max_sentence_length {max_sentence_length} bytes"
          + (f", e.g. {_where(stats['first_too_long'])}" if stats["first_too_long"] else "")
          + "): raise --max_sentence_length or split the long lines") from None
    raise
  return stats


def _run_trainer(sentences, model_prefix, vocab_size, input_sentence_size, max_sentence_length,
                 num_threads, verbose):
  """SentencePiece's trainer with the released XLNet recipe, fed from `sentences`."""
  spm.SentencePieceTrainer.train(
      sentence_iterator=sentences,
      model_prefix=model_prefix,
      vocab_size=vocab_size,
      model_type="unigram",
      character_coverage=0.99995,
      unk_id=tokenization.UNK_ID,
      bos_id=tokenization.BOS_ID,
      eos_id=tokenization.EOS_ID,
      pad_id=-1,  # <pad> is a control symbol at PAD_ID, not the trainer's pad piece
      # Lists, not comma-joined strings: the wrapper CSV-quotes list items, and '"' in a
      # plain string would be parsed as a quote and swallow the symbols after it.
      control_symbols=list(tokenization.CONTROL_SYMBOLS),
      user_defined_symbols=list(tokenization.USER_DEFINED_SYMBOLS),
      input_sentence_size=input_sentence_size,
      shuffle_input_sentence=True,
      max_sentence_length=max_sentence_length,
      num_threads=num_threads or os.cpu_count() or 1,
      minloglevel=0 if verbose else 2)


FLAGS = flags.FLAGS


def define_flags():
  flags.DEFINE_list("input", None, "Comma-separated globs of UTF-8 text files, one sentence "
                    "or paragraph per line.")
  flags.DEFINE_string("model_prefix", None, "Output prefix: writes PREFIX.model, PREFIX.vocab.")
  flags.DEFINE_integer("vocab_size", 32000, "Vocabulary size (the released models: 32000).")
  flags.DEFINE_bool("uncased", False, "Lower-case the text (an uncased model).")
  flags.DEFINE_bool("keep_accents", False, "Keep accents; by default NFKD + drop combining "
                    "marks, as for the released models.")
  flags.DEFINE_integer("input_sentence_size", DEFAULT_INPUT_SENTENCE_SIZE,
                       "Train on at most this many lines, sampled at random (0 = all).")
  flags.DEFINE_integer("max_sentence_length", DEFAULT_MAX_SENTENCE_LENGTH,
                       "Lines longer than this many bytes (after normalisation) are skipped "
                       "by SentencePiece's trainer; a run where every line is longer fails "
                       "before training, naming the first such line.")
  flags.DEFINE_integer("num_threads", None, "Trainer threads (default: all CPUs).")
  flags.DEFINE_bool("verbose", False, "Show SentencePiece's training log.")
  flags.DEFINE_bool("overwrite", False, "Replace an existing PREFIX.model and PREFIX.vocab "
                    "(records made with the old model are then refused by pretraining).")
  flags.mark_flags_as_required(["input", "model_prefix"])


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments {argv[1:]}; inputs go in --input")
  try:
    with paths.reporting_disk_full(FLAGS.model_prefix + ".model"):
      train(FLAGS.input, FLAGS.model_prefix, FLAGS.vocab_size, uncased=FLAGS.uncased,
            keep_accents=FLAGS.keep_accents, input_sentence_size=FLAGS.input_sentence_size,
            max_sentence_length=FLAGS.max_sentence_length, num_threads=FLAGS.num_threads,
            verbose=FLAGS.verbose, overwrite=FLAGS.overwrite)
  except (ValueError, NotADirectoryError, IsADirectoryError, PermissionError,
          FileExistsError, paths.DirectoryLockedError, paths.DiskFullError) as e:
    raise SystemExit(f"train_sentencepiece: {e}") from None


def run():
  """The console command `xlnet-train-sentencepiece` (pyproject.toml's [project.scripts])."""
  define_flags()
  console.run(main, __name__)


if __name__ == "__main__":
  run()
