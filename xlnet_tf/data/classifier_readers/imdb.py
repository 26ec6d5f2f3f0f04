"""The IMDB movie reviews (Maas et al. 2011): the aclImdb layout
DATA_DIR/{train,test}/{pos,neg}/*.txt, or DATA_DIR/{train,dev,test}.csv with text,label
columns (`classifier_tasks` says which wins and what "dev" reads)."""

import csv
import dataclasses
import glob
import os
from typing import List, Tuple

from xlnet_tf.data.classifier_examples import InputExample
from xlnet_tf.data.classifier_examples import TaskSpec
from xlnet_tf.data.classifier_readers import delimited
from xlnet_tf.data.classifier_readers.delimited import Table

IMDB_LABELS = ("neg", "pos")
_IMDB_ALIASES = {"neg": "neg", "negative": "neg", "0": "neg",
                 "pos": "pos", "positive": "pos", "1": "pos"}
_IMDB_EXPECTED = ("the imdb task expects the aclImdb layout DATA_DIR/{train,test}/{pos,neg}/"
                  "*.txt, or DATA_DIR/{train,dev,test}.csv with text,label columns")


def _imdb_source(data_dir: str, split: str) -> Tuple[str, str]:
  """("dir", DATA_DIR/<split>) or ("csv", DATA_DIR/<split>.csv) for `split`."""
  candidates = [split] if split != "dev" else ["dev", "test"]
  for name in candidates:
    directory = os.path.join(data_dir, name)
    if all(os.path.isdir(os.path.join(directory, label)) for label in IMDB_LABELS):
      return "dir", directory
  for name in candidates:
    path = os.path.join(data_dir, f"{name}.csv")
    if os.path.isfile(path):
      return "csv", path
  raise delimited.missing_file(os.path.join(data_dir, split),
                               f"{_IMDB_EXPECTED} (split {split!r})")


def imdb_files(spec: TaskSpec, data_dir: str, split: str) -> List[str]:
  kind, path = _imdb_source(data_dir, split)
  return [os.path.join(path, label) for label in IMDB_LABELS] if kind == "dir" else [path]


def read_imdb(spec: TaskSpec, data_dir: str, split: str) -> List[InputExample]:
  kind, path = _imdb_source(data_dir, split)
  if kind == "csv":
    examples = delimited.read_table(path, Table(path, "text", None, "label"), split, None,
                                    False, False, delimiter=",", quoting=csv.QUOTE_MINIMAL)
    converted = []
    for example in examples:
      label = _IMDB_ALIASES.get(example.label.strip().lower())
      if label is None:
        line = example.guid.rsplit("-", 1)[1]
        raise ValueError(f"{path}:{line}: label {example.label!r} is not one of the task's "
                         f"labels {list(IMDB_LABELS)} (or negative/positive, 0/1)")
      converted.append(dataclasses.replace(example, text_a=_clean_imdb(example.text_a),
                                           label=label))
    return converted
  examples = []
  for label in IMDB_LABELS:
    for file in sorted(glob.glob(os.path.join(path, label, "*.txt"))):
      try:
        with open(file, encoding="utf-8") as f:
          text = _clean_imdb(f.read())
      except UnicodeDecodeError:
        raise delimited.utf8_error(file) from None
      name = os.path.splitext(os.path.basename(file))[0]
      examples.append(InputExample(f"{split}-{label}_{name}", text, None, label))
  if not examples:
    raise delimited.missing_file(os.path.join(path, "{neg,pos}", "*.txt"),
                                 f"{_IMDB_EXPECTED}; the directories are empty")
  return examples


def _clean_imdb(text: str) -> str:
  """IMDB reviews mark line breaks with HTML "<br />" tags: make them spaces."""
  return text.replace("<br />", " ").replace("<br/>", " ").replace("<br>", " ").strip()
