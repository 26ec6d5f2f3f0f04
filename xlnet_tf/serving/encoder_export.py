"""SavedModel export of a pretrained model: raw text in, the encoder's hidden states out
(feature extraction, what HuggingFace's "feature-extraction" pipeline gives).

Signatures (any batch size):
  serving_default   text string [B] -> `hidden_states` float32 [B, T, D] (the last layer's
                    content stream, in the classification layout `text <sep> <cls>` padded
                    on the LEFT to `max_seq_length` T, the text truncated to T - 2 pieces),
                    `input_mask` float32 [B, T] (1 = padding) and `summary` float32 [B, D]
                    (the state at <cls>, the last position, which the classifier's "last"
                    summary reads).
  serving_document  text string [B] of any length, read whole -> `embedding` float32
                    [B, D], the content stream at the document's final <cls>;
                    `token_embeddings` float32 [B, L, D], the content stream at every
                    piece of the text itself, in order (no <sep>, <cls> or padding),
                    RIGHT-padded with zeros to L, the batch's longest text in pieces;
                    `token_mask` float32 [B, L], 1.0 at a piece of the text, 0.0 at
                    padding (the opposite convention of `input_mask`); `token_ids` int32
                    [B, L], the pieces' SentencePiece ids (0 at padding).
The document is `text <sep> <cls>` in segments of T pieces (`text_layouts.
document_layout`: left-padded to K segments; a batch that fits one segment is padded to
its bucket) read in order through a memory of `document_mem_len` positions
(`networks.document_reader`; a batch of one segment is read without memory). What the
last segment reads reaches back about n_layer x document_mem_len positions (each layer's
memory holds the previous segment's input of that layer): a piece's influence on the
final <cls> fades with distance as in Transformer-XL, but every piece is read in context.
Normalisation and SentencePiece run in the graph: serving needs only TensorFlow and
tensorflow-text.

  >>> export_encoder("runs/pretrain/final", "exports/encoder", max_seq_length=128)
  >>> serve = tf.saved_model.load("exports/encoder").signatures["serving_default"]
  >>> serve(text=tf.constant(["Call me Ishmael."]))["summary"]          # [1, D]
  >>> document = tf.saved_model.load("exports/encoder").signatures["serving_document"]
  >>> document(text=tf.constant([open("moby_dick.txt").read()]))["embedding"]   # [1, D]
"""

import os
from typing import Dict, Optional

import tensorflow as tf

from xlnet_tf import model_directory
from xlnet_tf import pretrained
from xlnet_tf.networks.document_reader import read_document
from xlnet_tf.networks.xlnet_encoder import is_word_embedding_state
from xlnet_tf.serving import export_card
from xlnet_tf.serving import text_layouts
from xlnet_tf.serving.export_card import PROBE_TEXTS
from xlnet_tf.serving.model_dir_export import check_export_dir
from xlnet_tf.serving.model_dir_export import save
from xlnet_tf.serving.text_encoder import TEXTS
from xlnet_tf.serving.text_encoder import XLNetTextEncoder
from xlnet_tf.serving.text_encoder import check_shapes

DOCUMENT_SIGNATURE = "serving_document"
FEATURE_KEYS = ("input_ids", "segment_ids", "input_mask")


