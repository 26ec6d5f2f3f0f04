"""Input text: finding files, cutting them into chunks, and tokenizing a chunk.

Two input formats:
  sentence_per_line   the original format: one sentence per line, a blank line ends a
                      document. Large files are cut into chunks at document boundaries.
  document_per_file   each file is one document; its non-blank lines (sentences or
                      paragraphs) are its sentence units; blank lines are ignored.

A chunk is the unit of work (and of parallelism and restart): a few files, or a byte range
of one large file, about `chunk_bytes` of text. Chunks depend only on the files and
`chunk_bytes`, never on the number of workers, so the output does not either.
"""

import dataclasses
from typing import Dict, Iterator, List, NamedTuple, Sequence, Tuple

import numpy as np

from xlnet_tf import paths
from xlnet_tf.data import storage
from xlnet_tf.data import tokenization

INPUT_FORMATS = ("sentence_per_line", "document_per_file")
_ALIGN_BLOCK = 1 << 16


def find_input_files(patterns: Sequence[str], flag: str = "--input_glob") -> List[str]:
  """Sorted, de-duplicated files matching the comma-separated globs, or a clear error."""
  files = set()
  for pattern in patterns:
    matched = [f for f in storage.glob(pattern) if not storage.isdir(f)]
    if not matched:
      hint = paths.glob_hint(pattern)
      raise FileNotFoundError(f"{flag}: no file matches {pattern!r}"
                              + (f".{hint}" if hint else ""))
    files.update(matched)
  return sorted(files)


class FileRange(NamedTuple):
  path: str
  start: int
  end: int          # exclusive byte offset


@dataclasses.dataclass(frozen=True)
class Chunk:
  index: int
  ranges: Tuple[FileRange, ...]

  @property
  def num_bytes(self) -> int:
    return sum(r.end - r.start for r in self.ranges)

  def describe(self) -> List[List]:
    return [[r.path, r.start, r.end] for r in self.ranges]


def plan_chunks(files: Sequence[str], input_format: str, chunk_bytes: int) -> List[Chunk]:
  """Groups small files and cuts large ones (sentence_per_line only) into chunks."""
  ranges = []
  for path in files:
    size = storage.size(path)
    if size == 0:
      continue
    if input_format == "sentence_per_line" and size > chunk_bytes:
      ranges.extend(_split_at_documents(path, size, chunk_bytes))
    else:
      ranges.append(FileRange(path, 0, size))
  chunks, current, current_bytes = [], [], 0
  for file_range in ranges:
    current.append(file_range)
    current_bytes += file_range.end - file_range.start
    if current_bytes >= chunk_bytes:
      chunks.append(Chunk(len(chunks), tuple(current)))
      current, current_bytes = [], 0
  if current:
    chunks.append(Chunk(len(chunks), tuple(current)))
  return chunks


def _split_at_documents(path: str, size: int, chunk_bytes: int) -> List[FileRange]:
  """Byte ranges of about chunk_bytes, each starting right after a blank line."""
  cuts = [0]
  with storage.open_file(path, "rb") as f:
    target = chunk_bytes
    while target < size:
      cut = _next_document_start(f, target, size)
      if cut >= size:
        break
      if cut > cuts[-1]:
        cuts.append(cut)
      target = max(cut, target) + chunk_bytes
  cuts.append(size)
  return [FileRange(path, a, b) for a, b in zip(cuts[:-1], cuts[1:])]


def _next_document_start(f, offset: int, size: int) -> int:
  """The first offset >= `offset` that follows a blank line ("\\n\\n"), or `size`."""
  position = max(0, offset - 1)
  carry = b""
  while position < size:
    f.seek(position)
    block = f.read(_ALIGN_BLOCK)
    if not block:
      break
    data = carry + block
    found = data.find(b"\n\n")
    if found < 0:
      found = data.find(b"\n\r\n")
      skip = 3
    else:
      skip = 2
    if found >= 0:
      return position - len(carry) + found + skip
    carry = data[-2:]
    position += len(block)
  return size


# ---- reading and tokenizing ------------------------------------------------------------------

def read_documents(chunk: Chunk, input_format: str, max_line_chars: int,
                   counts: Dict[str, int]) -> Iterator[List[str]]:
  """Yields the documents of a chunk as lists of raw (not yet normalised) lines.

  Undecodable bytes are replaced by U+FFFD and lines longer than `max_line_chars` are cut
  to that length; both are counted in `counts` (undecodable_lines, overlong_lines).
  """
  for file_range in chunk.ranges:
    with storage.open_file(file_range.path, "rb") as f:
      f.seek(file_range.start)
      data = f.read(file_range.end - file_range.start)
    document = []
    for raw in data.split(b"\n"):
      try:
        line = raw.decode("utf-8")
      except UnicodeDecodeError:
        line = raw.decode("utf-8", errors="replace")
        counts["undecodable_lines"] += 1
      if len(line) > max_line_chars:
        line = line[:max_line_chars]
        counts["overlong_lines"] += 1
      if line.strip():
        document.append(line)
      elif input_format == "sentence_per_line" and document:
        yield document
        document = []
    if document:
      yield document


def tokenize_chunk(chunk: Chunk, sp, *, input_format: str, lower: bool, keep_accents: bool,
                   use_eod: bool, max_line_chars: int,
                   lines_per_batch: int = 4096) -> Tuple[np.ndarray, np.ndarray, Dict]:
  """The chunk as one token sequence.

  Each non-blank line is normalised and encoded as released; with `use_eod` an <eod>
  follows every document. `sent_ids` flips at every line and at every <eod>, so sentence
  boundaries (where A and B may be cut) are line and document boundaries.

  Returns:
    tokens int32 [N], sent_ids bool [N], counts {documents, lines, tokens,
    undecodable_lines, overlong_lines}.
  """
  counts = {"documents": 0, "lines": 0, "tokens": 0, "undecodable_lines": 0,
            "overlong_lines": 0}
  lines: List[str] = []
  document_ends: List[int] = []                # len(lines) at the end of each document
  for document in read_documents(chunk, input_format, max_line_chars, counts):
    counts["documents"] += 1
    for line in document:
      text = tokenization.normalize_text(line, lower=lower, keep_accents=keep_accents)
      if text:
        lines.append(text)
    document_ends.append(len(lines))
  counts["lines"] = len(lines)

  encoded: List[List[int]] = []
  for begin in range(0, len(lines), lines_per_batch):
    encoded.extend(tokenization.encode_lines(sp, lines[begin:begin + lines_per_batch]))
  pieces: List[np.ndarray] = []
  eod = np.array([tokenization.EOD_ID], np.int32)
  begin = 0
  for end in document_ends:
    pieces.extend(np.asarray(ids, np.int32) for ids in encoded[begin:end] if ids)
    if use_eod:
      pieces.append(eod)
    begin = end

  if not pieces:
    return np.zeros([0], np.int32), np.zeros([0], bool), counts
  lengths = np.array([len(p) for p in pieces])
  tokens = np.concatenate(pieces)
  sent_ids = np.repeat(np.arange(len(pieces)) % 2 == 1, lengths)
  counts["tokens"] = int(len(tokens))
  return tokens, sent_ids, counts
