"""Character <-> piece alignment for SQuAD on the real sample passages (and constructed
answers over them: inside words, next to punctuation, accents, "2000,"; those are slow).
"""

import glob
import os
import re

import pytest

from helpers import CORPUS_GLOB
from helpers import with_extra_pieces
from xlnet_tf.data import text_alignment
from xlnet_tf.data import tokenization
from xlnet_tf.data.squad import read_squad

QA_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                      "data_prep", "sample_data", "qa")
QA_FILES = sorted(glob.glob(os.path.join(QA_DIR, "*.json")))


def _contexts():
  return sorted({e.context for path in QA_FILES for e in read_squad(path)[0]})


def _real_lines():
  lines = list(_contexts())
  for path in sorted(glob.glob(CORPUS_GLOB))[:10]:
    with open(path, encoding="utf-8") as f:
      lines.extend(line for line in f if line.strip())
  lines += ["  Café  ``naïve'' résumé\tΣΟΦΟΣ İstanbul ﬁne ", "Ünïcode  two",
            "a''b``c"]
  return lines


@pytest.mark.parametrize("lower", [False, True])
def test_normalization_spans_equal_normalize_text(lower):
  for line in _real_lines():
    normalized, spans = text_alignment.normalize_with_spans(line, lower=lower)
    assert normalized == tokenization.normalize_text(line, lower=lower)
    assert len(spans) == len(normalized)
    for ch, (begin, end) in zip(normalized, spans):
      if ch != " " and ch != "ς":       # (a word-final Σ lower-cases to ς only in context)
        assert ch in tokenization.normalize_text(line[begin:end], lower=lower), (line, ch)


def test_pieces_equal_encode_pieces_and_spans_tile_the_text(spiece_model):
  sp = tokenization.load_spiece(spiece_model)
  for line in _real_lines():
    aligned = text_alignment.align(sp, line)
    assert aligned.pieces == tokenization.encode_pieces(sp, aligned.normalized)
    covered = "".join(aligned.normalized[b:e] for b, e in aligned.spans)
    assert covered == aligned.normalized.replace(" ", "")
    assert all(b1 <= b2 and e1 <= b2 for (b1, e1), (b2, _) in
               zip(aligned.spans, aligned.spans[1:]))


def _round_trip(sp, continuation, context, begin, end):
  aligned = text_alignment.align(sp, context, cuts=[begin, end], continuation=continuation)
  span = text_alignment.char_to_piece_span(aligned.raw_spans, begin, end)
  assert span is not None
  first, last = span
  got_begin, got_end = text_alignment.piece_to_char_span(aligned.raw_spans, first, last)
  # A piece that starts inside a word is a continuation piece (no "▁"), as in running text.
  if begin > 0 and not context[begin - 1].isspace():
    assert not aligned.pieces[first].startswith("▁"), (context[begin:end], aligned.pieces)
  return context[got_begin:got_end]


def test_real_answers_round_trip_exactly(spiece_model):
  """Every answer of the 21 real questions, incl. "Father Julius Nieuwl" (ends mid-word)."""
  sp = tokenization.load_spiece(spiece_model)
  continuation = text_alignment.continuation_processor(sp)
  count = 0
  for path in QA_FILES:
    examples, report = read_squad(path)
    assert report["skipped_answers"] == 0
    for example in examples:
      for answer in example.answers:
        assert _round_trip(sp, continuation, example.context, answer.start,
                           answer.end) == answer.text
        count += 1
  assert count >= 21


@pytest.mark.slow                  # over 2000 round trips
def test_constructed_answers_round_trip_exactly(spiece_model):
  """Constructed over the real passages: every word (so every word next to punctuation),
  the first three characters of every long word (inside a piece), and three-word spans
  ending in punctuation."""
  sp = tokenization.load_spiece(spiece_model)
  continuation = text_alignment.continuation_processor(sp)
  checked = 0
  for context in _contexts():
    words = list(re.finditer(r"\w+", context))
    for match in words:
      answers = [(match.start(), match.end())]
      if match.end() - match.start() >= 6:
        answers.append((match.start(), match.start() + 3))
        answers.append((match.start() + 2, match.end()))
      for begin, end in answers:
        assert _round_trip(sp, continuation, context, begin, end) == context[begin:end]
        checked += 1
    for first, third in zip(words, words[2:]):
      end = third.end() + 1 if third.end() < len(context) and \
          context[third.end()] in ".,;:)\"'" else third.end()
      assert _round_trip(sp, continuation, context, first.start(), end) == \
          context[first.start():end]
      checked += 1
  assert checked > 2000


def test_cuts_change_nothing_when_answers_are_whole_pieces(spiece_model):
  sp = tokenization.load_spiece(spiece_model)
  context = _contexts()[0]
  plain = text_alignment.align(sp, context)
  first, last = 3, 7
  begin, end = plain.raw_spans[first][0], plain.raw_spans[last][1]
  cut = text_alignment.align(sp, context, cuts=[begin, end])
  assert cut.pieces == plain.pieces and cut.raw_spans == plain.raw_spans


def test_digit_comma_resplit_and_accents(spiece_model, tmp_path):
  model = with_extra_pieces(spiece_model, ["▁2000,", "▁1858,"], str(tmp_path / "sp.model"))
  sp = tokenization.load_spiece(model)
  context = "In 2000, the café's résumé listed 1858, then «Lourdes»."
  aligned = text_alignment.align(sp, context)
  assert aligned.pieces == tokenization.encode_pieces(sp, aligned.normalized)
  assert "," in aligned.pieces and "▁2000," not in aligned.pieces
  continuation = text_alignment.continuation_processor(sp)
  for answer in ("2000", "café", "résumé", "1858", "Lourdes", "caf", "sumé"):
    begin = context.index(answer)
    assert _round_trip(sp, continuation, context, begin, begin + len(answer)) == answer
