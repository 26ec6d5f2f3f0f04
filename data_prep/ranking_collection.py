r"""Builds the bundled document-ranking collection from the bundled Moby-Dick.

  python -m data_prep.ranking_collection --output_dir=data_prep/sample_data/ranking/moby_dick

A known-item collection constructed by us from real text and the author's own titling:
  queries    the heading of each of the book's 138 files (data_prep/sample_data/moby_dick):
             the 135 chapter titles ("The Whiteness of The Whale.", qid "42", the title
             without its "CHAPTER 42. "), and the whole first line of the etymology, the
             extracts and the epilogue (qids "etymology", "extracts", "epilogue").
  documents  the files' text without the heading, cut into passages at paragraph
             boundaries, each of about 150-250 words (`cut_passages`); docids
             "md-042-03" (chapter 42's third passage), "md-epilogue-01", ...
  qrels      every passage of the file a heading heads is relevant (grade 1) to it, every
             other passage is unjudged (non-relevant for the measures).

Writes OUTPUT_DIR/queries.tsv (`qid<TAB>text`), documents.jsonl (`{"docid", "text"}` a
line) and qrels.txt (`qid 0 docid 1`), in book order, each under a temporary name then
renamed; the output may not be the source directory. Deterministic: the same source gives
byte-identical files (tests/data_prep/test_ranking_collection.py checks the bundled copy).
"""

import math
import os
import re
from typing import Dict, List, Tuple

from xlnet_tf import console  # noqa: E402

console.start()  # before TensorFlow is imported (trec_files writes through feature_cache)

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from xlnet_tf.data import sample_data  # noqa: E402
from xlnet_tf.data import trec_files  # noqa: E402

MIN_WORDS = 150
MAX_WORDS = 250
# A chapter's last passage shorter than this joins the passage before it.
MIN_LAST_WORDS = 75
# The files of the book outside its chapters, in book order around the chapters.
FRONT_MATTER = ("etymology", "extracts")
BACK_MATTER = ("epilogue",)

_CHAPTER_HEADING = re.compile(r"CHAPTER (\d+)\. (.+)")
# A sentence ends at . ! or ? (and any closing quotes or brackets) before white space.
_SENTENCE_END = re.compile(r"(?<=[.!?])([\"'”’)\]]*)\s+")


def _words(text: str) -> int:
  return len(text.split())


def _sentences(paragraph: str) -> List[str]:
  pieces, start = [], 0
  for match in _SENTENCE_END.finditer(paragraph):
    pieces.append(paragraph[start:match.end(1)])
    start = match.end()
  pieces.append(paragraph[start:])
  return [p for p in pieces if p.strip()]


def _units(paragraph: str) -> List[str]:
  """The paragraph, or for one over MAX_WORDS words its sentences packed into
  ceil(words / MAX_WORDS) pieces of about equal length (a longer sentence stays whole)."""
  words = _words(paragraph)
  if words <= MAX_WORDS:
    return [paragraph]
  target = words / math.ceil(words / MAX_WORDS)
  units, current = [], []
  for sentence in _sentences(paragraph):
    if current and _words(" ".join(current + [sentence])) > MAX_WORDS:
      units.append(" ".join(current))
      current = []
    current.append(sentence)
    if _words(" ".join(current)) >= target:
      units.append(" ".join(current))
      current = []
  if current:
    units.append(" ".join(current))
  return units


def cut_passages(paragraphs: List[str]) -> List[str]:
  """The paragraphs packed into passages in order: a passage takes paragraphs (a
  paragraph over MAX_WORDS words: its sentence groups, `_units`) until it holds at least
  MIN_WORDS words or the next would take it over MAX_WORDS; a last passage under
  MIN_LAST_WORDS words joins the one before. Paragraphs are joined by newlines, a long
  paragraph's pieces too; nothing is dropped or changed."""
  passages, current = [], []
  for paragraph in paragraphs:
    for unit in _units(paragraph):
      if current and _words("\n".join(current + [unit])) > MAX_WORDS:
        passages.append(current)
        current = []
      current.append(unit)
      if _words("\n".join(current)) >= MIN_WORDS:
        passages.append(current)
        current = []
  if current:
    if passages and _words("\n".join(current)) < MIN_LAST_WORDS:
      passages[-1] = passages[-1] + current
    else:
      passages.append(current)
  return ["\n".join(p) for p in passages]


