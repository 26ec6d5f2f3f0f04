"""xlnet_tf.data.trec_files: each reader on small files of each real format, written here;
the errors name file, line and what was expected; write_run round trips through read_run and
through ir_measures' own reader."""

import os

import ir_measures
import pytest

from xlnet_tf.data import trec_files


def _write(tmp_path, name, text):
  path = tmp_path / name
  path.write_text(text, encoding="utf-8")
  return str(path)


# ---- queries ----------------------------------------------------------------------------------

def test_tsv_queries_in_file_order_blank_lines_skipped(tmp_path):
  path = _write(tmp_path, "q.tsv", "42\tThe Whiteness of  The Whale.\n\n7\tThe Chapel.\n")
  assert list(trec_files.read_queries(path).items()) == [
      ("42", "The Whiteness of The Whale."), ("7", "The Chapel.")]


TOPICS = """
<top>

<num> Number: 051
<title> Topic: Airbus Subsidies

<desc> Description:
Document will discuss government assistance to Airbus Industrie.

<narr> Narrative:
A relevant document will cite or discuss assistance to Airbus.
</top>

<top>
<num> Number: 302
<title>
Poliomyelitis and Post-Polio
<desc>
Is the disease of Poliomyelitis (polio) under control in the world?
</top>
"""


def test_trec_topics_give_the_titles(tmp_path):
  path = _write(tmp_path, "topics.txt", TOPICS)
  assert trec_files.read_queries(path) == {"51": "Airbus Subsidies",
                                           "302": "Poliomyelitis and Post-Polio"}


@pytest.mark.parametrize("text,line,expected", [
    ("1\tfirst\n2 no tab here\n", 2, "expected qid<TAB>query text, got '2 no tab here'"),
    ("1\tfirst\n2\t  \n", 2, "expected a non-empty query text for qid '2'"),
    ("1\tfirst\n\n1\tagain\n", 3, "expected each qid once, but qid '1' is also on line 1"),
    ("<top>\n<num> Number: 5\n</top>\n", 1, "expected a <title> in the topic '5'"),
    ("<top>\n<title> t\n</top>\n", 1, "expected a <num> in this topic"),
    ("<top>\n<num> Number: 5\n<title> t\n", 1, "expected </top> closing this <top>"),
    ("<top>\n<num> 5\n<title> t\n</top>\nstray\n", 5, "expected <top> (a topic file holds"),
    ("<top>\n<num> 5\n<title> t\n</top>\n<top>\n<num> 5\n<title> u\n</top>\n", 6,
     "expected each qid once, but qid '5' is also on line 2"),
])
def test_malformed_queries_name_file_and_line(tmp_path, text, line, expected):
  path = _write(tmp_path, "q.txt", text)
  with pytest.raises(ValueError) as error:
    trec_files.read_queries(path)
  assert str(error.value).startswith(f"{path}:{line}: ")
  assert expected in str(error.value)


# ---- documents --------------------------------------------------------------------------------

def test_jsonl_documents_with_and_without_title(tmp_path):
  path = _write(tmp_path, "d.jsonl",
                '{"docid": "md-001-01", "text": "Call me Ishmael."}\n\n'
                '{"docid": "d2", "title": "Loomings", "text": "Some years ago."}\n')
  assert list(trec_files.read_documents(path).items()) == [
      ("md-001-01", "Call me Ishmael."), ("d2", "Loomings\nSome years ago.")]


TREC_DOCS = """<DOC>
<DOCNO> FT911-3 </DOCNO>
<PROFILE>_AN-BEOA7AAIFT</PROFILE>
<HEADLINE>
FT  14 APR 91 / International Company News: Airbus &amp; partners
</HEADLINE>
<TEXT>
Airbus Industrie said
yesterday <B>it</B> would expand.
</TEXT>
</DOC>
<DOC>
<DOCNO>LA010189-0001</DOCNO>
<P>No text element here.</P>
</DOC>
"""


def test_trec_documents(tmp_path):
  path = _write(tmp_path, "docs.sgml", TREC_DOCS)
  assert trec_files.read_documents(path) == {
      "FT911-3": "FT 14 APR 91 / International Company News: Airbus & partners\n"
                 "Airbus Industrie said yesterday it would expand.",
      "LA010189-0001": "No text element here."}


