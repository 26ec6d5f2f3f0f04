"""Document ranking as in the XLNet paper (Table 2, appendix A.3) as a Model Garden task:
K-NRM's kernel pooling over the token embeddings of a frozen pretrained XLNet reranks the
top candidates of BM25 (or of a given TREC run), trained with K-NRM's pairwise hinge loss.

  >>> params = exp_factory.get_exp_config("xlnet/ranking")   # + ranking_demo.yaml
  >>> task = task_factory.get_task(params.task)

The inputs are files in the field's formats (`data.trec_files`): queries (TSV or TREC
topics), documents (JSONL or TREC), qrels and, optionally, a candidate run; without one the
candidates are BM25's top `num_candidates` (`data.bm25_candidates`, cached). A split's
files are read and checked, and its fold chosen, by `data.ranking_splits`. The token
embeddings of every query and every candidate document are computed once per (model,
collection) and cached on disk in float16 (`data.ranking_embeddings`: the stores' keys and
their computing into `data.embedding_store` stores, in the split's cache_dir) by the same
graph the SavedModel serves with (`serving.ranker_export.RankerServing.embed`), so a
served score is the evaluated one up to that rounding. Training reads (query, relevant
document, less relevant document) triples of the training queries' candidates; evaluation
reranks each evaluation query's candidates and scores the run with ir-measures
(`evaluation.ranking_metrics`: NDCG@20 and ERR@20 as the TREC Web Track's gdeval computes
them, MAP, P@20), next to the candidates' own ranking (BM25 alone) on the same queries.
The reranked run is written as a TREC run file beside the results
(`write_evaluation_files`).

`folds` > 0 splits the queries of one file into folds by their order in it (query i is in
fold i mod folds, `ranking_splits.fold_of`): the training split reads every fold but
`fold`, the evaluation split `fold` only, as the paper's cross-validation
(`runs.ranking_folds` runs every fold).

This module keeps the task: its config, loss, model, inputs, evaluation and its kind's
record and experiment.
"""

import dataclasses
import functools
import os
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np
from official.core import config_definitions as cfg
from official.core import exp_factory
from official.core import task_factory
import tensorflow as tf
import tf_keras

from xlnet_tf import model_directory
from xlnet_tf import task_kind
from xlnet_tf.data import embedding_store
from xlnet_tf.data import ranking_embeddings
from xlnet_tf.data import ranking_splits
from xlnet_tf.data import trec_files
from xlnet_tf.evaluation import ranking_metrics
from xlnet_tf.models import xlnet_ranker
from xlnet_tf.models.xlnet_ranker import RankerSpec
from xlnet_tf.models.xlnet_ranker import XLNetRanker
from xlnet_tf.models.xlnet_ranker import build_ranker
from xlnet_tf.networks.xlnet_encoder import check_hidden_state
from xlnet_tf.serving import ranker_export
from xlnet_tf.tasks import base

CUTOFF = 20                          # NDCG@20, ERR@20, P@20: the paper's and the Web Track's
MEASURES = tuple(ranking_metrics.measure_key(m, CUTOFF) for m in ranking_metrics.MEASURES)


# ---- the loss (the trainer's `LossFn`: sum over the micro-batch, count) ------------------

def ranking_loss(outputs, batch):
  """K-NRM's pairwise hinge loss: max(0, 1 - s(q, d+) + s(q, d-)) summed over the
  micro-batch's (query, d+, d-) triples (outputs["scores"] [B, 2]: d+ then d-), and their
  number."""
  scores = outputs["scores"]
  del batch
  hinge = tf.maximum(0.0, 1.0 - scores[:, 0] + scores[:, 1])
  return tf.reduce_sum(hinge), tf.cast(tf.shape(scores)[0], tf.float32)


KIND = task_kind.register(task_kind.TaskKind(
    name="ranker", description="K-NRM ranking head over frozen token embeddings "
                               "(kernel_pooling, score/{kernel,bias})",
    model_class=XLNetRanker, build_model=build_ranker, spec_class=RankerSpec,
    card_task="ranking", export=ranker_export.export_ranker, conversion=None,
    hf_not_exportable="HuggingFace has no kernel-pooling ranking head for XLNet",
    max_seq_length=512, experiment="xlnet/ranking"))


