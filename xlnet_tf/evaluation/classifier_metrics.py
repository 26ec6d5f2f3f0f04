"""Metrics of classification and regression tasks (numpy) and GLUE submission files.

  >>> task = classifier_tasks.get_task("mrpc")
  >>> task_metrics(task, logits, label_ids)        # logits [N, 2] or predicted ids [N]
  {'f1': 0.89, 'accuracy': 0.85}
  >>> write_glue_predictions("out/MRPC.tsv", task, logits,
  ...                        [classifier_tasks.glue_index(e.guid) for e in test_examples])

Metrics (GLUE's choice per task is `TaskSpec.metrics`):
  accuracy       fraction of predicted classes equal to the labels
  f1             binary F1 of the positive class (label id 1, "1" in MRPC and QQP):
                 2 TP / (2 TP + FP + FN); 0.0 when there is no positive prediction or label
  matthews_corr  Matthews correlation coefficient (multi-class form, equal to
                 (TP TN - FP FN) / sqrt((TP+FP)(TP+FN)(TN+FP)(TN+FN)) for two classes);
                 0.0 when a marginal is constant (the usual convention)
  pearson        Pearson correlation; NaN when either side is constant
  spearman       Pearson correlation of the ranks (ties get their average rank); NaN when
                 either side is constant

Classification predictions are class ids [N], scores/logits [N, C] (argmax is taken) or
label strings; labels are class ids [N] or label strings. Regression predictions are
[N] or [N, 1] floats.
"""

import os
from typing import Any, Dict, Sequence

import numpy as np
import tensorflow as tf

from xlnet_tf import paths
from xlnet_tf.data.classifier_examples import TaskSpec


def _pair(predictions, labels):
  predictions, labels = np.asarray(predictions), np.asarray(labels)
  if predictions.shape != labels.shape or predictions.ndim != 1:
    raise ValueError(f"predictions {predictions.shape} and labels {labels.shape} must be "
                     f"vectors of the same length")
  if predictions.size == 0:
    raise ValueError("no predictions to evaluate")
  return predictions, labels


def accuracy(predictions: Sequence[int], labels: Sequence[int]) -> float:
  """Fraction of predictions equal to the labels."""
  predictions, labels = _pair(predictions, labels)
  return float(np.mean(predictions == labels))


def f1(predictions: Sequence[int], labels: Sequence[int], positive: int = 1) -> float:
  """Binary F1 of class `positive`: 2 TP / (2 TP + FP + FN), 0.0 if that is 0 / 0."""
  predictions, labels = _pair(predictions, labels)
  predicted, actual = predictions == positive, labels == positive
  tp = np.sum(predicted & actual)
  denominator = 2 * tp + np.sum(predicted & ~actual) + np.sum(~predicted & actual)
  return float(2 * tp / denominator) if denominator else 0.0


def matthews_corr(predictions: Sequence[int], labels: Sequence[int]) -> float:
  """Matthews correlation coefficient (any number of classes), 0.0 if undefined."""
  predictions, labels = _pair(predictions, labels)
  classes, codes = np.unique(np.concatenate([labels, predictions]), return_inverse=True)
  n = labels.size
  confusion = np.zeros([classes.size, classes.size], np.float64)   # [true, predicted]
  np.add.at(confusion, (codes[:n], codes[n:]), 1.0)
  true_counts, predicted_counts = confusion.sum(axis=1), confusion.sum(axis=0)
  correct, total = np.trace(confusion), float(n)
  covariance = correct * total - np.dot(true_counts, predicted_counts)
  denominator = np.sqrt((total ** 2 - np.dot(predicted_counts, predicted_counts))
                        * (total ** 2 - np.dot(true_counts, true_counts)))
  return float(covariance / denominator) if denominator else 0.0


def pearson(predictions: Sequence[float], labels: Sequence[float]) -> float:
  """Pearson correlation coefficient; NaN if either side is constant."""
  predictions, labels = _pair(predictions, labels)
  x = predictions.astype(np.float64) - np.mean(predictions, dtype=np.float64)
  y = labels.astype(np.float64) - np.mean(labels, dtype=np.float64)
  denominator = np.sqrt(np.dot(x, x) * np.dot(y, y))
  return float(np.dot(x, y) / denominator) if denominator else float("nan")


def average_ranks(values: Sequence[float]) -> np.ndarray:
  """1-based ranks of `values`; tied values share the mean of their ranks."""
  values = np.asarray(values)
  order = np.argsort(values, kind="stable")
  sorted_values = values[order]
  # Start of each run of equal values, in sorted order.
  starts = np.flatnonzero(np.concatenate([[True], sorted_values[1:] != sorted_values[:-1]]))
  ends = np.concatenate([starts[1:], [values.size]])
  mean_rank = (starts + ends + 1) / 2.0            # mean of ranks starts+1 .. ends
  ranks = np.empty(values.size, np.float64)
  ranks[order] = np.repeat(mean_rank, ends - starts)
  return ranks


def spearman(predictions: Sequence[float], labels: Sequence[float]) -> float:
  """Spearman rank correlation: Pearson of the average ranks; NaN if a side is constant."""
  predictions, labels = _pair(predictions, labels)
  return pearson(average_ranks(predictions), average_ranks(labels))


METRICS = {"accuracy": accuracy, "f1": f1, "matthews_corr": matthews_corr,
           "pearson": pearson, "spearman": spearman}