@pytest.mark.parametrize("name,text,line,expected", [
    ("d.jsonl", '{"docid": "a", "text": "x"}\n{"docid": "b", "text": \n', 2,
     'expected a JSON object {"docid": string, "text": string[, "title": string]} '
     "(Expecting value at column 24)"),
    ("d.jsonl", '{"docid": "a", "text": "x"}\n{"docid": "b"}\n', 2, '"text" is missing'),
    ("d.jsonl", '{"docid": "a", "text": "x"}\n{"docid": 3, "text": "y"}\n', 2,
     '"docid" is int'),
    ("d.jsonl", '{"docid": "a b", "text": "x"}\n', 1,
     "expected a non-empty docid without white space"),
    ("d.jsonl", '{"docid": "a", "text": "x"}\n\n{"docid": "a", "text": "y"}\n', 3,
     "expected each docid once, but docid 'a' is also on line 1"),
    ("d.sgml", "<DOC>\n<DOCNO>a</DOCNO>\n</DOC>\n\n<DOC>\n<TEXT>x</TEXT>\n</DOC>\n", 5,
     "expected one <DOCNO> ... </DOCNO> in this <DOC>, found 0"),
    ("d.sgml", "<DOC>\n<DOCNO>a</DOCNO>\n</DOC>\noops\n", 4,
     "expected <DOC> ... </DOC> (nothing outside the documents), got 'oops'"),
    ("d.sgml", "<DOC>\n<DOCNO>a</DOCNO>\n</DOC>\n<DOC>\n<DOCNO>b</DOCNO>\n", 4,
     "expected </DOC> closing this <DOC>"),
    ("d.sgml", "<DOC><DOCNO>a</DOCNO></DOC>\n<DOC><DOCNO>a</DOCNO></DOC>\n", 2,
     "expected each docid once, but docid 'a' is also on line 1"),
    ("d.txt", "plain text\n", 1, "expected a JSONL document"),
])
def test_malformed_documents_name_file_and_line(tmp_path, name, text, line, expected):
  path = _write(tmp_path, name, text)
  with pytest.raises(ValueError) as error:
    trec_files.read_documents(path)
  assert str(error.value).startswith(f"{path}:{line}: ")
  assert expected in str(error.value)


# ---- qrels ------------------------------------------------------------------------------------

def test_qrels_with_negative_grades(tmp_path):
  path = _write(tmp_path, "qrels.txt",
                "51 0 clueweb09-en0000-00-00000 -2\n51 0 d2 3\n\n52 1 d2 0\n")
  assert trec_files.read_qrels(path) == {
      "51": {"clueweb09-en0000-00-00000": -2, "d2": 3}, "52": {"d2": 0}}


@pytest.mark.parametrize("text,line,expected", [
    ("51 0 d1 1\n51 0 d2\n", 2, "expected qid iteration docid relevance (4 fields"),
    ("51 0 d1 1\n51 0 d2 high\n", 2, "got '51 0 d2 high'"),
    ("51 0 d1 1\n51 0 d1 2\n", 2, "(51, d1) is also judged on line 1"),
])
def test_malformed_qrels(tmp_path, text, line, expected):
  path = _write(tmp_path, "qrels.txt", text)
  with pytest.raises(ValueError) as error:
    trec_files.read_qrels(path)
  assert str(error.value).startswith(f"{path}:{line}: ")
  assert expected in str(error.value)


def test_missing_judged_documents_are_listed_in_qrels_order():
  qrels = {"1": {"a": 1, "gone": 0, "b": 2}, "2": {"lost": 1}}
  assert trec_files.missing_judged_documents(qrels, ["a", "b", "c"]) == [
      ("1", "gone"), ("2", "lost")]


# ---- runs -------------------------------------------------------------------------------------

def test_read_run_sorts_by_score_then_docid_descending_as_trec_eval(tmp_path):
  """The rank column does not decide (trec_eval and gdeval ignore it): equal scores go by
  docid descending, as those tools read them, so a run read here is the one they score."""
  path = _write(tmp_path, "r.run",
                "1 Q0 low 3 0.5 t\n1 Q0 tieA 1 2.0 t\n1 Q0 tieB 2 2.0 t\n2 Q0 x 1 -1e3 t\n")
  assert trec_files.read_run(path) == {"1": [("tieB", 2.0), ("tieA", 2.0), ("low", 0.5)],
                                       "2": [("x", -1000.0)]}


@pytest.mark.parametrize("text,line,expected", [
    ("1 Q0 a 1 2.0 t\n1 Q0 b 2 1.0\n", 2, "expected qid Q0 docid rank score tag (6 fields"),
    ("1 Q0 a 1 2.0 t\n1 Q0 b 2 high t\n", 2, "got '1 Q0 b 2 high t'"),
    ("1 Q0 a 1 nan t\n", 1, "expected a finite score"),
    ("1 Q0 a 1 2.0 t\n1 Q0 a 2 1.0 t\n", 2, "(1, a) is also on line 1"),
])
def test_malformed_runs(tmp_path, text, line, expected):
  path = _write(tmp_path, "r.run", text)
  with pytest.raises(ValueError) as error:
    trec_files.read_run(path)
  assert str(error.value).startswith(f"{path}:{line}: ")
  assert expected in str(error.value)


