"""SavedModel export of a ranker (`models.xlnet_ranker`): a query and its candidate
documents as raw text in, their scores out.

Signature:
  serving_default  query string [] (one query; any other shape is refused when served) and
                   documents string [C] (any C, any length)
                   -> scores float32 [C] (K-NRM's tanh(w . phi + b): higher ranks first),
                      features float32 [C, K] (the kernel features phi).
Each text is normalised and cut into SentencePiece pieces in the graph
(`XLNetTextEncoder`), a document cut to its first `max_document_pieces` pieces when the
spec says so, then read as the ranking task reads it (`EncoderServing.text_embeddings`:
`text <sep> <cls>` in segments of max_seq_length through a memory of mem_len positions,
the token embeddings taken at the text's own pieces from hidden state `embedding_layer`),
and scored by the ranker's kernel pooling and linear layer. Serving needs only TensorFlow
and tensorflow-text:

  import tensorflow as tf, tensorflow_text  # registers the SentencePiece ops
  rank = tf.saved_model.load(EXPORT_DIR).signatures["serving_default"]
  rank(query=tf.constant("the whiteness of the whale"),
       documents=tf.constant([passage_1, passage_2]))["scores"]        # [2]
"""

from typing import Dict, Optional

import tensorflow as tf

from xlnet_tf.models.xlnet_ranker import RankerSpec
from xlnet_tf.models.xlnet_ranker import XLNetRanker
from xlnet_tf.serving import export_card
from xlnet_tf.serving.encoder_export import EncoderServing
from xlnet_tf.serving.export_card import PROBE_CONTEXTS
from xlnet_tf.serving.export_card import PROBE_LONG_TEXT
from xlnet_tf.serving.export_card import PROBE_QUESTIONS
from xlnet_tf.serving.model_dir_export import export_model_dir
from xlnet_tf.serving.text_encoder import TEXTS
from xlnet_tf.serving.text_encoder import check_shapes


class RankerServing(tf.Module):
  """A ranker with the text encoder: `embed` (texts -> token embeddings, what the ranking
  task caches) and `rank` (the signature)."""

  def __init__(self, model: XLNetRanker, spec: RankerSpec, spiece_model: str):
    super().__init__(name="xlnet_ranker_serving")
    if spec.mem_len < 1:
      raise ValueError(f"RankerServing: a ranker reads documents through the memory; its "
                       f"spec has mem_len {spec.mem_len}")
    self.model = model
    self.spec = spec
    self.reader = EncoderServing(model.encoder, spiece_model, spec.max_seq_length,
                                 lower=spec.uncased, keep_accents=spec.keep_accents,
                                 layer=model.embedding_layer)

  def embed(self, texts, max_pieces: int = 0) -> Dict[str, tf.Tensor]:
    """string [B] -> token_embeddings float32 [B, L, D] (right-padded with zeros),
    token_mask float32 [B, L] (1.0 at a piece), for texts cut to their first `max_pieces`
    pieces (0: whole)."""
    ids = self.reader.text_encoder.tokenize(texts)                        # [B, (n)]
    if max_pieces:
      ids = ids[:, :max_pieces]
    outputs = self.reader.text_embeddings(ids)
    return {"token_embeddings": outputs["token_embeddings"],
            "token_mask": outputs["token_mask"]}

  def rank(self, query, documents) -> Dict[str, tf.Tensor]:
    query = check_shapes("serving_default", {"query": (query, [], "one UTF-8 query")})[
        "query"]
    query = tf.reshape(query, [])                  # checked above: one string
    documents = check_shapes("serving_default",
                             {"documents": (documents, [None], TEXTS)})["documents"]
    q = self.embed(query[tf.newaxis])                                      # [1, Q, D]
    d = self.embed(documents, self.spec.max_document_pieces)               # [C, N, D]
    outputs = self.model({"query_embeddings": q["token_embeddings"],
                          "query_mask": q["token_mask"],
                          "document_embeddings": d["token_embeddings"][tf.newaxis],
                          "document_mask": d["token_mask"][tf.newaxis]}, training=False)
    return {"scores": outputs["scores"][0], "features": outputs["features"][0]}

  def signatures(self):
    rank_fn = tf.function(lambda query, documents: self.rank(query, documents))
    # `query` is declared of any shape so that its shape is checked when served (a
    # declared [] is static: a check of it would be folded away, and a loaded signature
    # does not enforce what it declares); one string is what it takes.
    return {"serving_default": rank_fn.get_concrete_function(
        query=tf.TensorSpec(None, tf.string), documents=tf.TensorSpec([None], tf.string))}


def export_ranker(model_dir: str, export_dir: str,
                  spiece_model: Optional[str] = None) -> str:
  """Exports the ranker in `model_dir` (a ranker model directory, `model_directory`);
  returns export_dir. `spiece_model`: default `model_dir/spiece.model`."""
  def serving(model, spec: RankerSpec, spiece: str) -> RankerServing:
    return RankerServing(model, spec, spiece)
  return export_model_dir(model_dir, export_dir, RankerSpec, serving, spiece_model,
                          spiece_hint="spiece_model", card=ranker_card)


# ---- the card -------------------------------------------------------------------------------

def ranker_card(module: RankerServing) -> export_card.ExportCard:
  """`RankerServing`: the scores and kernel features of probe documents (the long probe
  text among them, read through the memory) for one query."""
  spec = module.spec
  layer = ("the word-embedding table (context-free)" if module.model.static_embeddings
           else f"hidden state {spec.embedding_layer} of the frozen encoder")
  return export_card.ExportCard(
      task="ranking", title="XLNet K-NRM ranker, SavedModel",
      about=("a ranker export: its serving_default takes one query and its documents and "
             "returns their scores; call it from Python (docs/ranking.md, Serving)"),
      python_fn=module.rank,
      inputs={"documents": list(PROBE_CONTEXTS) + [PROBE_LONG_TEXT],
              "query": PROBE_QUESTIONS[0]},
      keys=("scores", "features"),
      details={"Token embeddings": layer,
               "Reading": f"segments of {spec.max_seq_length} pieces through a memory of "
                          f"{spec.mem_len} positions; documents cut to "
                          + (f"{spec.max_document_pieces} pieces" if spec.max_document_pieces
                             else "nothing (read whole)"),
               "Kernels": f"{spec.n_kernels} (sigma {spec.sigma}, exact-match sigma "
                          f"{spec.exact_sigma})",
               "uncased": spec.uncased, "keep_accents": spec.keep_accents})
