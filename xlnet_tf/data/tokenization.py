"""SentencePiece tokenization as the released XLNet models expect it (pure Python, no TF).

Pipeline for raw text:  `normalize_text` -> `encode_ids` (one text) or `encode_lines` (many).

The released vocabulary (`spiece.model`, 32000 pieces) fixes the ids of nine special pieces
(the constants below); `load_spiece` refuses a model whose ids differ, and
`python -m data_prep.train_sentencepiece` trains new models with the same ids.

Encoding applies the released re-split: a piece such as "▁2000," (a number followed by a
comma) becomes the pieces of "2000" followed by a separate ",". SentencePiece 0.2 never
learns pieces joining digits and ",", so for models trained here it changes nothing.

  >>> sp = load_spiece("spiece.model")
  >>> encode_pieces(sp, normalize_text("In 2000, the ``Pequod'' sailed."))
  ['▁In', '▁', '2', '0', '00', ',', '▁the', '▁', '"', 'P', 'e', 'q', 'u', 'od', '"',
   '▁sailed', '.']   # a 4000-piece model trained on Moby-Dick (the tests' model)
"""

import os
import string
import unicodedata
import weakref
from typing import FrozenSet, List, Sequence

import numpy as np
import sentencepiece as spm

from xlnet_tf.data import storage

UNK_ID = 0
BOS_ID = 1  # <s>
EOS_ID = 2  # </s>
CLS_ID = 3
SEP_ID = 4
PAD_ID = 5
MASK_ID = 6
EOD_ID = 7  # end of document
EOP_ID = 8  # end of paragraph

SPECIAL_PIECES = {
    "<unk>": UNK_ID,
    "<s>": BOS_ID,
    "</s>": EOS_ID,
    "<cls>": CLS_ID,
    "<sep>": SEP_ID,
    "<pad>": PAD_ID,
    "<mask>": MASK_ID,
    "<eod>": EOD_ID,
    "<eop>": EOP_ID,
}
# Trainer symbols of the released recipe, in id order after <unk>, <s>, </s>: control symbols
# are never produced by encoding text, user-defined symbols are always single pieces.
CONTROL_SYMBOLS = ("<cls>", "<sep>", "<pad>", "<mask>", "<eod>")
USER_DEFINED_SYMBOLS = ("<eop>", ".", "(", ")", '"', "-", "–", "£", "€")

SPIECE_UNDERLINE = "▁"  # U+2581, marks a piece that starts after a space

# The single-character pieces that begin a word in the released data code: ASCII
# punctuation without "'", "=" and ">" ("<" is covered by the "<" prefix rule).
START_PUNCTUATION = frozenset(string.punctuation) - frozenset("'=>")


def normalize_text(text: str, lower: bool = False, keep_accents: bool = False) -> str:
  """The released preprocessing of raw text before SentencePiece.

  Steps, in the released order: collapse every whitespace run (any Unicode space, tabs,
  newlines) to one space and strip the ends; replace "``" and "''" by '"'; unless
  `keep_accents`, decompose (NFKD) and drop combining marks, so "café" -> "cafe" (the
  released cased models were trained this way too); lower-case if `lower`.
  """
  text = " ".join(text.split())
  text = text.replace("``", '"').replace("''", '"')
  if not keep_accents and not text.isascii():      # ASCII has nothing to decompose
    text = unicodedata.normalize("NFKD", text)
    text = "".join(c for c in text if not unicodedata.combining(c))
  if lower:
    text = text.lower()
  return text


def load_spiece(path: str) -> spm.SentencePieceProcessor:
  """Loads a SentencePiece model and checks it has the released XLNet special ids.

  Raises:
    FileNotFoundError: `path` does not exist.
    ValueError: `path` is not a SentencePiece model, or some of the nine special pieces are
      missing or have other ids than in the released vocabulary (all of them are listed).
  """
  if not os.path.exists(path):
    raise FileNotFoundError(f"SentencePiece model {path!r} does not exist")
  if os.path.isdir(path):
    raise ValueError(f"SentencePiece model {path!r} is a directory; expected a .model file")
  with open(path, "rb") as f:
    proto = f.read()
  sp = spm.SentencePieceProcessor()
  try:
    sp.LoadFromSerializedProto(proto)
  except Exception as e:  # sentencepiece raises OSError/RuntimeError with a terse message
    raise ValueError(f"{path!r} is not a SentencePiece model ({e})") from None
  wrong = []
  for piece, want in SPECIAL_PIECES.items():
    got = sp.piece_to_id(piece)
    if sp.id_to_piece(got) != piece:  # piece_to_id falls back to <unk> for unknown pieces
      wrong.append(f"{piece} is missing, the released XLNet vocabulary has it at {want}")
    elif got != want:
      wrong.append(f"{piece} has id {got}, the released XLNet vocabulary has {want}")
  if wrong:
    raise ValueError(
        f"SentencePiece model {path!r} does not have the XLNet special pieces: "
        + "; ".join(wrong)
        + ". Train one with `python -m data_prep.train_sentencepiece` or use the released "
        "spiece.model")
  return sp


