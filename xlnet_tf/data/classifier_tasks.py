"""The registry of sequence classification and regression data sets (`TASKS`, `get_task`):
each task's labels, metrics and reader, which reads its files into `InputExample`s.

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

The readers are `classifier_readers`' modules, one per kind of data set: `glue` (GLUE files
exactly as distributed: tab-separated, quoting disabled, columns by header name), `imdb`,
`movie_reviews`, `generic`, over `delimited` (TSV/CSV tables and the errors below).
`InputExample` and `TaskSpec` are `classifier_examples`' (both importable from here).

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

from typing import Dict, Optional, Tuple

from xlnet_tf.data.classifier_examples import InputExample
from xlnet_tf.data.classifier_examples import SPLITS
from xlnet_tf.data.classifier_examples import TaskSpec
from xlnet_tf.data.classifier_readers import generic
from xlnet_tf.data.classifier_readers import glue
from xlnet_tf.data.classifier_readers import imdb
from xlnet_tf.data.classifier_readers import movie_reviews

__all__ = ["InputExample", "TaskSpec", "TASKS", "get_task", "is_pair_task", "glue_index"]


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


def _glue(name: str, labels: Optional[Tuple[str, ...]], metrics: Tuple[str, ...],
          splits: Tuple[str, ...] = SPLITS) -> TaskSpec:
  return TaskSpec(name=name, labels=labels, is_regression=labels is None, metrics=metrics,
                  reader=glue.read_glue, files=glue.glue_files, splits=splits,
                  options=("skip_malformed",),
                  is_pair=glue.GLUE_TABLES[name]["train"].text_b is not None)


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
    "imdb": TaskSpec(name="imdb", labels=imdb.IMDB_LABELS, is_regression=False,
                     metrics=("accuracy",), reader=imdb.read_imdb, files=imdb.imdb_files),
    "movie_reviews": TaskSpec(name="movie_reviews", labels=("negative", "positive"),
                              is_regression=False, metrics=("accuracy",),
                              reader=movie_reviews.read_movie_reviews,
                              files=movie_reviews.movie_reviews_files,
                              default_data_dir=movie_reviews.MOVIE_REVIEWS_DIR),
    "generic": TaskSpec(name="generic", labels=None, is_regression=False,
                        metrics=("accuracy",), reader=generic.read_generic,
                        files=generic.generic_files, options=generic.GENERIC_OPTIONS,
                        configurer=generic.configure_generic),
}
