"""Tests of xlnet_tf.data.tokenization and data_prep.train_sentencepiece.

Most tests use the session fixture `spiece_model` (conftest.py): a 4000-piece model trained
with `train_sentencepiece.train` on the bundled Moby-Dick corpus.
"""

import glob
import hashlib
import os
import string
import subprocess
import sys

import pytest
import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2

from data_prep import train_sentencepiece
from helpers import CORPUS_GLOB
from helpers import with_extra_pieces
from xlnet_tf.data import tokenization

# The released spiece.model, written out by hand (not from the module's constants).
RELEASED_IDS = {"<unk>": 0, "<s>": 1, "</s>": 2, "<cls>": 3, "<sep>": 4, "<pad>": 5,
                "<mask>": 6, "<eod>": 7, "<eop>": 8}
U = "\u2581"  # SentencePiece's word-start marker


def corpus_lines():
  """Every non-blank line of the bundled corpus, normalised."""
  lines = []
  for path in sorted(glob.glob(CORPUS_GLOB)):
    with open(path, encoding="utf-8") as f:
      lines.extend(tokenization.normalize_text(line) for line in f)
  return [line for line in lines if line]


def write_lines(path, lines):
  with open(path, "w", encoding="utf-8") as f:
    f.write("\n".join(lines) + "\n")
  return str(path)


# --- constants and the trained model's special ids -------------------------------------------


def test_constants_are_the_released_ids():
  assert tokenization.SPECIAL_PIECES == RELEASED_IDS
  assert (tokenization.UNK_ID, tokenization.BOS_ID, tokenization.EOS_ID, tokenization.CLS_ID,
          tokenization.SEP_ID, tokenization.PAD_ID, tokenization.MASK_ID, tokenization.EOD_ID,
          tokenization.EOP_ID) == tuple(range(9))
  assert tokenization.SPIECE_UNDERLINE == U


def test_trained_model_has_released_special_ids(spiece_model):
  sp = tokenization.load_spiece(spiece_model)
  assert sp.get_piece_size() == 4000
  assert {piece: sp.piece_to_id(piece) for piece in RELEASED_IDS} == RELEASED_IDS
  assert [sp.id_to_piece(i) for i in range(9)] == list(RELEASED_IDS)
  assert sp.is_unknown(0)
  assert all(sp.is_control(i) for i in (1, 2, 3, 4, 5, 6, 7))
  # The user-defined symbols follow in the recipe's order (ids 8..16) and stay single pieces.
  user = ["<eop>", ".", "(", ")", '"', "-", "\u2013", "\u00a3", "\u20ac"]
  assert [sp.id_to_piece(i) for i in range(8, 17)] == user
  proto = sentencepiece_model_pb2.ModelProto()
  with open(spiece_model, "rb") as f:
    proto.ParseFromString(f.read())
  types = [sentencepiece_model_pb2.ModelProto.SentencePiece.Type.Name(p.type)
           for p in proto.pieces[:18]]
  assert types == ["UNKNOWN"] + ["CONTROL"] * 7 + ["USER_DEFINED"] * 9 + ["NORMAL"]
  assert sp.encode('(a "b" c) \u00a35-6.', out_type=str) == [
      U, "(", "a", U, '"', "b", '"', U, "c", ")", U, "\u00a3", "5", "-", "6", "."]
  # Control symbols are never produced from text; <eop> (user-defined) is.
  assert tokenization.CLS_ID not in sp.encode("x <cls> y")
  assert tokenization.EOP_ID in sp.encode("x <eop> y")


# --- normalize_text ---------------------------------------------------------------------------


