"""Tests of xlnet_tf.serving.text_encoder (and text_layouts' classification layout): the
text side of a raw-string SavedModel.

The graph (`normalize_text_tf`, `XLNetTextEncoder`) is compared with the Python path of
`xlnet_tf.data.tokenization` on every line of the bundled corpora, on synthetic lines built
to hit SentencePiece score ties, user-defined symbols and unknown characters, on every single
code point (normalisation), and the classification layout with a literal Python reference.
Most tests use the session fixture `spiece_model` (conftest.py, 4000 pieces, Moby-Dick).
The fresh-process SavedModel test and the uncased sweep of every corpus line are slow.
"""

import glob
import json
import os
import random
import shutil
import subprocess
import sys
import textwrap
import unicodedata

import numpy as np
import pytest
import sentencepiece as spm
import tensorflow as tf

from helpers import CORPUS_GLOB
from helpers import with_extra_pieces
from xlnet_tf.data import tokenization
from xlnet_tf.serving.text_encoder import XLNetTextEncoder, normalize_text_tf
from xlnet_tf.serving.text_layouts import classifier_inputs
from xlnet_tf.serving.text_layouts import classifier_layout

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

U = "\u2581"  # SentencePiece's word-start marker
SENTIMENT = os.path.join(ROOT,
                         "data_prep", "sample_data", "sentiment",
                         "movieReviewSnippets_GroundTruth.txt")


# --- corpora and references -------------------------------------------------------------------


def moby_lines():
  """Every non-blank line (paragraph) of the bundled Moby-Dick, raw."""
  lines = []
  for path in sorted(glob.glob(CORPUS_GLOB)):
    with open(path, encoding="utf-8") as f:
      lines.extend(line for line in f if line.strip())
  return lines


def sentiment_sentences():
  """The third tab column of every line of the sentiment file (CRLF line ends).

  10,605 sentences: `wc -l` says 10,604 because the last line has no line end.
  """
  with open(SENTIMENT, encoding="utf-8", newline="") as f:
    rows = f.read().split("\r\n")
  return [row.split("\t")[2] for row in rows if row]


def python_ids(sp, texts, lower=False, keep_accents=False):
  return [tokenization.encode_ids(sp, tokenization.normalize_text(t, lower, keep_accents))
          for t in texts]


def reference_layout(ids_a, ids_b, seq_len):
  """The released rule, written out literally: pop from the longer text (B on ties); a
  second text is used only if it has tokens (`if tokens_b:`)."""
  a = list(ids_a)
  if not ids_b:
    a = a[:seq_len - 2]
    tokens = a + [tokenization.SEP_ID, tokenization.CLS_ID]
    segments = [0] * (len(a) + 1) + [2]
  else:
    b = list(ids_b)
    while len(a) + len(b) > seq_len - 3:
      if len(a) > len(b):
        a.pop()
      else:
        b.pop()
    tokens = a + [tokenization.SEP_ID] + b + [tokenization.SEP_ID, tokenization.CLS_ID]
    segments = [0] * (len(a) + 1) + [1] * (len(b) + 1) + [2]
  pad = seq_len - len(tokens)
  return ([0] * pad + tokens, [4] * pad + segments, [1.0] * pad + [0.0] * len(tokens))


def other_layout():
  """`classifier_features.classifier_layout` (the Python twin) when it can be imported."""
  try:
    from xlnet_tf.data import classifier_features  # pylint: disable=g-import-not-at-top
    return classifier_features.classifier_layout
  except Exception:  # pylint: disable=broad-except
    return None


@pytest.fixture(scope="module")
def comma_model(spiece_model, tmp_path_factory):
  """The fixture model plus digit-comma pieces like the released vocabulary's."""
  extra = [U + "2000,", U + "2000", "2000,", "2000", "1851,", "1851", U + "7,", U + "whale,",
           U + "1775,", "000,", U + "40,"]
  return with_extra_pieces(spiece_model, extra,
                           tmp_path_factory.mktemp("comma") / "comma.model")


