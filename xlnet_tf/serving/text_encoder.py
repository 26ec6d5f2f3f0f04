"""XLNet text encoding as TF ops: raw strings -> normalised text -> SentencePiece ids.

The graph twin of the Python path in `xlnet_tf.data.tokenization` (`normalize_text`,
`encode_ids`), built only from `tensorflow` and `tensorflow_text` ops so that a SavedModel
containing it serves raw strings with none of this package installed (the ids become model
inputs in `text_layouts`); and `check_shapes`, the run-time shape checks of the inputs of
every serving signature:

  >>> encoder = XLNetTextEncoder("spiece.model", lower=False)
  >>> encoder.tokenize(tf.constant(["In 2000, the ``Pequod'' sailed."]))
  <tf.RaggedTensor [[...ids...]]>           # == encode_ids(sp, normalize_text(text))

The SentencePiece model is kept inside the SavedModel, twice and in two forms: the regular
`tf_text.SentencepieceTokenizer` receives the serialized model proto, which becomes an
attribute of the op that creates its resource (saved with the function that re-creates the
resource on load); `tf_text.FastSentencepieceTokenizer` holds a converted copy as a uint8
constant that the traced functions capture. The .model file is not needed once the encoder
is built. Exporting:

  class Serving(tf.Module):
    def __init__(self, encoder):
      super().__init__()
      self.encoder = encoder            # tracked: saved with the module
    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def serve(self, texts):
      return self.encoder.tokenize(texts).to_tensor()
  tf.saved_model.save(Serving(encoder), path)
  # serving process: import tensorflow_text (registers the ops), tf.saved_model.load(path)

Normalisation, step by step, and how each step matches the Python path:
  0. Invalid UTF-8 bytes become U+FFFD (Python strings cannot hold them; valid UTF-8 is
     unchanged, NUL included).
  1. Whitespace: every run of characters for which Python's `str.isspace()` is true (ASCII
     space/tab/newlines, \\x1c-\\x1f, NBSP, U+2000-U+200A, U+3000, ...) becomes one space and
     the ends are stripped, exactly like `" ".join(text.split())`. The character class is
     built from the running Python's `unicodedata` (RE2's `\\s` is ASCII only).
  2. "``" and then "''" become '"' (left to right, non-overlapping, like `str.replace`).
  3. Unless `keep_accents`: NFKD with `tf_text.normalize_utf8` (ICU), then every character
     with a non-zero canonical combining class is removed. The class is built from
     `unicodedata.combining(c) != 0`, the Python path's own test, rather than `\\p{Mn}`
     (which differs: e.g. U+034F COMBINING GRAPHEME JOINER is Mn with class 0, and some Mc
     characters have non-zero classes).
  4. If `lower`: `tf.strings.lower(..., encoding="utf-8")` (ICU `toLower`), not
     `tf_text.case_fold_utf8`. Over every code point, `toLower` equals Python's
     `str.lower()` except for the characters that ICU in TensorFlow does not know (added in
     Unicode 14, the version of Python 3.11's `unicodedata`: 40 of them, e.g. U+2C2F and
     the Vithkuqi capitals U+10570..U+10595) and it also applies the context-sensitive final
     sigma ("ΣΑΣ" -> "σας") like Python. Case folding instead is NFKC-like and maps
     "ß" -> "ss", "ς" -> "σ", "²" -> "2" (about 9400 code points differ from `str.lower`).
     `tf.strings.lower` stops at a NUL byte, so strings are lowered piecewise between NULs.

Known, inherent differences from the Python path (Unicode versions, not logic):
  * ICU's NFKD in `tensorflow_text` follows a newer Unicode version than Python 3.11
    (14.0): about 118 code points that are unassigned in Unicode 14 (Garay, Tulu-Tigalari,
    Kirat Rai, the outlined Latin letters U+1CCD6.., ...) are decomposed by ICU and left
    alone by Python.
  * ICU's `toLower` in TensorFlow follows an older Unicode version: the 40 capitals added
    in Unicode 14 are not lower-cased (see step 4).
  * The character classes are taken from the Python that builds the graph; a SavedModel
    keeps the classes of the Python that exported it.
  Over all single code points these are the only differences (tests/serving/test_serving_text.py);
  none of these characters occurs in the bundled corpora.

Segmentation. SentencePiece picks the best-scoring segmentation, and equal scores are common
("000" = "0" + "00" = "00" + "0"); which one wins then depends on float rounding, i.e. on
the exact arithmetic of the implementation. The `sentencepiece` package (0.2.3, the Python
path) and the two TF Text tokenizers do not agree on it:
  * `tf_text.SentencepieceTokenizer` bundles another SentencePiece version, whose search
    breaks such ties differently: it gave "2", "0", "00" where the package gives "2",
    "00", "0" on one Moby-Dick paragraph, and on 14-19% of synthetic number-heavy
    lines.
  * `tf_text.FastSentencepieceTokenizer` runs the same search as the package (float sums,
    first candidate kept on ties) with two differences, both removed here: (a) the package
    scores a user-defined piece 0.1 per UTF-8 byte - 0.1 (measured: this rule reproduced
    every segmentation of several thousand lines on two models; "<eop>", "–", "£", "€"
    shift all later path scores otherwise), whereas the fast tokenizer uses the stored
    score: it gets a model copy with these scores; (b) it charges an unknown character per
    byte, the package per character: texts with unknown pieces are segmented again with
    every character that occurs in no piece replaced by a one-byte placeholder
    (`XLNetTextEncoder._sentencepiece`).
So the fast tokenizer segments; the regular one supplies piece <-> id lookups, the
SentencePiece normalisation of texts with unknown pieces, and the text of unknown pieces.
With both fixes the graph equals the Python path on every line of the bundled corpora and
on every line of the synthetic stress tests (numbers, user-defined symbols, unknown
multi-byte characters, NUL; see tests/serving/test_serving_text.py). Models with byte fallback are
not supported (`FastSentencepieceTokenizer` rejects BYTE pieces).

Encoding (`XLNetTextEncoder.tokenize`): SentencePiece pieces of the normalised text, then the
released digit-comma re-split as in `tokenization._resplit`: a piece ending in a
`str.isdigit()` character followed by "," is replaced by the pieces of the number alone (its
"▁" removed before re-encoding) and a separate ","; when the original piece did not start
with "▁" and the first new piece does, that "▁" is removed (a lone "▁" is dropped). Ids are
looked up piece by piece (unknown pieces -> <unk>), like `tokenization.encode_ids`.
"""

