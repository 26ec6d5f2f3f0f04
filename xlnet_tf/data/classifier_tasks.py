"""Readers of sequence classification and regression data sets -> `InputExample`s.

  >>> task = get_task("mrpc")                 # or TASKS["mrpc"]
  >>> train = task.read("glue_data/MRPC", "train")
  >>> train[0]
  InputExample(guid='train-2', text_a='Amrozi accused ...', text_b='Referring to ...', label='1')
  >>> task.labels, task.metrics               # ('0', '1'), ('f1', 'accuracy')
  >>> task.is_pair                            # True: its examples have text_b

Tasks (`TASKS`, keyed by lower-case name; `get_task` also accepts "SST2", "sts_b", ...):

  task           files in data_dir                             labels               metrics
  mnli           train.tsv, dev_matched.tsv,                    contradiction,       accuracy
                 dev_mismatched.tsv, test_matched.tsv,          entailment, neutral
                 test_mismatched.tsv
  qnli, rte      train.tsv, dev.tsv, test.tsv                   entailment,          accuracy
                                                                not_entailment
  qqp, mrpc      train.tsv, dev.tsv, test.tsv                   0, 1                 f1, accuracy
  sst-2, wnli    train.tsv, dev.tsv, test.tsv                   0, 1                 accuracy
  cola           train.tsv, dev.tsv (no header), test.tsv       0, 1                 matthews_corr
  sts-b          train.tsv, dev.tsv, test.tsv                   regression (0..5)    pearson,
                                                                                     spearman
  imdb           aclImdb {train,test}/{pos,neg}/*.txt, or       neg, pos             accuracy
                 {train,dev,test}.csv (text,label)
  movie_reviews  default: the bundled data_prep/sample_data/    negative, positive   accuracy
                 sentiment/
  generic        {train,dev,test}.{tsv,csv,jsonl}, columns      sorted train labels  accuracy
                 chosen by options

Splits are "train", "dev" and "test" (MNLI also "dev_mismatched" and "test_mismatched";
its "dev" and "test" are the matched sets). GLUE test files have no labels: their examples
have `label=None`, and `guid` is "<split>-<the file's index column>" so predictions can be
written in submission order (see `glue_index` and
`xlnet_tf.evaluation.classifier_metrics.write_glue_predictions`); for other rows the
guid is "<split>-<1-based line number>" (or the row's id where the data has one).

GLUE files are read exactly as distributed by the GLUE benchmark: tab-separated, UTF-8
(a leading byte-order mark is ignored), quoting disabled (`csv.QUOTE_NONE`: quote
characters are part of the text), columns found by their header name (CoLA's train and
dev files have no header: source, label, original label, sentence).

Per-task options (`task.read(data_dir, split, **options)`; `task.configure(...)` binds them):
  GLUE tasks: `skip_malformed` (default False): skip, with a warning, rows whose number of
    columns differs from the header (some QQP releases have a few) instead of failing.
  imdb: none. The directory layout wins when both it and CSV files exist; "dev" reads
    `dev/` (or dev.csv) when present, else the test set (aclImdb has no dev set; the
    released XLNet IMDB results are on the test set). In CSV files the label may be
    neg/pos, negative/positive or 0/1.
  movie_reviews: none (data_dir defaults to the bundled folder).
  generic: `text_a_column` (default "text"; a name, or a 0-based index for files without a
    header), `text_b_column` (default None: single sentences), `label_column` (default
    "label"), `header` (default True; CSV/TSV only), `labels` (the label set, in id order;
    default: the sorted distinct labels of the train split, numerically when they are all
    integers), `is_regression` (default False), `metrics` (default ("accuracy",), or
    ("pearson", "spearman") for regression), `filenames` (split -> file name or path,
    overriding "{split}.{tsv,csv,jsonl}"). TSV is read like GLUE (no quoting), CSV with
    standard CSV quoting, JSONL one JSON object per line. A test file without the label
    column gives unlabeled examples. Yelp/Amazon-style CSV (label,text; labels 1..N; no
    header): `header=False, label_column=0, text_a_column=1`.

Errors (ValueError unless said otherwise) name the file and the 1-based line: a row with
the wrong number of columns or a missing field, an unparseable regression value, a label
outside the task's label set (with the set), bytes that are not UTF-8 (with their position
in the line); a missing file is a FileNotFoundError naming the path and what the task
expects there.
"""