def test_write_run_round_trips(tmp_path):
  path = str(tmp_path / "out.run")
  ranking = {"q-2": [("b", 0.1), ("a", 7.25), ("c", 0.1)], "10": [("z", 1 / 3)]}
  trec_files.write_run(path, ranking, tag="bm25")
  with open(path, encoding="utf-8") as f:
    # equal scores by docid descending, the order trec_eval and gdeval read them in
    assert f.read() == ("q-2 Q0 a 1 7.25 bm25\nq-2 Q0 c 2 0.1 bm25\nq-2 Q0 b 3 0.1 bm25\n"
                        "10 Q0 z 1 0.3333333333333333 bm25\n")
  assert trec_files.read_run(path) == {"q-2": [("a", 7.25), ("c", 0.1), ("b", 0.1)],
                                       "10": [("z", 1 / 3)]}
  read_by_ir_measures = [(r.query_id, r.doc_id, r.score)
                         for r in ir_measures.read_trec_run(path)]
  assert read_by_ir_measures == [("q-2", "a", 7.25), ("q-2", "c", 0.1), ("q-2", "b", 0.1),
                                 ("10", "z", 1 / 3)]
  assert [name for name in os.listdir(tmp_path)] == ["out.run"]   # no temporary left


def test_write_run_refuses_before_writing(tmp_path):
  path = str(tmp_path / "out.run")
  with pytest.raises(ValueError, match="docid 'a' ranked twice"):
    trec_files.write_run(path, {"1": [("a", 1.0), ("a", 2.0)]}, tag="t")
  with pytest.raises(ValueError, match="the score nan is not finite"):
    trec_files.write_run(path, {"1": [("a", float("nan"))]}, tag="t")
  with pytest.raises(ValueError, match="run tag must be non-empty without white space"):
    trec_files.write_run(path, {"1": [("a", 1.0)]}, tag="my run")
  assert os.listdir(tmp_path) == []


WEB_TRACK_TOPICS = """<webtrack2009>
<topic number="1" type="faceted">
  <query>obama family tree</query>
  <description>Find information on President Barack Obama's family
  history.</description>
  <subtopic number="1" type="nav">Find the photo essay &quot;Family Tree&quot;.</subtopic>
</topic>

<topic number="02" type="ambiguous">
  <query>french lick resort &amp; casino</query>
</topic>
</webtrack2009>
"""


def test_web_track_topics_give_the_queries(tmp_path):
  """The TREC Web Track's XML topics (the paper's ClueWeb09-B queries): the <query> of
  each <topic number="N">, entities unescaped, the number without leading zeros."""
  path = _write(tmp_path, "wt09.topics.xml", WEB_TRACK_TOPICS)
  assert trec_files.read_queries(path) == {"1": "obama family tree",
                                           "2": "french lick resort & casino"}
  broken = _write(tmp_path, "broken.xml", WEB_TRACK_TOPICS.replace(
      "  <query>french lick resort &amp; casino</query>\n", ""))
  with pytest.raises(ValueError, match=rf"^{broken}:9: expected a non-empty <query> in "
                                       r"topic '2'"):
    trec_files.read_queries(broken)
  unnumbered = _write(tmp_path, "unnumbered.xml", WEB_TRACK_TOPICS.replace(
      '<topic number="1" type="faceted">', '<topic type="faceted">'))
  with pytest.raises(ValueError, match=rf'^{unnumbered}:2: expected a number attribute'):
    trec_files.read_queries(unnumbered)


def test_a_byte_order_mark_a_header_and_padded_numbers(tmp_path):
  """What careless files hold: a UTF-8 BOM (dropped), a TSV header line (skipped), topic
  numbers written 001 in one file and 1 in another (the same query everywhere)."""
  queries = tmp_path / "q.tsv"
  queries.write_bytes("\ufeffqid\tquery\n001\tLoomings.\n2\tThe Carpet-Bag.\n".encode())
  assert trec_files.read_queries(str(queries)) == {"1": "Loomings.", "2": "The Carpet-Bag."}
  topics = tmp_path / "topics.txt"
  topics.write_bytes("\ufeff<top>\r\n<num> Number: 001\r\n<title> Loomings.\r\n</top>\r\n"
                     .encode())
  assert trec_files.read_queries(str(topics)) == {"1": "Loomings."}
  qrels = _write(tmp_path, "qrels", "001 0 md-001-01 1\n")
  assert trec_files.read_qrels(qrels) == {"1": {"md-001-01": 1}}
  run = _write(tmp_path, "run", "001 Q0 md-001-01 1 2.5 t\n")
  assert trec_files.read_run(run) == {"1": [("md-001-01", 2.5)]}


def test_bytes_that_are_not_utf8_are_named_by_line(tmp_path):
  path = tmp_path / "docs.jsonl"
  path.write_bytes(b'{"docid": "a", "text": "fine"}\n{"docid": "b", "text": "caf\xe9"}\n')
  with pytest.raises(ValueError, match=rf"^{path}:2: expected UTF-8 text, but byte 0xe9 at "
                                       r"byte offset 58 is not UTF-8"):
    trec_files.read_documents(str(path))


def test_an_unclosed_web_track_topic_is_named(tmp_path):
  path = _write(tmp_path, "wt.xml", WEB_TRACK_TOPICS.replace("</topic>\n\n<topic", "\n<topic"))
  with pytest.raises(ValueError, match=rf"^{path}:2: expected </topic> closing this <topic> "
                                       r"before the next one \(line 8\)"):
    trec_files.read_queries(path)
