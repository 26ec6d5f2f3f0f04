r"""Trains a SentencePiece model with the XLNet recipe and the released special ids.

  python -m data_prep.train_sentencepiece \
      --input 'corpus/*.txt' --model_prefix out/spiece --vocab_size 32000

Writes `out/spiece.model` and `out/spiece.vocab`. The recipe is the released one: unigram,
character coverage 0.99995, control symbols <cls> <sep> <pad> <mask> <eod> and user-defined
symbols <eop> . ( ) " - – £ €, so that ids 0..8 are
<unk> <s> </s> <cls> <sep> <pad> <mask> <eod> <eop> as in the released spiece.model.

Input: text files, one sentence or paragraph per line; blank lines are skipped. Every line
goes through `xlnet_tf.data.tokenization.normalize_text` (with --uncased / --keep_accents),
so the trainer sees exactly what encoding will see. Large corpora are sampled: at most
--input_sentence_size lines (chosen at random) are used.
"""

import glob
import os
import sys
from typing import Iterator, List, Sequence, Union

from absl import app
from absl import flags
import sentencepiece as spm

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
      raise ValueError(f"--input: no file matches {pattern!r}")
    files.extend(matches)
  return sorted(set(files))


def _has_text(path: str) -> bool:
  """True once a non-blank line is found (reads only up to the first one)."""
  return next(normalized_lines([path]), None) is not None


def normalized_lines(files: Sequence[str], lower: bool = False,
                     keep_accents: bool = False) -> Iterator[str]:
  """The non-blank lines of `files`, each through `normalize_text`.

  Raises:
    ValueError: a file that is not UTF-8 (naming the file and line).
  """
  for path in files:
    with open(path, encoding="utf-8") as f:
      line_number = 0
      try:
        for line_number, line in enumerate(f, 1):
          line = tokenization.normalize_text(line, lower=lower, keep_accents=keep_accents)
          if line:
            yield line
      except UnicodeDecodeError as e:
        raise ValueError(f"--input: {path} is not UTF-8 text ({e}; last line read: "
                         f"{line_number})") from None


def train(input_files: Union[str, Sequence[str]], model_prefix: str, vocab_size: int,
          uncased: bool = False, keep_accents: bool = False,
          input_sentence_size: int = DEFAULT_INPUT_SENTENCE_SIZE,
          max_sentence_length: int = DEFAULT_MAX_SENTENCE_LENGTH,
          num_threads: int = None, verbose: bool = False) -> str:
  """Trains the model, checks it with `load_spiece` and returns the path of the .model file.

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
  Raises:
    ValueError: a glob matching no file, input files without any text, a vocab_size not
      larger than the reserved ids, or a trained model without the released special ids.
  """
  if vocab_size <= NUM_RESERVED_IDS:
    raise ValueError(
        f"--vocab_size {vocab_size} is too small: {NUM_RESERVED_IDS} ids are reserved for "
        f"<unk> <s> </s>, the control symbols {' '.join(tokenization.CONTROL_SYMBOLS)} and the "
        f"user-defined symbols {' '.join(tokenization.USER_DEFINED_SYMBOLS)}")
  if input_sentence_size < 0 or max_sentence_length <= 0:
    raise ValueError(f"--input_sentence_size must be >= 0 (got {input_sentence_size}) and "
                     f"--max_sentence_length > 0 (got {max_sentence_length})")
  files = expand_inputs(input_files)
  if not any(_has_text(path) for path in files):
    raise ValueError(f"--input: the {len(files)} matching file(s) contain no text "
                     f"(only blank lines), e.g. {files[0]}")
  directory = os.path.dirname(model_prefix)
  if directory:
    os.makedirs(directory, exist_ok=True)

  stats = {"lines": 0, "too_long": 0, "error": None}

  def lines():
    try:
      for line in normalized_lines(files, lower=uncased, keep_accents=keep_accents):
        stats["lines"] += 1
        if len(line.encode("utf-8")) > max_sentence_length:
          stats["too_long"] += 1
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
    raise

  path = model_prefix + ".model"
  sp = tokenization.load_spiece(path)  # raises if an id differs from the released ones
  used = min(stats["lines"] - stats["too_long"], input_sentence_size or sys.maxsize)
  print(f"wrote {path}: vocab size {sp.get_piece_size()}, trained on {used} of "
        f"{stats['lines']} lines from {len(files)} file(s)"
        + (f" ({stats['too_long']} lines longer than --max_sentence_length "
           f"{max_sentence_length} bytes skipped)" if stats["too_long"] else ""))
  print("special ids: " + " ".join(
      f"{piece}={sp.piece_to_id(piece)}" for piece in tokenization.SPECIAL_PIECES))
  return path


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
                       "Lines longer than this many bytes are skipped.")
  flags.DEFINE_integer("num_threads", None, "Trainer threads (default: all CPUs).")
  flags.DEFINE_bool("verbose", False, "Show SentencePiece's training log.")
  flags.mark_flags_as_required(["input", "model_prefix"])


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments {argv[1:]}; inputs go in --input")
  train(FLAGS.input, FLAGS.model_prefix, FLAGS.vocab_size, uncased=FLAGS.uncased,
        keep_accents=FLAGS.keep_accents, input_sentence_size=FLAGS.input_sentence_size,
        max_sentence_length=FLAGS.max_sentence_length, num_threads=FLAGS.num_threads,
        verbose=FLAGS.verbose)


if __name__ == "__main__":
  define_flags()
  app.run(main)