import csv
import dataclasses
import glob
import hashlib
import io
import json
import os
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from absl import logging

from xlnet_tf.data import sample_data

Label = Union[str, float, None]
Column = Union[str, int]

SPLITS = ("train", "dev", "test")

MOVIE_REVIEWS_DIR = sample_data.path("sentiment")
MOVIE_REVIEWS_FILE = "movieReviewSnippets_GroundTruth.txt"


@dataclasses.dataclass(frozen=True)
class InputExample:
  """One example of a classification or regression task.

  guid: unique within a split, "<split>-<id>".
  text_a: the first (or only) text, raw (normalisation happens when encoding).
  text_b: the second text of sentence-pair tasks, else None.
  label: the label string (classification), a float (regression), or None (unlabeled).
  """
  guid: str
  text_a: str
  text_b: Optional[str] = None
  label: Label = None


@dataclasses.dataclass(frozen=True)
class TaskSpec:
  """A task: its labels, metrics and reader.

  name: the key in `TASKS`.
  labels: label strings in id order (label id = index); None for regression, and for the
    "generic" task until `configure` fixes them.
  is_regression: one float target per example instead of a class.
  is_pair: the examples are sentence pairs (text_b); for "generic", once `configure`
    binds a text_b_column. `is_pair_task` asks this by name (e.g. serving's default).
  metrics: names of `xlnet_tf.evaluation.classifier_metrics` metrics, the first is the
    task's main metric.
  reader: `reader(spec, data_dir, split, **options) -> list[InputExample]`.
  files: `files(spec, data_dir, split, **options) -> list[str]`: what a split reads.
  splits: the splits the reader knows.
  options: the option names `read` accepts.
  default_data_dir: used when `data_dir` is None.
  bound_options: options fixed by `configure`, used by every `read` (call options win).
  """
  name: str
  labels: Optional[Tuple[str, ...]]
  is_regression: bool
  metrics: Tuple[str, ...]
  reader: Callable[..., List[InputExample]] = dataclasses.field(repr=False)
  files: Callable[..., List[str]] = dataclasses.field(repr=False)
  splits: Tuple[str, ...] = SPLITS
  options: Tuple[str, ...] = ()
  default_data_dir: Optional[str] = None
  bound_options: Mapping[str, Any] = dataclasses.field(default_factory=dict, hash=False)
  is_pair: bool = False

  @property
  def num_labels(self) -> int:
    """Output size of the task head: 1 for regression, else the number of labels."""
    if self.is_regression:
      return 1
    if self.labels is None:
      raise ValueError(f"task {self.name}: the label set is not known yet; call "
                       f"configure(data_dir, ...) first")
    return len(self.labels)

  def read(self, data_dir: Optional[str], split: str, **options) -> List[InputExample]:
    """The examples of `split` under `data_dir` (None: the task's default directory)."""
    data_dir, options = self._check(data_dir, split, options)
    return self.reader(self, data_dir, split, **options)

  def input_files(self, data_dir: Optional[str], split: str, **options) -> List[str]:
    """The files (or directories) `read` reads for `split`, e.g. to key a feature cache."""
    data_dir, options = self._check(data_dir, split, options)
    return self.files(self, data_dir, split, **options)

  def configure(self, data_dir: Optional[str] = None, **options) -> "TaskSpec":
    """This task with `options` bound; for "generic", also its labels and metrics fixed.

    For the generic task without a `labels` option the label set is read from the train
    split of `data_dir` (the sorted distinct labels).
    """
    options = {**self.bound_options, **options}
    self._check_options(options)
    spec = dataclasses.replace(self, bound_options=options)
    if self.name == "generic":
      spec = _configure_generic(spec, data_dir, options)
    return spec

  def _check_options(self, options: Mapping[str, Any]) -> None:
    unknown = sorted(set(options) - set(self.options))
    if unknown:
      raise ValueError(f"task {self.name}: unknown option(s) {unknown}; it accepts "
                       f"{list(self.options) or 'no options'}")

  def _check(self, data_dir, split, options):
    options = {**self.bound_options, **options}
    self._check_options(options)
    if split not in self.splits:
      raise ValueError(f"task {self.name}: unknown split {split!r}; expected one of "
                       f"{list(self.splits)}")
    if data_dir is None:
      data_dir = self.default_data_dir
    if data_dir is None:
      raise ValueError(f"task {self.name}: no data_dir given (this task has no default)")
    return data_dir, options


