"""data_prep.ranking_collection: the bundled collection (data_prep/sample_data/ranking/
moby_dick) is what the generator makes of the bundled Moby-Dick, byte for byte; its
judgments, passages and queries hold the invariants the README states."""

import os
import re

import pytest

from data_prep import ranking_collection
from xlnet_tf.data import sample_data
from xlnet_tf.data import trec_files

BUNDLED = sample_data.path("ranking", "moby_dick")
SOURCE = sample_data.path("moby_dick")
FILES = ("queries.tsv", "documents.jsonl", "qrels.txt")


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory):
  output = str(tmp_path_factory.mktemp("ranking"))
  counts = ranking_collection.write_collection(SOURCE, output)
  return output, counts


def test_the_bundled_collection_is_the_generators_output(regenerated):
  output, counts = regenerated
  assert sorted(os.listdir(output)) == sorted(FILES)
  for name in FILES:
    with open(os.path.join(output, name), "rb") as made, \
         open(os.path.join(BUNDLED, name), "rb") as bundled:
      assert made.read() == bundled.read(), name
  # The counts the README gives.
  assert counts == {"queries": 138, "documents": 1195, "judgments": 1195, "words": 211310,
                    "min_words": 16, "max_words": 394}


def _body(path):
  """The file's text after its heading, white space collapsed."""
  with open(path, encoding="utf-8") as f:
    return " ".join(f.read().split("\n", 1)[1].split())


def test_the_collections_invariants():
  queries = trec_files.read_queries(os.path.join(BUNDLED, "queries.tsv"))
  documents = trec_files.read_documents(os.path.join(BUNDLED, "documents.jsonl"))
  qrels = trec_files.read_qrels(os.path.join(BUNDLED, "qrels.txt"))
  assert trec_files.missing_judged_documents(qrels, documents) == []
  assert list(qrels) == list(queries)
  assert all(judged and set(judged.values()) == {1} for judged in qrels.values())
  # Every passage is judged for exactly one query: its file's heading.
  judged = [docid for judged in qrels.values() for docid in judged]
  assert sorted(judged) == sorted(documents)
  names = ["etymology.txt", "extracts.txt"] + [f"chapter_{n}.txt" for n in range(1, 136)]
  names.append("epilogue.txt")
  assert list(queries) == ["etymology", "extracts"] + [str(n) for n in range(1, 136)] + [
      "epilogue"]
  for qid, name in zip(queries, names):
    path = os.path.join(SOURCE, name)
    with open(path, encoding="utf-8") as f:
      heading = f.readline().strip()
    if qid.isdigit():
      assert heading == f"CHAPTER {qid}. {queries[qid]}"
    else:
      assert heading == queries[qid]
    # The passages, in docid order, are the file's text without its heading.
    passages = sorted(qrels[qid])
    stem = f"md-{int(qid):03d}" if qid.isdigit() else f"md-{qid}"
    assert passages == [f"{stem}-{i:02d}" for i in range(1, len(passages) + 1)]
    assert " ".join(" ".join(documents[d] for d in passages).split()) == _body(path)
  assert queries["42"] == "The Whiteness of The Whale."


def test_cut_passages_at_paragraph_boundaries():
  def paragraph(words, tag):
    return " ".join(f"{tag}{i}." for i in range(words))
  a, b, c, d = (paragraph(100, "a"), paragraph(60, "b"), paragraph(200, "c"),
                paragraph(40, "d"))
  # a + b = 160 words >= 150: a passage; c alone (c + d would be 240 <= 250, but c is
  # already >= 150): a passage; d (40 < 75 words) joins c.
  assert ranking_collection.cut_passages([a, b, c, d]) == [a + "\n" + b, c + "\n" + d]
  # A paragraph of 600 words: its sentences in ceil(600 / 250) = 3 pieces of 200 words.
  long = paragraph(600, "x")
  pieces = ranking_collection.cut_passages([long])
  assert [len(p.split()) for p in pieces] == [200, 200, 200]
  assert " ".join(pieces) == long


def test_the_output_may_not_be_the_source(tmp_path):
  with pytest.raises(ValueError, match="is the source directory"):
    ranking_collection.write_collection(SOURCE, SOURCE)


def test_a_wrong_heading_is_named(tmp_path):
  for name in ("etymology.txt", "extracts.txt", "epilogue.txt"):
    (tmp_path / name).write_text("HEADING\n\nText.\n")
  (tmp_path / "chapter_1.txt").write_text("CHAPTER 2. Loomings.\n\nCall me Ishmael.\n")
  with pytest.raises(ValueError, match=re.escape(
      f"{tmp_path}/chapter_1.txt:1: expected 'CHAPTER 1. Title', got 'CHAPTER 2. Loomings.'")):
    ranking_collection.build_collection(str(tmp_path))
