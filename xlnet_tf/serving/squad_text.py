"""SQuAD inputs of raw (question, context) strings as TF ops, with raw character spans.

The graph twin of `text_alignment.align(sp, context)` (no cuts: inference) and of one
window of `squad_features.squad_windows`, for serving:

  raw context --normalize_with_spans_tf--> normalized text --piece_raw_spans--> pieces
      ^                                                                            |
      +---------- per piece its [begin, end) in the RAW context, in characters <----+

  >>> encoder = XLNetTextEncoder("spiece.model")
  >>> pieces = context_pieces(encoder, tf.constant(["In 2000, Ahab's ``Pequod''."]))
  >>> pieces["ids"], pieces["raw_begin"], pieces["raw_end"]      # ragged [B, (n)] each
  >>> features = squad_inputs(encoder, questions, contexts, max_seq_length=512)
  >>> features = squad_inputs(encoder, questions, contexts, 512, bucketed=True)  # [B, L]

Padding (`squad_inputs`): on the RIGHT, as released: `P <sep> Q <sep> <cls>` starts at
position 0, <cls> is the last real token (cls_index = length - 1), then padding (input_mask
and p_mask 1). With `bucketed` a batch is padded only to its bucket L
(`text_layouts.padded_length` of its longest window), not to max_seq_length: the real tokens
keep their positions and distances, padding is masked as a key and can be no answer
boundary, and <cls> does not move, so the model's outputs at real positions (and the
answers) do not depend on L.

Normalisation spans (`normalize_with_spans_tf`), as `text_alignment.normalize_with_spans`:
every raw character becomes zero or more normalized characters that point back to it: the
first whitespace character of an inner run becomes " " (the others, and whitespace at the
ends, become nothing); "``" and then "''" pairs (left to right, non-overlapping) become
'"' spanning both; then NFKD with combining marks dropped, and lower-casing, per
character (the text itself is lower-cased whole, like `str.lower`, which only changes
the final sigma, never a length).

Piece spans (`piece_raw_spans`): the pieces are the encoder's own (`tokenize_pieces`:
the sentencepiece package's segmentation and the "2000," re-split); their text, "▁" read
as a space, tiles SentencePiece's normalisation of the normalized text. TF Text's regular
SentencePiece tokenizer supplies the byte offsets of ITS pieces in the normalized text
(its segmentation can differ on ties, e.g. "2|0|00" for "2|00|0", but its pieces tile
the same string). A character of our piece inside one of its pieces maps to the same
offset within that piece when the piece's text and its source have the same length
(always, unless SentencePiece's NFKC changed the text, e.g. recomposed Hangul jamo),
else to the piece's begin (end). Leading "▁"s are excluded, as in `align`: a bare "▁"
piece has an empty span.
"""

from typing import Dict

import tensorflow as tf

from xlnet_tf.data import layouts
from xlnet_tf.data import tokenization
from xlnet_tf.serving import text_encoder as text_encoder_lib
from xlnet_tf.serving.text_layouts import padded_length

_SPACE = " "


def _run_offsets(is_mark: tf.Tensor, row_start: tf.Tensor) -> tf.Tensor:
  """Per element [N], its offset inside its run of consecutive marks (runs end at rows)."""
  index = tf.range(tf.size(is_mark, out_type=tf.int64))
  breaks = tf.logical_not(is_mark) | row_start
  run = tf.cumsum(tf.cast(breaks, tf.int64)) - 1                 # [N]
  first = tf.gather(tf.math.unsorted_segment_min(index, run, tf.size(index)), run)
  return index - first - tf.cast(tf.logical_not(tf.gather(is_mark, first)), tf.int64)


def _merge_pairs(chars: tf.Tensor, mark: str, row_start: tf.Tensor, row_end: tf.Tensor):
  """Where `mark` + `mark` becomes '"' (left to right): (starts, seconds) bool [N]."""
  is_mark = tf.equal(chars, mark)
  offset = _run_offsets(is_mark, row_start)
  following = tf.concat([is_mark[1:], [False]], axis=0) & tf.logical_not(row_end)
  starts = is_mark & tf.equal(offset % 2, 0) & following
  seconds = is_mark & tf.equal(offset % 2, 1)
  return starts, seconds


