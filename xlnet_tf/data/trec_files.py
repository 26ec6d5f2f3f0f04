"""The file formats of document ranking (TREC's and two plain ones): queries, documents,
relevance judgments (qrels) and runs, read into plain dicts and written back.

  >>> queries = read_queries("queries.tsv")          # {qid: text}, in file order
  >>> documents = read_documents("documents.jsonl")  # {docid: text}
  >>> qrels = read_qrels("qrels.txt")                # {qid: {docid: relevance}}
  >>> run = read_run("bm25.run")                     # {qid: [(docid, score), ...]} best first
  >>> write_run("reranked.run", run, tag="knrm")

Formats:
  queries    TSV `qid<TAB>text` (blank lines skipped; a first line `qid<TAB>query` or the
             like is a header), or TREC topics (`<top> <num> Number: 51 <title> text ...
             </top>`: the title is the query), or the Web Track's XML topics
             (`<topic number="51" ...> <query>text</query> ... </topic>`, 2009-2014: the
             <query> is the query). A file whose first non-blank
             text starts with `<top>` is a topic file, with `<webtrack`, `<topic` or `<?xml`
             a Web Track file.
  documents  JSONL, one `{"docid": ..., "text": ..., "title": ...}` a line ("title"
             optional: prepended to the text with a newline); or TREC SGML `<DOC><DOCNO> id
             </DOCNO> ... </DOC>`, the text being its <HEADLINE>/<HEAD>/<TITLE> and <TEXT>
             elements (everything inside <DOC> but <DOCNO> where it has no <TEXT>), tags
             removed, entities unescaped, white space collapsed. A file whose first
             non-blank character is "{" is JSONL, "<" TREC.
  qrels      `qid iteration docid relevance` (white-space separated; relevance an integer,
             negative allowed: ClueWeb's -2 is spam).
  runs       `qid Q0 docid rank score tag`.

Every reader checks the whole file before returning and raises ValueError naming the file,
the line and what was expected, with the offending text (shortened). Files are UTF-8 (a
byte-order mark is dropped). Identifiers (qid, docid, tag) may not hold white space: the
TREC formats split on it. A numeric qid loses its leading zeros in every reader (`qid_of`:
"051" -> "51"; TREC's topic files write 051 and their qrels 51), so queries, qrels and runs
agree. `write_run` writes under
a temporary name and renames (`paths.write_text`). Local paths and URLs
(`storage.open_file`).
"""

import html
import json
import math
import re
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from xlnet_tf import paths
from xlnet_tf.data import storage

Ranking = Dict[str, List[Tuple[str, float]]]

_SHOWN = 80  # characters of an offending line quoted in an error


def _shorten(text: str) -> str:
  text = text.rstrip("\r\n")
  return repr(text if len(text) <= _SHOWN else text[:_SHOWN] + "...")


def _error(path: str, line: int, expected: str, text: Optional[str] = None) -> ValueError:
  got = "" if text is None else f", got {_shorten(text)}"
  return ValueError(f"{path}:{line}: expected {expected}{got}")


def _read_lines(path: str) -> List[str]:
  """The file's lines, decoded as UTF-8 (a leading byte-order mark dropped); a byte that
  is not UTF-8 is an error naming its line."""
  with storage.open_file(path, "rb") as f:
    data = f.read()
  try:
    text = data.decode("utf-8")
  except UnicodeDecodeError as e:
    line = data.count(b"\n", 0, e.start) + 1
    raise _error(path, line, f"UTF-8 text, but byte {e.object[e.start]:#04x} at byte "
                 f"offset {e.start} is not UTF-8") from None
  return text.removeprefix("\ufeff").splitlines()


def qid_of(text: str) -> str:
  """A query id as every reader here gives it: a number without its leading zeros ("051"
  -> "51", as TREC's topic files and their qrels disagree), anything else unchanged."""
  return str(int(text)) if text.isdigit() else text


def _first_non_blank(lines: Sequence[str]) -> str:
  for line in lines:
    if line.strip():
      return line.strip()
  return ""


def _check_identifier(path: str, number: int, what: str, value: str, line: str) -> None:
  if not value or any(c.isspace() for c in value):
    raise _error(path, number, f"a non-empty {what} without white space", line)


# ---- queries ----------------------------------------------------------------------------------