@pytest.fixture(scope="module")
def letters_model(tmp_path_factory):
  """A model trained on letters only: digits and "," are unknown, so "12," is one unknown
  piece that still needs the re-split."""
  lines = [tokenization.normalize_text(line) for line in moby_lines()[:200]]
  lines = ["".join(c for c in line if c.isalpha() or c == " ") for line in lines]
  prefix = str(tmp_path_factory.mktemp("letters") / "letters")
  spm.SentencePieceTrainer.train(
      sentence_iterator=iter(lines), model_prefix=prefix, vocab_size=300, minloglevel=2,
      num_threads=2, pad_id=-1, control_symbols=list(tokenization.CONTROL_SYMBOLS),
      user_defined_symbols=list(tokenization.USER_DEFINED_SYMBOLS))
  return prefix + ".model"


def synthetic_lines(n, seed):
  """Lines built to stress the segmentation: numbers with equal-score splits ("000"),
  user-defined symbols of 1 to 5 bytes, unknown one- and multi-byte characters, NUL,
  Unicode whitespace, quotes, accents, digit-comma pieces."""
  rng = random.Random(seed)
  words = " ".join(moby_lines()[:50]).split()
  extra = ["Ж", "中文", "ΣΑΣ", "가", "😀", "\x00", "\x01", "–", "£", "€", "<eop>", "<cls>", ".",
           "(", ")", '"', "-", "``", "''", "é", "Å", "ﬁ", "①", "１", "½", "٣", "İ", "ß",
           "\u00a0", "\u3000", "\t", "\u200b", "\ufeff", "caf\u00e9", "e\u0301"]
  lines = []
  for _ in range(n):
    parts = []
    for _ in range(rng.randint(0, 30)):
      r = rng.random()
      if r < 0.45:
        parts.append(rng.choice(words))
      elif r < 0.7:
        parts.append(rng.choice(["2000", "1000", "3000000", "000", "1851", "7", "40,000",
                                 str(rng.randint(0, 10 ** 6))]) + rng.choice(["", ",", ", "]))
      else:
        parts.append(rng.choice(extra))
    lines.append(rng.choice([" ", ""]).join(parts))
  return lines


# --- normalisation ----------------------------------------------------------------------------


@pytest.mark.parametrize("text, lower, keep_accents", [
    ("  a\t\tb \n\n c  ", False, False),
    ("x\u00a0\u00a0y\u3000z\r\n\x1c\x85\u2028\u2029w\x0b", False, False),
    ("", False, False),
    (" \t\n ", True, False),
    ("``Call me Ishmael,'' he said.", False, False),
    ("'''", False, False),
    ("````''", False, False),
    ("`single` and 'single'", False, False),
    ("Cr\u00e8me BR\u00dbL\u00c9E cafe\u0301 \ufb01ne \u00bd", False, False),
    ("Cr\u00e8me BR\u00dbL\u00c9E cafe\u0301 \ufb01ne", False, True),
    ("Caf\u00e9 NA\u00cfVE \u0130stanbul \u03a3\u0391\u03a3 STRA\u00dfE \u2160", True, False),
    ("Caf\u00e9 NA\u00cfVE \u0130stanbul \u03a3\u0391\u03a3.", True, True),
    ("A\x00B\x00\u03a3\x00", True, False),  # tf.strings.lower alone stops at NUL
    ("\u200b\ufeffzero\u200dwidth", True, False),  # not whitespace for str.split either
    ("\u0915\u094d\u0937 \u0627\u064e \u05e9\u05c1 \u0e01\u0e34", False, False),  # marks
    ("\U0001F600 \u4e2d\u6587 \ud55c\uad6d\uc5b4", True, False),
])
def test_normalize_text_tf_equals_python(text, lower, keep_accents):
  got = normalize_text_tf(tf.constant([text, text + " x"]), lower, keep_accents).numpy()
  assert [g.decode("utf-8") for g in got] == [
      tokenization.normalize_text(text, lower, keep_accents),
      tokenization.normalize_text(text + " x", lower, keep_accents)]