@tf.autograph.experimental.do_not_convert
def normalize_with_spans_tf(texts, lower: bool = False, keep_accents: bool = False):
  """Raw strings [B] -> (normalized [B], raw_begin, raw_end: ragged int64 [B, (m)]).

  `normalized` equals `normalize_text_tf(texts, lower, keep_accents)`; its k-th character
  came from raw characters [raw_begin[k], raw_end[k]) (offsets in Unicode characters).
  """
  classes = text_encoder_lib._python_char_classes()  # pylint: disable=protected-access
  texts = tf.convert_to_tensor(texts, tf.string)
  texts = tf.strings.unicode_transcode(texts, "UTF-8", "UTF-8", errors="replace",
                                       replacement_char=0xFFFD,
                                       replace_control_characters=False)
  chars = tf.strings.unicode_split(texts, "UTF-8").with_row_splits_dtype(tf.int64)
  flat = chars.flat_values                                         # [N]
  n = tf.size(flat, out_type=tf.int64)
  index = tf.range(n)
  row_begin = tf.gather(chars.row_splits, chars.value_rowids())    # [N]
  row_stop = tf.gather(chars.row_splits[1:], chars.value_rowids())
  row_start, row_end = tf.equal(index, row_begin), tf.equal(index + 1, row_stop)
  # 1. Whitespace: the first of an inner run becomes " ", the rest goes.
  is_space = tf.strings.regex_full_match(flat, classes["space"])
  solid = tf.cast(tf.logical_not(is_space), tf.int64)
  solid_before = tf.cumsum(solid) - solid - tf.gather(
      tf.concat([[0], tf.cumsum(solid)], 0), row_begin)             # solid chars before
  solid_after = tf.gather(tf.concat([[0], tf.cumsum(solid)], 0), row_stop) - \
      tf.cumsum(solid)
  prev_space = tf.concat([[False], is_space[:-1]], axis=0) & tf.logical_not(row_start)
  keep_space = is_space & tf.logical_not(prev_space) & (solid_before > 0) & (solid_after > 0)
  out = tf.where(is_space, tf.where(keep_space, _SPACE, ""), flat)
  # 2. "``" then "''" -> '"' (runs of the two marks are disjoint, so order is immaterial).
  raw_end = index + 1
  for mark in ("`", "'"):
    starts, seconds = _merge_pairs(flat, mark, row_start, row_end)
    out = tf.where(starts, '"', tf.where(seconds, "", out))
    raw_end = tf.where(starts, index + 2, raw_end)
  # 3. NFKD, combining marks dropped; 4. lower-casing (lengths per character).
  if not keep_accents:
    out = tf.strings.regex_replace(text_encoder_lib.tf_text.normalize_utf8(out, "NFKD"),
                                   classes["combining"] + "+", "")
  normalized = tf.strings.reduce_join(chars.with_flat_values(out), axis=1)
  if lower:  # the text whole, like str.lower (final sigma); lengths per character
    normalized = text_encoder_lib._lower_utf8(normalized)  # pylint: disable=protected-access
    out = text_encoder_lib._lower_utf8(out)  # pylint: disable=protected-access
  widths = tf.strings.length(out, unit="UTF8_CHAR")                # [N]
  owner = tf.repeat(index, tf.cast(widths, tf.int64))              # [M]: raw char per char
  local = owner - tf.gather(row_begin, owner)                      # offsets inside the row
  local_end = tf.gather(raw_end, owner) - tf.gather(row_begin, owner)
  row_lengths = tf.math.segment_sum(tf.cast(widths, tf.int64), chars.value_rowids())
  row_lengths = tf.concat([row_lengths, tf.zeros(
      [tf.shape(texts, out_type=tf.int64)[0] - tf.size(row_lengths, out_type=tf.int64)],
      tf.int64)], axis=0)  # rows after the last character (segment_sum stops there)
  begin = tf.RaggedTensor.from_row_lengths(local, row_lengths, validate=False)
  end = tf.RaggedTensor.from_row_lengths(local_end, row_lengths, validate=False)
  return normalized, begin, end


