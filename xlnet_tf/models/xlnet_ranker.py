"""Document ranking as in the XLNet paper's ClueWeb09-B experiment (its Table 2, appendix
A.3): token embeddings from a frozen pretrained XLNet, K-NRM's kernel pooling over the
query-document cosine matrix, and one linear layer to the score.

  >>> ranker = build_ranker(config)                    # the encoder frozen, 12 weights learnt
  >>> ranker({"query_embeddings": q, "query_mask": qm,           # [B, Q, D], [B, Q]
  ...         "document_embeddings": d, "document_mask": dm})    # [B, C, N, D], [B, C, N]
  {"scores": [B, C], "features": [B, C, K]}

The model is called on embeddings, which the ranking task computes once per (model,
collection) and caches (`tasks.ranking`), and which the SavedModel computes in the graph
from raw text (`serving.ranker_export`): the encoder's `hidden_states[embedding_layer]` at
each piece of the text (no <sep>, <cls> or padding), a long document read segment by
segment through the memory. `embedding_layer` -1 is the last layer's content stream,
what the released code's `get_sequence_output()` gives and what the paper means by
XLNet's word embeddings used "without finetuning"; 0 is the word-embedding table itself,
context-free, the analogue of the word2vec embeddings K-NRM was published with.

As in K-NRM (AdeDZY/K-NRM), score = tanh(w . phi + b) with phi the kernel features: the
encoder is not trained (`encoder.trainable` is False), so the ranker learns K + 1 numbers.
"""

import dataclasses
from typing import Any, ClassVar, Dict, Mapping, Sequence

import tensorflow as tf
import tf_keras

from xlnet_tf.configs import XLNetConfig
from xlnet_tf.layers.initializers import normal_initializer
from xlnet_tf.layers.kernel_pooling import KernelPooling
from xlnet_tf.layers.kernel_pooling import knrm_kernels
from xlnet_tf.layers.scoped_build import build_in_scope
from xlnet_tf.models.encoder_model import EncoderModel
from xlnet_tf.models.head_spec import HeadSpec
from xlnet_tf.networks.xlnet_encoder import XLNetEncoder
from xlnet_tf.networks.xlnet_encoder import check_hidden_state
from xlnet_tf.networks.xlnet_encoder import is_word_embedding_state

INPUT_KEYS = ("query_embeddings", "query_mask", "document_embeddings", "document_mask")


@tf_keras.utils.register_keras_serializable(package="xlnet_tf")
class XLNetRanker(EncoderModel):
  """A frozen encoder and K-NRM: token embeddings -> kernel features -> score.

  Args:
    encoder: an `XLNetEncoder` (frozen here: its weights are the pretrained model's).
    embedding_layer: which of the encoder's `hidden_states` the token embeddings are (-1
      the last layer, 0 the word-embedding table); recorded for whoever computes them.
    mus, sigmas: the kernels (`knrm_kernels(11)`: the paper's).
  Call with float32 embeddings: query_embeddings [B, Q, D], query_mask [B, Q],
  document_embeddings [B, C, N, D], document_mask [B, C, N] (masks 1.0 at a token);
  returns {"scores": float32 [B, C], "features": float32 [B, C, K]}.
  """

  def __init__(self, encoder: XLNetEncoder, embedding_layer: int = -1,
               mus: Sequence[float] = None, sigmas: Sequence[float] = None, **kwargs):
    super().__init__(**kwargs)
    if (mus is None) != (sigmas is None):
      raise ValueError("XLNetRanker: give both mus and sigmas, or neither (K-NRM's 11)")
    if mus is None:
      mus, sigmas = knrm_kernels()
    check_hidden_state(embedding_layer, encoder.config.n_layer, "embedding_layer")
    self.encoder = encoder
    self.encoder.trainable = False
    self.embedding_layer = int(embedding_layer)
    self.kernel_pooling = KernelPooling(mus, sigmas, name="kernel_pooling")
    self.score = tf_keras.layers.Dense(
        1, kernel_initializer=normal_initializer(encoder.config.initializer_range),
        name="score")

  @property
  def static_embeddings(self) -> bool:
    """Whether the token embeddings are the word-embedding table's (context-free)."""
    return is_word_embedding_state(self.embedding_layer, self.encoder.config.n_layer)

  def build(self, input_shape=None):
    if not self.encoder.built:
      build_in_scope(self.encoder, None)
    build_in_scope(self.score, tf.TensorShape([None, len(self.kernel_pooling.mus)]))
    self.built = True

  def call(self, inputs: Mapping[str, Any], training=None) -> Dict[str, tf.Tensor]:
    del training                              # no dropout: K-NRM over frozen embeddings
    query = inputs["query_embeddings"][:, tf.newaxis]                      # [B, 1, Q, D]
    query_mask = inputs["query_mask"][:, tf.newaxis]                       # [B, 1, Q]
    features = self.kernel_pooling(query, query_mask, inputs["document_embeddings"],
                                   inputs["document_mask"])                 # [B, C, K]
    scores = tf.tanh(tf.cast(tf.squeeze(self.score(features), -1), tf.float32))  # [B, C]
    return {"scores": scores, "features": features}

  def get_config(self):
    return {"encoder": tf_keras.layers.serialize(self.encoder),
            "embedding_layer": self.embedding_layer,
            "mus": list(self.kernel_pooling.mus), "sigmas": list(self.kernel_pooling.sigmas),
            "name": self.name}


