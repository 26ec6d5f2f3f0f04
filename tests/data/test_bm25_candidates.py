"""xlnet_tf.data.bm25_candidates: bm25s' Lucene BM25 re-derived on a toy collection; the
bundled Moby-Dick collection's title queries find their chapter's passages; the cache is
read when the inputs are the same and rebuilt when any changes."""

import inspect
import json
import math
import os

import bm25s
import pytest

from xlnet_tf.data import bm25_candidates
from xlnet_tf.data import sample_data
from xlnet_tf.data import trec_files

TOY = {"d1": "The whale, the whale and a ship.", "d2": "A ship at sea.", "d3": "Sea."}


def test_the_parameters_are_bm25s_defaults():
  defaults = inspect.signature(bm25s.BM25.__init__).parameters
  assert bm25_candidates.BM25_PARAMETERS == {
      name: defaults[name].default for name in ("k1", "b", "method")}


def test_scores_are_lucene_bm25_of_stemmed_tokens_without_stopwords():
  # Tokens: d1 whale whale ship (the, and, a: stopwords), d2 ship sea, d3 sea; the
  # query "whales" stems to "whale". Lucene BM25 (k1 1.5, b 0.75): idf = ln(1 + (N - df +
  # 0.5) / (df + 0.5)), term score idf * tf / (tf + k1 (1 - b + b |d| / avgdl)).
  idf = math.log(1 + (3 - 1 + 0.5) / (1 + 0.5))
  expected = idf * 2 / (2 + 1.5 * (1 - 0.75 + 0.75 * 3 / ((3 + 2 + 1) / 3)))
  candidates = bm25_candidates.bm25_candidates({"q": "whales"}, TOY, k=100)
  # Only d1 matches: the documents scoring 0 are not candidates (a Lucene search returns
  # matching documents only), whatever k.
  assert [docid for docid, _ in candidates["q"]] == ["d1"]
  assert candidates["q"][0][1] == pytest.approx(expected, rel=1e-6)
  # "sea" matches d2 and d3; d3, the shorter, scores higher; a query of stopwords only
  # matches nothing.
  assert [d for d, _ in bm25_candidates.bm25_candidates({"q": "sea"}, TOY)["q"]] == [
      "d3", "d2"]
  assert bm25_candidates.bm25_candidates({"q": "the and"}, TOY, k=2) == {"q": []}


def test_refusals():
  with pytest.raises(ValueError, match="expected k >= 1, got 0"):
    bm25_candidates.bm25_candidates({"q": "x"}, TOY, k=0)
  with pytest.raises(ValueError, match="the collection has no documents"):
    bm25_candidates.bm25_candidates({"q": "x"}, {}, k=5)


@pytest.fixture(scope="module")
def collection():
  directory = sample_data.path("ranking", "moby_dick")
  return (trec_files.read_queries(os.path.join(directory, "queries.tsv")),
          trec_files.read_documents(os.path.join(directory, "documents.jsonl")),
          trec_files.read_qrels(os.path.join(directory, "qrels.txt")))


def test_title_queries_find_their_chapter(collection):
  queries, documents, qrels = collection
  candidates = bm25_candidates.bm25_candidates(queries, documents, k=100)
  assert list(candidates) == list(queries)
  for ranked in candidates.values():   # best first, equal scores by docid descending
    assert ranked == sorted(sorted(ranked, reverse=True), key=lambda pair: -pair[1])
    assert len(ranked) <= 100 and all(score > 0 for _, score in ranked)
  # Measured: 55 headings match 100 passages or more; 5 match none, their words being
  # in their heading only ("Nightgown.", "Biographical.", "Postscript.", "The Gilder.",
  # "The Symphony."): they have no candidates.
  assert sum(len(ranked) == 100 for ranked in candidates.values()) == 55
  assert sorted(qid for qid, ranked in candidates.items() if not ranked) == [
      "11", "114", "12", "132", "25"]
  found_in_10 = sum(any(qrels[qid].get(docid, 0) > 0 for docid, _ in ranked[:10])
                    for qid, ranked in candidates.items())
  first = sum(bool(ranked) and qrels[qid].get(ranked[0][0], 0) > 0
              for qid, ranked in candidates.items())
  # Measured with bm25s 0.3.16: 100 of the 138 headings have a passage of their chapter
  # in the top 10, 59 at rank 1 (titles are short: "Loomings.", "The Chapel.").
  assert found_in_10 >= 100
  assert first >= 59
  # "Cetology." is a word of its chapter; "The Whiteness of The Whale." is not enough.
  assert candidates["32"][0][0] == "md-032-28"
  assert candidates["etymology"][0][0] == "md-etymology-01"
  assert not any(docid.startswith("md-042-") for docid, _ in candidates["42"][:3])


def test_the_cache_is_read_and_keyed_by_every_input(tmp_path, monkeypatch, collection):
  queries, documents, _ = collection
  queries = dict(list(queries.items())[:10])
  cache = str(tmp_path / "cache")
  first = bm25_candidates.bm25_candidates(queries, documents, k=20, cache_dir=cache)
  files = sorted(os.listdir(cache))
  assert len(files) == 2 and files[1] == files[0] + ".json"
  with open(os.path.join(cache, files[1]), encoding="utf-8") as f:
    sidecar = json.load(f)
  assert sidecar["bm25"] == {"k1": 1.5, "b": 0.75, "method": "lucene"}
  assert sidecar["k"] == 20 and sidecar["bm25s_version"] == "0.3.16"
  assert files[0].startswith("bm25-k20-") and sidecar["key"].startswith(files[0][9:-4])

  calls = []
  real = bm25_candidates.retrieve
  monkeypatch.setattr(bm25_candidates, "retrieve",
                      lambda *args: calls.append(args) or real(*args))
  assert bm25_candidates.bm25_candidates(queries, documents, k=20, cache_dir=cache) == first
  assert calls == []                                  # read from the cache
  assert sorted(os.listdir(cache)) == files

  changed_document = dict(documents)
  changed_document["md-001-01"] += " Ahab."
  changed_query = dict(queries)
  changed_query["1"] = "Looming."
  for args in [(queries, documents, 21), (queries, changed_document, 20),
               (changed_query, documents, 20)]:
    bm25_candidates.bm25_candidates(*args, cache_dir=cache)
  assert len(calls) == 3                              # each change: computed
  assert len(os.listdir(cache)) == 2 + 3 * 2          # and cached under a new name