def _char_lengths(strings: tf.Tensor) -> tf.Tensor:
  return tf.cast(tf.strings.length(strings, unit="UTF8_CHAR"), tf.int64)


def _lead_spaces(surfaces: tf.Tensor) -> tf.Tensor:
  """Leading spaces of each string [N] (0 or more) -> int64 [N]."""
  return _char_lengths(surfaces) - _char_lengths(
      tf.strings.regex_replace(surfaces, "^ +", "", replace_global=False))


@tf.autograph.experimental.do_not_convert
def piece_raw_spans(encoder, normalized: tf.Tensor) -> Dict[str, tf.RaggedTensor]:
  """Normalized texts [B] -> pieces, ids and their [begin, end) in the normalized text.

  Returns ragged [B, (n)]: `pieces` (strings), `ids` (int32), `begin`, `end` (int64,
  characters of `normalized`, leading "▁" excluded; empty for a bare "▁").
  """
  sp = encoder._sp  # pylint: disable=protected-access
  pieces = encoder._resplit(encoder._sentencepiece(normalized))  # pylint: disable=protected-access
  pieces = pieces.with_row_splits_dtype(tf.int64)
  ids = tf.cast(sp.string_to_id(pieces.flat_values), tf.int32)              # [P]
  # Ours: each piece's content range in S, the pieces' text with "▁" read as " ".
  surface = tf.strings.regex_replace(pieces.flat_values, tokenization.SPIECE_UNDERLINE, _SPACE)
  width = _char_lengths(surface)
  s_begin = (tf.cumsum(width) - width) - tf.gather(
      tf.concat([[0], tf.cumsum(width)], 0), tf.gather(pieces.row_splits, pieces.value_rowids()))
  content_begin = s_begin + _lead_spaces(surface)                 # [P] in S of its row
  content_end = s_begin + width
  # Theirs: the regular tokenizer's pieces with byte offsets into the normalized text.
  tokens, byte_begin, byte_end = sp.tokenize_with_offsets(normalized)
  tokens = tokens.with_row_splits_dtype(tf.int64)
  t_surface = tf.strings.regex_replace(tokens.flat_values, tokenization.SPIECE_UNDERLINE,
                                       _SPACE)
  t_width = _char_lengths(t_surface)
  t_rows = tokens.value_rowids()
  t_row_start = tf.gather(tokens.row_splits, t_rows)
  t_s_begin = (tf.cumsum(t_width) - t_width) - tf.gather(
      tf.concat([[0], tf.cumsum(t_width)], 0), t_row_start)
  t_lead = _lead_spaces(t_surface)
  t_content_begin = t_s_begin + t_lead                            # [R] in S
  t_content_len = t_width - t_lead
  # Byte offsets -> characters of the normalized text, leading spaces dropped as well.
  chars = tf.strings.unicode_split_with_offsets(normalized, "UTF-8")
  char_bytes = chars[1].with_row_splits_dtype(tf.int64)           # [B, (m)] byte starts
  char_text = chars[0].with_row_splits_dtype(tf.int64)
  sentinel = tf.cast(tf.strings.length(normalized), tf.int64)     # [B]
  starts = tf.concat([char_bytes, sentinel[:, None]], axis=1)     # [B, (m + 1)]
  byte_scale = tf.reduce_max(tf.concat([[0], sentinel], 0)) + 1
  start_keys = starts.flat_values + starts.value_rowids() * byte_scale   # sorted

  def to_char(b):                                                 # [R] bytes -> chars
    found = tf.searchsorted(start_keys, b + t_rows * byte_scale, side="left",
                            out_type=tf.int64)
    return found - tf.gather(starts.row_splits, t_rows)

  src_begin = to_char(tf.cast(byte_begin.flat_values, tf.int64))  # [R] chars
  src_end = to_char(tf.cast(byte_end.flat_values, tf.int64))
  text_chars = tf.concat([char_text.flat_values, [""]], axis=0)
  first_char = tf.gather(text_chars, tf.where(
      src_end > src_begin, tf.gather(char_text.row_splits, t_rows) + src_begin,
      tf.size(text_chars, out_type=tf.int64) - 1))
  src_lead = tf.cast(tf.equal(first_char, _SPACE), tf.int64)
  src_begin = src_begin + src_lead
  same_length = tf.equal(src_end - src_begin, t_content_len)
  # For every character position of ours, their piece holding it (rows kept apart by a
  # per-row offset larger than any position).
  rows = pieces.value_rowids()
  big = tf.reduce_max(tf.concat([[0], t_content_begin + t_width, content_end], 0)) + 1
  keys = t_content_begin + t_rows * big                           # sorted

  def locate(position):                                           # [P] -> [P] in normalized
    key = position + rows * big
    r = tf.maximum(tf.searchsorted(keys, key, side="right", out_type=tf.int64) - 1, 0)
    offset = position - tf.gather(t_content_begin, r)
    exact = tf.gather(same_length, r)
    return r, offset, exact

  nonempty = content_end > content_begin
  r, offset, exact = locate(content_begin)
  begin = tf.where(exact, tf.gather(src_begin, r) + offset, tf.gather(src_begin, r))
  r, offset, exact = locate(tf.maximum(content_end - 1, content_begin))
  end = tf.where(exact, tf.gather(src_begin, r) + offset + 1, tf.gather(src_end, r))
  begin = tf.where(nonempty, begin, -1)
  end = tf.where(nonempty, end, -1)
  return {"pieces": pieces, "ids": pieces.with_flat_values(ids),
          "begin": pieces.with_flat_values(begin), "end": pieces.with_flat_values(end)}