def test_normalize_text_tf_invalid_utf8_becomes_replacement_char():
  got = normalize_text_tf(tf.constant([b"a\xffb  c", b"ok\xe2\x82"]), lower=True)
  assert [g.decode("utf-8") for g in got.numpy()] == ["a\ufffdb c", "ok\ufffd"]


# Capitals added in Unicode 14 (Python 3.11's unicodedata) that ICU in TensorFlow 2.20 does
# not lower-case: U+2C2F, four Latin letters of Extended-D, and the Vithkuqi capitals.
LOWER_UNICODE14 = frozenset([0x2C2F, 0xA7C0, 0xA7D0, 0xA7D6, 0xA7D8]
                            + [c for c in range(0x10570, 0x10596)
                               if c not in (0x1057B, 0x1058B, 0x10593)])


def test_normalize_every_code_point():
  """Each code point alone, lower-cased and accents stripped: the graph differs from Python
  only where the two Unicode versions differ (see the module docstring)."""
  # Planes 0-3 and 14 (planes 4-13 are unassigned, 15-16 private use); no surrogates.
  codes = [c for c in list(range(0x40000)) + list(range(0xE0000, 0xE1000))
           if not 0xD800 <= c < 0xE000]
  got = normalize_text_tf(tf.constant([chr(c).encode("utf-8") for c in codes]),
                          lower=True).numpy()
  differ = {c for c, g in zip(codes, got)
            if g.decode("utf-8") != tokenization.normalize_text(chr(c), lower=True)}
  unassigned = {c for c in differ if unicodedata.category(chr(c)) == "Cn"}
  # ICU's NFKD (newer Unicode) decomposes code points that Python's Unicode 14 leaves
  # unassigned and therefore alone (Garay, Tulu-Tigalari, outlined Latin letters, ...).
  # ICU's toLower in TensorFlow (older Unicode) misses the capitals added in Unicode 14.
  if unicodedata.unidata_version == "14.0.0":  # Python 3.11; other versions differ elsewhere
    assert differ - unassigned == LOWER_UNICODE14
  print(f"\nsingle code points: {len(differ)} of {len(codes)} differ "
        f"({len(unassigned)} unassigned in Unicode {unicodedata.unidata_version}, "
        f"{len(differ - unassigned)} Unicode-14 capitals)")


# --- tokenize: agreement with the Python path -------------------------------------------------


@pytest.mark.parametrize("lower", [False, pytest.param(True, marks=pytest.mark.slow)],
                         ids=["cased", "uncased"])
def test_tokenize_agrees_on_every_corpus_line(spiece_model, lower):
  sp = tokenization.load_spiece(spiece_model)
  encoder = XLNetTextEncoder(spiece_model, lower=lower)
  corpora = {"moby_dick": moby_lines(), "sentiment": sentiment_sentences()}
  assert len(corpora["moby_dick"]) > 2700 and len(corpora["sentiment"]) == 10605
  for name, lines in corpora.items():
    got = encoder.tokenize(tf.constant(lines)).to_list()
    want = python_ids(sp, lines, lower=lower)
    same = sum(g == w for g, w in zip(got, want))
    print(f"\n{'uncased' if lower else 'cased'} {name}: {same}/{len(lines)} lines identical "
          f"({100.0 * same / len(lines):.2f}%)")
    differing = [line for line, g, w in zip(lines, got, want) if g != w]
    assert not differing, differing[:3]


@pytest.mark.parametrize("lower, keep_accents", [(False, False), (True, True)])
def test_tokenize_agrees_on_synthetic_lines(spiece_model, comma_model, letters_model, lower,
                                            keep_accents):
  """Score ties after user-defined symbols and unknown multi-byte characters (where the TF
  Text tokenizers alone disagree with the sentencepiece package), resplits, unknown "12,"."""
  lines = synthetic_lines(600, seed=int(lower))
  for path in (spiece_model, comma_model, letters_model):
    sp = tokenization.load_spiece(path)
    got = XLNetTextEncoder(path, lower, keep_accents).tokenize(lines).to_list()
    want = python_ids(sp, lines, lower, keep_accents)
    assert [line for line, g, w in zip(lines, got, want) if g != w] == [], path