@pytest.mark.parametrize("text, kwargs, expected", [
    ("  a\t\tb \n\n c  ", {}, "a b c"),
    ("x\u00a0\u00a0y\u3000z\r\n", {}, "x y z"),
    ("", {}, ""),
    (" \t\n ", {}, ""),
    ("``Call me Ishmael,'' he said.", {}, '"Call me Ishmael," he said.'),
    ("'''", {}, "\"'"),  # left to right: '' -> ", then a lone '
    ("`single` and 'single'", {}, "`single` and 'single'"),
    ("caf\u00e9", {}, "cafe"),
    ("cafe\u0301", {}, "cafe"),  # already decomposed
    ("Cr\u00e8me BR\u00dbL\u00c9E", {}, "Creme BRULEE"),  # cased models lose accents too
    ("\ufb01ne", {}, "fine"),  # NFKD also expands compatibility ligatures
    ("caf\u00e9", {"keep_accents": True}, "caf\u00e9"),
    ("\ufb01ne", {"keep_accents": True}, "\ufb01ne"),
    ("Caf\u00e9 NA\u00cfVE", {"lower": True}, "cafe naive"),
    ("Caf\u00e9 NA\u00cfVE", {"lower": True, "keep_accents": True}, "caf\u00e9 na\u00efve"),
    ("  ``The  Whale''  ", {"lower": True}, '"the whale"'),
])
def test_normalize_text(text, kwargs, expected):
  assert tokenization.normalize_text(text, **kwargs) == expected


# --- the digit-comma re-split -----------------------------------------------------------------


@pytest.fixture(scope="module")
def comma_sp(spiece_model, tmp_path_factory):
  """The fixture model plus digit-comma pieces like the released vocabulary's."""
  extra = [U + "2000,", U + "2000", "2000,", "2000", "1851,", "1851", U + "7,", U + "whale,",
           U + "1775,", "000,", U + "40,"]
  path = with_extra_pieces(spiece_model, extra,
                           tmp_path_factory.mktemp("comma") / "comma.model")
  return tokenization.load_spiece(path)


def test_resplit_word_initial_number(comma_sp):
  sp = comma_sp
  text = "In 2000, the whale"
  assert U + "2000," in sp.encode(text, out_type=str)  # the case the re-split exists for
  assert sp.encode("2000", out_type=str) == [U + "2000"]
  expected = sp.encode("In", out_type=str) + [U + "2000", ","] + sp.encode("the whale",
                                                                           out_type=str)
  assert tokenization.encode_pieces(sp, text) == expected
  assert tokenization.encode_ids(sp, text) == [sp.piece_to_id(p) for p in expected]
  assert tokenization.UNK_ID not in tokenization.encode_ids(sp, text)


def test_resplit_inside_word_strips_the_added_underline(comma_sp):
  # "(" is a user-defined symbol, so "2000," follows it without "▁"; re-encoding "2000"
  # gives "▁2000", whose "▁" must go.
  sp = comma_sp
  assert sp.encode("(2000, sea", out_type=str)[:3] == [U, "(", "2000,"]
  assert sp.encode("2000", out_type=str) == [U + "2000"]
  expected = [U, "(", "2000", ","] + sp.encode("sea", out_type=str)
  assert tokenization.encode_pieces(sp, "(2000, sea") == expected
  assert tokenization.encode_ids(sp, "(2000, sea") == [sp.piece_to_id(p) for p in expected]


def test_resplit_inside_word_drops_a_lone_underline(comma_sp):
  # "▁1851" is not a piece: re-encoding "1851" gives "▁", "1851"; the lone "▁" is dropped.
  sp = comma_sp
  head = sp.encode("whale", out_type=str)
  assert sp.encode("whale(1851, y", out_type=str)[:len(head) + 2] == head + ["(", "1851,"]
  assert sp.encode("1851", out_type=str) == [U, "1851"]
  expected = head + ["(", "1851", ","] + sp.encode("y", out_type=str)
  assert tokenization.encode_pieces(sp, "whale(1851, y") == expected


def test_resplit_keeps_a_lone_underline_at_word_start(comma_sp):
  # "▁7," starts a word: re-encoding "7" gives "▁", "7", and both stay.
  sp = comma_sp
  assert sp.encode("7", out_type=str) == [U, "7"]
  assert sp.encode("it was 7, then", out_type=str)[2] == U + "7,"
  expected = (sp.encode("it was", out_type=str) + [U, "7", ","]
              + sp.encode("then", out_type=str))
  assert tokenization.encode_pieces(sp, "it was 7, then") == expected