@tf.autograph.experimental.do_not_convert
def context_pieces(encoder, contexts) -> Dict[str, tf.RaggedTensor]:
  """Raw contexts [B] -> ragged [B, (n)]: `ids` int32 and `raw_begin`, `raw_end` int64,
  each piece's [begin, end) in the raw context in characters (-1 for a bare "▁", which
  covers no character); equal to `text_alignment.align(sp, context).raw_spans`."""
  normalized, char_begin, char_end = normalize_with_spans_tf(
      contexts, lower=encoder.lower, keep_accents=encoder.keep_accents)
  spans = piece_raw_spans(encoder, normalized)
  begin, end = spans["begin"], spans["end"]
  base = tf.gather(char_begin.row_splits, begin.value_rowids())   # row start in chars
  flat_begin = tf.concat([char_begin.flat_values, [-1]], axis=0)
  flat_end = tf.concat([char_end.flat_values, [-1]], axis=0)
  last = tf.size(flat_begin, out_type=tf.int64) - 1
  covered = begin.flat_values >= 0
  raw_begin = tf.gather(flat_begin, tf.where(covered, base + begin.flat_values, last))
  raw_end = tf.gather(flat_end, tf.where(covered, base + end.flat_values - 1, last))
  return {"ids": spans["ids"], "raw_begin": begin.with_flat_values(raw_begin),
          "raw_end": end.with_flat_values(raw_end)}