def _read_file(path: str) -> Tuple[str, List[str]]:
  """(heading, paragraphs) of one file of the bundled Moby-Dick."""
  with open(path, encoding="utf-8") as f:
    lines = f.read().splitlines()
  if not lines or not lines[0].strip():
    raise ValueError(f"{path}:1: expected the chapter's heading, got {lines[:1]!r}")
  paragraphs = [" ".join(line.split()) for line in lines[1:] if line.strip()]
  if not paragraphs:
    raise ValueError(f"{path}: expected paragraphs after the heading, found none")
  return lines[0].strip(), paragraphs


def build_collection(source_dir: str) -> Tuple[Dict[str, str], Dict[str, str],
                                               Dict[str, Dict[str, int]]]:
  """(queries, documents, qrels) of the collection (module doc) from the Moby-Dick files
  of `source_dir` (chapter_N.txt, etymology.txt, extracts.txt, epilogue.txt).

  Raises:
    ValueError: a missing or empty file, a chapter whose heading is not "CHAPTER N. Title"
      with N its file's number, or chapters that are not 1..N without a gap.
  """
  chapters = sorted(int(m.group(1)) for name in os.listdir(source_dir)
                    for m in [re.fullmatch(r"chapter_(\d+)\.txt", name)] if m)
  if chapters != list(range(1, len(chapters) + 1)) or not chapters:
    raise ValueError(f"{source_dir}: expected chapter_1.txt .. chapter_N.txt without a gap, "
                     f"found chapters {chapters[:5]}...{chapters[-5:]}")
  files = ([(name, f"{name}.txt") for name in FRONT_MATTER]
           + [(str(n), f"chapter_{n}.txt") for n in chapters]
           + [(name, f"{name}.txt") for name in BACK_MATTER])
  queries, documents, qrels = {}, {}, {}
  for qid, filename in files:
    path = os.path.join(source_dir, filename)
    if not os.path.isfile(path):
      raise ValueError(f"{path}: expected this file of the book; it does not exist")
    heading, paragraphs = _read_file(path)
    if qid.isdigit():
      match = _CHAPTER_HEADING.fullmatch(heading)
      if not match or match.group(1) != qid:
        raise ValueError(f"{path}:1: expected 'CHAPTER {qid}. Title', got {heading!r}")
      queries[qid] = match.group(2)
      stem = f"md-{int(qid):03d}"
    else:
      queries[qid] = heading
      stem = f"md-{qid}"
    qrels[qid] = {}
    for i, passage in enumerate(cut_passages(paragraphs), 1):
      docid = f"{stem}-{i:02d}"
      documents[docid] = passage
      qrels[qid][docid] = 1
  return queries, documents, qrels


def write_collection(source_dir: str, output_dir: str) -> Dict[str, int]:
  """Writes queries.tsv, documents.jsonl and qrels.txt of `source_dir`'s collection into
  `output_dir` (created); returns the counts.

  Raises:
    ValueError: `output_dir` is `source_dir` (a tool never writes into its input), or
      `build_collection`'s errors (before anything is written).
  """
  if os.path.realpath(output_dir) == os.path.realpath(source_dir):
    raise ValueError(f"--output_dir {output_dir} is the source directory; expected another")
  queries, documents, qrels = build_collection(source_dir)
  os.makedirs(output_dir, exist_ok=True)
  trec_files.write_queries(os.path.join(output_dir, "queries.tsv"), queries)
  trec_files.write_documents(os.path.join(output_dir, "documents.jsonl"), documents)
  trec_files.write_qrels(os.path.join(output_dir, "qrels.txt"), qrels)
  words = [_words(text) for text in documents.values()]
  return {"queries": len(queries), "documents": len(documents),
          "judgments": sum(len(j) for j in qrels.values()), "words": sum(words),
          "min_words": min(words), "max_words": max(words)}


FLAGS = flags.FLAGS


def define_flags():
  flags.DEFINE_string("source_dir", sample_data.path("moby_dick"),
                      "The Moby-Dick files (default: the bundled copy).")
  flags.DEFINE_string("output_dir", None, "Where queries.tsv, documents.jsonl and qrels.txt "
                      "are written.")
  flags.mark_flags_as_required(["output_dir"])


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments {argv[1:]}")
  try:
    counts = write_collection(FLAGS.source_dir, FLAGS.output_dir)
  except (ValueError, OSError) as e:
    raise SystemExit(f"ranking_collection: {e}") from None
  print(f"{FLAGS.output_dir}: " + ", ".join(f"{k} {v}" for k, v in counts.items()))


def run():
  define_flags()
  console.run(main, __name__)


if __name__ == "__main__":
  run()