def test_tokenize_pieces_and_shapes(spiece_model):
  sp = tokenization.load_spiece(spiece_model)
  encoder = XLNetTextEncoder(spiece_model)
  texts = ["In 2000, the ``Pequod'' sailed.", "", "   ", "Ж"]
  pieces = encoder.tokenize_pieces(texts).to_list()
  assert [[p.decode("utf-8") for p in row] for row in pieces] == [
      tokenization.encode_pieces(sp, tokenization.normalize_text(t)) for t in texts]
  ids = encoder.tokenize(tf.constant(texts))
  assert ids.dtype == tf.int32 and ids.shape.rank == 2
  assert ids.to_list() == python_ids(sp, texts)
  assert ids.to_list()[3] == [tokenization.encode_ids(sp, "Ж")[0], tokenization.UNK_ID]


# --- the digit-comma re-split -----------------------------------------------------------------


def test_resplit_in_graph_equals_python(comma_model):
  sp = tokenization.load_spiece(comma_model)
  encoder = XLNetTextEncoder(comma_model)
  texts = [
      "In 2000, the whale",        # "▁2000," -> "▁2000", ","
      "(2000, sea",                # "2000," after "(": the re-encoding's "▁" is removed
      "whale(1851, y",             # "1851," inside a word: a lone "▁" is dropped
      "it was 7, then",            # "▁7," starts a word: "▁", "7", "," all stay
      "the whale, the sea, 12 ,",  # no digit before the comma: no re-split
      "In 2000, (1851, 7, 40,000 x 1775, 2000,2000,",
      "\u0416\u0416 2000, \u4e00 \uff12\uff10\uff10\uff10, \u00bd,",
  ]
  pieces = [sp.encode(tokenization.normalize_text(t), out_type=str) for t in texts]
  assert U + "2000," in pieces[0] and "2000," in pieces[1] and "1851," in pieces[2]
  assert U + "7," in pieces[3] and U + "whale," in pieces[4]
  got = encoder.tokenize(texts).to_list()
  assert got == python_ids(sp, texts)
  assert [[p.decode("utf-8") for p in row] for row in encoder.tokenize_pieces(texts).to_list()] == [
      tokenization.encode_pieces(sp, tokenization.normalize_text(t)) for t in texts]
  assert tokenization.encode_pieces(sp, "(2000, sea")[:4] == [U, "(", "2000", ","]
  assert tokenization.encode_pieces(sp, "whale(1851, y")[-5:-2] == ["(", "1851", ","]
  # The whole corpus with these pieces ("1775," occurs in it).
  lines = moby_lines()
  want = python_ids(sp, lines)
  assert sum(w != sp.encode(tokenization.normalize_text(text))
             for text, w in zip(lines, want)) > 0
  assert encoder.tokenize(lines).to_list() == want


def test_resplit_of_an_unknown_piece(letters_model):
  sp = tokenization.load_spiece(letters_model)
  text = "the sea 12, the whale \u0416 7,"
  assert "12," in sp.encode(text, out_type=str)  # one unknown piece
  got = XLNetTextEncoder(letters_model).tokenize([text, "the sea"]).to_list()
  assert got == python_ids(sp, [text, "the sea"])
  assert got[0].count(tokenization.UNK_ID) > sp.encode(text).count(tokenization.UNK_ID)


# --- classifier_inputs ------------------------------------------------------------------------


def check_layout(encoder, sp, texts_a, texts_b, seq_len, lower=False):
  """classifier_inputs vs the literal reference (and classifier_layout when present)."""
  out = classifier_inputs(encoder, tf.constant(texts_a),
                          None if texts_b is None else tf.constant(texts_b), seq_len)
  assert set(out) == {"input_ids", "segment_ids", "input_mask"}
  assert out["input_ids"].dtype == tf.int32 and out["segment_ids"].dtype == tf.int32
  assert out["input_mask"].dtype == tf.float32
  for value in out.values():
    assert value.shape == (len(texts_a), seq_len)
  twin = other_layout()
  ids_a = python_ids(sp, texts_a, lower)
  ids_b = [None] * len(texts_a) if texts_b is None else python_ids(sp, texts_b, lower)
  arrays = [out[key].numpy().tolist() for key in ("input_ids", "segment_ids", "input_mask")]
  for k, (a, b) in enumerate(zip(ids_a, ids_b)):
    want = reference_layout(a, b, seq_len)
    assert tuple(array[k] for array in arrays) == want, (k, texts_a[k][:80])
    if twin is not None:
      twin_out = twin(a, b, seq_len)
      assert [np.asarray(x).tolist() for x in twin_out] == list(want)
  return out