@tf.autograph.experimental.do_not_convert
def squad_inputs(encoder, questions, contexts, max_seq_length: int,
                 max_query_length: int = 64, bucketed: bool = False,
                 min_length: int = 0) -> Dict[str, tf.Tensor]:
  """One window per (question, context) in the released layout `P <sep> Q <sep> <cls>`.

  The graph twin of the first window of `squad_features.squad_windows` (inference): the
  question's pieces are cut to `max_query_length`, the paragraph to what is left of
  `max_seq_length` (`paragraph_truncated` says where that happened). Padded on the right
  to max_seq_length T or, `bucketed`, to the batch's bucket L (`text_layouts.padded_length`
  of the longest window, at least `min_length`, e.g. a top-k head's k).

  Returns: input_ids, segment_ids int32 [B, T]; input_mask, p_mask float32 [B, T];
  cls_index int32 [B]; raw_begin, raw_end int64 [B, T] (-1 outside the paragraph);
  paragraph_length int32 [B]; paragraph_truncated bool [B]. Bucketed: [B, L] for [B, T].
  """
  seq_len = int(max_seq_length)
  if seq_len - int(max_query_length) - 3 < 1:
    raise ValueError(f"max_seq_length={max_seq_length} leaves no room for the paragraph "
                     f"after max_query_length={max_query_length} and 3 special tokens")
  query = encoder.tokenize(questions).with_row_splits_dtype(tf.int64)[:, :max_query_length]
  query = tf.cast(query, tf.int32)
  paragraph = context_pieces(encoder, contexts)
  ids = paragraph["ids"]
  budget = seq_len - 3 - query.row_lengths()                       # [B]
  truncated = ids.row_lengths() > budget
  keep = tf.maximum(tf.minimum(ids.row_lengths(), budget), 0)
  positions = tf.ragged.range(keep)
  take = lambda r: tf.gather(r, positions, batch_dims=1)          # noqa: E731
  ids, raw_begin, raw_end = take(ids), take(paragraph["raw_begin"]), take(paragraph["raw_end"])
  sep = tf.fill([tf.size(keep), 1], tokenization.SEP_ID)
  cls = tf.fill([tf.size(keep), 1], tokenization.CLS_ID)
  tokens = tf.concat([ids, sep, query, sep, cls], axis=1)          # [B, (n)]
  ones = lambda r, v: tf.ones_like(r, tf.int32) * v                # noqa: E731
  segments = tf.concat([ones(ids, layouts.SEGMENT_A), ones(sep, layouts.SEGMENT_A),
                        ones(query, layouts.SEGMENT_B), ones(sep, layouts.SEGMENT_B),
                        ones(cls, layouts.SEGMENT_CLS)], axis=1)
  answerable = tf.cast(raw_begin >= 0, tf.float32)
  p_mask = tf.concat([1.0 - answerable, tf.ones_like(sep, tf.float32),
                      tf.ones_like(query, tf.float32), tf.ones_like(sep, tf.float32),
                      tf.zeros_like(cls, tf.float32)], axis=1)
  none = tf.cast(tf.fill([tf.size(keep), 1], -1), tf.int64)
  filler = lambda q: tf.cast(tf.ones_like(q), tf.int64) * -1      # noqa: E731
  begins = tf.concat([raw_begin, none, filler(query), none, none], axis=1)
  ends = tf.concat([raw_end, none, filler(query), none, none], axis=1)
  if bucketed:                                                     # [B, L], L <= T
    shape = tf.stack([tokens.nrows(), padded_length(tokens.row_lengths(), seq_len,
                                                    min_length)])
  else:                                                            # [B, T]
    shape = [None, seq_len]
  features = {
      "input_ids": tokens.to_tensor(layouts.SQUAD_PAD_ID, shape=shape),
      "segment_ids": segments.to_tensor(layouts.SQUAD_SEGMENT_PAD, shape=shape),
      "input_mask": tf.cast(tf.ragged.range(tokens.row_lengths()) < 0, tf.float32
                            ).to_tensor(1.0, shape=shape),
      "p_mask": p_mask.to_tensor(1.0, shape=shape),
      "cls_index": tf.cast(tokens.row_lengths() - 1, tf.int32),
      "raw_begin": begins.to_tensor(-1, shape=shape),
      "raw_end": ends.to_tensor(-1, shape=shape),
      "paragraph_length": tf.cast(keep, tf.int32),
      "paragraph_truncated": truncated,
  }
  return features
