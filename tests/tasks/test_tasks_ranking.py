"""The ranking task (K-NRM over a frozen XLNet, reranking BM25): its loss, its inputs, the
kind's one step through the driver on a cut of the bundled Moby-Dick collection written in
the TREC formats (the run file read back by ir-measures, the SavedModel's scores equal to
the evaluated ones; in a fresh process: slow), the embedding cache, and bad files named
before any work."""

import glob
import json
import os

import ir_measures
import numpy as np
import pytest
import tensorflow as tf
from official.core import exp_factory
from official.core import task_factory

import helpers
from kind_tests.ranker import write_ranking_sample
from xlnet_tf import pretrained
from xlnet_tf.data import embedding_store
from xlnet_tf.data import tokenization
from xlnet_tf.data import trec_files
from xlnet_tf import model_directory
from xlnet_tf.models.xlnet_ranker import RankerSpec
from xlnet_tf.models.xlnet_ranker import XLNetRanker
from xlnet_tf.models.xlnet_ranker import build_ranker
import xlnet_tf.tasks.all_tasks  # noqa: F401  (registers every task and its experiment)
from xlnet_tf.tasks import ranking
from xlnet_tf.tasks import train_lib

MEASURES = {"ndcg@20": ir_measures.nDCG(dcg="exp-log2") @ 20, "err@20": ir_measures.ERR @ 20,
            "map": ir_measures.AP, "p@20": ir_measures.P @ 20}


def test_the_pairwise_hinge_loss():
  """max(0, 1 - s+ + s-) per triple, summed, with the count: worked by hand."""
  scores = tf.constant([[0.5, -0.7], [0.2, 0.1], [-0.3, 0.4]])
  total, count = ranking.ranking_loss({"scores": scores}, None)
  # 1 - 0.5 - 0.7 = -0.2 -> 0;  1 - 0.2 + 0.1 = 0.9;  1 + 0.3 + 0.4 = 1.7
  assert float(total) == pytest.approx(0.9 + 1.7)
  assert float(count) == 3.0


def test_the_encoder_is_frozen_and_the_ranker_serializes():
  ranker = build_ranker(helpers.small_config(n_token=60), embedding_layer=1, mem_len=8)
  assert [v.name for v in ranker.trainable_variables] == ["score/kernel:0", "score/bias:0"]
  again = XLNetRanker.from_config(ranker.get_config())
  assert again.embedding_layer == 1 and again.kernel_pooling.mus == ranker.kernel_pooling.mus
  with pytest.raises(ValueError, match="embedding_layer must index the encoder's 3 hidden"):
    build_ranker(helpers.small_config(), embedding_layer=3, mem_len=8)


@pytest.fixture(scope="module")
def ranking_setup(spiece_model, tmp_path_factory):
  """A tiny pretrained model and the first 12 chapters' queries and passages."""
  root = tmp_path_factory.mktemp("ranking")
  files = write_ranking_sample(root / "collection")
  model_dir = helpers.write_pretrained_dir(root / "pretrained", spiece_model)
  return files, model_dir, root


def _params(files, model_dir, train_data=(), validation_data=(), **task):
  """The experiment on the sample (2 steps, an evaluation at the end), its splits' fields
  updated by `train_data` and `validation_data`, the task's by `task`."""
  params = exp_factory.get_exp_config("xlnet/ranking")
  data = {"queries": files["queries"], "qrels": files["qrels"]}
  override = {"task": {"init_checkpoint": model_dir, "documents": files["documents"],
                       "max_seq_length": 32, "mem_len": 32, "folds": 3, "fold": 0,
                       "train_data": {**data, "global_batch_size": 8, **dict(train_data)},
                       "validation_data": {**data, **dict(validation_data)}, **task},
              "trainer": {"train_steps": 2, "steps_per_loop": 2, "checkpoint_interval": 2,
                          "validation_interval": 2}}
  params.override(override, is_strict=True)
  return params


@pytest.fixture(scope="module")
def one_step(ranking_setup):
  """A run of the experiment on the sample by train_and_eval, then exported: (params, model
  directory, what train_and_eval returned, the export directory)."""
  files, model_dir, root = ranking_setup
  params = _params(files, model_dir)
  run_dir = str(root / "run")
  out = train_lib.run(params, "train_and_eval", run_dir)
  return params, run_dir, out, train_lib.run(params, "export", run_dir)["export"]


def _served(ranking_setup, one_step, serve):
  """What the export (`serve(export_dir, inputs)`) scores for query 4 and its candidates in
  best/'s evaluated run, and those evaluated scores."""
  files, _, _ = ranking_setup
  _, run_dir, _, export_dir = one_step
  documents = trec_files.read_documents(files["documents"])
  topics = trec_files.read_queries(files["queries"])
  ranked = trec_files.read_run(os.path.join(run_dir, "best", "run.trec"))["4"]
  served = serve(export_dir, {"query": topics["4"],
                              "documents": [documents[d] for d, _ in ranked]})
  return served, ranked