def read_queries(path: str) -> Dict[str, str]:
  """{qid: query text} in file order, from TSV or TREC topics (see the module doc).

  Raises:
    ValueError: a malformed line or topic, an empty query text, or a qid seen twice (both
      lines named).
  """
  lines = _read_lines(path)
  first = _first_non_blank(lines).lower()
  if first.startswith("<top>"):
    entries = _topic_entries(path, lines)
  elif first.startswith(("<webtrack", "<topic", "<?xml")):
    entries = _web_track_entries(path, lines)
  else:
    entries = _tsv_entries(path, lines)
  return _by_id(path, entries, "qid")


def _by_id(path: str, entries: Iterable[Tuple[int, str, str]], what: str) -> Dict[str, str]:
  """{id: text} of (line, id, text) entries, in order; an id seen twice is an error naming
  both lines."""
  texts, first_line = {}, {}
  for number, key, text in entries:
    if key in texts:
      raise _error(path, number, f"each {what} once, but {what} {key!r} is also on line "
                   f"{first_line[key]}")
    texts[key] = text
    first_line[key] = number
  return texts


# First lines of a queries TSV that are a header, not a query.
_TSV_HEADERS = {(q, t) for q in ("qid", "query_id", "id", "topic")
                for t in ("query", "text", "query_text", "title")}


def _tsv_entries(path: str, lines: Sequence[str]) -> List[Tuple[int, str, str]]:
  entries = []
  for number, line in enumerate(lines, 1):
    if not line.strip():
      continue
    qid, tab, text = line.partition("\t")
    if not tab:
      raise _error(path, number, "qid<TAB>query text", line)
    qid, text = qid.strip(), " ".join(text.split())
    if not entries and (qid.lower(), text.lower()) in _TSV_HEADERS:
      continue                               # a header line, not a query
    _check_identifier(path, number, "qid", qid, line)
    qid = qid_of(qid)
    if not text:
      raise _error(path, number, f"a non-empty query text for qid {qid!r}", line)
    entries.append((number, qid, text))
  return entries


_TAG = re.compile(r"<\s*(/?)\s*([A-Za-z]+)\s*>")


def _topic_entries(path: str, lines: Sequence[str]) -> List[Tuple[int, str, str]]:
  """(line of <num>, qid, title) of each <top> ... </top> of a TREC topic file."""
  entries = []
  top_line = None       # the line of the open <top>, None outside one
  field, num, title = None, None, None   # the field being read; (line, text) of each
  for number, line in enumerate(lines, 1):
    position = 0
    for match in list(_TAG.finditer(line)) + [None]:
      chunk = line[position:match.start() if match else len(line)]
      position = match.end() if match else len(line)
      if chunk.strip():
        if top_line is None:
          raise _error(path, number, "<top> (a topic file holds only <top> ... </top>)",
                       line)
        if field == "num":
          num = (num[0], num[1] + " " + chunk)
        elif field == "title":
          title = (title[0], title[1] + " " + chunk)
      if match is None:
        break
      closing, name = match.group(1), match.group(2).lower()
      if name == "top" and not closing:
        if top_line is not None:
          raise _error(path, number, f"</top> closing the <top> of line {top_line} before "
                       f"the next <top>", line)
        top_line, field, num, title = number, None, None, None
      elif top_line is None:
        raise _error(path, number, "<top> (a topic file holds only <top> ... </top>)", line)
      elif name == "top":
        entries.append(_topic(path, top_line, num, title))
        top_line = None
      elif closing:
        field = None
      elif name in ("num", "title"):
        if (num if name == "num" else title) is not None:
          raise _error(path, number, f"one <{name}> in the topic of line {top_line}", line)
        field = name
        if name == "num":
          num = (number, "")
        else:
          title = (number, "")
      else:
        field = None   # <desc>, <narr>, ...: not read
  if top_line is not None:
    raise _error(path, top_line, "</top> closing this <top> before the end of the file")
  return entries


_WEB_TOPIC = re.compile(r"<topic\b([^>]*)>(.*?)</topic\s*>", re.S | re.I)
_WEB_NUMBER = re.compile(r"\bnumber\s*=\s*[\"']([^\"']*)[\"']", re.I)
_WEB_QUERY = re.compile(r"<query>(.*?)</query\s*>", re.S | re.I)


