"""The GLUE tasks' files, read exactly as distributed by the GLUE benchmark: tab-separated,
UTF-8 (a leading byte-order mark is ignored), quoting disabled (`csv.QUOTE_NONE`: quote
characters are part of the text), columns found by their header name (CoLA's train and
dev files have no header: source, label, original label, sentence). `GLUE_TABLES`: where
each task's split files and fields are.
"""

import csv
import dataclasses
import os
from typing import Dict, List

from xlnet_tf.data.classifier_examples import InputExample
from xlnet_tf.data.classifier_examples import TaskSpec
from xlnet_tf.data.classifier_readers import delimited
from xlnet_tf.data.classifier_readers.delimited import Table


def _glue_tables(train: Table, test: Table, dev_file: str = "dev.tsv",
                 **extra: Table) -> Dict[str, Table]:
  return {"train": train, "dev": dataclasses.replace(train, filename=dev_file),
          "test": test, **extra}


def _pair(a: str, b: str, label: str, index: str) -> Dict[str, Table]:
  return _glue_tables(Table("train.tsv", a, b, label, index),
                      Table("test.tsv", a, b, None, index))


_MNLI_TRAIN = Table("train.tsv", "sentence1", "sentence2", "gold_label", "index")
_MNLI_TEST = Table("test_matched.tsv", "sentence1", "sentence2", None, "index")

GLUE_TABLES = {
    "mnli": _glue_tables(
        _MNLI_TRAIN, _MNLI_TEST, dev_file="dev_matched.tsv",
        dev_mismatched=dataclasses.replace(_MNLI_TRAIN, filename="dev_mismatched.tsv"),
        test_mismatched=dataclasses.replace(_MNLI_TEST, filename="test_mismatched.tsv")),
    "qnli": _pair("question", "sentence", "label", "index"),
    "qqp": _pair("question1", "question2", "is_duplicate", "id"),
    "rte": _pair("sentence1", "sentence2", "label", "index"),
    "wnli": _pair("sentence1", "sentence2", "label", "index"),
    "sts-b": _pair("sentence1", "sentence2", "score", "index"),
    "mrpc": _glue_tables(Table("train.tsv", "#1 String", "#2 String", "Quality"),
                         Table("test.tsv", "#1 String", "#2 String", None, "index")),
    "sst-2": _glue_tables(Table("train.tsv", "sentence", None, "label"),
                          Table("test.tsv", "sentence", None, None, "index")),
    # CoLA train/dev: source, label, the original author's mark, sentence; no header.
    "cola": _glue_tables(Table("train.tsv", 3, None, 1, header=False, num_columns=4),
                         Table("test.tsv", "sentence", None, None, "index")),
}


def glue_files(spec: TaskSpec, data_dir: str, split: str, **unused) -> List[str]:
  return [os.path.join(data_dir, GLUE_TABLES[spec.name][split].filename)]


def read_glue(spec: TaskSpec, data_dir: str, split: str,
              skip_malformed: bool = False) -> List[InputExample]:
  table = GLUE_TABLES[spec.name][split]
  path = os.path.join(data_dir, table.filename)
  if not os.path.isfile(path):
    expected = ", ".join(t.filename for t in GLUE_TABLES[spec.name].values())
    raise delimited.missing_file(
        path, f"the {spec.name} task reads its {split} split from {table.filename}; "
        f"data_dir should be the GLUE {spec.name.upper()} directory ({expected})")
  return delimited.read_table(path, table, split, spec.labels, spec.is_regression,
                              skip_malformed, delimiter="\t", quoting=csv.QUOTE_NONE)
