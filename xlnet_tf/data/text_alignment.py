"""Exact character <-> piece alignment for span tasks (SQuAD): raw text in, pieces out.

Three steps, each keeping track of where every character came from:

  raw text --normalize_with_spans--> normalized text --piece_spans--> pieces
     ^                                   |                               |
     +-------- raw_spans: each piece's [begin, end) in the RAW text <-----+

`normalize_with_spans` equals `tokenization.normalize_text` character for character and
gives, per normalized character, the raw [begin, end) it came from (whitespace runs, "``"
and "''" -> '"', NFKD with combining marks dropped, lower-casing). `piece_spans` equals
`tokenization.encode_pieces` (the "2000," re-split included) and gives per piece its
[begin, end) in the normalized text without the piece's leading space; it uses
SentencePiece's own byte offsets.

`cuts` make answer boundaries piece boundaries: the text is encoded in segments split at
those positions, a segment that starts inside a word with a copy of the model that adds
no "▁" (so "Nieuwl|and" gives in-vocabulary continuation pieces). Training features of
an answer whose start or end falls inside a piece use this, so that the gold character
span -> piece span -> character span round trip is exact.

  >>> aligned = align(sp, "Father Julius Nieuwland", cuts=[0, 20])
  >>> aligned.pieces, aligned.raw_spans
"""

import dataclasses
import unicodedata
from typing import Iterable, List, Optional, Sequence, Tuple

import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2

from xlnet_tf.data import tokenization
from xlnet_tf.data.tokenization import SPIECE_UNDERLINE

Span = Tuple[int, int]


def normalize_with_spans(text: str, lower: bool = False,
                         keep_accents: bool = False) -> Tuple[str, List[Span]]:
  """(normalize_text(text, ...), per normalized character its raw [begin, end))."""
  chars: List[Tuple[str, Span]] = []
  space: Optional[Span] = None
  for i, ch in enumerate(text):                       # " ".join(text.split())
    if ch.isspace():
      if chars and space is None:
        space = (i, i + 1)
      continue
    if space is not None:
      chars.append((" ", space))
      space = None
    chars.append((ch, (i, i + 1)))
  for quote in ("``", "''"):                          # then "``" -> '"', "''" -> '"'
    merged: List[Tuple[str, Span]] = []
    k = 0
    while k < len(chars):
      if k + 1 < len(chars) and chars[k][0] + chars[k + 1][0] == quote:
        merged.append(('"', (chars[k][1][0], chars[k + 1][1][1])))
        k += 2
      else:
        merged.append(chars[k])
        k += 1
    chars = merged
  if not keep_accents and not all(ch.isascii() for ch, _ in chars):
    chars = [(d, span) for ch, span in chars
             for d in unicodedata.normalize("NFKD", ch) if not unicodedata.combining(d)]
  normalized = "".join(ch for ch, _ in chars)
  spans = [span for _, span in chars]
  if lower:
    lowered = normalized.lower()                      # whole-string: final sigma rule
    spans = [span for ch, span in chars for _ in range(len(ch.lower()))]
    normalized = lowered
  expected = tokenization.normalize_text(text, lower=lower, keep_accents=keep_accents)
  if normalized != expected or len(spans) != len(normalized):
    raise AssertionError(f"normalize_with_spans disagrees with normalize_text on {text!r}")
  return normalized, spans


def continuation_processor(sp: spm.SentencePieceProcessor) -> spm.SentencePieceProcessor:
  """A copy of `sp` that does not put "▁" before the text (for text inside a word)."""
  proto = sentencepiece_model_pb2.ModelProto()
  proto.ParseFromString(sp.serialized_model_proto())
  proto.normalizer_spec.add_dummy_prefix = False
  copy = spm.SentencePieceProcessor()
  copy.LoadFromSerializedProto(proto.SerializeToString())
  return copy


def _segment_pieces(sp, text: str) -> Tuple[List[str], List[Span]]:
  """Pieces of `text` with their [begin, end) in `text`, leading spaces excluded."""
  proto = sp.encode(text, out_type="proto")
  encoded = text.encode("utf-8")
  char_at = [0] * (len(encoded) + 1)                  # byte offset -> char offset
  position = 0
  for k, ch in enumerate(text):
    for _ in range(len(ch.encode("utf-8"))):
      char_at[position] = k
      position += 1
  char_at[len(encoded)] = len(text)
  pieces, spans = [], []
  for item in proto.pieces:
    begin, end = char_at[item.begin], char_at[item.end]
    while begin < end and text[begin] == " ":
      begin += 1
    piece = item.piece
    if tokenization._needs_resplit(piece):           # "▁2000," -> "▁2000", ","
      parts = tokenization._resplit(sp, piece)
      widths = [len(part.replace(SPIECE_UNDERLINE, "")) for part in parts]
      if sum(widths) == end - begin:
        for part, width in zip(parts, widths):
          pieces.append(part)
          spans.append((begin, begin + width))
          begin += width
        continue
      pieces.extend(parts)                            # surface changed by normalisation:
      spans.extend([(begin, end)] + [(end, end)] * (len(parts) - 1))
      continue
    pieces.append(piece)
    spans.append((begin, end))
  return pieces, spans


@dataclasses.dataclass(frozen=True)
class Aligned:
  normalized: str
  pieces: List[str]
  spans: List[Span]            # in the normalized text
  raw_spans: List[Span]        # in the raw text (empty spans stay empty)


def align(sp: spm.SentencePieceProcessor, text: str, lower: bool = False,
          keep_accents: bool = False, cuts: Iterable[int] = (),
          continuation: Optional[spm.SentencePieceProcessor] = None) -> Aligned:
  """Pieces of raw `text` and their character spans (see the module docstring).

  Args:
    cuts: RAW character offsets that must be piece boundaries (answer starts and ends).
    continuation: `continuation_processor(sp)`, built if needed and cuts fall mid-word.
  """
  normalized, char_spans = normalize_with_spans(text, lower, keep_accents)
  # Raw offsets -> normalized offsets: the first normalized char whose raw span starts at
  # or after the cut.
  points = sorted({k for cut in cuts
                   for k in [next((n for n, (b, _) in enumerate(char_spans) if b >= cut),
                                  len(normalized))] if 0 < k < len(normalized)})
  pieces: List[str] = []
  spans: List[Span] = []
  bounds = [0] + points + [len(normalized)]
  for start, stop in zip(bounds[:-1], bounds[1:]):
    segment = normalized[start:stop]
    inside_word = start > 0 and normalized[start - 1] != " " and segment[:1] != " "
    if inside_word and continuation is None:
      continuation = continuation_processor(sp)
    seg_pieces, seg_spans = _segment_pieces(continuation if inside_word else sp, segment)
    pieces.extend(seg_pieces)
    spans.extend((start + b, start + e) for b, e in seg_spans)
  raw = [(char_spans[b][0], char_spans[e - 1][1]) if e > b else
         ((char_spans[b][0],) * 2 if b < len(char_spans) else (len(text), len(text)))
         for b, e in spans]
  return Aligned(normalized, pieces, spans, raw)


def char_to_piece_span(raw_spans: Sequence[Span], begin: int, end: int) -> Optional[Span]:
  """The first and last piece (inclusive) overlapping raw [begin, end), or None."""
  inside = [k for k, (b, e) in enumerate(raw_spans) if e > b and b < end and e > begin]
  return (inside[0], inside[-1]) if inside else None


def piece_to_char_span(raw_spans: Sequence[Span], first: int, last: int) -> Span:
  """Raw [begin, end) from piece `first` to piece `last` (inclusive)."""
  return raw_spans[first][0], raw_spans[last][1]