@dataclasses.dataclass(frozen=True)
class RankerSpec(HeadSpec):
  """How a ranker's embeddings are made (its model directory's ranker.json).

  embedding_layer: the encoder's hidden state the token embeddings are (-1: last layer;
    0: the word-embedding table).
  max_seq_length: the segment length S a text is read in.
  mem_len: the memory a document longer than one segment is read through (0: such a
    document is cut to one segment).
  max_document_pieces: a document is cut to its first this many pieces before reading
    (0: read whole).
  n_kernels, sigma, exact_sigma: the kernels (`knrm_kernels`).
  uncased, keep_accents: the text normalisation of the pretrained model.
  """
  FILE: ClassVar[str] = "ranker.json"
  WRITTEN_BY: ClassVar[str] = "the xlnet/ranking task"
  OPTIONAL_FIELDS: ClassVar[Mapping[str, Any]] = {"keep_accents": False}
  embedding_layer: int = -1
  max_seq_length: int = 512
  mem_len: int = 512
  max_document_pieces: int = 0
  n_kernels: int = 11
  sigma: float = 0.1
  exact_sigma: float = 1e-3
  uncased: bool = False
  keep_accents: bool = False

  @classmethod
  def from_values(cls, values: Mapping[str, Any], source: str = "") -> "RankerSpec":
    del source
    return cls(**values)

  def kernels(self):
    return knrm_kernels(self.n_kernels, self.sigma, self.exact_sigma)

  def build_model(self, config: XLNetConfig, **kwargs) -> "XLNetRanker":
    """The ranker this spec describes (a fresh head); `kwargs` as `build_ranker`."""
    mus, sigmas = self.kernels()
    return build_ranker(config, embedding_layer=self.embedding_layer, mus=mus,
                        sigmas=sigmas, mem_len=self.mem_len, **kwargs)


def build_ranker(config: XLNetConfig, embedding_layer: int = -1,
                 mus: Sequence[float] = None, sigmas: Sequence[float] = None,
                 mem_len: int = 0) -> XLNetRanker:
  """A ranker for `config` with every weight created (the head random): the encoder
  without dropout and, with `mem_len` > 0, a memory of mem_len positions for documents
  longer than one segment (reuse_len 0, bidirectional, no bi_data)."""
  config = config.replace(mem_len=mem_len, reuse_len=0, bi_data=False, dropout=0.0,
                          dropatt=0.0, attn_type="bi")
  model = XLNetRanker(XLNetEncoder(config, name="transformer"), embedding_layer, mus, sigmas,
                      name="xlnet_ranker")
  model.build()
  return model