def _web_track_entries(path: str, lines: Sequence[str]) -> List[Tuple[int, str, str]]:
  """(line of <topic>, qid, query) of each <topic number="N"> of a Web Track file."""
  text = "\n".join(lines)
  line_of = lambda offset: text.count("\n", 0, offset) + 1
  entries = []
  for match in _WEB_TOPIC.finditer(text):
    number = line_of(match.start())
    attributes, body = match.group(1), match.group(2)
    found = _WEB_NUMBER.search(attributes)
    if found is None:
      raise _error(path, number, 'a number attribute: <topic number="N">',
                   "<topic" + attributes + ">")
    nested = re.search(r"<topic\b", body, re.I)
    if nested:
      raise _error(path, number, f"</topic> closing this <topic> before the next one (line "
                   f"{line_of(match.start(2) + nested.start())})")
    qid = found.group(1).strip()
    _check_identifier(path, number, "topic number", qid, attributes)
    qid = qid_of(qid)
    query = _WEB_QUERY.search(body)
    if query is None or not " ".join(html.unescape(query.group(1)).split()):
      raise _error(path, number, f"a non-empty <query> in topic {qid!r}")
    entries.append((number, qid, " ".join(html.unescape(query.group(1)).split())))
  if not entries:
    raise _error(path, 1, 'Web Track topics: <topic number="N"> <query>text</query> '
                 '</topic>', _first_non_blank(lines))
  return entries


def _topic(path, top_line, num, title) -> Tuple[int, str, str]:
  if num is None:
    raise _error(path, top_line, "a <num> in this topic")
  number, text = num
  qid = re.sub(r"^\s*number\s*:", "", text, flags=re.I).strip()
  _check_identifier(path, number, "topic number after <num>", qid, text)
  qid = qid_of(qid)
  if title is None:
    raise _error(path, top_line, f"a <title> in the topic {qid!r}")
  query = " ".join(re.sub(r"^\s*topic\s*:", "", title[1], flags=re.I).split())
  if not query:
    raise _error(path, title[0], f"a non-empty <title> for topic {qid!r}", title[1])
  return number, qid, query


# ---- documents --------------------------------------------------------------------------------

def read_documents(path: str) -> Dict[str, str]:
  """{docid: text} in file order, from JSONL or TREC SGML (see the module doc).

  Raises:
    ValueError: a malformed line or document, or a docid seen twice (both lines named).
  """
  lines = _read_lines(path)
  start = _first_non_blank(lines)
  if start.startswith("{"):
    entries = _jsonl_documents(path, lines)
  elif start.startswith("<"):
    entries = _trec_documents(path, lines)
  elif not start:
    return {}
  else:
    number = next(i for i, line in enumerate(lines, 1) if line.strip())
    raise _error(path, number, 'a JSONL document ({"docid": ..., "text": ...}) or a TREC '
                 "<DOC>", lines[number - 1])
  return _by_id(path, entries, "docid")


def _jsonl_documents(path: str, lines: Sequence[str]) -> List[Tuple[int, str, str]]:
  entries = []
  expected = 'a JSON object {"docid": string, "text": string[, "title": string]}'
  for number, line in enumerate(lines, 1):
    if not line.strip():
      continue
    try:
      row = json.loads(line)
    except json.JSONDecodeError as e:
      raise _error(path, number, f"{expected} ({e.msg} at column {e.colno})", line) \
          from None
    if not isinstance(row, dict):
      raise _error(path, number, expected, line)
    for key in ("docid", "text", "title"):
      if (key in row or key != "title") and not isinstance(row.get(key), str):
        raise _error(path, number, f'{expected}: "{key}" is '
                     f'{"missing" if key not in row else type(row[key]).__name__}', line)
    docid = row["docid"]
    _check_identifier(path, number, "docid", docid, line)
    text = row["text"] if not row.get("title") else row["title"] + "\n" + row["text"]
    entries.append((number, docid, text))
  return entries


_DOC = re.compile(r"<DOC>(.*?)</DOC>", re.S | re.I)
_DOCNO = re.compile(r"<DOCNO>(.*?)</DOCNO>", re.S | re.I)
_TITLE_ELEMENTS = re.compile(r"<(HEADLINE|HEAD|TITLE)>(.*?)</\1>", re.S | re.I)
_TEXT_ELEMENTS = re.compile(r"<TEXT>(.*?)</TEXT>", re.S | re.I)
_ANY_TAG = re.compile(r"<[^<>]*>")


def _clean(sgml: str) -> str:
  return " ".join(html.unescape(_ANY_TAG.sub(" ", sgml)).split())


