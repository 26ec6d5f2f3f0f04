"""XLNet text encoding as TF ops: raw strings -> ids -> classification inputs, in one graph.

The graph twin of the Python path in `xlnet_tf.data.tokenization` (`normalize_text`,
`encode_ids`) and of the classification layout, built only from `tensorflow` and
`tensorflow_text` ops so that a SavedModel containing it serves raw strings with none of
this package installed:

  >>> encoder = XLNetTextEncoder("spiece.model", lower=False)
  >>> encoder.tokenize(tf.constant(["In 2000, the ``Pequod'' sailed."]))
  <tf.RaggedTensor [[...ids...]]>           # == encode_ids(sp, normalize_text(text))
  >>> features = encoder.classifier_inputs(text_a, text_b, max_seq_length=128)
  >>> features["input_ids"].shape           # [B, 128], padded on the left
  >>> encoder.classifier_inputs(text_a, text_b, 128, bucketed=True)["input_ids"].shape
  TensorShape([B, None])                    # at run time [B, the batch's bucket], e.g. 24

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
      return self.encoder.classifier_inputs(texts, None, 128)
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

Classification layout (`XLNetTextEncoder.classifier_inputs`), as released: truncate the
longer of A and B by one token from its end (B on ties) until len(A) + len(B) <= T - 3
(A alone: T - 2); then `layouts`' classification layout (`A <sep> B <sep> <cls>` or
`A <sep> <cls>`, its segment ids, padded on the LEFT; its constants become graph constants).

Document layout (`XLNetTextEncoder.document_inputs`, the inputs of
`networks.document_reader`): every piece of A, then `<sep> <cls>`, or with a non-empty B
`<sep> B <sep> <cls>` with B cut at its end to S - 3 pieces (the tail fits one segment);
N pieces take K = ceil(N / S) segments of S, padded on the LEFT, and a batch's shorter
documents get whole padding segments in front up to its largest K: [B, K, S]. A text that
fits one segment is the classification layout at length S; bucketed, a batch that fits one
segment takes its bucket as S.

Padding to a bucket (`bucketed=True`; `bucket_lengths`, `padded_length`). Truncation is
always at max_seq_length T, as above. The rows of a batch are then padded (still on the
left) only to the batch's bucket: the smallest length of the ladder 16, 24, 32, 48, 64,
96, 128, 192, ... (powers of two from 16 and the midpoints 1.5 x 2^k: every entry a
multiple of 8, at most 1.5x the longest row once past 16) that holds the batch's longest
row, the ladder cut below T and T itself added as its top (T = 128: 16, 24, 32, 48, 64, 96,
128). The result is the fixed layout with its first T - L padding columns removed: with
left padding and relative positions, every real token keeps its distance to every other
one, padding is masked as a key, and <cls> stays last, so a model whose outputs read real
positions only (the "last", "mean" and "attn" summaries, per-token logits) gives the same
outputs for any amount of padding. The ladder keeps the shapes a server sees to a
handful per T (a graph compiled per shape, e.g. by XLA, compiles each once).
"""

import functools
import unicodedata
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import tensorflow as tf
import tensorflow_text as tf_text
from sentencepiece import sentencepiece_model_pb2

from xlnet_tf.data import layouts
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


# The bucket ladder: powers of two from SMALLEST_BUCKET and their 1.5x midpoints, cut
# below max_seq_length, which is the top bucket (see the module docstring).
SMALLEST_BUCKET = 16