@exp_factory.register_config_factory(KIND.experiment)
def ranking_experiment() -> cfg.ExperimentConfig:
  """K-NRM over a frozen pretrained XLNet (the paper's ClueWeb09-B reranking): batch 32
  pairs, 2000 steps at lr 0.05 (K-NRM's release: 1e-3 for far more steps; the head is 12
  numbers), Adam epsilon 1e-5 as that release; BM25's top 100 reranked (give
  init_checkpoint and the collection's files)."""
  return base.experiment_config(RankingConfig(), train_steps=2000, steps_per_loop=100,
                                checkpoint_interval=500, validation_interval=500)


@dataclasses.dataclass
class RankingDataConfig(base.TaskDataConfig):
  """The queries and judgments of one split (see `base.TaskDataConfig`).

  queries: a TSV `qid<TAB>text` or TREC topic file ("": the bundled collection's).
  qrels: TREC qrels ("": the bundled collection's).
  candidates: a TREC run whose top num_candidates per query are reranked ("": BM25's).
  global_batch_size: for training, the (query, d+, d-) triples of a step; evaluation
    scores one query's candidates at a time.
  """
  queries: str = ""
  qrels: str = ""
  candidates: str = ""


@dataclasses.dataclass
class RankingConfig(cfg.TaskConfig):
  """Reranking with K-NRM over a frozen pretrained XLNet.

  init_checkpoint: the pretrained model directory or preset name (required: the token
    embeddings are its).
  documents: the collection, JSONL `{"docid", "text"}` or TREC `<DOC>` ("": the bundled
    Moby-Dick collection, constructed: data_prep/sample_data/ranking/moby_dick/).
  num_candidates: how many candidates per query are reranked (BM25's top k, or the
    candidate run's).
  embedding_layer: the encoder's hidden state the token embeddings are: -1 the last
    layer (the released code's sequence output: the paper's choice), 0 the
    word-embedding table (context-free), k the output of layer k.
  max_seq_length, mem_len: a text is read in segments of max_seq_length pieces through a
    memory of mem_len positions.
  max_document_pieces: documents are cut to their first this many pieces (0: whole).
  n_kernels, sigma, exact_sigma: K-NRM's kernels.
  folds, fold: cross-validation by query folds (0: the splits' own files).
  """
  model: base.XLNetModelConfig = dataclasses.field(default_factory=base.XLNetModelConfig)
  documents: str = ""
  num_candidates: int = 100
  # the ranker's settings: its spec's (`RankerSpec`, their one home), defaults included
  embedding_layer: int = RankerSpec.embedding_layer
  max_seq_length: int = RankerSpec.max_seq_length
  mem_len: int = RankerSpec.mem_len
  max_document_pieces: int = RankerSpec.max_document_pieces
  n_kernels: int = RankerSpec.n_kernels
  sigma: float = RankerSpec.sigma
  exact_sigma: float = RankerSpec.exact_sigma
  folds: int = 0
  fold: int = 0
  train_data: RankingDataConfig = base.data_config("train", True, 32, RankingDataConfig)
  validation_data: RankingDataConfig = base.data_config("test", False, 1, RankingDataConfig)
  optimization: base.FinetuneSettings = dataclasses.field(
      default_factory=lambda: base.FinetuneSettings(
          learning_rate=0.05, adam_epsilon=1e-5, warmup_steps=0, weight_decay=0.0))