def test_classifier_inputs_on_real_pairs(spiece_model):
  sp = tokenization.load_spiece(spiece_model)
  sentences = sentiment_sentences()[:400]
  paragraphs = moby_lines()[:200]
  encoder = XLNetTextEncoder(spiece_model)
  # Consecutive sentences (most fit), short A with a long B (B cut), long A with a short B
  # (A cut), single texts; T = 16 cuts most, 48 some, 128 few.
  check_layout(encoder, sp, sentences[0::2], sentences[1::2], 48)
  check_layout(encoder, sp, sentences[:200], paragraphs, 128)
  check_layout(encoder, sp, paragraphs, sentences[:200], 16)
  check_layout(encoder, sp, paragraphs, None, 128)
  check_layout(encoder, sp, sentences[:200], None, 16)
  # Second texts without tokens (empty, blank) give the single-text layout, as released.
  blank_b = ["", " ", sentences[5], "\t", ""] * 4
  out = check_layout(encoder, sp, sentences[:20], blank_b, 48)
  single = check_layout(encoder, sp, sentences[:20], None, 48)
  for k in range(20):
    if k % 5 != 2:
      assert out["input_ids"][k].numpy().tolist() == single["input_ids"][k].numpy().tolist()
  # More lengths through `layout` (the same graph after tokenization).
  ids = {"s": encoder.tokenize(sentences[:200]), "p": encoder.tokenize(paragraphs)}
  py = {"s": python_ids(sp, sentences[:200]), "p": python_ids(sp, paragraphs)}
  twin = other_layout()
  for seq_len in (3, 9, 64, 300):
    for a, b in (("s", "p"), ("p", "s"), ("p", "p"), ("s", None)):
      out = classifier_layout(ids[a], None if b is None else ids[b], seq_len)
      arrays = [out[key].numpy().tolist() for key in ("input_ids", "segment_ids", "input_mask")]
      for k in range(200):
        want = reference_layout(py[a][k], None if b is None else py[b][k], seq_len)
        assert tuple(array[k] for array in arrays) == want, (seq_len, a, b, k)
        if twin is not None:
          assert [np.asarray(x).tolist() for x in twin(
              py[a][k], None if b is None else py[b][k], seq_len)] == list(want)
  uncased = XLNetTextEncoder(spiece_model, lower=True)
  check_layout(uncased, sp, paragraphs[:50], sentences[:50], 64, lower=True)