def test_no_resplit_without_digit_before_comma(comma_sp, spiece_model):
  sp = comma_sp
  text = "the whale, the sea, 12 ,"
  pieces = sp.encode(text, out_type=str)
  assert U + "whale," in pieces and "," in pieces
  assert tokenization.encode_pieces(sp, text) == pieces
  # In a model SentencePiece trained itself, digits and "," are never one piece: no re-split.
  plain = tokenization.load_spiece(spiece_model)
  text = "In 2000, the whale; 40,000 men, 7, 8"
  assert tokenization.encode_pieces(plain, text) == plain.encode(text, out_type=str)
  assert tokenization.encode_ids(plain, text) == plain.encode(text)


# --- encode_lines -----------------------------------------------------------------------------


def test_encode_lines_equals_encode_ids_on_whole_corpus(spiece_model):
  sp = tokenization.load_spiece(spiece_model)
  lines = corpus_lines()
  assert len(lines) > 2500
  fast = tokenization.encode_lines(sp, lines)
  slow = [tokenization.encode_ids(sp, line) for line in lines]
  assert fast == slow
  assert sum(map(len, fast)) > 300_000


def test_encode_lines_equals_encode_ids_with_resplits_and_unknowns(comma_sp):
  sp = comma_sp
  lines = corpus_lines() + ["In 2000, (1851, 7, 40,000 x", "\u0416\u0416 2000, \u4e00"]
  fast = tokenization.encode_lines(sp, lines)
  slow = [tokenization.encode_ids(sp, line) for line in lines]
  assert fast == slow
  resplit = [k for k, line in enumerate(lines) if slow[k] != sp.encode(line)]
  assert len(resplit) >= 3  # "1775," in the corpus, "000," in "400,000", and the extra lines
  assert tokenization.UNK_ID in fast[-1]


def test_encode_lines_resplits_an_unknown_piece(tmp_path):
  # Trained on letters only: "12," is one unknown piece that still needs the re-split.
  lines = ["".join(c for c in line if c.isalpha() or c == " ") for line in corpus_lines()[:200]]
  prefix = str(tmp_path / "letters")
  spm.SentencePieceTrainer.train(
      sentence_iterator=iter(lines), model_prefix=prefix, vocab_size=300, minloglevel=2,
      num_threads=2, pad_id=-1, control_symbols=list(tokenization.CONTROL_SYMBOLS),
      user_defined_symbols=list(tokenization.USER_DEFINED_SYMBOLS))
  sp = tokenization.load_spiece(prefix + ".model")
  text = "the sea 12, the whale"
  assert "12," in sp.encode(text, out_type=str)
  ids = tokenization.encode_ids(sp, text)
  assert ids.count(tokenization.UNK_ID) == 2 and len(ids) == len(sp.encode(text)) + 1
  assert tokenization.encode_lines(sp, ["the sea", text]) == [
      tokenization.encode_ids(sp, "the sea"), ids]


def test_encode_lines_edge_cases(spiece_model):
  sp = tokenization.load_spiece(spiece_model)
  assert tokenization.encode_lines(sp, []) == []
  assert tokenization.encode_lines(sp, ["", "the sea", ""]) == [
      [], tokenization.encode_ids(sp, "the sea"), []]
  assert tokenization.encode_lines(sp, (line for line in ["the sea"])) == [
      tokenization.encode_ids(sp, "the sea")]
  with pytest.raises(TypeError, match="list of lines"):
    tokenization.encode_lines(sp, "the sea")


# --- start_piece_table ------------------------------------------------------------------------


def test_start_piece_table_follows_the_rule_on_every_id(spiece_model):
  sp = tokenization.load_spiece(spiece_model)
  table = tokenization.start_piece_table(sp)
  assert table.dtype == bool and table.shape == (4000,)
  for i in range(sp.get_piece_size()):
    piece = sp.id_to_piece(i)
    # The released data code's rule (tests/data_prep/test_released_data_recipe.py checks it on the
    # released vocabulary against a re-derivation): "▁" or "<" first, or punctuation
    # other than ' = > alone.
    expected = (piece.startswith(U) or piece.startswith("<")
                or (len(piece) == 1 and piece in string.punctuation and piece not in "'=>"))
    assert table[i] == expected, (i, piece)
  assert table[sp.piece_to_id(U + "the")] and table[sp.piece_to_id(".")]
  assert not table[sp.piece_to_id("'")]                     # "'" continues a word
  assert table[tokenization.CLS_ID] and table[tokenization.EOP_ID]
  assert not table[sp.piece_to_id("s")] and not table[sp.piece_to_id("\u2013")]
  assert 1000 < table.sum() < 3900