def bucket_lengths(max_seq_length: int) -> Tuple[int, ...]:
  """The padded lengths a bucketed batch can have, ascending; the last is max_seq_length.

  >>> bucket_lengths(128)
  (16, 24, 32, 48, 64, 96, 128)
  >>> bucket_lengths(100), bucket_lengths(12)
  ((16, 24, 32, 48, 64, 96, 100), (12,))
  """
  top = int(max_seq_length)
  if top < 1:
    raise ValueError(f"max_seq_length must be positive, got {max_seq_length}")
  ladder, power = [], SMALLEST_BUCKET
  while power < top:
    ladder.extend(length for length in (power, power * 3 // 2) if length < top)
    power *= 2
  return tuple(ladder) + (top,)


@tf.autograph.experimental.do_not_convert
def padded_length(row_lengths, max_seq_length: int, min_length: int = 0) -> tf.Tensor:
  """The length a batch is padded to: the smallest of `bucket_lengths(max_seq_length)` that
  is >= every row's length and >= `min_length` (max_seq_length if none is).

  Args:
    row_lengths: int [B], each row's length with its special tokens, after truncation
      (<= max_seq_length). An empty batch gets the smallest bucket.
    max_seq_length: T, a Python int: the top bucket.
    min_length: a Python int floor (e.g. a top-k head's k).
  Returns:
    int64 scalar.
  """
  ladder = tf.constant(bucket_lengths(max_seq_length), tf.int64)          # [L]
  row_lengths = tf.cast(tf.reshape(row_lengths, [-1]), tf.int64)          # [B]
  longest = tf.reduce_max(tf.concat([row_lengths, [int(min_length)]], axis=0))
  index = tf.searchsorted(ladder, longest[tf.newaxis], side="left", out_type=tf.int64)[0]
  return tf.gather(ladder, tf.minimum(index, tf.size(ladder, out_type=tf.int64) - 1))


def _checked_ids(ids_a: tf.RaggedTensor, ids_b: Optional[tf.RaggedTensor], length: int,
                 name: str):
  """(length as an int, ids_a, ids_b) with the ids int32 ragged (int64 row splits);
  raises ValueError naming `name` when `length` leaves no room for the special tokens
  (`A <sep> <cls>`, or `A <sep> B <sep> <cls>` with ids_b)."""
  reserved = 2 if ids_b is None else 3
  if int(length) < reserved:
    raise ValueError(f"{name} must be at least {reserved} "
                     f"({'A <sep> B <sep> <cls>' if ids_b is not None else 'A <sep> <cls>'}),"
                     f" got {length}")
  def cast(ids):
    return None if ids is None else tf.cast(ids, tf.int32).with_row_splits_dtype(tf.int64)
  return int(length), cast(ids_a), cast(ids_b)


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
  """Raw strings -> XLNet ids and classification inputs, as TF ops (savable, servable).

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
      self._model_proto = f.read()
    self.lower = bool(lower)
    self.keep_accents = bool(keep_accents)
    self._unk_id = sp.unk_id()
    _python_char_classes()  # fail early, not while tracing
    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(self._model_proto)
    self._dummy_prefix = proto.normalizer_spec.add_dummy_prefix
    self._known_chars = tf.constant(_piece_chars(proto), tf.int32)
    self._placeholder = _unknown_placeholder(sp, proto)
    with self.name_scope:
      # Segmentation: the fast tokenizer, given the package's user-defined scores.
      self._fast = tf_text.FastSentencepieceTokenizer(_fast_tokenizer_model(proto))
      # Piece <-> id, SentencePiece's normalisation and the text of unknown pieces.
      self._sp = tf_text.SentencepieceTokenizer(model=self._model_proto, out_type=tf.string)

  @property
  def model_proto(self) -> bytes:
    """The serialized SentencePiece model embedded in the graph."""
    return self._model_proto

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

  @tf.autograph.experimental.do_not_convert
  def classifier_inputs(self, text_a, text_b=None, max_seq_length: int = 128,
                        bucketed: bool = False) -> Dict[str, tf.Tensor]:
    """Classification inputs of raw text pairs (or single texts), in the released layout.

    Args:
      text_a: string [B], the first texts.
      text_b: string [B], the second texts, or None for single-text tasks.
      max_seq_length: T, a Python int (at least 3 with `text_b`, 2 without).
      bucketed: pad to the batch's bucket L <= T instead of T (`padded_length`).

    Returns:
      dict with `input_ids` int32 [B, T], `segment_ids` int32 [B, T] (0 A, 1 B, 2 <cls>,
      4 padding) and `input_mask` float32 [B, T] (1.0 at padding): see the module docstring.
      Bucketed: [B, L] each, static shape [B, None].
    """
    return self.layout(self.tokenize(text_a),
                       None if text_b is None else self.tokenize(text_b), max_seq_length,
                       bucketed=bucketed)

  @staticmethod
  @tf.autograph.experimental.do_not_convert
  def layout(ids_a: tf.RaggedTensor, ids_b: Optional[tf.RaggedTensor],
             max_seq_length: int, bucketed: bool = False) -> Dict[str, tf.Tensor]:
    """The classification layout of token ids: ragged int [B, (na)] and [B, (nb)] or None
    -> the dict of `classifier_inputs` (truncation at max_seq_length, special ids, left
    padding to max_seq_length or, `bucketed`, to the batch's bucket)."""
    max_len, ids_a, ids_b = _checked_ids(ids_a, ids_b, max_seq_length, "max_seq_length")
    len_a = ids_a.row_lengths()
    if ids_b is None:
      len_b = tf.zeros_like(len_a)
    else:
      len_b = ids_b.row_lengths()
    # As released, a second text without tokens is no second text: `A <sep> <cls>`.
    has_b = len_b > 0                                                # [B]
    row_reserved = 2 + tf.cast(has_b, tf.int64)                      # [B]
    budget = max_len - row_reserved                                  # [B]
    # Closed form of "pop from the longer (B on ties) until the pair fits": the longer
    # one shrinks to budget - shorter, unless both must shrink, which ends at
    # (ceil(budget / 2), floor(budget / 2)). Without B it is A cut to the budget.
    fits = len_a + len_b <= budget
    both = budget < 2 * tf.minimum(len_a, len_b)
    half_b = budget // 2
    keep_a = tf.where(fits, len_a, tf.where(
        both, budget - half_b, tf.where(len_a > len_b, budget - len_b, len_a)))
    keep_b = tf.where(fits, len_b, tf.where(
        both, half_b, tf.where(len_a > len_b, len_b, budget - len_a)))
    # The padded length: T, or the bucket of the longest row (a scalar tensor).
    used = row_reserved + keep_a + keep_b                            # [B], <= T
    seq_len = padded_length(used, max_len) if bucketed else max_len
    outputs = XLNetTextEncoder._assemble(ids_a, ids_b, keep_a, keep_b, has_b, seq_len)
    static_batch = ids_a.shape[0]
    for value in outputs.values():
      value.set_shape([static_batch, None if bucketed else max_len])
    return outputs

  @tf.autograph.experimental.do_not_convert
  def document_inputs(self, text_a, text_b=None, segment_length: int = 128,
                      bucketed: bool = False, text_span: bool = False
                      ) -> Dict[str, tf.Tensor]:
    """Inputs of raw texts of any length as documents: K segments of S pieces, [B, K, S].

    Args:
      text_a: string [B], the texts (read whole).
      text_b: string [B] or None: second texts, cut at their end to segment_length - 3
        pieces (the tail `<sep> B <sep> <cls>` fits one segment); an empty one is none.
      segment_length: S, a Python int (the model's max_seq_length).
      bucketed: a batch whose documents all fit one segment is padded to its bucket
        (`padded_length`: S becomes the bucket, as `classifier_inputs`); otherwise S.
      text_span: also return where text_a's pieces are (see `document_layout`).
    Returns `document_layout`'s dict.
    """
    return self.document_layout(self.tokenize(text_a),
                                None if text_b is None else self.tokenize(text_b),
                                segment_length, bucketed=bucketed, text_span=text_span)

  @staticmethod
  @tf.autograph.experimental.do_not_convert
  def document_layout(ids_a: tf.RaggedTensor, ids_b: Optional[tf.RaggedTensor],
                      segment_length: int, bucketed: bool = False,
                      text_span: bool = False) -> Dict[str, tf.Tensor]:
    """The document layout of token ids (the one `networks.document_reader` reads).

    A row is every piece of A, then the tail: `<sep> <cls>` (segment ids 0, 2), or with a
    non-empty B `<sep> B[:S-3] <sep> <cls>` (0, 1..., 1, 2). With N its length, it takes
    K = ceil(N / S) segments and is padded on the LEFT to K * S (`CLASSIFIER_PAD_ID`,
    segment `CLASSIFIER_SEGMENT_PAD`, input_mask 1.0); every row of a batch is then padded
    on the left with whole padding segments to the batch's largest K, and reshaped to
    [B, K, S]. A row that fits one segment is the classification layout at length S
    (`layout`, which would not truncate it).

    Args:
      ids_a, ids_b: int ragged [B, (na)], [B, (nb)] or None.
      segment_length: S, a Python int (at least 3 with ids_b, 2 without).
      bucketed: when every row of the batch fits one segment, S is the batch's bucket
        (`padded_length(N, segment_length)`) instead of segment_length.
      text_span: also return `text_start` int64 [B], the position of A's first piece in
        the row flattened to K * S, and `text_length` int64 [B], A's number of pieces.
    Returns:
      `input_ids` int32, `segment_ids` int32, `input_mask` float32, each [B, K, S] (K >= 1;
      static shape [B, None, S], or [B, None, None] bucketed).
    """
    max_len, ids_a, ids_b = _checked_ids(ids_a, ids_b, segment_length, "segment_length")
    keep_a = ids_a.row_lengths()                                     # [B], all of A
    if ids_b is None:
      len_b = tf.zeros_like(keep_a)
    else:
      len_b = ids_b.row_lengths()
    has_b = len_b > 0                                                # [B]
    keep_b = tf.minimum(len_b, max_len - 3)                          # the tail fits S
    used = 2 + tf.cast(has_b, tf.int64) + keep_a + keep_b            # [B], N
    # The batch's segment count (at least 1, also for an empty batch) and length.
    longest = tf.reduce_max(tf.concat([used, [1]], axis=0))
    num_segments = (longest + max_len - 1) // max_len                # K
    if bucketed:
      seg_len = tf.where(num_segments > 1, tf.constant(max_len, tf.int64),
                         padded_length(used, max_len))
    else:
      seg_len = tf.constant(max_len, tf.int64)
    flat = XLNetTextEncoder._assemble(ids_a, ids_b, keep_a, keep_b, has_b,
                                      num_segments * seg_len)        # each [B, K * S]
    batch = tf.shape(keep_a, out_type=tf.int64)[0]
    static_batch = ids_a.shape[0]
    outputs = {}
    for key, value in flat.items():
      value = tf.reshape(value, tf.stack([batch, num_segments, seg_len]))
      value.set_shape([static_batch, None, None if bucketed else max_len])
      outputs[key] = value                                           # [B, K, S]
    if text_span:
      outputs["text_start"] = num_segments * seg_len - used          # [B]
      outputs["text_length"] = keep_a                                # [B]
    return outputs

  @staticmethod
  @tf.autograph.experimental.do_not_convert
  def _assemble(ids_a: tf.RaggedTensor, ids_b: Optional[tf.RaggedTensor], keep_a: tf.Tensor,
                keep_b: tf.Tensor, has_b: tf.Tensor, seq_len) -> Dict[str, tf.Tensor]:
    """The rows `A[:keep_a] <sep> (B[:keep_b] <sep>) <cls>` padded on the LEFT to `seq_len`.

    Args:
      ids_a, ids_b: int32 ragged [B, (n)] with int64 row splits (ids_b None: single texts).
      keep_a, keep_b, has_b: int64 [B], int64 [B], bool [B]: the pieces of each text kept
        (from the start) and whether the row has a second text.
      seq_len: the row length (a Python int or an int64 scalar), >= every row's length.
    Returns the dict of `classifier_inputs`, each [B, seq_len].
    """
    used = 2 + tf.cast(has_b, tf.int64) + keep_a + keep_b            # [B]
    # Dense assembly: position j of a row holds, after `pad` padding positions, A[0:keep_a],
    # <sep>, then (pairs) B[0:keep_b], <sep>, and <cls> last.
    pad = seq_len - used                                             # [B]
    rel = tf.range(seq_len, dtype=tf.int64)[tf.newaxis, :] - pad[:, tf.newaxis]  # [B, T]
    in_a = (rel >= 0) & (rel < keep_a[:, tf.newaxis])
    sep_a = tf.equal(rel, keep_a[:, tf.newaxis])
    rel_b = rel - keep_a[:, tf.newaxis] - 1
    in_b = (rel_b >= 0) & (rel_b < keep_b[:, tf.newaxis])
    sep_b = tf.equal(rel_b, keep_b[:, tf.newaxis]) & has_b[:, tf.newaxis]
    is_cls = tf.equal(rel, seq_len - 1 - pad[:, tf.newaxis])

    def gather(ids, offsets, inside):
      values = tf.concat([ids.flat_values, tf.zeros([1], tf.int32)], axis=0)  # never empty
      index = tf.where(inside, ids.row_splits[:-1, tf.newaxis] + offsets, 0)
      return tf.gather(values, index)

    input_ids = tf.where(in_a, gather(ids_a, rel, in_a), layouts.CLASSIFIER_PAD_ID)
    segment_ids = tf.where(in_a | sep_a, layouts.SEGMENT_A, layouts.CLASSIFIER_SEGMENT_PAD)
    if ids_b is not None:
      input_ids = tf.where(in_b, gather(ids_b, rel_b, in_b), input_ids)
      segment_ids = tf.where(in_b | sep_b, layouts.SEGMENT_B, segment_ids)
    input_ids = tf.where(sep_a | sep_b, tokenization.SEP_ID, input_ids)
    input_ids = tf.where(is_cls, tokenization.CLS_ID, input_ids)
    segment_ids = tf.where(is_cls, layouts.SEGMENT_CLS, segment_ids)
    input_mask = tf.cast(rel < 0, tf.float32)
    return {"input_ids": tf.cast(input_ids, tf.int32),                 # [B, seq_len]
            "segment_ids": tf.cast(segment_ids, tf.int32), "input_mask": input_mask}