import functools
import unicodedata
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import tensorflow as tf
import tensorflow_text as tf_text
from sentencepiece import sentencepiece_model_pb2

from xlnet_tf.data import tokenization

_UNDERLINE = tokenization.SPIECE_UNDERLINE.encode("utf-8")  # b"\xe2\x96\x81", 3 bytes
# What a text input of a serving signature is (for the shape-check messages).
TEXTS = "a 1-D string Tensor, one UTF-8 text per example; a single text is a list of one"
# The graph code has no Python control flow on tensors: autograph would only cost tracing
# time (seconds), so the functions below are marked `do_not_convert`.


def _char_class(code_points: Sequence[int]) -> str:
  """An RE2 character class "[...]" matching exactly `code_points` (sorted, non-empty)."""
  ranges = []
  for cp in code_points:
    if ranges and ranges[-1][1] == cp - 1:
      ranges[-1][1] = cp
    else:
      ranges.append([cp, cp])
  parts = []
  for lo, hi in ranges:
    parts.append(f"\\x{{{lo:x}}}" if lo == hi else f"\\x{{{lo:x}}}-\\x{{{hi:x}}}")
  return "[" + "".join(parts) + "]"


@functools.lru_cache(maxsize=None)
def _python_char_classes() -> Dict[str, str]:
  """RE2 classes of Python's `str.isspace`, `unicodedata.combining != 0`, `str.isdigit`.

  Computed once from the running interpreter's Unicode database (about 0.3 s), so the
  graph applies the very tests the Python path applies.
  """
  space, combining, digit = [], [], []
  for cp in range(0x110000):
    c = chr(cp)
    if c.isspace():
      space.append(cp)
    if unicodedata.combining(c):
      combining.append(cp)
    if c.isdigit():
      digit.append(cp)
  return {"space": _char_class(space), "combining": _char_class(combining),
          "digit": _char_class(digit)}


def _expected_shape(dims: Sequence[Optional[int]]) -> str:
  return "[" + ", ".join("batch" if d is None else str(int(d)) for d in dims) + "]"