# --- load_spiece errors -----------------------------------------------------------------------


def test_load_spiece_missing_file(tmp_path):
  path = str(tmp_path / "nope.model")
  with pytest.raises(FileNotFoundError, match="nope.model"):
    tokenization.load_spiece(path)


def test_load_spiece_not_a_model(tmp_path):
  path = write_lines(tmp_path / "spiece.model", ["this is text, not a model"])
  with pytest.raises(ValueError, match="is not a SentencePiece model") as error:
    tokenization.load_spiece(path)
  assert path in str(error.value)
  with pytest.raises(ValueError, match="is a directory"):
    tokenization.load_spiece(str(tmp_path))


def _tiny_model(tmp_path, name, **options):
  """A small SentencePiece model trained with spm's own defaults plus `options`."""
  lines = corpus_lines()[:200]
  prefix = str(tmp_path / name)
  spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_prefix=prefix,
                                 vocab_size=300, minloglevel=2, num_threads=2, **options)
  return prefix + ".model"


def test_load_spiece_model_without_xlnet_symbols(tmp_path):
  path = _tiny_model(tmp_path, "plain")
  with pytest.raises(ValueError) as error:
    tokenization.load_spiece(path)
  message = str(error.value)
  assert path in message
  for piece in ("<cls>", "<sep>", "<pad>", "<mask>", "<eod>", "<eop>"):
    assert f"{piece} is missing" in message
  for piece in ("<unk>", "<s>", "</s>"):  # these are right
    assert piece + " " not in message


def test_load_spiece_model_with_other_ids(tmp_path):
  path = _tiny_model(tmp_path, "shuffled", pad_id=3, control_symbols=["<sep>", "<cls>"],
                     user_defined_symbols=["<eop>", "<mask>"])
  with pytest.raises(ValueError) as error:
    tokenization.load_spiece(path)
  message = str(error.value)
  assert path in message
  assert "<pad> has id 3, the released XLNet vocabulary has 5" in message
  assert "<sep> has id 4" not in message  # right by accident
  assert "<cls> has id 5, the released XLNet vocabulary has 3" in message
  assert "<eop> has id 6, the released XLNet vocabulary has 8" in message
  assert "<mask> has id 7, the released XLNet vocabulary has 6" in message
  assert "<eod> is missing" in message


# --- train ------------------------------------------------------------------------------------


def test_train_glob_matches_nothing(tmp_path):
  pattern = str(tmp_path / "nothing-*.txt")
  with pytest.raises(ValueError, match="no file matches") as error:
    train_sentencepiece.train(pattern, str(tmp_path / "m"), 100)
  assert pattern in str(error.value)
  # One good glob does not hide a bad one.
  good = write_lines(tmp_path / "good.txt", ["some text"])
  with pytest.raises(ValueError, match="nothing-"):
    train_sentencepiece.train(f"{good},{pattern}", str(tmp_path / "m"), 100)
  assert not os.path.exists(tmp_path / "m.model")


def test_train_empty_inputs(tmp_path):
  write_lines(tmp_path / "a.txt", [])
  write_lines(tmp_path / "b.txt", ["", "   ", "\t"])
  with pytest.raises(ValueError, match="contain no text"):
    train_sentencepiece.train(str(tmp_path / "*.txt"), str(tmp_path / "m"), 100)
  assert not os.path.exists(tmp_path / "m.model")


def test_train_vocab_too_small(tmp_path):
  write_lines(tmp_path / "a.txt", ["some text"])
  with pytest.raises(ValueError, match="--vocab_size 17 is too small: 17 ids are reserved"):
    train_sentencepiece.train(str(tmp_path / "a.txt"), str(tmp_path / "m"), 17)


