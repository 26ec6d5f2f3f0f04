"""The generic task's files: {train,dev,test}.{tsv,csv,jsonl} (or the files the `filenames`
option names), columns chosen by options. TSV is read like GLUE (no quoting), CSV with
standard CSV quoting, JSONL one JSON object per line; a test file without the label column
gives unlabeled examples. Without a `labels` option the label set is the sorted distinct
labels of the train split, numerically when they are all integers (`configure_generic`).
"""

import csv
import dataclasses
import json
import os
from typing import Any, List, Mapping, Optional, Sequence, Tuple

from xlnet_tf.data.classifier_examples import Column
from xlnet_tf.data.classifier_examples import InputExample
from xlnet_tf.data.classifier_examples import TaskSpec
from xlnet_tf.data.classifier_readers import delimited
from xlnet_tf.data.classifier_readers.delimited import Table

_GENERIC_EXTENSIONS = (".tsv", ".csv", ".jsonl")
GENERIC_OPTIONS = ("text_a_column", "text_b_column", "label_column", "header", "labels",
                   "is_regression", "metrics", "filenames")


def _generic_path(data_dir: str, split: str, filenames: Optional[Mapping[str, str]]) -> str:
  if filenames and split in filenames:
    path = os.path.join(data_dir, filenames[split])
    if not os.path.isfile(path):
      raise delimited.missing_file(path, f"the generic task's {split} split is this file "
                                   f"(filenames option)")
    return path
  found = [os.path.join(data_dir, split + ext) for ext in _GENERIC_EXTENSIONS
           if os.path.isfile(os.path.join(data_dir, split + ext))]
  if not found:
    raise delimited.missing_file(
        os.path.join(data_dir, f"{split}.{{tsv,csv,jsonl}}"),
        f"the generic task reads its {split} split from {split}.tsv, {split}.csv or "
        f"{split}.jsonl in data_dir (or the filenames option)")
  if len(found) > 1:
    raise ValueError(f"{data_dir}: several files for the {split} split {found}; keep one or "
                     f"choose with the filenames option")
  return found[0]


def generic_files(spec: TaskSpec, data_dir: str, split: str,
                  filenames: Optional[Mapping[str, str]] = None, **unused) -> List[str]:
  return [_generic_path(data_dir, split, filenames)]


def read_generic(spec: TaskSpec, data_dir: str, split: str, *, text_a_column: Column = "text",
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
    labels = tuple(delimited.label_string(label) for label in labels)
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
      raise delimited.utf8_error(path) from None
    if label_column not in first:
      label = None                       # an unlabeled test file
  table = Table(path, text_a_column, text_b_column, label, None, header)
  return delimited.read_table(path, table, split, labels, is_regression, False, delimiter,
                              quoting)


def _read_jsonl(path: str, split: str, text_a_column: Column, text_b_column: Optional[Column],
                label_column: Column, labels: Optional[Sequence[str]],
                is_regression: bool) -> List[InputExample]:
  try:
    return _jsonl_examples(path, split, text_a_column, text_b_column, label_column, labels,
                           is_regression)
  except UnicodeDecodeError:
    raise delimited.utf8_error(path) from None


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
        label = delimited.parse_label(path, line, record[label_column], labels, is_regression)
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


def configure_generic(spec: TaskSpec, data_dir: Optional[str],
                      options: Mapping[str, Any]) -> TaskSpec:
  """`spec` (the generic task with `options` bound) with its labels, metrics and is_pair
  fixed by the options, the labels read from the train split of `data_dir` when no
  `labels` option gives them (the generic task's `TaskSpec.configurer`)."""
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
    labels = tuple(delimited.label_string(label) for label in labels)
    if len(set(labels)) != len(labels) or len(labels) < 2:
      raise ValueError(f"task generic: labels {list(labels)} must be at least 2 distinct "
                       f"labels")
  bound = {**options, "labels": labels} if labels is not None else dict(options)
  return dataclasses.replace(spec, labels=labels, is_regression=is_regression,
                             metrics=tuple(metrics), bound_options=bound,
                             is_pair=options.get("text_b_column") is not None)