def _needs_resplit(piece: str) -> bool:
  """True for pieces like "▁2000," or "5,": longer than one char, a digit then a comma."""
  return len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit()


def _resplit(sp: spm.SentencePieceProcessor, piece: str) -> List[str]:
  """The pieces replacing `piece` (for which `_needs_resplit` holds): number pieces, ",".

  The number is encoded on its own (the model adds its "▁" prefix back); if `piece` did not
  start a word, the "▁" the re-encoding puts in front is removed again.
  """
  pieces = sp.encode(piece[:-1].replace(SPIECE_UNDERLINE, ""), out_type=str)
  starts_word = piece.startswith(SPIECE_UNDERLINE)
  if not starts_word and pieces and pieces[0].startswith(SPIECE_UNDERLINE):
    if pieces[0] == SPIECE_UNDERLINE:
      pieces = pieces[1:]
    else:
      pieces[0] = pieces[0][len(SPIECE_UNDERLINE):]
  pieces.append(",")
  return pieces


def _apply_resplit(sp: spm.SentencePieceProcessor, pieces: List[str]) -> List[str]:
  out = []
  for piece in pieces:
    if _needs_resplit(piece):
      out.extend(_resplit(sp, piece))
    else:
      out.append(piece)
  return out


def encode_pieces(sp: spm.SentencePieceProcessor, text: str) -> List[str]:
  """Pieces of already-normalised `text` (see `normalize_text`), with the digit-comma re-split."""
  return _apply_resplit(sp, sp.encode(text, out_type=str))


def encode_ids(sp: spm.SentencePieceProcessor, text: str) -> List[int]:
  """Ids of `encode_pieces(sp, text)`; pieces outside the vocabulary map to UNK_ID."""
  return [sp.piece_to_id(piece) for piece in encode_pieces(sp, text)]


# For each processor seen by `encode_lines` (dropped with the processor): the ids that make a
# line take the slow path, i.e. <unk> and every piece that `_needs_resplit`.
_SLOW_PATH_IDS = weakref.WeakKeyDictionary()


def _slow_path_ids(sp: spm.SentencePieceProcessor) -> FrozenSet[int]:
  cached = _SLOW_PATH_IDS.get(sp)
  if cached is None or cached[0] != sp.get_piece_size():
    ids = [i for i in range(sp.get_piece_size()) if _needs_resplit(sp.id_to_piece(i))]
    cached = (sp.get_piece_size(), frozenset(ids + [sp.unk_id()]))
    _SLOW_PATH_IDS[sp] = cached
  return cached[1]


def encode_lines(sp: spm.SentencePieceProcessor, lines: Sequence[str]) -> List[List[int]]:
  """Ids of many already-normalised lines: equal to `[encode_ids(sp, l) for l in lines]`.

  The fast path for preprocessing large corpora: one (multi-threaded) SentencePiece call
  encodes the whole batch to ids. A line's ids are final unless it contains a piece that
  needs the re-split or <unk> (whose id does not tell its text); only such lines, rare in
  practice, are encoded again with `encode_ids`. Every other id is that of the piece
  SentencePiece chose, which is what `encode_ids` maps back to.
  Returns one list of ids per line (an empty list for an empty line). `sp` must not be
  re-loaded with another model of the same size between calls (a per-processor cache).
  """
  if isinstance(lines, str):
    raise TypeError("encode_lines expects a list of lines, got one str; use encode_ids")
  lines = list(lines)
  if not lines:
    return []
  slow = _slow_path_ids(sp)
  result = sp.encode(lines, out_type=int)
  for k, ids in enumerate(result):
    if not slow.isdisjoint(ids):
      result[k] = encode_ids(sp, lines[k])
  return result


def start_piece_table(sp: spm.SentencePieceProcessor) -> np.ndarray:
  """bool [vocab_size]: True where a span may start (the piece begins a word).

  The rule of the released data code: a piece begins a word if it starts with "▁" or
  with "<" (every special piece, and pieces such as "</" or "<<"), or if it is one of
  the single characters in `START_PUNCTUATION` (punctuation that follows a word without
  a space, as in "sea."). The apostrophe, "=" and ">" are not among them: "'" in
  "don't" or "whale's" continues its word.
  """
  table = np.zeros([sp.get_piece_size()], dtype=bool)
  for i in range(sp.get_piece_size()):
    piece = sp.id_to_piece(i)
    table[i] = (piece.startswith(SPIECE_UNDERLINE) or piece.startswith("<")
                or piece in START_PUNCTUATION)
  return table


def spiece_sha256(path: str) -> str:
  """Hex SHA-256 of the model file (to record which vocabulary produced a dataset)."""
  return storage.sha256(path)