def test_train_vocab_too_large_for_corpus(tmp_path):
  write_lines(tmp_path / "a.txt", ["a tiny corpus"] * 3)
  with pytest.raises(ValueError, match="--vocab_size 5000 is too large"):
    train_sentencepiece.train(str(tmp_path / "a.txt"), str(tmp_path / "m"), 5000)


def test_train_not_utf8(tmp_path):
  write_lines(tmp_path / "a.txt", ["good text"] * 50)
  with open(tmp_path / "b.txt", "wb") as f:
    f.write(b"caf\xe9 au lait\n")
  with pytest.raises(ValueError, match="b.txt is not UTF-8"):
    train_sentencepiece.train(str(tmp_path / "*.txt"), str(tmp_path / "m"), 30)


def test_train_uncased_and_accents(tmp_path):
  lines = corpus_lines()[:300] + ["Caf\u00e9 cr\u00e8me, na\u00efve ``Fa\u00e7ade''."] * 50
  path = write_lines(tmp_path / "corpus.txt", lines)
  cased = tokenization.load_spiece(
      train_sentencepiece.train(path, str(tmp_path / "cased"), 500, num_threads=2))
  uncased = tokenization.load_spiece(train_sentencepiece.train(
      path, str(tmp_path / "uncased"), 500, uncased=True, num_threads=2))
  accents = tokenization.load_spiece(train_sentencepiece.train(
      path, str(tmp_path / "accents"), 500, keep_accents=True, num_threads=2))

  def pieces(sp):
    return [sp.id_to_piece(i) for i in range(17, sp.get_piece_size())]

  assert any(p != p.lower() for p in pieces(cased))
  assert all(p == p.lower() for p in pieces(uncased))
  accented = set("\u00e9\u00e8\u00ef\u00e7")
  assert not any(accented & set(p) for p in pieces(cased))
  assert any(accented & set(p) for p in pieces(accents))
  # The trainer saw normalised text: the `` '' quotes became '"', so "`" is not in the vocab.
  assert sp_has_piece(cased, '"') and not sp_has_piece(cased, "`")


def sp_has_piece(sp, piece):
  return sp.id_to_piece(sp.piece_to_id(piece)) == piece


def test_train_prints_summary(tmp_path, capsys):
  path = write_lines(tmp_path / "corpus.txt", corpus_lines()[:300])
  model = train_sentencepiece.train([path], str(tmp_path / "out" / "m"), 300, num_threads=2)
  assert model == str(tmp_path / "out" / "m.model") and os.path.exists(model)
  assert os.path.exists(str(tmp_path / "out" / "m.vocab"))
  out = capsys.readouterr().out
  assert model in out and "vocab size 300" in out
  assert ("special ids: <unk>=0 <s>=1 </s>=2 <cls>=3 <sep>=4 <pad>=5 <mask>=6 <eod>=7 <eop>=8"
          in out)


def test_spiece_sha256(spiece_model, tmp_path):
  with open(spiece_model, "rb") as f:
    expected = hashlib.sha256(f.read()).hexdigest()
  assert tokenization.spiece_sha256(spiece_model) == expected
  other = _tiny_model(tmp_path, "other")
  assert tokenization.spiece_sha256(other) != expected


@pytest.mark.slow
def test_command_line(tmp_path):
  corpus = write_lines(tmp_path / "corpus.txt", corpus_lines()[:300])
  root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
  command = [sys.executable, "-m", "data_prep.train_sentencepiece", "--input", corpus,
             "--model_prefix", str(tmp_path / "m"), "--vocab_size", "300", "--num_threads", "2"]
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
  done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, check=False)
  assert done.returncode == 0, done.stderr
  assert "special ids: <unk>=0" in done.stdout
  assert tokenization.load_spiece(str(tmp_path / "m.model")).get_piece_size() == 300
  command[command.index("--input") + 1] = str(tmp_path / "missing-*.txt")
  done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, check=False)
  assert done.returncode != 0 and "no file matches" in done.stderr
