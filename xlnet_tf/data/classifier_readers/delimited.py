"""Reading delimited task files (GLUE's TSV, CSV) into `InputExample`s, and the errors every
classification reader raises: a missing file (`missing_file`), bytes that are not UTF-8
(`utf8_error`, also raised by the RACE and SQuAD readers), a malformed row or label, each
naming the file and the 1-based line.

A `Table` says where a split's fields are (columns by header name or 0-based index);
`read_table` reads a file laid out so (the GLUE, IMDB CSV and generic TSV/CSV readers).
"""

import csv
import dataclasses
import io
from typing import Any, Iterator, List, Optional, Sequence, Tuple

from absl import logging

from xlnet_tf.data.classifier_examples import Column
from xlnet_tf.data.classifier_examples import InputExample
from xlnet_tf.data.classifier_examples import Label


def missing_file(path: str, what: str) -> FileNotFoundError:
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


def parse_label(path: str, line: int, value: Any, labels: Optional[Sequence[str]],
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
  label = label_string(value)
  if labels is not None and label not in labels:
    raise ValueError(f"{path}:{line}: label {label!r} is not one of the task's labels "
                     f"{list(labels)}")
  return label


def label_string(value: Any) -> str:
  """A JSON/CSV label as a label string (JSON 1 and "1" are the same label)."""
  if isinstance(value, bool):
    return str(value).lower()
  if isinstance(value, float) and value.is_integer():
    return str(int(value))
  return str(value)


@dataclasses.dataclass(frozen=True)
class Table:
  """Where one split's fields are in a delimited file (GLUE's TSV files, CSV).

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


def read_table(path: str, table: Table, split: str, labels: Optional[Sequence[str]],
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
      label = parse_label(path, line, row[columns["label"]], labels, is_regression)
    text_b = row[columns["text_b"]] if columns["text_b"] is not None else None
    examples.append(InputExample(f"{split}-{index}", row[columns["text_a"]], text_b, label))
  if skipped:
    logging.warning("%s: skipped %d malformed row(s) (skip_malformed)", path, skipped)
  return examples