def test_classifier_inputs_edge_cases(spiece_model):
  sp = tokenization.load_spiece(spiece_model)
  encoder = XLNetTextEncoder(spiece_model)
  long_text = ("Call me Ishmael. " * 6000)[:100_000]
  assert len(long_text) == 100_000
  texts_a = ["", "", long_text, "Caf\u00e9 na\u00efve cr\u00e8me br\u00fbl\u00e9e",
             "\u4e2d\u6587\u6587\u672c \U0001F600\U0001F433 \u0416\u0416\u0416", "a", long_text,
             "The whale."]
  texts_b = ["", "Some years ago.", "short", long_text, "\U0001F600 emoji \u00e9\u00e8",
             "b " * 300, long_text, ""]
  check_layout(encoder, sp, texts_a, texts_b, 32)
  check_layout(encoder, sp, texts_a, None, 32)
  check_layout(encoder, sp, texts_a, texts_b, 3)    # only the special tokens fit
  check_layout(encoder, sp, texts_a, None, 2)
  out = check_layout(encoder, sp, ["", ""], ["", "x"], 5)
  # Both empty: `<sep> <cls>` (an empty B is no B, as released), not `<sep> <sep> <cls>`.
  assert out["input_ids"].numpy().tolist()[0] == [0, 0, 0, 4, 3]
  assert out["segment_ids"].numpy().tolist()[0] == [4, 4, 4, 0, 2]
  # T exactly fitting: no padding, nothing cut.
  a, b = "Call me Ishmael.", "Some years ago, never mind how long."
  n_a, n_b = len(python_ids(sp, [a])[0]), len(python_ids(sp, [b])[0])
  out = check_layout(encoder, sp, [a], [b], n_a + n_b + 3)
  assert out["input_mask"].numpy().sum() == 0
  assert out["input_ids"].numpy()[0, n_a] == tokenization.SEP_ID
  out = check_layout(encoder, sp, [a], None, n_a + 2)
  assert out["input_mask"].numpy().sum() == 0
  check_layout(encoder, sp, [a], [b], n_a + n_b + 2)  # one too short: B loses a token
  for seq_len, text_b in ((2, ["x"]), (1, None)):
    with pytest.raises(ValueError, match="max_seq_length must be at least"):
      classifier_inputs(encoder, tf.constant(["x"]), text_b, seq_len)


def test_graph_and_python_layouts_take_their_constants_from_layouts(monkeypatch):
  """One home for the special ids and segment ids: changed in `layouts`, the in-graph
  layout and the Python one (classifier_features, used by RACE too) change alike."""
  from xlnet_tf.data import classifier_features  # pylint: disable=g-import-not-at-top
  from xlnet_tf.data import layouts  # pylint: disable=g-import-not-at-top
  for name, value in (("CLASSIFIER_PAD_ID", 11), ("CLASSIFIER_SEGMENT_PAD", 7),
                      ("SEGMENT_A", 5), ("SEGMENT_B", 6), ("SEGMENT_CLS", 9)):
    monkeypatch.setattr(layouts, name, value)
  ids_a, ids_b = [[20, 21, 22], [23]], [[30], [31, 32]]
  out = classifier_layout(tf.ragged.constant(ids_a), tf.ragged.constant(ids_b), 8)
  for k in range(2):
    want = classifier_features.classifier_layout(ids_a[k], ids_b[k], 8)
    for key, value in zip(("input_ids", "segment_ids", "input_mask"), want):
      np.testing.assert_array_equal(out[key][k].numpy(), value)
  assert out["segment_ids"][1].numpy().tolist() == [7, 7, 5, 5, 6, 6, 6, 9]
  assert out["input_ids"][1].numpy().tolist()[:2] == [11, 11]


def test_classifier_inputs_in_tf_function_with_unknown_batch(spiece_model):
  sp = tokenization.load_spiece(spiece_model)
  encoder = XLNetTextEncoder(spiece_model)
  spec = tf.TensorSpec([None], tf.string)

  @tf.function(input_signature=[spec, spec])
  def features(a, b):
    return classifier_inputs(encoder, a, b, 24)

  concrete = features.get_concrete_function()
  for value in concrete.structured_outputs.values():
    assert value.shape.as_list() == [None, 24]
  texts_a = ["Call me Ishmael.", "", "\u00e9t\u00e9 2000, 40,000"]
  texts_b = ["Some years ago.", "x", ""]
  out = features(tf.constant(texts_a), tf.constant(texts_b))
  eager = classifier_inputs(encoder, tf.constant(texts_a), tf.constant(texts_b), 24)
  for key in out:
    np.testing.assert_array_equal(out[key].numpy(), eager[key].numpy())
  ids_a, ids_b = python_ids(sp, texts_a), python_ids(sp, texts_b)
  assert out["input_ids"].numpy().tolist() == [reference_layout(a, b, 24)[0]
                                               for a, b in zip(ids_a, ids_b)]


# --- SavedModel -------------------------------------------------------------------------------