def _check_served(served, ranked):
  """Raw query and passages in, best/'s evaluated scores out (the evaluation read float16
  cached embeddings; the SavedModel computes them in float32)."""
  np.testing.assert_allclose(served["scores"], [s for _, s in ranked], atol=2e-3)
  assert np.asarray(served["features"]).shape == (len(ranked), 11)


def test_one_step_evaluates_and_exports(ranking_setup, one_step):
  files, model_dir, _ = ranking_setup
  params, run_dir, out, export_dir = one_step
  assert out["train"]["step"] == 2
  best = os.path.join(run_dir, "best")
  results = json.loads(open(os.path.join(best, "eval_results.json")).read())

  # The run file: every query of fold 0 (chapters 1, 4, 7, 10: positions 0, 3, 6, 9 of
  # the topic file) that has candidates ("Loomings." matches no passage of the 12 chapters:
  # it has none), its BM25 candidates reranked. ir-measures reads the file and, computing
  # the measures itself from it and the qrels, gets the results' numbers (both count the
  # judged query without candidates 0).
  run = list(ir_measures.read_trec_run(os.path.join(best, "run.trec")))
  assert sorted({r.query_id for r in run}) == ["10", "4", "7"]
  qrels = list(ir_measures.read_trec_qrels(files["qrels"]))
  fold_qrels = [q for q in qrels if q.query_id in {"1", "4", "7", "10"}]
  measured = ir_measures.calc_aggregate(list(MEASURES.values()), fold_qrels, run)
  for key, measure in MEASURES.items():
    assert results[key] == pytest.approx(measured[measure], abs=1e-5), key
  assert results["num_queries"] == 4 and results["judged_not_in_collection"] == 0
  assert 0 < results["candidates_ndcg@20"] <= 1

  # --mode=eval writes the split's results and run beside them; evaluating another fold
  # (one the model trained on) is refused.
  with pytest.raises(ValueError, match=r"fold: 0 .*1 now"):
    train_lib.run(_params(files, model_dir, fold=1), "eval", run_dir)
  evaluated = train_lib.run(params, "eval", run_dir)["eval"]
  assert os.path.exists(os.path.join(run_dir, "eval_results_test.json"))
  assert os.path.exists(os.path.join(run_dir, "run_test.trec"))
  assert evaluated["step"] == 2

  # The SavedModel of best/ (the driver's --mode=export) scores as best/ was evaluated.
  assert export_dir == os.path.join(run_dir, "export")
  _check_served(*_served(ranking_setup, one_step, helpers.serve_in_process))
  # One query a call: a batch of queries is refused, not read as its first.
  rank = tf.saved_model.load(export_dir).signatures["serving_default"]
  with pytest.raises(tf.errors.InvalidArgumentError,
                     match=r"input query has shape \[2\]; expected \[\]"):
    rank(query=tf.constant(["whale", "sea"]), documents=tf.constant(["a whale"]))


@pytest.mark.slow
def test_the_export_serves_in_a_fresh_process(ranking_setup, one_step, tmp_path):
  """The same query and passages in a fresh process with TensorFlow and tensorflow-text
  only."""
  _check_served(*_served(ranking_setup, one_step,
                         lambda export_dir, inputs: helpers.serve_fresh(export_dir, inputs,
                                                                       tmp_path)))


@pytest.mark.slow
def test_the_embeddings_are_cached_per_model_and_collection(ranking_setup, one_step,
                                                            spiece_model):
  """The stores of the run (its cache, MODEL_DIR/features) are found again, not
  recomputed; another model or collection has other stores."""
  files, model_dir, root = ranking_setup
  cache = os.path.join(one_step[1], "features")

  def stores(params):
    task = task_factory.get_task(params.task)
    data = params.task.validation_data.replace(cache_dir=cache)
    return task.embeddings(data, "queries"), task.embeddings(data, "documents")

  vectors = glob.glob(os.path.join(cache, "**", embedding_store.VECTORS_FILE), recursive=True)
  stamps = {path: os.path.getmtime(path) for path in vectors}
  queries, documents = stores(_params(files, model_dir))
  assert {queries.path, documents.path} <= {os.path.dirname(p) for p in vectors}
  again = stores(_params(files, model_dir))
  assert [s.path for s in again] == [queries.path, documents.path]
  assert {path: os.path.getmtime(path) for path in vectors} == stamps

  # Another model (other weights): other stores.
  other_model = helpers.write_pretrained_dir(root / "other", spiece_model, seed=1)
  other = stores(_params(files, other_model))
  assert other[1].path != documents.path and other[0].path != queries.path

  # Another collection (one passage changed): another document store, the same queries'.
  changed = dict(files, documents=str(root / "changed.trec"))
  text = open(files["documents"], encoding="utf-8").read()
  with open(changed["documents"], "w", encoding="utf-8") as f:
    f.write(text.replace("Call me Ishmael.", "Call me Queequeg.", 1))
  moved = stores(_params(changed, model_dir))
  assert moved[1].path != documents.path and moved[0].path == queries.path
  assert len(documents) == len(moved[1])