def _normalized_name(name: str) -> str:
  return name.lower().replace("-", "").replace("_", "")


def get_task(name: str) -> TaskSpec:
  """The task called `name`, ignoring case, "-" and "_" ("SST2" is sst-2)."""
  for key, spec in TASKS.items():
    if _normalized_name(key) == _normalized_name(name):
      return spec
  raise ValueError(f"unknown task {name!r}; expected one of {sorted(TASKS)}")


def is_pair_task(name: str) -> bool:
  """Whether the registered task `name` (as `get_task` reads it) has sentence pairs; False
  for a name the registry does not know (e.g. a converted model's own task name)."""
  try:
    return get_task(name).is_pair
  except ValueError:
    return False


def glue_index(guid: str) -> str:
  """The GLUE index of an example ("test-17" -> "17"): its guid after the split name."""
  return guid.rsplit("-", 1)[1]


# ---- reading delimited files -------------------------------------------------------------------

def _missing(path: str, what: str) -> FileNotFoundError:
  return FileNotFoundError(f"{path}: no such file; {what}")


def utf8_error(path: str) -> ValueError:
  """The error for a text file that is not UTF-8: its first undecodable line, named.

  Python's decoder reports a position inside its read buffer ("can't decode byte 0xe9 in
  position 2025"); this reads the file again line by line (lines end at \\n, \\r or \\r\\n,
  as for the readers) to give the file, the 1-based line and the byte within the line.
  """
  with open(path, "rb") as raw:
    lines = io.TextIOWrapper(raw, encoding="latin-1", newline="")  # every byte decodes
    for number, line in enumerate(lines, start=1):
      data = line.encode("latin-1")
      try:
        data.decode("utf-8")
      except UnicodeDecodeError as e:
        found = " ".join(f"0x{b:02x}" for b in data[e.start:e.end])
        return ValueError(
            f"{path}:{number}: not valid UTF-8: byte {found} at byte {e.start + 1} of the line "
            f"({e.reason}); the task files must be UTF-8 text (re-encode the file, e.g. "
            f"iconv -f latin1 -t utf-8, if it is Latin-1)")
  return ValueError(f"{path}: not valid UTF-8; the task files must be UTF-8 text")


def _rows(path: str, delimiter: str, quoting: int) -> Iterator[Tuple[int, List[str]]]:
  """(1-based line number where the row starts, fields) for each non-blank row."""
  with open(path, encoding="utf-8-sig", newline="") as f:
    reader = csv.reader(f, delimiter=delimiter, quoting=quoting, strict=True)
    line = 1
    while True:
      try:
        row = next(reader)
      except StopIteration:
        return
      except UnicodeDecodeError:
        raise utf8_error(path) from None
      except csv.Error as e:
        raise ValueError(f"{path}:{line}: not valid {'CSV' if delimiter == ',' else 'TSV'} "
                         f"({e})") from None
      if row and any(field for field in row):
        yield line, row
      line = reader.line_num + 1


def _column_index(path: str, header: Optional[List[str]], column: Column, role: str) -> int:
  """The 0-based index of `column` (a header name or an index) in rows of `path`."""
  if isinstance(column, int) and not isinstance(column, bool):
    if header is not None and not 0 <= column < len(header):
      raise ValueError(f"{path}:1: {role} column {column} is out of range; the header has "
                       f"{len(header)} columns: {header}")
    return column
  if header is None:
    raise ValueError(f"{path}: {role} column {column!r} is a name, but the file has no "
                     f"header; give a 0-based column index")
  if column not in header:
    raise ValueError(f"{path}:1: no {role} column {column!r} in the header {header}")
  return header.index(column)