class EncoderServing(tf.Module):
  """The encoder of a pretrained model with the text encoder.

  `encoder`: an `XLNetEncoder`; serving_document needs one with a memory (mem_len > 0,
  reuse_len 0; `pretrained.load_directory(dir, mem_len=M, reuse_len=0)`), serving_default
  reads one segment without memory either way.
  """

  def __init__(self, encoder, spiece_model: str, max_seq_length: int, lower: bool = False,
               keep_accents: bool = False, layer: Optional[int] = None):
    super().__init__(name="xlnet_encoder_serving")
    config = encoder.config
    if config.mem_len <= 0 or config.reuse_len:
      raise ValueError(f"EncoderServing: serving_document reads documents through the "
                       f"memory and needs an encoder with mem_len > 0 and reuse_len 0, got "
                       f"mem_len {config.mem_len}, reuse_len {config.reuse_len}")
    self.encoder = encoder
    self.layer = layer
    self.max_seq_length = max_seq_length
    self.document_mem_len = config.mem_len
    self.text_encoder = XLNetTextEncoder(spiece_model, lower=lower,
                                         keep_accents=keep_accents)

  def serve_text(self, text):
    checked = check_shapes("serving_default", {"text": (text, [None], TEXTS)})
    features = text_layouts.classifier_inputs(self.text_encoder, checked["text"], None,
                                              self.max_seq_length)
    outputs = self.encoder(features, training=False)
    hidden = tf.cast(outputs["content"], tf.float32)                        # [B, T, D]
    return {"hidden_states": hidden, "input_mask": features["input_mask"],
            "summary": hidden[:, -1]}                                       # [B, D]

  @property
  def reads_word_embeddings(self) -> bool:
    """Whether `layer` is the word-embedding table (no encoder run needed)."""
    return self.layer is not None and is_word_embedding_state(
        self.layer, self.encoder.config.n_layer)

  def read(self, features: Dict[str, tf.Tensor]) -> tf.Tensor:
    """The content stream (or hidden state `layer`) of document features [B, K, S] ->
    float32 [B, K, S, D]: one segment (K = 1) without memory, else every segment in order
    through the memory; the word-embedding table's rows for `layer` 0."""
    if self.reads_word_embeddings:
      return tf.cast(tf.gather(self.encoder.word_embedding, features["input_ids"]),
                     tf.float32)
    def one_segment():
      inputs = {key: features[key][:, 0] for key in FEATURE_KEYS}           # [B, S]
      outputs = self.encoder(inputs, training=False,
                             output_hidden_states=self.layer is not None)
      content = outputs["content"] if self.layer is None else (
          outputs["hidden_states"][self.layer])
      return content[:, tf.newaxis]
    def segments():
      inputs = {key: features[key] for key in FEATURE_KEYS}               # [B, K, T]
      return read_document(self.encoder, inputs, training=False, all_segments=True,
                           layer=self.layer)["all_content"]
    content = tf.cond(tf.equal(tf.shape(features["input_ids"])[1], 1), one_segment,
                      segments)
    return tf.cast(content, tf.float32)

  def document(self, text) -> Dict[str, tf.Tensor]:
    """serving_document (see the module docstring): text string [B] -> embedding [B, D],
    token_embeddings [B, L, D], token_mask [B, L], token_ids [B, L]."""
    checked = check_shapes(DOCUMENT_SIGNATURE, {"text": (text, [None], TEXTS)})
    return self.text_embeddings(self.text_encoder.tokenize(checked["text"]))

  def text_embeddings(self, ids: tf.RaggedTensor) -> Dict[str, tf.Tensor]:
    """`document`'s outputs for texts already in pieces, ids RaggedTensor [B, (n)]."""
    features = text_layouts.document_layout(ids, None, self.max_seq_length,
                                            bucketed=True, text_span=True)
    content = self.read(features)                                           # [B, K, S, D]
    shape = tf.shape(content)
    flat = tf.reshape(content, [shape[0], shape[1] * shape[2], shape[3]])   # [B, K*S, D]
    flat_ids = tf.reshape(features["input_ids"], [shape[0], -1])            # [B, K*S]
    length = features["text_length"]                                        # [B]
    longest = tf.reduce_max(tf.concat([length, [0]], axis=0))               # L
    offsets = tf.range(longest)[tf.newaxis]                                 # [1, L]
    inside = offsets < length[:, tf.newaxis]                                # [B, L]
    positions = tf.where(inside, features["text_start"][:, tf.newaxis] + offsets, 0)
    mask = tf.cast(inside, tf.float32)
    token_embeddings = tf.gather(flat, positions, batch_dims=1) * mask[..., tf.newaxis]
    token_ids = tf.where(inside, tf.gather(flat_ids, positions, batch_dims=1), 0)
    return {"embedding": flat[:, -1],                                       # [B, D], <cls>
            "token_embeddings": token_embeddings, "token_mask": mask,
            "token_ids": token_ids}

  def signatures(self):
    text_fn = tf.function(lambda text: self.serve_text(text))
    document_fn = tf.function(lambda text: self.document(text))
    strings = tf.TensorSpec([None], tf.string)
    return {"serving_default": text_fn.get_concrete_function(text=strings),
            DOCUMENT_SIGNATURE: document_fn.get_concrete_function(text=strings)}