@tf.autograph.experimental.do_not_convert
def check_shapes(signature: str,
                 inputs: Mapping[str, Tuple[tf.Tensor, Sequence[Optional[int]], str]]
                 ) -> Dict[str, tf.Tensor]:
  """The inputs of a serving function, made to wait for run-time checks of their shapes.

  A loaded SavedModel signature (and TF Serving) does not enforce the shapes it declares: a
  scalar string or a [B, 200] id matrix for a [None, 128] input would otherwise fail deep
  in the graph ("params must be at least 1 dimensional"). Each input gets an in-graph assert
  that fails with "{signature}: input {name} has shape [...]; expected [batch, ...]
  ({what})", and all inputs must have the same batch size.

  The check compares the text of the run-time shape with a pattern: the rank and the known
  dimensions of the traced signature are static, so a check on `tf.rank` or on the known
  dimensions would be folded away by TensorFlow (Python-side or by Grappler) and never run.

  Args:
    signature: the signature's name, for the messages.
    inputs: name -> (tensor, expected dimensions (None: the batch dimension), what the
      input is, e.g. "one UTF-8 text per example").
  Returns:
    name -> the tensor, behind the checks (use these in the rest of the function).
  """
  checks, batches = [], []
  for name, (tensor, dims, what) in inputs.items():
    shape = tf.strings.reduce_join(tf.strings.as_string(tf.shape(tensor, out_type=tf.int64)),
                                   separator=", ")
    pattern = ", ".join("[0-9]+" if d is None else str(int(d)) for d in dims)
    message = tf.strings.join([f"{signature}: input {name} has shape [", shape,
                               f"]; expected {_expected_shape(dims)} ({what})"])
    checks.append(tf.debugging.Assert(tf.strings.regex_full_match(shape, pattern),
                                      [message], name=f"check_{name}_shape"))
    batches.append((name, tf.strings.regex_replace(shape, ",.*", "")))
  with tf.control_dependencies(checks):
    first, first_batch = batches[0]
    for name, batch in batches[1:]:
      message = tf.strings.join([f"{signature}: inputs {first} and {name} have batch sizes ",
                                 first_batch, " and ", batch, "; expected the same (one row "
                                 "per example)"])
      checks.append(tf.debugging.Assert(tf.equal(first_batch, batch), [message],
                                        name=f"check_{name}_batch"))
  with tf.control_dependencies(checks):
    return {name: tf.identity(tensor) for name, (tensor, _, _) in inputs.items()}


def _row_sums(values: tf.Tensor, row_splits: tf.Tensor) -> tf.Tensor:
  """Sums of int64 `values` [N] over the rows given by `row_splits` [B + 1] -> [B].

  (Cheaper to trace than a ragged `reduce_sum`, which adds segment ids and assertions.)
  """
  total = tf.concat([tf.zeros([1], tf.int64), tf.cumsum(values)], axis=0)
  return tf.gather(total, row_splits[1:]) - tf.gather(total, row_splits[:-1])


@tf.autograph.experimental.do_not_convert
def _lower_utf8(texts: tf.Tensor) -> tf.Tensor:
  """`str.lower()` of UTF-8 strings [B] (ICU `toLower`), also past NUL characters.

  `tf.strings.lower` stops at the first NUL, and so does a "\\x00" separator attribute, so
  the text is lowered between NULs and each part gets its NUL back as data.
  """
  parts = tf.strings.split(texts, sep="\x00")  # [B, (p)]; "" -> [""]
  lowered = tf.strings.lower(parts.flat_values, encoding="utf-8")
  lowered = tf.strings.join([lowered, tf.fill(tf.shape(lowered), "\x00")])
  joined = tf.strings.reduce_join(parts.with_flat_values(lowered), axis=-1)
  length = tf.strings.length(joined)
  return tf.strings.substr(joined, tf.zeros_like(length), length - 1)  # the last NUL