def _parse_label(path: str, line: int, value: Any, labels: Optional[Sequence[str]],
                 is_regression: bool) -> Label:
  """`value` as a checked label: a float (regression) or one of `labels`."""
  if is_regression:
    try:
      number = float(value)
    except (TypeError, ValueError):
      number = None
    if number is None or number != number or number in (float("inf"), float("-inf")):
      raise ValueError(f"{path}:{line}: regression target {value!r} is not a finite number")
    return number
  label = _label_string(value)
  if labels is not None and label not in labels:
    raise ValueError(f"{path}:{line}: label {label!r} is not one of the task's labels "
                     f"{list(labels)}")
  return label


def _label_string(value: Any) -> str:
  """A JSON/CSV label as a label string (JSON 1 and "1" are the same label)."""
  if isinstance(value, bool):
    return str(value).lower()
  if isinstance(value, float) and value.is_integer():
    return str(int(value))
  return str(value)


# ---- GLUE ------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class _Table:
  """Where one split's fields are in a GLUE TSV file.

  Columns are header names, or 0-based indices when `header` is False (then every row must
  have `num_columns` fields). `label` None: the split is unlabeled. `index` None: the guid
  uses the line number.
  """
  filename: str
  text_a: Column
  text_b: Optional[Column] = None
  label: Optional[Column] = None
  index: Optional[Column] = None
  header: bool = True
  num_columns: Optional[int] = None


def _glue_tables(train: _Table, test: _Table, dev_file: str = "dev.tsv",
                 **extra: _Table) -> Dict[str, _Table]:
  return {"train": train, "dev": dataclasses.replace(train, filename=dev_file),
          "test": test, **extra}


def _pair(a: str, b: str, label: str, index: str) -> Dict[str, _Table]:
  return _glue_tables(_Table("train.tsv", a, b, label, index),
                      _Table("test.tsv", a, b, None, index))


_MNLI_TRAIN = _Table("train.tsv", "sentence1", "sentence2", "gold_label", "index")
_MNLI_TEST = _Table("test_matched.tsv", "sentence1", "sentence2", None, "index")

_GLUE_TABLES = {
    "mnli": _glue_tables(
        _MNLI_TRAIN, _MNLI_TEST, dev_file="dev_matched.tsv",
        dev_mismatched=dataclasses.replace(_MNLI_TRAIN, filename="dev_mismatched.tsv"),
        test_mismatched=dataclasses.replace(_MNLI_TEST, filename="test_mismatched.tsv")),
    "qnli": _pair("question", "sentence", "label", "index"),
    "qqp": _pair("question1", "question2", "is_duplicate", "id"),
    "rte": _pair("sentence1", "sentence2", "label", "index"),
    "wnli": _pair("sentence1", "sentence2", "label", "index"),
    "sts-b": _pair("sentence1", "sentence2", "score", "index"),
    "mrpc": _glue_tables(_Table("train.tsv", "#1 String", "#2 String", "Quality"),
                         _Table("test.tsv", "#1 String", "#2 String", None, "index")),
    "sst-2": _glue_tables(_Table("train.tsv", "sentence", None, "label"),
                          _Table("test.tsv", "sentence", None, None, "index")),
    # CoLA train/dev: source, label, the original author's mark, sentence; no header.
    "cola": _glue_tables(_Table("train.tsv", 3, None, 1, header=False, num_columns=4),
                         _Table("test.tsv", "sentence", None, None, "index")),
}


def _glue_files(spec: TaskSpec, data_dir: str, split: str, **unused) -> List[str]:
  return [os.path.join(data_dir, _GLUE_TABLES[spec.name][split].filename)]


def _read_glue(spec: TaskSpec, data_dir: str, split: str,
               skip_malformed: bool = False) -> List[InputExample]:
  table = _GLUE_TABLES[spec.name][split]
  path = os.path.join(data_dir, table.filename)
  if not os.path.isfile(path):
    expected = ", ".join(t.filename for t in _GLUE_TABLES[spec.name].values())
    raise _missing(path, f"the {spec.name} task reads its {split} split from "
                   f"{table.filename}; data_dir should be the GLUE {spec.name.upper()} "
                   f"directory ({expected})")
  return _read_table(path, table, split, spec.labels, spec.is_regression, skip_malformed,
                     delimiter="\t", quoting=csv.QUOTE_NONE)