def _trec_documents(path: str, lines: Sequence[str]) -> List[Tuple[int, str, str]]:
  text = "\n".join(lines)
  starts = [0]   # the offset of each line's start: offset -> line number
  for line in lines:
    starts.append(starts[-1] + len(line) + 1)

  def line_of(offset):
    low, high = 0, len(starts) - 1
    while low < high - 1:
      middle = (low + high) // 2
      low, high = (middle, high) if starts[middle] <= offset else (low, middle)
    return low + 1

  entries, position = [], 0
  for match in _DOC.finditer(text):
    _check_between(path, text, position, match.start(), line_of)
    position = match.end()
    number = line_of(match.start())
    body = match.group(1)
    docnos = _DOCNO.findall(body)
    if len(docnos) != 1:
      raise _error(path, number, f"one <DOCNO> ... </DOCNO> in this <DOC>, found "
                   f"{len(docnos)}", lines[number - 1])
    docid = docnos[0].strip()
    _check_identifier(path, number, "docid in <DOCNO>", docid, docnos[0])
    parts = [_clean(m.group(2)) for m in _TITLE_ELEMENTS.finditer(body)]
    texts = _TEXT_ELEMENTS.findall(body)
    if texts:
      parts += [_clean(t) for t in texts]
    else:
      parts = [_clean(_DOCNO.sub(" ", body))]
    entries.append((number, docid, "\n".join(p for p in parts if p)))
  _check_between(path, text, position, len(text), line_of)
  return entries


def _check_between(path, text, start, end, line_of) -> None:
  """Nothing but white space between two <DOC> elements (an unclosed <DOC> included)."""
  between = text[start:end]
  if between.strip():
    offset = start + len(between) - len(between.lstrip())
    line = text[offset:].split("\n", 1)[0]
    what = ("</DOC> closing this <DOC>" if re.match(r"<DOC>", line, re.I) else
            "<DOC> ... </DOC> (nothing outside the documents)")
    raise _error(path, line_of(offset), what, line)


# ---- qrels ------------------------------------------------------------------------------------

def read_qrels(path: str) -> Dict[str, Dict[str, int]]:
  """{qid: {docid: relevance}} from TREC qrels `qid iteration docid relevance`.

  Raises:
    ValueError: a line without 4 fields or with a non-integer relevance, or a (qid,
      docid) judged twice (both lines named).
  """
  qrels, first_line = {}, {}
  for number, line in enumerate(_read_lines(path), 1):
    fields = line.split()
    if not fields:
      continue
    if len(fields) != 4 or not re.fullmatch(r"[+-]?\d+", fields[3]):
      raise _error(path, number, "qid iteration docid relevance (4 fields, relevance an "
                   "integer)", line)
    qid, _, docid, relevance = fields
    qid = qid_of(qid)
    if (qid, docid) in first_line:
      raise _error(path, number, f"one judgment of each (qid, docid), but ({qid}, {docid}) "
                   f"is also judged on line {first_line[qid, docid]}", line)
    first_line[qid, docid] = number
    qrels.setdefault(qid, {})[docid] = int(relevance)
  return qrels


def missing_judged_documents(qrels: Dict[str, Dict[str, int]],
                             docids: Iterable[str]) -> List[Tuple[str, str]]:
  """The judged (qid, docid) pairs whose document is not among `docids` (the collection),
  in the qrels' order: the judgments no ranking of this collection can meet."""
  present = set(docids)
  return [(qid, docid) for qid, judged in qrels.items() for docid in judged
          if docid not in present]


# ---- runs -------------------------------------------------------------------------------------

def read_run(path: str) -> Ranking:
  """{qid: [(docid, score), ...]} from a TREC run `qid Q0 docid rank score tag`, each
  query's documents by score, highest first, equal scores by docid descending (`ranked`:
  the order trec_eval and gdeval read a run in; the file's rank column is checked, not
  used, as those tools do).

  Raises:
    ValueError: a line without 6 fields, a rank that is not an integer, a score that is
      not a finite number, or a (qid, docid) twice (both lines named).
  """
  rows, first_line = {}, {}
  for number, line in enumerate(_read_lines(path), 1):
    fields = line.split()
    if not fields:
      continue
    expected = "qid Q0 docid rank score tag (6 fields, rank an integer, score a number)"
    if len(fields) != 6 or not re.fullmatch(r"[+-]?\d+", fields[3]):
      raise _error(path, number, expected, line)
    qid, _, docid, _, score, _ = fields
    qid = qid_of(qid)
    try:
      value = float(score)
    except ValueError:
      raise _error(path, number, expected, line) from None
    if not math.isfinite(value):
      raise _error(path, number, "a finite score", line)
    if (qid, docid) in first_line:
      raise _error(path, number, f"each (qid, docid) once, but ({qid}, {docid}) is also on "
                   f"line {first_line[qid, docid]}", line)
    first_line[qid, docid] = number
    rows.setdefault(qid, []).append((docid, value))
  return {qid: ranked(entries) for qid, entries in rows.items()}