@tf.autograph.experimental.do_not_convert
def normalize_text_tf(texts, lower: bool = False, keep_accents: bool = False) -> tf.Tensor:
  """`tokenization.normalize_text` of every string, as TF ops.

  Args:
    texts: string Tensor [B] (any shape works: the ops are element-wise), UTF-8.
    lower: lower-case (for uncased models).
    keep_accents: keep accents; by default NFKD and drop combining marks.

  Returns:
    string Tensor of the same shape: the normalised texts. See the module docstring for the
    steps and the (Unicode-version) characters on which it can differ from Python.
  """
  classes = _python_char_classes()
  texts = tf.convert_to_tensor(texts, dtype=tf.string)
  texts = tf.strings.unicode_transcode(texts, "UTF-8", "UTF-8", errors="replace",
                                       replacement_char=0xFFFD,
                                       replace_control_characters=False)
  space = classes["space"]
  texts = tf.strings.regex_replace(texts, space + "+", " ")
  texts = tf.strings.regex_replace(texts, "^ | $", "")
  texts = tf.strings.regex_replace(texts, "``", '"')
  texts = tf.strings.regex_replace(texts, "''", '"')
  if not keep_accents:
    texts = tf_text.normalize_utf8(texts, "NFKD")
    texts = tf.strings.regex_replace(texts, classes["combining"] + "+", "")
  if lower:
    texts = _lower_utf8(texts)
  return texts


def _piece_chars(proto) -> List[int]:
  """Sorted code points of every character in a normal or user-defined piece of a model."""
  kinds = (sentencepiece_model_pb2.ModelProto.SentencePiece.NORMAL,
           sentencepiece_model_pb2.ModelProto.SentencePiece.USER_DEFINED)
  return sorted({ord(c) for p in proto.pieces if p.type in kinds for c in p.piece})


def _unknown_placeholder(sp, proto) -> Optional[str]:
  """A one-byte character that SentencePiece keeps as it is and that no piece contains.

  None if there is none (then texts with unknown multi-byte characters keep the fast
  tokenizer's per-byte penalty; see `XLNetTextEncoder._sentencepiece`).
  """
  in_pieces = set("".join(p.piece for p in proto.pieces))
  for code in range(128):
    c = chr(code)
    if c not in in_pieces and sp.normalize("a" + c + "b") == (
        tokenization.SPIECE_UNDERLINE + "a" + c + "b"):
      return c
  return None


def _fast_tokenizer_model(proto) -> bytes:
  """The model given to `tf_text.FastSentencepieceTokenizer`: user-defined pieces scored as
  the sentencepiece package's encoder scores them (0.1 per UTF-8 byte - 0.1, whatever the
  stored score; measured, see the module docstring) instead of their stored score."""
  fast = sentencepiece_model_pb2.ModelProto()
  fast.CopyFrom(proto)
  for piece in fast.pieces:
    if piece.type == sentencepiece_model_pb2.ModelProto.SentencePiece.USER_DEFINED:
      piece.score = 0.1 * len(piece.piece.encode("utf-8")) - 0.1
  return fast.SerializeToString()