def _read_table(path: str, table: _Table, split: str, labels: Optional[Sequence[str]],
                is_regression: bool, skip_malformed: bool, delimiter: str,
                quoting: int) -> List[InputExample]:
  """Examples from a delimited file laid out as `table` (a label column missing from the
  header of an unlabeled-looking test file means no labels)."""
  rows = _rows(path, delimiter, quoting)
  header = None
  if table.header:
    first = next(rows, None)
    if first is None:
      raise ValueError(f"{path}: empty file; expected a header line")
    header = first[1]
  if header is not None:
    width = len(header)
    described = f"the {width} columns of the header on line 1"
  else:
    width = table.num_columns
    described = f"{width} columns" if width else None

  columns = {role: None if column is None else _column_index(path, header, column, role)
             for role, column in (("text_a", table.text_a), ("text_b", table.text_b),
                                  ("label", table.label), ("index", table.index))}
  needed = max(i for i in columns.values() if i is not None) + 1
  examples, skipped = [], 0
  for line, row in rows:
    if (width and len(row) != width) or len(row) < needed:
      if skip_malformed:
        skipped += 1
        continue
      raise ValueError(f"{path}:{line}: {len(row)} column(s), expected "
                       f"{described or f'at least {needed}'}")
    index = row[columns["index"]] if columns["index"] is not None else str(line)
    label = None
    if columns["label"] is not None:
      label = _parse_label(path, line, row[columns["label"]], labels, is_regression)
    text_b = row[columns["text_b"]] if columns["text_b"] is not None else None
    examples.append(InputExample(f"{split}-{index}", row[columns["text_a"]], text_b, label))
  if skipped:
    logging.warning("%s: skipped %d malformed row(s) (skip_malformed)", path, skipped)
  return examples


# ---- IMDB ------------------------------------------------------------------------------------

_IMDB_LABELS = ("neg", "pos")
_IMDB_ALIASES = {"neg": "neg", "negative": "neg", "0": "neg",
                 "pos": "pos", "positive": "pos", "1": "pos"}
_IMDB_EXPECTED = ("the imdb task expects the aclImdb layout DATA_DIR/{train,test}/{pos,neg}/"
                  "*.txt, or DATA_DIR/{train,dev,test}.csv with text,label columns")


def _imdb_source(data_dir: str, split: str) -> Tuple[str, str]:
  """("dir", DATA_DIR/<split>) or ("csv", DATA_DIR/<split>.csv) for `split`."""
  candidates = [split] if split != "dev" else ["dev", "test"]
  for name in candidates:
    directory = os.path.join(data_dir, name)
    if all(os.path.isdir(os.path.join(directory, label)) for label in _IMDB_LABELS):
      return "dir", directory
  for name in candidates:
    path = os.path.join(data_dir, f"{name}.csv")
    if os.path.isfile(path):
      return "csv", path
  raise _missing(os.path.join(data_dir, split), f"{_IMDB_EXPECTED} (split {split!r})")


def _imdb_files(spec: TaskSpec, data_dir: str, split: str) -> List[str]:
  kind, path = _imdb_source(data_dir, split)
  return [os.path.join(path, label) for label in _IMDB_LABELS] if kind == "dir" else [path]


def _read_imdb(spec: TaskSpec, data_dir: str, split: str) -> List[InputExample]:
  kind, path = _imdb_source(data_dir, split)
  if kind == "csv":
    examples = _read_table(path, _Table(path, "text", None, "label"), split, None, False,
                           False, delimiter=",", quoting=csv.QUOTE_MINIMAL)
    converted = []
    for example in examples:
      label = _IMDB_ALIASES.get(example.label.strip().lower())
      if label is None:
        line = example.guid.rsplit("-", 1)[1]
        raise ValueError(f"{path}:{line}: label {example.label!r} is not one of the task's "
                         f"labels {list(_IMDB_LABELS)} (or negative/positive, 0/1)")
      converted.append(dataclasses.replace(example, text_a=_clean_imdb(example.text_a),
                                           label=label))
    return converted
  examples = []
  for label in _IMDB_LABELS:
    for file in sorted(glob.glob(os.path.join(path, label, "*.txt"))):
      try:
        with open(file, encoding="utf-8") as f:
          text = _clean_imdb(f.read())
      except UnicodeDecodeError:
        raise utf8_error(file) from None
      name = os.path.splitext(os.path.basename(file))[0]
      examples.append(InputExample(f"{split}-{label}_{name}", text, None, label))
  if not examples:
    raise _missing(os.path.join(path, "{neg,pos}", "*.txt"),
                   f"{_IMDB_EXPECTED}; the directories are empty")
  return examples