def load_encoder_serving(model_dir: str, max_seq_length: int = 128,
                         lower: Optional[bool] = None, keep_accents: Optional[bool] = None,
                         document_mem_len: Optional[int] = None) -> EncoderServing:
  """The serving module of the pretrained model directory `model_dir` (with its
  spiece.model), as `export_encoder` saves it: `lower` and `keep_accents` are the text
  normalisation of the model (uncased; accents kept), by default the directory's
  (`model_directory.read_text_settings`: its text.json, else cased with accents
  stripped); the encoder is loaded with a memory of `document_mem_len` positions (default
  max_seq_length), reuse_len 0, without dropout."""
  if lower is None or keep_accents is None:
    settings = model_directory.read_text_settings(model_dir, spec_files=())  # pretrained
    lower = settings["uncased"] if lower is None else lower
    keep_accents = settings["keep_accents"] if keep_accents is None else keep_accents
  mem_len = int(max_seq_length if document_mem_len is None else document_mem_len)
  if mem_len < 1:
    raise ValueError(f"document_mem_len must be >= 1, got {document_mem_len}")
  spiece_model = os.path.join(model_dir, model_directory.SPIECE_FILE)
  if not tf.io.gfile.exists(spiece_model):
    raise FileNotFoundError(f"{spiece_model}: the SentencePiece model to put in the "
                            f"SavedModel is missing")
  model = pretrained.load_directory(model_dir, mem_len=mem_len, reuse_len=0, bi_data=False,
                                    dropout=0.0, dropatt=0.0)
  return EncoderServing(model.encoder, spiece_model, max_seq_length, lower, keep_accents)


def export_encoder(model_dir: str, export_dir: str, max_seq_length: int = 128,
                   lower: Optional[bool] = None,
                   keep_accents: Optional[bool] = None,
                   document_mem_len: Optional[int] = None) -> str:
  """Exports the encoder of the pretrained model directory `model_dir` (with its
  spiece.model): `load_encoder_serving`'s module with both signatures and its card.
  Returns export_dir."""
  check_export_dir(export_dir)
  module = load_encoder_serving(model_dir, max_seq_length, lower, keep_accents,
                                document_mem_len)
  return save(module, export_dir, model_dir, module.encoder, encoder_card(module))


# ---- the card -------------------------------------------------------------------------------

def encoder_card(module: EncoderServing) -> export_card.ExportCard:
  """`EncoderServing`: hidden states and the <cls> summary (the parity of
  serving_default; serving_document is described)."""
  return export_card.ExportCard(
      task="pretrained", title="XLNet encoder (feature extraction), SavedModel",
      about=("an encoder export: its serving_default takes text and returns hidden states; "
             "call it from Python (docs/serving.md)"),
      python_fn=module.serve_text, inputs={"text": list(PROBE_TEXTS)},
      keys=("hidden_states", "summary"),
      details={"max_seq_length": module.max_seq_length,
               "uncased": module.text_encoder.lower,
               "keep_accents": module.text_encoder.keep_accents,
               "serving_default": f"one segment: the text truncated to max_seq_length "
                                  f"{module.max_seq_length} - 2 pieces",
               "serving_document": f"whole texts of any length -> embedding (at the final "
                                   f"<cls>), token_embeddings, token_mask, token_ids; read "
                                   f"in segments of {module.max_seq_length} pieces through "
                                   f"a memory of {module.document_mem_len} positions"})