class XLNetTextEncoder(tf.Module):
  """Raw strings -> XLNet ids, as TF ops (savable, servable).

  The SentencePiece model is read once and embedded in the graph (see the module
  docstring), so a SavedModel of a module holding this encoder needs neither the .model
  file nor this package. Methods take string Tensors [B] and work eagerly and inside
  `tf.function` (also with an unknown batch size).
  """

  def __init__(self, spiece_model: str, lower: bool = False, keep_accents: bool = False,
               name: Optional[str] = None):
    """Builds the encoder.

    Args:
      spiece_model: path of the SentencePiece model; it must have the released XLNet
        special ids (checked with `tokenization.load_spiece`, which raises otherwise).
      lower: lower-case the text (uncased models).
      keep_accents: keep accents (by default they are stripped, as for the released models).
      name: module name.
    """
    super().__init__(name=name)
    sp = tokenization.load_spiece(spiece_model)  # clear errors for a wrong or missing file
    with tf.io.gfile.GFile(spiece_model, "rb") as f:
      model_proto = f.read()
    self.lower = bool(lower)
    self.keep_accents = bool(keep_accents)
    self._unk_id = sp.unk_id()
    _python_char_classes()  # fail early, not while tracing
    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(model_proto)
    self._dummy_prefix = proto.normalizer_spec.add_dummy_prefix
    self._known_chars = tf.constant(_piece_chars(proto), tf.int32)
    self._placeholder = _unknown_placeholder(sp, proto)
    with self.name_scope:
      # Segmentation: the fast tokenizer, given the package's user-defined scores.
      self._fast = tf_text.FastSentencepieceTokenizer(_fast_tokenizer_model(proto))
      # Piece <-> id, SentencePiece's normalisation and the text of unknown pieces.
      self._sp = tf_text.SentencepieceTokenizer(model=model_proto, out_type=tf.string)

  @tf.autograph.experimental.do_not_convert
  def normalize(self, texts) -> tf.Tensor:
    """string [B] -> string [B]: `normalize_text_tf` with this encoder's options."""
    return normalize_text_tf(texts, lower=self.lower, keep_accents=self.keep_accents)

  @tf.autograph.experimental.do_not_convert
  def tokenize_pieces(self, texts) -> tf.RaggedTensor:
    """string [B] -> RaggedTensor string [B, (n)]: `tokenization.encode_pieces` of the
    normalised texts (SentencePiece, then the digit-comma re-split)."""
    texts = tf.convert_to_tensor(texts, dtype=tf.string)
    if texts.shape.rank != 1:
      raise ValueError(f"expected a string Tensor [B] of texts, got shape {texts.shape}")
    texts = check_shapes("XLNetTextEncoder", {"texts": (texts, [None], TEXTS)})["texts"]
    return self._resplit(self._sentencepiece(self.normalize(texts)))

  @tf.autograph.experimental.do_not_convert
  def tokenize(self, texts) -> tf.RaggedTensor:
    """string [B] -> RaggedTensor int32 [B, (n)]: for every text t,
    `tokenization.encode_ids(sp, tokenization.normalize_text(t, lower, keep_accents))`."""
    return self._sp.string_to_id(self.tokenize_pieces(texts))

  @tf.autograph.experimental.do_not_convert
  def _fast_ids(self, texts: tf.Tensor) -> tf.RaggedTensor:
    """string [K] -> int32 [K, (n)]: ids of the fast tokenizer (SentencePiece's own
    normalisation included)."""
    return self._fast.tokenize(texts).with_row_splits_dtype(tf.int64)

  @tf.autograph.experimental.do_not_convert
  def _sentencepiece(self, texts: tf.Tensor) -> tf.RaggedTensor:
    """Normalised string [K] -> string [K, (n)]: `sp.encode(t, out_type=str)` for every t.

    The fast tokenizer segments. Its only remaining difference from the sentencepiece
    package, the per-byte instead of per-character penalty of unknown characters, is
    removed for the texts that have unknown pieces: they are normalised by the regular
    tokenizer (the concatenation of its pieces), every character that occurs in no piece
    becomes a one-byte placeholder that occurs in no piece either (so it is unknown, at the
    per-character cost), and the result is segmented again. (A multi-byte character that
    occurs only inside longer pieces, e.g. "½" if "½," were a piece but "½" not, can still
    be unknown at the per-byte cost; trained models have every such character as a piece.)

    Known pieces are the vocabulary entries of the ids. An unknown piece (<unk>) has its own
    text (e.g. "Ж"), which decides whether it needs the re-split ("12," in a vocabulary
    without digits); it is taken from the regular tokenizer: its k-th unknown piece in a
    text is the fast tokenizer's k-th (the counts are checked; were they to differ, the
    text's unknown pieces stay "<unk>").
    """
    ids = self._fast_ids(texts)                                      # [K, (n)]
    unk_count = _row_sums(tf.cast(tf.equal(ids.flat_values, self._unk_id), tf.int64),
                          ids.row_splits)
    has_unk = unk_count > 0
    rows = tf.where(has_unk)[:, 0]                                   # [R]
    num_rows = tf.shape(rows, out_type=tf.int64)[0]
    regular = self._sp.tokenize(tf.gather(texts, rows))              # [R, (m)]
    regular = regular.with_row_splits_dtype(tf.int64)
    if self._placeholder is not None:
      normalized = tf.strings.reduce_join(regular, axis=1)          # [R], "▁" for spaces
      if self._dummy_prefix:  # the fast tokenizer adds it again
        normalized = tf.strings.regex_replace(
            normalized, "^" + tokenization.SPIECE_UNDERLINE, "", replace_global=False)
      chars = tf.strings.unicode_decode(normalized, "UTF-8")       # [R, (c)]
      codes = chars.flat_values
      found = tf.gather(self._known_chars, tf.minimum(
          tf.searchsorted(self._known_chars, codes), tf.size(self._known_chars) - 1))
      codes = tf.where(tf.equal(found, codes), codes, ord(self._placeholder))
      marked = tf.strings.unicode_encode(chars.with_flat_values(codes), "UTF-8")
      num_texts = tf.shape(has_unk, out_type=tf.int64)[0]
      order = tf.where(has_unk, num_texts + tf.cumsum(tf.cast(has_unk, tf.int64)) - 1,
                       tf.range(num_texts))
      ids = tf.gather(tf.concat([ids, self._fast_ids(marked)], axis=0), order)
    pieces = self._sp.id_to_string(ids.flat_values)                  # [N]
    is_unk = tf.equal(ids.flat_values, self._unk_id)                 # [N]
    count = tf.gather(_row_sums(tf.cast(is_unk, tf.int64), ids.row_splits), rows)  # [R]
    regular_unk = tf.equal(self._sp.string_to_id(regular.flat_values), self._unk_id)
    surfaces = tf.ragged.boolean_mask(regular, regular.with_flat_values(regular_unk))
    fallback = tf.RaggedTensor.from_row_lengths(
        tf.fill([tf.reduce_sum(count)], "<unk>"), count, validate=False)  # [R, (count)]
    matched = tf.equal(surfaces.row_lengths(), count)
    order = tf.where(matched, tf.range(num_rows), num_rows + tf.range(num_rows))
    chosen = tf.gather(tf.concat([surfaces, fallback], axis=0), order)
    pieces = tf.tensor_scatter_nd_update(pieces, tf.where(is_unk), chosen.flat_values)
    return ids.with_flat_values(pieces)

  @tf.autograph.experimental.do_not_convert
  def _resplit(self, pieces: tf.RaggedTensor) -> tf.RaggedTensor:
    """The digit-comma re-split of SentencePiece pieces [B, (n)] -> [B, (n')]."""
    flat = pieces.flat_values                                        # [N]
    n = tf.shape(flat, out_type=tf.int64)[0]
    needs = tf.strings.regex_full_match(flat, "(?s).*" + _python_char_classes()["digit"] + ",")
    where = tf.where(needs)[:, 0]                                    # [M]
    originals = tf.gather(flat, where)
    numbers = tf.strings.regex_replace(originals, ",$", "", replace_global=False)
    numbers = tf.strings.regex_replace(numbers, tokenization.SPIECE_UNDERLINE, "")
    sub = self._sentencepiece(numbers)                               # [M, (k)]
    # Inside a word, a "▁" the re-encoding put in front of its first piece goes again.
    inside_word = tf.strings.substr(originals, 0, len(_UNDERLINE)) != _UNDERLINE
    values, rows = sub.flat_values, sub.value_rowids()
    first = tf.range(tf.shape(values, out_type=tf.int64)[0]) == tf.gather(sub.row_starts(),
                                                                          rows)
    starts_word = tf.strings.substr(values, 0, len(_UNDERLINE)) == _UNDERLINE
    strip = first & tf.gather(inside_word, rows) & starts_word
    stripped = tf.strings.regex_replace(values, "^" + tokenization.SPIECE_UNDERLINE, "",
                                        replace_global=False)
    values = tf.where(strip, stripped, values)
    keep = tf.logical_not(strip & tf.equal(values, ""))
    sub = tf.ragged.boolean_mask(sub.with_flat_values(values), sub.with_flat_values(keep))
    comma = tf.RaggedTensor.from_tensor(tf.fill([tf.shape(where)[0], 1], ","))
    replacement = tf.concat([sub, comma], axis=1)                    # [M, (k')]
    # Every piece becomes a list: [piece], or its replacement; then flatten per text.
    singles = tf.RaggedTensor.from_row_lengths(flat, tf.ones([n], tf.int64), validate=False)
    choices = tf.concat([singles, replacement], axis=0)              # [N + M, (.)]
    order = tf.where(needs, n + tf.cumsum(tf.cast(needs, tf.int64)) - 1, tf.range(n))
    per_piece = tf.gather(choices, order)                            # [N, (m)]
    nested = tf.RaggedTensor.from_row_splits(per_piece, pieces.row_splits, validate=False)
    return nested.merge_dims(1, 2)