def _clean_imdb(text: str) -> str:
  """IMDB reviews mark line breaks with HTML "<br />" tags: make them spaces."""
  return text.replace("<br />", " ").replace("<br/>", " ").replace("<br>", " ").strip()


# ---- movie_reviews (bundled) -----------------------------------------------------------------

MOVIE_REVIEWS_SPLIT_PERCENT = (("train", 80), ("dev", 10), ("test", 10))


def movie_reviews_split(review_id: str) -> str:
  """The split of a snippet: a stable hash of its id (80% train, 10% dev, 10% test)."""
  bucket = int.from_bytes(
      hashlib.sha256(f"movie_reviews:{review_id}".encode()).digest()[:8], "big") % 100
  for split, percent in MOVIE_REVIEWS_SPLIT_PERCENT:
    if bucket < percent:
      return split
    bucket -= percent
  raise AssertionError("percentages must add up to 100")


def _movie_reviews_files(spec: TaskSpec, data_dir: str, split: str) -> List[str]:
  return [os.path.join(data_dir, MOVIE_REVIEWS_FILE)]


def _read_movie_reviews(spec: TaskSpec, data_dir: str, split: str) -> List[InputExample]:
  """Rotten Tomatoes snippets rated by people from -4 to 4 (VADER's ground truth).

  Lines are "id<TAB>mean rating<TAB>sentence" (CRLF). A positive mean rating is "positive",
  a negative one "negative"; snippets rated exactly 0 are dropped.
  """
  path = os.path.join(data_dir, MOVIE_REVIEWS_FILE)
  if not os.path.isfile(path):
    raise _missing(path, f"the movie_reviews task reads {MOVIE_REVIEWS_FILE} (id, mean "
                   f"rating, sentence; from vaderSentiment), bundled in {MOVIE_REVIEWS_DIR}")
  try:
    return _movie_review_examples(path, split)
  except UnicodeDecodeError:
    raise utf8_error(path) from None


def _movie_review_examples(path: str, split: str) -> List[InputExample]:
  """The examples of `split` in the movie_reviews file `path` (see `_read_movie_reviews`)."""
  examples = []
  with open(path, encoding="utf-8") as f:
    for line, text in enumerate(f, start=1):
      text = text.rstrip("\r\n")
      if not text.strip():
        continue
      fields = text.split("\t")
      if len(fields) != 3:
        raise ValueError(f"{path}:{line}: {len(fields)} tab-separated field(s), expected 3 "
                         f"(id, mean rating, sentence)")
      review_id, rating, sentence = fields
      rating = _parse_label(path, line, rating, None, is_regression=True)
      if rating == 0 or movie_reviews_split(review_id) != split:
        continue
      label = "positive" if rating > 0 else "negative"
      examples.append(InputExample(f"{split}-{review_id}", sentence, None, label))
  return examples


# ---- generic ---------------------------------------------------------------------------------

_GENERIC_EXTENSIONS = (".tsv", ".csv", ".jsonl")
_GENERIC_OPTIONS = ("text_a_column", "text_b_column", "label_column", "header", "labels",
                    "is_regression", "metrics", "filenames")


def _generic_path(data_dir: str, split: str, filenames: Optional[Mapping[str, str]]) -> str:
  if filenames and split in filenames:
    path = os.path.join(data_dir, filenames[split])
    if not os.path.isfile(path):
      raise _missing(path, f"the generic task's {split} split is this file (filenames "
                     f"option)")
    return path
  found = [os.path.join(data_dir, split + ext) for ext in _GENERIC_EXTENSIONS
           if os.path.isfile(os.path.join(data_dir, split + ext))]
  if not found:
    raise _missing(os.path.join(data_dir, f"{split}.{{tsv,csv,jsonl}}"),
                   f"the generic task reads its {split} split from {split}.tsv, {split}.csv "
                   f"or {split}.jsonl in data_dir (or the filenames option)")
  if len(found) > 1:
    raise ValueError(f"{data_dir}: several files for the {split} split {found}; keep one or "
                     f"choose with the filenames option")
  return found[0]