def _class_ids(values: Any, task_spec: TaskSpec, what: str) -> np.ndarray:
  """Class ids [N] from ids, scores [N, C] or label strings, checked against the task."""
  values = np.asarray(values)
  labels = task_spec.labels
  if labels is None:
    raise ValueError(f"task {task_spec.name}: no label set (configure the task first)")
  if values.ndim == 2:
    if values.shape[1] != len(labels):
      raise ValueError(f"{what}: scores for {values.shape[1]} classes, task "
                       f"{task_spec.name} has {len(labels)} labels {list(labels)}")
    return np.argmax(values, axis=-1)
  if values.ndim != 1:
    raise ValueError(f"{what}: shape {values.shape}, expected class ids [N] or scores "
                     f"[N, {len(labels)}]")
  if values.dtype.kind in "USO":
    unknown = sorted({str(v) for v in values} - set(labels))
    if unknown:
      raise ValueError(f"{what}: labels {unknown} are not among task {task_spec.name}'s "
                       f"labels {list(labels)}")
    return np.array([labels.index(str(v)) for v in values], np.int64)
  if values.size and (values.min() < 0 or values.max() >= len(labels)
                      or not np.all(values == np.round(values))):
    raise ValueError(f"{what}: class ids must be integers in [0, {len(labels)}) for task "
                     f"{task_spec.name}; got values from {values.min()} to {values.max()} "
                     f"(unlabeled examples, id -1, cannot be evaluated)")
  return values.astype(np.int64)


def _regression_values(values: Any, what: str) -> np.ndarray:
  values = np.asarray(values, np.float64)
  if values.ndim == 2 and values.shape[1] == 1:
    values = values[:, 0]
  if values.ndim != 1:
    raise ValueError(f"{what}: shape {values.shape}, expected [N] or [N, 1] for regression")
  if not np.all(np.isfinite(values)):
    raise ValueError(f"{what}: non-finite values (unlabeled examples have NaN labels)")
  return values


def task_metrics(task_spec: TaskSpec, predictions: Any, labels: Any) -> Dict[str, float]:
  """The task's metrics (`task_spec.metrics`, in that order) of `predictions` vs `labels`.

  Args:
    task_spec: a `classifier_examples.TaskSpec` (e.g. `classifier_tasks.get_task(name)`)
      with its labels known.
    predictions: class ids [N], scores [N, C] or label strings; floats [N] / [N, 1] for
      regression.
    labels: class ids [N] or label strings; floats [N] for regression.
  Returns:
    {metric name: value}.
  """
  if task_spec.is_regression:
    predictions = _regression_values(predictions, "predictions")
    labels = _regression_values(labels, "labels")
  else:
    predictions = _class_ids(predictions, task_spec, "predictions")
    labels = _class_ids(labels, task_spec, "labels")
  unknown = [name for name in task_spec.metrics if name not in METRICS]
  if unknown:
    raise ValueError(f"task {task_spec.name}: unknown metric(s) {unknown}; known: "
                     f"{sorted(METRICS)}")
  return {name: METRICS[name](predictions, labels) for name in task_spec.metrics}


# ---- GLUE submissions ------------------------------------------------------------------------

GLUE_SUBMISSION_FILES = {
    ("cola", "test"): "CoLA.tsv", ("sst-2", "test"): "SST-2.tsv",
    ("mrpc", "test"): "MRPC.tsv", ("sts-b", "test"): "STS-B.tsv",
    ("qqp", "test"): "QQP.tsv", ("mnli", "test"): "MNLI-m.tsv",
    ("mnli", "test_mismatched"): "MNLI-mm.tsv", ("qnli", "test"): "QNLI.tsv",
    ("rte", "test"): "RTE.tsv", ("wnli", "test"): "WNLI.tsv",
}


def glue_submission_name(task_name: str, split: str = "test") -> str:
  """The file name the GLUE server expects for a task's test predictions ("MNLI-m.tsv")."""
  try:
    return GLUE_SUBMISSION_FILES[(task_name, split)]
  except KeyError:
    raise ValueError(f"no GLUE submission file for task {task_name!r}, split {split!r}; "
                     f"known: {sorted(GLUE_SUBMISSION_FILES)}") from None


def _format_float(value: float) -> str:
  return np.format_float_positional(np.float64(value), precision=6, unique=True, trim="-")


def write_glue_predictions(path: str, task_spec: TaskSpec, predictions: Any,
                           indices: Sequence[Any]) -> None:
  """Writes a GLUE submission TSV: a header "index<TAB>prediction", then one row per example.

  Args:
    path: the output file (e.g. `dir/glue_submission_name("mnli")`); written under a
      temporary name and renamed.
    task_spec: the task; classification rows get the label string (task_spec.labels[id]),
      regression rows the float (6 decimals at most; not clipped to the score range).
    predictions: as for `task_metrics`.
    indices: the GLUE index of each example, written as given (for test examples read by
      `classifier_tasks`: `glue_index(example.guid)`).
  """
  if task_spec.is_regression:
    rows = [_format_float(v) for v in _regression_values(predictions, "predictions")]
  else:
    rows = [task_spec.labels[i] for i in _class_ids(predictions, task_spec, "predictions")]
  indices = list(indices)
  if len(indices) != len(rows):
    raise ValueError(f"{path}: {len(rows)} predictions but {len(indices)} indices")
  directory = os.path.dirname(path)
  if directory:
    tf.io.gfile.makedirs(directory)
  paths.write_text(path, "index\tprediction\n" +
                   "".join(f"{index}\t{row}\n" for index, row in zip(indices, rows)))
