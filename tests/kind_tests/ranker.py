"""The ranker kind's test record: its demo ranks the first 6 chapters' passages of the
bundled collection (in the TREC formats) with a tiny pretrained model; and the collection
writer the ranking tests share (`write_ranking_sample`)."""

import os
from typing import Dict

import helpers
from kind_tests import KindTest
from xlnet_tf.data import sample_data
from xlnet_tf.data import trec_files
from xlnet_tf.models.xlnet_ranker import RankerSpec
from xlnet_tf.serving import ranker_export


def write_ranking_sample(root, chapters=range(1, 13)) -> Dict[str, str]:
  """The bundled Moby-Dick ranking collection cut to `chapters`' queries and passages,
  written in the TREC formats: topics (`<top> <num> <title>`), documents (`<DOC> <DOCNO>
  <TEXT>`) and qrels. Returns {"queries", "documents", "qrels"} paths."""
  bundled = sample_data.path("ranking", "moby_dick")
  queries = trec_files.read_queries(os.path.join(bundled, "queries.tsv"))
  documents = trec_files.read_documents(os.path.join(bundled, "documents.jsonl"))
  qrels = trec_files.read_qrels(os.path.join(bundled, "qrels.txt"))
  wanted = [str(c) for c in chapters]
  kept = {docid for qid in wanted for docid in qrels[qid]}
  root = os.fspath(root)
  os.makedirs(root, exist_ok=True)
  paths = {name: os.path.join(root, name) for name in ("topics.txt", "docs.trec", "qrels")}
  with open(paths["topics.txt"], "w", encoding="utf-8") as f:
    for qid in wanted:
      f.write(f"<top>\n<num> Number: {qid}\n<title> {queries[qid]}\n\n<desc> Description:\n"
              f"The passages of chapter {qid}.\n</top>\n\n")
  with open(paths["docs.trec"], "w", encoding="utf-8") as f:
    for docid in sorted(kept):
      text = documents[docid].replace("&", "&amp;").replace("<", "&lt;")
      f.write(f"<DOC>\n<DOCNO> {docid} </DOCNO>\n<TEXT>\n{text}\n</TEXT>\n</DOC>\n")
  with open(paths["qrels"], "w", encoding="utf-8") as f:
    for qid in wanted:
      for docid, grade in sorted(qrels[qid].items()):
        f.write(f"{qid} 0 {docid} {grade}\n")
  return {"queries": paths["topics.txt"], "documents": paths["docs.trec"],
          "qrels": paths["qrels"]}


def _collection(fixtures):
  files = write_ranking_sample(fixtures.tmp_path / "collection", chapters=range(1, 7))
  model_dir = helpers.write_pretrained_dir(fixtures.tmp_path / "pretrained",
                                           fixtures.spiece_model)
  data = f"queries={files['queries']},qrels={files['qrels']}"
  split = lambda name: ",".join(f"task.{name}.{kv}" for kv in data.split(","))
  return (f"task.init_checkpoint={model_dir},task.documents={files['documents']},"
          f"task.max_seq_length=32,task.mem_len=32,task.folds=3,{split('train_data')},"
          f"{split('validation_data')},task.train_data.global_batch_size=8")


def _export_card(config, spiece_model):
  spec = RankerSpec(max_seq_length=16, mem_len=16)
  return ranker_export.ranker_card(ranker_export.RankerServing(
      spec.build_model(config), spec, spiece_model))


RECORD = KindTest(
    example_spec=RankerSpec(embedding_layer=-1, max_seq_length=16, mem_len=16,
                            max_document_pieces=64),
    demo_run=lambda f: ("ranking_demo.yaml", _collection(f)), config_override=_collection,
    export_card=_export_card,
    classify_refusal=("is a ranker export: its serving_default takes one query and its "
                      "documents and returns their scores; call it from Python "
                      "(docs/ranking.md, Serving)"))