def _generic_files(spec: TaskSpec, data_dir: str, split: str,
                   filenames: Optional[Mapping[str, str]] = None, **unused) -> List[str]:
  return [_generic_path(data_dir, split, filenames)]


def _read_generic(spec: TaskSpec, data_dir: str, split: str, *, text_a_column: Column = "text",
                  text_b_column: Optional[Column] = None, label_column: Column = "label",
                  header: bool = True, labels: Optional[Sequence[str]] = None,
                  is_regression: bool = False, metrics: Optional[Sequence[str]] = None,
                  filenames: Optional[Mapping[str, str]] = None) -> List[InputExample]:
  del metrics  # used by configure
  path = _generic_path(data_dir, split, filenames)
  if labels is None and not is_regression and split != "train":
    labels = _train_labels(data_dir, text_a_column, text_b_column, label_column, header,
                           filenames)
  if labels is not None:
    labels = tuple(_label_string(label) for label in labels)
  return _read_generic_file(path, split, text_a_column, text_b_column, label_column, header,
                            labels, is_regression)


def _read_generic_file(path: str, split: str, text_a_column: Column,
                       text_b_column: Optional[Column], label_column: Column, header: bool,
                       labels: Optional[Sequence[str]],
                       is_regression: bool) -> List[InputExample]:
  if path.endswith(".jsonl"):
    return _read_jsonl(path, split, text_a_column, text_b_column, label_column, labels,
                       is_regression)
  delimiter, quoting = ("\t", csv.QUOTE_NONE) if path.endswith(".tsv") else (",",
                                                                               csv.QUOTE_MINIMAL)
  label = label_column
  if split == "test" and header and isinstance(label_column, str):
    try:
      with open(path, encoding="utf-8-sig", newline="") as f:
        first = next(csv.reader(f, delimiter=delimiter, quoting=quoting), [])
    except UnicodeDecodeError:
      raise utf8_error(path) from None
    if label_column not in first:
      label = None                       # an unlabeled test file
  table = _Table(path, text_a_column, text_b_column, label, None, header)
  return _read_table(path, table, split, labels, is_regression, False, delimiter, quoting)


def _read_jsonl(path: str, split: str, text_a_column: Column, text_b_column: Optional[Column],
                label_column: Column, labels: Optional[Sequence[str]],
                is_regression: bool) -> List[InputExample]:
  try:
    return _jsonl_examples(path, split, text_a_column, text_b_column, label_column, labels,
                           is_regression)
  except UnicodeDecodeError:
    raise utf8_error(path) from None


def _jsonl_examples(path: str, split: str, text_a_column: Column,
                    text_b_column: Optional[Column], label_column: Column,
                    labels: Optional[Sequence[str]],
                    is_regression: bool) -> List[InputExample]:
  """The examples of a JSONL file, one JSON object per line (see `_read_jsonl`)."""
  examples = []
  with open(path, encoding="utf-8-sig") as f:
    for line, text in enumerate(f, start=1):
      if not text.strip():
        continue
      try:
        record = json.loads(text)
      except json.JSONDecodeError as e:
        raise ValueError(f"{path}:{line}: not a JSON object ({e})") from None
      if not isinstance(record, dict):
        raise ValueError(f"{path}:{line}: a JSON {type(record).__name__}, expected an object")
      texts = [("text_a", text_a_column)] + ([("text_b", text_b_column)]
                                             if text_b_column is not None else [])
      required = texts + ([("label", label_column)] if split != "test" else [])
      for role, key in required:
        if record.get(key) is None:
          raise ValueError(f"{path}:{line}: missing {role} field {key!r} (the object has "
                           f"{sorted(record)})")
      for role, key in texts:
        if not isinstance(record[key], str):
          raise ValueError(f"{path}:{line}: {role} field {key!r} is a "
                           f"{type(record[key]).__name__}, expected a string")
      label = None
      if record.get(label_column) is not None:
        label = _parse_label(path, line, record[label_column], labels, is_regression)
      text_b = record[text_b_column] if text_b_column is not None else None
      examples.append(InputExample(f"{split}-{line}", record[text_a_column], text_b, label))
  return examples