class _Serving(tf.Module):
  """What an export wraps: raw strings in, ids / classifier inputs out."""

  def __init__(self, encoder):
    super().__init__()
    self.encoder = encoder

  @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
  def tokenize(self, texts):
    ids = self.encoder.tokenize(texts)
    return {"ids": ids.to_tensor(default_value=-1), "lengths": ids.row_lengths()}

  @tf.function(input_signature=[tf.TensorSpec([None], tf.string)] * 2)
  def classify(self, text_a, text_b):
    return classifier_inputs(self.encoder, text_a, text_b, 64)


_FRESH_PROCESS = textwrap.dedent("""
    import importlib.abc, json, os, sys
    class Block(importlib.abc.MetaPathFinder):
      def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("xlnet_tf", "data_prep", "sentencepiece"):
          raise ImportError("blocked in the serving process: " + name)
        return None
    sys.meta_path.insert(0, Block())
    import numpy as np
    import tensorflow as tf
    import tensorflow_text  # registers the TF Text ops
    model_dir, model_file, inputs, outputs = sys.argv[1:5]
    assert not os.path.exists(model_file), model_file
    with open(inputs, encoding="utf-8") as f:
      data = json.load(f)
    loaded = tf.saved_model.load(model_dir)
    tok = loaded.signatures["tokenize"](texts=tf.constant(data["texts"]))
    cls = loaded.signatures["classify"](text_a=tf.constant(data["a"]),
                                        text_b=tf.constant(data["b"]))
    assert not [m for m in sys.modules if m.split(".")[0] in ("xlnet_tf", "sentencepiece")]
    np.savez(outputs, **{k: v.numpy() for k, v in {**tok, **cls}.items()})
""")


@pytest.mark.slow
def test_saved_model_serves_raw_strings_without_this_package(spiece_model, comma_model,
                                                             tmp_path):
  """A SavedModel of the text encoder (tokenize, the classification layout) serves raw
  strings in a fresh process that cannot import this package or sentencepiece, with the
  SentencePiece model file gone: the same ids as in-process and as the Python path."""
  # The comma model: the export must carry the re-split too.
  model_file = str(tmp_path / "spiece.model")
  shutil.copy(comma_model, model_file)
  encoder = XLNetTextEncoder(model_file, lower=True)
  texts = moby_lines()[:40] + sentiment_sentences()[:40] + [
      "", "In 2000, (1851, 7, 40,000", "\u4e2d\u6587 \U0001F600 Caf\u00e9", "x" * 100_000]
  text_a, text_b = sentiment_sentences()[:30:2], sentiment_sentences()[1:30:2]
  want_tok = encoder.tokenize(texts)
  want_cls = classifier_inputs(encoder, tf.constant(text_a), tf.constant(text_b), 64)
  serving = _Serving(encoder)
  export_dir = str(tmp_path / "export")
  tf.saved_model.save(serving, export_dir,
                      signatures={"tokenize": serving.tokenize, "classify": serving.classify})
  os.remove(model_file)
  inputs, outputs = str(tmp_path / "inputs.json"), str(tmp_path / "outputs.npz")
  with open(inputs, "w", encoding="utf-8") as f:
    json.dump({"texts": texts, "a": text_a, "b": text_b}, f)
  env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
  env["TF_CPP_MIN_LOG_LEVEL"] = "2"
  run = subprocess.run([sys.executable, "-c", _FRESH_PROCESS, export_dir, model_file, inputs,
                        outputs], cwd=str(tmp_path), env=env, capture_output=True, text=True,
                       timeout=300, check=False)
  assert run.returncode == 0, run.stderr[-3000:]
  got = np.load(outputs)
  lengths = got["lengths"].tolist()
  assert [got["ids"][k, :n].tolist() for k, n in enumerate(lengths)] == want_tok.to_list()
  assert (got["ids"][np.arange(got["ids"].shape[1])[None, :] >= got["lengths"][:, None]]
          == -1).all()
  sp = tokenization.load_spiece(comma_model)
  assert want_tok.to_list() == python_ids(sp, texts, lower=True)
  for key, value in want_cls.items():
    np.testing.assert_array_equal(got[key], value.numpy())
