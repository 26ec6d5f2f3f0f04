"""The ranking task's embedding stores (`tasks.ranking`): the token embeddings of a split's
queries and candidate documents, computed once per (model, collection) into a
`data.embedding_store` store and reused.

A store is planned before anything is embedded (`store_plan`: its key, path and texts):
its key is a sha256 of the embedding settings (`embedding_settings`: the pretrained
model's files (`model_fingerprint`), the SentencePiece model, the ranker's text and
encoder settings), what it holds (the queries of the query file, or the candidates of its
queries cut to max_document_pieces) and the texts. `open_store` opens the store, computing
it first when it does not exist, with an embedder made on demand (the ranker's serving
module, `serving.ranker_export.RankerServing`: the graph the SavedModel serves with).

  >>> settings = ranking_embeddings.embedding_settings(spec, fingerprint, spiece_model)
  >>> plan = ranking_embeddings.store_plan(settings, cache_dir, split, documents,
  ...                                      "documents", spec.max_document_pieces)
  >>> store = ranking_embeddings.open_store(plan, make_embedder)   # EmbeddingStore
"""

import dataclasses
import hashlib
import logging
import os
from typing import Any, Callable, Dict, Iterable

import numpy as np
import tensorflow as tf

from xlnet_tf.data import embedding_store
from xlnet_tf.data import feature_cache
from xlnet_tf.data import storage
from xlnet_tf.data import tokenization
from xlnet_tf.data.ranking_splits import SplitData

EMBEDDINGS_FORMAT = "xlnet_tf.ranking_embeddings.v1"   # changes with what a store holds
EMBED_BATCH = 8                      # texts per call when embedding a collection


def model_fingerprint(directory: str, names: Iterable[str]) -> str:
  """A sha256 of the model files `names` of `directory` (config, weights, SentencePiece
  model): each name with its file's sha256, in name order."""
  digest = hashlib.sha256()
  for name in sorted(names):
    digest.update(name.encode() + b"\0" + storage.sha256(
        os.path.join(directory, name)).encode() + b"\n")
  return digest.hexdigest()


def embedding_settings(spec, fingerprint: str, spiece_model: str) -> Dict[str, Any]:
  """Everything but the texts that makes the embeddings what they are: the model's
  `fingerprint`, the SentencePiece model's sha256 and the settings of the ranker's spec
  (a `RankerSpec`) that change the vectors."""
  return {"format": EMBEDDINGS_FORMAT, "model": fingerprint,
          "spiece_model": tokenization.spiece_sha256(spiece_model),
          "embedding_layer": spec.embedding_layer,
          "max_seq_length": spec.max_seq_length, "mem_len": spec.mem_len,
          "uncased": spec.uncased, "keep_accents": spec.keep_accents,
          "dtype": np.dtype(embedding_store.DTYPE).name}


@dataclasses.dataclass(frozen=True)
class StorePlan:
  """What a store holds and where, known before anything is embedded."""
  key: str                  # sha256 of the settings, what it holds and the texts
  path: str
  what: str                 # "queries" or "documents"
  texts: Dict[str, str]     # id -> text
  max_pieces: int           # texts are cut to this many pieces (0: whole)


def store_plan(settings: Dict[str, Any], cache_dir: str, split: SplitData,
               documents: Dict[str, str], what: str,
               max_document_pieces: int) -> StorePlan:
  """The store under `cache_dir` of the split's file's queries (`what` "queries") or of
  the candidates of all its queries ("documents", cut to `max_document_pieces`), with
  the embedding `settings` (`embedding_settings`)."""
  if what == "queries":
    texts, max_pieces = split.all_queries, 0
  else:
    ids = sorted({docid for ranking in split.candidates.values() for docid, _ in ranking})
    texts, max_pieces = {docid: documents[docid] for docid in ids}, max_document_pieces
  key = storage.settings_key({**settings, "what": what, "max_pieces": max_pieces,
                              "texts": feature_cache.rows_sha256(sorted(texts.items()))})
  return StorePlan(key, embedding_store.store_path(cache_dir, what, key), what, texts,
                   max_pieces)


def open_store(plan: StorePlan, make_embedder: Callable[[], Any]
               ) -> embedding_store.EmbeddingStore:
  """The store of `plan`, computed first (`write_store` with `make_embedder()`) when it
  does not exist."""
  if not embedding_store.holds(plan.path, plan.key):
    os.makedirs(os.path.dirname(plan.path), exist_ok=True)
    write_store(plan, make_embedder())
  store = embedding_store.EmbeddingStore(plan.path)
  logging.info("%s: %d %s embedded in %.1f s", plan.path, len(store), plan.what,
               store.info.get("seconds", float("nan")))
  return store


def write_store(plan: StorePlan, embedder) -> None:
  """Embeds the texts of `plan` with `embedder` (`embed(texts [B] string, max_pieces)` ->
  token_embeddings [B, n, D], token_mask [B, n]; `model.config.d_model` D), EMBED_BATCH
  texts of similar lengths a call, into the store at `plan.path`."""
  texts, max_pieces = plan.texts, plan.max_pieces
  embed = tf.function(lambda batch: embedder.embed(batch, max_pieces),
                      input_signature=[tf.TensorSpec([None], tf.string)])
  ids = sorted(texts, key=lambda i: (len(texts[i]), i))     # similar lengths together

  def vectors():
    for first in range(0, len(ids), EMBED_BATCH):
      batch = ids[first:first + EMBED_BATCH]
      out = embed(tf.constant([texts[i] for i in batch]))
      emb, mask = out["token_embeddings"].numpy(), out["token_mask"].numpy()
      for row in range(len(batch)):
        yield emb[row, :int(mask[row].sum())]
  embedding_store.write(plan.path, plan.key, ids, vectors(), embedder.model.config.d_model,
                        info={"texts": len(ids), "max_pieces": max_pieces})