@task_factory.register_task_cls(RankingConfig)
class RankingTask(base.XLNetTask):
  """K-NRM reranking: inputs (cached embeddings), loss, evaluation, run files, export."""

  KIND = KIND
  INPUT_KEYS = xlnet_ranker.INPUT_KEYS
  LABEL_KEY = "scores"
  METRIC = "ndcg@20"
  RUN_FILE = "run.trec"

  def loss_fn(self):
    return ranking_loss

  def __init__(self, params: RankingConfig, logging_dir: Optional[str] = None,
               name: Optional[str] = None):
    super().__init__(params, logging_dir=logging_dir, name=name)
    check_ranking_settings(params)
    self._collection: Optional[Dict[str, str]] = None
    self._splits: Dict[Tuple, ranking_splits.SplitData] = {}
    self._stores: Dict[str, embedding_store.EmbeddingStore] = {}
    self.last_run: Optional[Dict[str, List[Tuple[str, float]]]] = None

  # ---- what the task is ------------------------------------------------------------------

  @functools.cached_property
  def spec(self) -> RankerSpec:
    """The ranker's spec: the task's settings, and the pretrained model's text
    normalisation (its text.json, read once), which the ranker reads text with."""
    params = self.task_config
    text = model_directory.read_text_settings(self.init_dir(), spec_files=())
    return RankerSpec(
        embedding_layer=params.embedding_layer, max_seq_length=params.max_seq_length,
        mem_len=params.mem_len, max_document_pieces=params.max_document_pieces,
        n_kernels=params.n_kernels, sigma=params.sigma, exact_sigma=params.exact_sigma,
        uncased=text["uncased"], keep_accents=text["keep_accents"])

  def spec_values(self) -> Dict[str, Any]:
    return dataclasses.asdict(self.spec)

  def run_settings(self) -> Dict[str, Any]:
    """The spec, the pretrained model it embeds with (its files' sha256) and the folds: a
    run, and an evaluation of its checkpoints, must read the embeddings of the encoder
    they hold, and evaluate the fold they did not train on."""
    params = self.task_config
    return {**self.spec_values(), "embedding_model": self.model_fingerprint,
            "folds": params.folds, "fold": params.fold if params.folds else None}

  def check(self, training: bool = True, evaluating: bool = False) -> None:
    """`XLNetTask.check` (the network, the SentencePiece model), and that every input
    file reads (each malformed line named) before anything is built."""
    kind = task_kind.of_model_dir(self.init_dir())
    if kind.name != task_kind.PRETRAINED:
      raise ValueError(f"task.init_checkpoint: {self.init_dir()} is a fine-tuned {kind.name} "
                       f"model directory ({kind.spec_file}); the ranker embeds with a "
                       f"pretrained model's encoder: give the pretrained directory")
    super().check(training, evaluating)
    check_hidden_state(self.task_config.embedding_layer, self.xlnet_config().n_layer,
                       "task.embedding_layer")
    if training:
      self.training_pairs(self.task_config.train_data)
    if evaluating:
      split = self.split_data(self.task_config.validation_data)
      if not any(grade > 0 for judged in split.qrels.values() for grade in judged.values()):
        raise ValueError(
            f"task.validation_data: none of its {len(split.queries)} queries has a relevant "
            f"document in the qrels: there is nothing to evaluate")

  def check_text_settings(self) -> None:
    """The ranker reads text with the pretrained model's own normalisation (the spec
    takes it from the init checkpoint): nothing to check."""

  def build_model(self) -> tf_keras.Model:
    return self.spec.build_model(self.xlnet_config())

  # ---- the files (`data.ranking_splits`) ---------------------------------------------------

  def collection(self) -> Dict[str, str]:
    """docid -> text of the collection (read once)."""
    if self._collection is None:
      self._collection = ranking_splits.read_collection(self.task_config.documents)
    return self._collection

  def split_data(self, data: RankingDataConfig) -> ranking_splits.SplitData:
    """The split's queries, candidates and judgments (`ranking_splits.read_split`: every
    candidate in the collection, judged documents missing from it reported), read and
    checked once."""
    params = self.task_config
    files = ranking_splits.split_files(data.queries, data.qrels, data.candidates)
    cache_key = files + (data.is_training,)
    if cache_key not in self._splits:
      self._splits[cache_key] = ranking_splits.read_split(
          files, self.collection, name=base.data_name(data), training=data.is_training,
          num_candidates=params.num_candidates, folds=params.folds, fold=params.fold,
          bm25_cache_dir=lambda: os.path.join(self.cache_dir(data), "bm25"))
    return self._splits[cache_key]

  # ---- the embeddings (`data.ranking_embeddings`) ------------------------------------------

  @functools.cached_property
  def model_fingerprint(self) -> str:
    """A sha256 of the pretrained model's files (config, weights, SentencePiece model),
    computed once."""
    directory = self.init_dir()
    return ranking_embeddings.model_fingerprint(directory, [
        name for name in tf.io.gfile.listdir(directory)
        if name.startswith(model_directory.CHECKPOINT_PREFIX) or
        name in (model_directory.CONFIG_FILE, model_directory.SPIECE_FILE)])

  @functools.cached_property
  def embedding_settings(self) -> Dict[str, Any]:
    """Everything but the texts that makes the embeddings what they are
    (`ranking_embeddings.embedding_settings`; computed once: it hashes the model's files
    and the SentencePiece model)."""
    return ranking_embeddings.embedding_settings(self.spec, self.model_fingerprint,
                                                 self.spiece_model())

  def _embedder(self) -> ranker_export.RankerServing:
    model = self.build_model()
    self.initialize(model)
    return ranker_export.RankerServing(model, self.spec, self.spiece_model())

  def _store(self, data: RankingDataConfig, what: str) -> ranking_embeddings.StorePlan:
    """The embedding store of the split's file's queries (`what` "queries") or of the
    candidates of all its queries ("documents"): what it holds and where, known before
    anything is embedded."""
    split = self.split_data(data)
    return ranking_embeddings.store_plan(
        self.embedding_settings, os.path.join(self.cache_dir(data), "embeddings"), split,
        self.collection(), what, self.spec.max_document_pieces)

  def embeddings(self, data: RankingDataConfig, what: str) -> embedding_store.EmbeddingStore:
    """The cached token embeddings of `_store(data, what)`, computed on first use."""
    plan = self._store(data, what)
    if plan.path not in self._stores:
      self._stores[plan.path] = ranking_embeddings.open_store(plan, self._embedder)
    return self._stores[plan.path]

  # ---- training ----------------------------------------------------------------------------

  def training_pairs(self, data: RankingDataConfig) -> List[Tuple[str, str, str]]:
    """(qid, better docid, worse docid): every pair of a training query's candidates whose
    grades differ (an unjudged candidate, and a negative grade such as ClueWeb's spam -2,
    count 0, as the measures count them), in query and rank order; ValueError when there
    is none (before anything is embedded)."""
    split = self.split_data(data)
    pairs = []
    for qid in split.queries:
      grades = split.qrels.get(qid, {})
      ranked = [(docid, max(grades.get(docid, 0), 0))
                for docid, _ in split.candidates.get(qid, [])]
      pairs.extend((qid, better, worse) for better, better_grade in ranked
                   for worse, worse_grade in ranked if better_grade > worse_grade)
    if not pairs:
      raise ValueError("task.train_data: no training pairs: no training query has "
                       "candidates of different relevance grades (check the qrels and "
                       "the candidates)")
    return pairs

  def training_triples(self, data: RankingDataConfig) -> np.ndarray:
    """int64 [P, 3]: `training_pairs` as positions in the embedding stores (query,
    better document, worse document)."""
    pairs = self.training_pairs(data)
    queries = self.embeddings(data, "queries")
    documents = self.embeddings(data, "documents")
    return np.asarray([(queries.position[qid], documents.position[better],
                        documents.position[worse]) for qid, better, worse in pairs],
                      np.int64)

  def _lengths(self, data: RankingDataConfig) -> Tuple[int, int]:
    """(Q, N): the longest query and the longest candidate document in pieces (at least
    1), the static shapes of a batch."""
    queries = self.embeddings(data, "queries")
    documents = self.embeddings(data, "documents")
    return (max(1, int(queries.lengths.max(initial=0))),
            max(1, int(documents.lengths.max(initial=0))))

  def training_settings(self) -> Dict[str, Any]:
    return {"num_candidates": self.task_config.num_candidates}

  def train_data_key(self, data: RankingDataConfig) -> Dict[str, Any]:
    """The files of the split and the keys of its embedding stores (nothing embedded
    yet)."""
    return {**self.split_data(data).sources,
            "documents": self._store(data, "documents").key,
            "queries_embedded": self._store(data, "queries").key}

  def prepare_validation(self, data: RankingDataConfig) -> None:
    self.embeddings(data, "queries")
    self.embeddings(data, "documents")

  def build_inputs(self, params: RankingDataConfig,
                   input_context: Optional[tf.distribute.InputContext] = None
                   ) -> tf.data.Dataset:
    """Training micro-batches of (query, d+, d-) triples, shuffled with the data seed and
    repeated: query_embeddings [b, Q, D], query_mask [b, Q], document_embeddings
    [b, 2, N, D], document_mask [b, 2, N] (d+ first)."""
    if not params.is_training:
      raise ValueError("the ranking task evaluates whole rankings (evaluate), not batches")
    triples = self.training_triples(params)
    queries = self.embeddings(params, "queries")
    documents = self.embeddings(params, "documents")
    q_len, n_len = self._lengths(params)
    dim = documents.dim
    batch_size = self.replica_batch_size(params, input_context)

    def load(batch):
      q, q_mask = queries.padded(batch[:, 0], q_len)
      d, d_mask = documents.padded(batch[:, 1:], n_len)
      return q, q_mask, d, d_mask

    def to_inputs(batch):
      q, q_mask, d, d_mask = tf.numpy_function(
          load, [batch], (tf.float32, tf.float32, tf.float32, tf.float32))
      q.set_shape([batch_size, q_len, dim])
      q_mask.set_shape([batch_size, q_len])
      d.set_shape([batch_size, 2, n_len, dim])
      d_mask.set_shape([batch_size, 2, n_len])
      return {"query_embeddings": q, "query_mask": q_mask, "document_embeddings": d,
              "document_mask": d_mask}

    dataset = tf.data.Dataset.from_tensor_slices(triples)
    if input_context is not None and input_context.num_input_pipelines > 1:
      dataset = dataset.shard(input_context.num_input_pipelines,
                              input_context.input_pipeline_id)
    dataset = dataset.shuffle(min(len(triples), params.shuffle_buffer_size), seed=params.seed,
                              reshuffle_each_iteration=True).repeat()
    return dataset.batch(batch_size, drop_remainder=True).map(to_inputs).prefetch(2)

  def train_dataset_fn(self, data: RankingDataConfig, grad_accum_steps: int):
    def dataset_fn(ctx, start_step):
      replicas_per_pipeline = ctx.num_replicas_in_sync // ctx.num_input_pipelines
      return self.build_inputs(data, ctx).skip(
          start_step * grad_accum_steps * replicas_per_pipeline)
    return dataset_fn

  # ---- evaluation --------------------------------------------------------------------------

  def query_ranker(self, model: tf_keras.Model, data: RankingDataConfig
                   ) -> Callable[[str], List[Tuple[str, float]]]:
    """`rank(qid)` -> [(docid, score)]: the query's candidates in the model's order (equal
    scores by docid descending, as the TREC tools read a run: `trec_files.ranked`), scored
    from the cached embeddings of the split `data`."""
    split = self.split_data(data)
    queries = self.embeddings(data, "queries")
    documents = self.embeddings(data, "documents")
    q_len, n_len = self._lengths(data)
    width = max(1, max(len(c) for c in split.candidates.values()) if split.candidates else 1)
    score = tf.function(lambda inputs: model(inputs, training=False)["scores"])

    def rank(qid: str) -> List[Tuple[str, float]]:
      ranking = split.candidates.get(qid, [])
      if not ranking:
        return []
      positions = np.zeros([1, width], np.int64)                       # [1, candidates]
      positions[0, :len(ranking)] = [documents.position[d] for d, _ in ranking]
      q, q_mask = queries.padded(np.asarray([queries.position[qid]]), q_len)
      d, d_mask = documents.padded(positions, n_len)
      d_mask[0, len(ranking):] = 0.0
      scores = score({"query_embeddings": q, "query_mask": q_mask,
                      "document_embeddings": d, "document_mask": d_mask}).numpy()[0]
      return trec_files.ranked((docid, scores[i]) for i, (docid, _) in enumerate(ranking))
    return rank

  def rerank(self, model: tf_keras.Model, data: RankingDataConfig
             ) -> Dict[str, List[Tuple[str, float]]]:
    """qid -> [(docid, score)] of the split's queries (`query_ranker`)."""
    rank = self.query_ranker(model, data)
    return {qid: rank(qid) for qid in self.split_data(data).queries}

  def evaluate(self, model: tf_keras.Model, params: Optional[RankingDataConfig] = None,
               num_steps: int = -1) -> Dict[str, Any]:
    """The reranked run's NDCG@20, ERR@20, MAP and P@20 over the split's queries (their
    judgments), and the candidates' own (prefixed "candidates_": BM25 alone unless a run
    was given); the run is kept for `write_evaluation_files`."""
    del num_steps
    data = params or self.task_config.validation_data
    split = self.split_data(data)
    run = self.rerank(model, data)
    self.last_run = run
    results = ranking_metrics.evaluate_run(split.qrels, run, cutoff=CUTOFF)
    baseline = ranking_metrics.evaluate_run(
        split.qrels, {qid: split.candidates.get(qid, []) for qid in split.queries},
        cutoff=CUTOFF)
    out = {name: results[name] for name in MEASURES}
    out.update({f"candidates_{name}": baseline[name]
                for name in MEASURES})
    out["num_queries"] = results["num_queries"]          # averaged over (module doc)
    out["judged_not_in_collection"] = split.sources["judged_not_in_collection"]
    return out

  def write_evaluation_files(self, directory: str, split: Optional[str] = None) -> List[str]:
    """The last evaluation's reranked run as a TREC run file in `directory`: run.trec
    (`split` None: a model directory's) or run_<split>.trec."""
    if self.last_run is None:
      return []
    path = os.path.join(directory, self.RUN_FILE if split is None else f"run_{split}.trec")
    trec_files.write_run(path, self.last_run, tag="xlnet-knrm")
    return [path]