def _train_labels(data_dir, text_a_column, text_b_column, label_column, header,
                  filenames) -> Tuple[str, ...]:
  """The sorted distinct labels of the train split (numerically if all are integers)."""
  path = _generic_path(data_dir, "train", filenames)
  examples = _read_generic_file(path, "train", text_a_column, text_b_column, label_column,
                                header, None, False)
  distinct = {example.label for example in examples if example.label is not None}
  if not distinct:
    raise ValueError(f"{path}: no labels to build the label set from")
  if all(_is_int(label) for label in distinct):
    return tuple(sorted(distinct, key=int))
  return tuple(sorted(distinct))


def _is_int(text: str) -> bool:
  try:
    int(text)
  except ValueError:
    return False
  return True


def _configure_generic(spec: TaskSpec, data_dir: Optional[str],
                       options: Mapping[str, Any]) -> TaskSpec:
  is_regression = bool(options.get("is_regression", False))
  metrics = options.get("metrics") or (("pearson", "spearman") if is_regression
                                       else ("accuracy",))
  labels = None
  if not is_regression:
    labels = options.get("labels")
    if labels is None:
      if data_dir is None:
        raise ValueError("task generic: configure needs data_dir (to read the train labels) "
                         "or the labels option")
      labels = _train_labels(data_dir, options.get("text_a_column", "text"),
                             options.get("text_b_column"), options.get("label_column", "label"),
                             options.get("header", True), options.get("filenames"))
    labels = tuple(_label_string(label) for label in labels)
    if len(set(labels)) != len(labels) or len(labels) < 2:
      raise ValueError(f"task generic: labels {list(labels)} must be at least 2 distinct "
                       f"labels")
  bound = {**options, "labels": labels} if labels is not None else dict(options)
  return dataclasses.replace(spec, labels=labels, is_regression=is_regression,
                             metrics=tuple(metrics), bound_options=bound,
                             is_pair=options.get("text_b_column") is not None)


# ---- the registry ----------------------------------------------------------------------------

def _glue(name: str, labels: Optional[Tuple[str, ...]], metrics: Tuple[str, ...],
          splits: Tuple[str, ...] = SPLITS) -> TaskSpec:
  return TaskSpec(name=name, labels=labels, is_regression=labels is None, metrics=metrics,
                  reader=_read_glue, files=_glue_files, splits=splits,
                  options=("skip_malformed",),
                  is_pair=_GLUE_TABLES[name]["train"].text_b is not None)


_BINARY = ("0", "1")
_ENTAILMENT = ("entailment", "not_entailment")

TASKS: Dict[str, TaskSpec] = {
    "mnli": _glue("mnli", ("contradiction", "entailment", "neutral"), ("accuracy",),
                  SPLITS + ("dev_mismatched", "test_mismatched")),
    "qnli": _glue("qnli", _ENTAILMENT, ("accuracy",)),
    "qqp": _glue("qqp", _BINARY, ("f1", "accuracy")),
    "rte": _glue("rte", _ENTAILMENT, ("accuracy",)),
    "sst-2": _glue("sst-2", _BINARY, ("accuracy",)),
    "mrpc": _glue("mrpc", _BINARY, ("f1", "accuracy")),
    "cola": _glue("cola", _BINARY, ("matthews_corr",)),
    "sts-b": _glue("sts-b", None, ("pearson", "spearman")),
    "wnli": _glue("wnli", _BINARY, ("accuracy",)),
    "imdb": TaskSpec(name="imdb", labels=_IMDB_LABELS, is_regression=False,
                     metrics=("accuracy",), reader=_read_imdb, files=_imdb_files),
    "movie_reviews": TaskSpec(name="movie_reviews", labels=("negative", "positive"),
                              is_regression=False, metrics=("accuracy",),
                              reader=_read_movie_reviews, files=_movie_reviews_files,
                              default_data_dir=MOVIE_REVIEWS_DIR),
    "generic": TaskSpec(name="generic", labels=None, is_regression=False,
                        metrics=("accuracy",), reader=_read_generic, files=_generic_files,
                        options=_GENERIC_OPTIONS),
}

GLUE_TASKS = tuple(_GLUE_TABLES)