def ranked(documents: Iterable[Tuple[str, float]]) -> List[Tuple[str, float]]:
  """(docid, score) pairs by score, highest first, equal scores by docid DESCENDING: the
  order trec_eval and gdeval (and so ir-measures) read a run in, whatever its ranks say,
  and the order `write_run` gives ranks in; so a run evaluated here and its file read by
  those tools rank alike."""
  by_docid = sorted(((docid, float(score)) for docid, score in documents),
                    key=lambda pair: pair[0], reverse=True)
  return sorted(by_docid, key=lambda pair: -pair[1])                  # stable


def write_run(path: str, ranking: Dict[str, Sequence[Tuple[str, float]]], tag: str) -> None:
  """Writes `ranking` ({qid: [(docid, score), ...]}) as a TREC run: the queries in the
  given order, each one's documents ranked 1, 2, ... by score (`ranked`: equal scores by
  docid), scores written exactly (`repr`), under a temporary name then renamed.

  Raises:
    ValueError: a qid, docid or tag that is empty or holds white space, a score that is
      not finite, or a docid twice in a query; nothing is written then.
  """
  if not tag or any(c.isspace() for c in tag):
    raise ValueError(f"{path}: the run tag must be non-empty without white space, got "
                     f"{tag!r}")
  lines = []
  for qid, documents in ranking.items():
    if not qid or any(c.isspace() for c in str(qid)):
      raise ValueError(f"{path}: qid {qid!r}: expected a non-empty qid without white space")
    seen = set()
    for rank, (docid, score) in enumerate(ranked(documents), 1):
      if not docid or any(c.isspace() for c in docid):
        raise ValueError(f"{path}: query {qid}: expected a non-empty docid without white "
                         f"space, got {docid!r}")
      if docid in seen:
        raise ValueError(f"{path}: query {qid}: docid {docid!r} ranked twice")
      seen.add(docid)
      if not math.isfinite(score):
        raise ValueError(f"{path}: query {qid}, docid {docid}: the score {score} is not "
                         f"finite")
      lines.append(f"{qid} Q0 {docid} {rank} {score!r} {tag}\n")

  _write_lines(path, lines)


def _write_lines(path: str, lines: Sequence[str]) -> None:
  """The lines to `path`, whole (`paths.write_text`)."""
  paths.write_text(path, "".join(lines))


# ---- writers of the collection's files (the bundled collection's generator) -------------------

def write_queries(path: str, queries: Dict[str, str]) -> None:
  """`queries` as TSV `qid<TAB>text` (the text's white space collapsed), in order."""
  lines = []
  for qid, text in queries.items():
    text = " ".join(text.split())
    if not qid or any(c.isspace() for c in qid) or not text:
      raise ValueError(f"{path}: query {qid!r}: expected a qid without white space and a "
                       f"non-empty text, got {text!r}")
    lines.append(f"{qid}\t{text}\n")
  _write_lines(path, lines)


def write_documents(path: str, documents: Dict[str, str]) -> None:
  """`documents` as JSONL `{"docid": ..., "text": ...}` a line, in order (UTF-8, not
  ASCII-escaped)."""
  lines = []
  for docid, text in documents.items():
    if not docid or any(c.isspace() for c in docid):
      raise ValueError(f"{path}: expected a docid without white space, got {docid!r}")
    lines.append(json.dumps({"docid": docid, "text": text}, ensure_ascii=False) + "\n")
  _write_lines(path, lines)


def write_qrels(path: str, qrels: Dict[str, Dict[str, int]]) -> None:
  """`qrels` as TREC qrels `qid 0 docid relevance`, in order."""
  lines = []
  for qid, judged in qrels.items():
    for docid, relevance in judged.items():
      if any(not x or any(c.isspace() for c in x) for x in (qid, docid)):
        raise ValueError(f"{path}: expected a qid and docid without white space, got "
                         f"{qid!r} {docid!r}")
      lines.append(f"{qid} 0 {docid} {int(relevance)}\n")
  _write_lines(path, lines)