def check_ranking_settings(params: RankingConfig) -> None:
  """Raises ValueError, naming the field, for settings that cannot be."""
  if not params.init_checkpoint:
    raise ValueError("task.init_checkpoint must name a pretrained model (a directory or "
                     "preset name): the ranker ranks with its frozen token embeddings")
  checks = (("num_candidates", params.num_candidates >= 1, ">= 1"),
            ("max_seq_length", params.max_seq_length >= 3, ">= 3 (a piece, <sep>, <cls>)"),
            ("mem_len", params.mem_len >= 1, ">= 1 (documents are read through the "
             "memory)"),
            ("max_document_pieces", params.max_document_pieces >= 0, ">= 0 (0: whole)"),
            ("n_kernels", params.n_kernels >= 2, ">= 2"),
            ("sigma", params.sigma > 0, "> 0"), ("exact_sigma", params.exact_sigma > 0, "> 0"),
            ("folds", params.folds == 0 or params.folds >= 2, "0 or >= 2"),
            ("fold", params.folds == 0 and params.fold == 0 or
             0 <= params.fold < max(params.folds, 1), "in [0, folds)"))
  for name, ok, expected in checks:
    if not ok:
      raise ValueError(f"task.{name} must be {expected}, got {getattr(params, name)}")
  train, validation = params.train_data, params.validation_data
  files = ("queries", "qrels", "candidates")
  if not params.folds and (train.queries, train.qrels) == (validation.queries,
                                                           validation.qrels):
    raise ValueError("task.train_data and task.validation_data read the same queries and "
                     "qrels: give each split its files, or task.folds (e.g. 5) to split "
                     "one file's queries into folds")
  differing = [name for name in files if getattr(train, name) != getattr(validation, name)]
  if params.folds and differing:
    raise ValueError(f"task.folds={params.folds} splits one query file into folds, but "
                     f"task.train_data and task.validation_data differ in "
                     f"{', '.join(differing)}: give both splits the same files (or "
                     f"task.folds 0 for splits of their own)")