def test_static_embeddings_are_the_word_embedding_rows(ranking_setup, tmp_path):
  """embedding_layer 0: a query's cached vectors are the embedding table's rows of its
  pieces (the released SentencePiece ids), in float16."""
  files, model_dir, _ = ranking_setup
  params = _params(files, model_dir, embedding_layer=0)
  task = task_factory.get_task(params.task)
  store = task.embeddings(params.task.validation_data.replace(cache_dir=str(tmp_path)),
                          "queries")
  table = pretrained.load_directory(model_dir).encoder.word_embedding.numpy()
  sp = tokenization.load_spiece(os.path.join(model_dir, "spiece.model"))
  topics = trec_files.read_queries(files["queries"])
  assert topics["2"] == "The Carpet-Bag."
  ids = tokenization.encode_ids(sp, tokenization.normalize_text(topics["2"]))
  qid = "2"
  np.testing.assert_array_equal(store.get(qid), table[ids].astype(np.float16))


def test_bad_files_are_named_before_any_work(ranking_setup, tmp_path):
  files, model_dir, _ = ranking_setup
  bad_qrels = tmp_path / "qrels"
  lines = open(files["qrels"]).read().splitlines()
  lines[2] = "1 0 md-001-01"                                  # no grade
  bad_qrels.write_text("\n".join(lines) + "\n")
  params = _params(dict(files, qrels=str(bad_qrels)), model_dir)
  with pytest.raises(ValueError, match=rf"{bad_qrels}:3: expected"):
    train_lib.run(params, "train", str(tmp_path / "run"))
  assert not (tmp_path / "run" / "features").exists()

  bad_run = tmp_path / "candidates.trec"
  bad_run.write_text("1 Q0 md-001-01 1 2.5 x\n1 Q0 no-such-doc 2 1.5 x\n")
  params = _params(files, model_dir, train_data={"candidates": str(bad_run)},
                   validation_data={"candidates": str(bad_run)})
  with pytest.raises(ValueError, match=r"task.train_data.candidates: .* ranks 1 documents "
                                       r"that are not in the collection .*no-such-doc"):
    train_lib.run(params, "train", str(tmp_path / "run2"))

  graded = tmp_path / "graded"
  graded.write_text(open(files["qrels"]).read().replace(" 1\n", " 5\n", 1))
  params = _params(files, model_dir, train_data={"qrels": str(graded)},
                   validation_data={"qrels": str(graded)})
  with pytest.raises(ValueError, match=rf"task.train_data.qrels: {graded} judges 1 documents "
                                       r"above grade 4"):
    train_lib.run(params, "train", str(tmp_path / "run3"))

  fine_tuned = tmp_path / "ranker_dir"
  ranker = build_ranker(pretrained.load_directory(model_dir).config, mem_len=8)
  model_directory.save(ranker, str(fine_tuned), RankerSpec(mem_len=8), None)
  params = _params(files, str(fine_tuned))
  with pytest.raises(ValueError, match="is a fine-tuned ranker model directory"):
    train_lib.run(params, "train", str(tmp_path / "run4"))

  params = _params(files, model_dir, folds=0)
  with pytest.raises(ValueError, match="read the same queries and qrels"):
    task_factory.get_task(params.task)
  params = _params(files, model_dir, train_data={"candidates": str(bad_run)})
  with pytest.raises(ValueError, match=r"task.folds=3 splits one query file into folds, but "
                                       r"task.train_data and task.validation_data differ in "
                                       r"candidates"):
    task_factory.get_task(params.task)
  params = _params(files, model_dir, init_checkpoint="")
  with pytest.raises(ValueError, match="task.init_checkpoint must name a pretrained model"):
    task_factory.get_task(params.task)


def test_a_judged_document_missing_from_the_collection_is_reported(ranking_setup, tmp_path,
                                                                   caplog):
  """Not dropped: a warning names it, the results count it, and it counts as a relevant
  document not found (the measures see it in the qrels)."""
  files, model_dir, _ = ranking_setup
  qrels = tmp_path / "qrels"
  qrels.write_text(open(files["qrels"]).read() + "1 0 md-999-01 1\n")
  params = _params(dict(files, qrels=str(qrels)), model_dir)
  task = task_factory.get_task(params.task)
  data = params.task.validation_data.replace(cache_dir=str(tmp_path / "cache"))
  with caplog.at_level("WARNING"):
    split = task.split_data(data)
  assert split.sources["judged_not_in_collection"] == 1
  assert "1 judged documents of the validation_data queries are not in the collection" in (
      caplog.text) and "md-999-01" in caplog.text
  assert split.qrels["1"]["md-999-01"] == 1
