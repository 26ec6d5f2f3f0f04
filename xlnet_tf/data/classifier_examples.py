"""What a classification or regression data set reads into, shared by the registry
(`classifier_tasks`: the table of tasks) and the readers (`classifier_readers`: one module
per kind of data set): `InputExample` and `TaskSpec`.
"""

import dataclasses
from typing import Any, Callable, List, Mapping, Optional, Tuple, Union

Label = Union[str, float, None]
Column = Union[str, int]

SPLITS = ("train", "dev", "test")


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

  name: the key in `classifier_tasks.TASKS`.
  labels: label strings in id order (label id = index); None for regression, and for the
    "generic" task until `configure` fixes them.
  is_regression: one float target per example instead of a class.
  is_pair: the examples are sentence pairs (text_b); for "generic", once `configure`
    binds a text_b_column. `classifier_tasks.is_pair_task` asks this by name (e.g.
    serving's default).
  metrics: names of `xlnet_tf.evaluation.classifier_metrics` metrics, the first is the
    task's main metric.
  reader: `reader(spec, data_dir, split, **options) -> list[InputExample]`.
  files: `files(spec, data_dir, split, **options) -> list[str]`: what a split reads.
  splits: the splits the reader knows.
  options: the option names `read` accepts.
  default_data_dir: used when `data_dir` is None.
  bound_options: options fixed by `configure`, used by every `read` (call options win).
  configurer: `configurer(spec, data_dir, options) -> TaskSpec`: what `configure` also
    fixes from the data (the generic task's labels, metrics and is_pair); None: nothing.
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
  configurer: Optional[Callable[..., "TaskSpec"]] = dataclasses.field(default=None,
                                                                      repr=False)

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
    """This task with `options` bound, and what its `configurer` fixes (for "generic": its
    labels and metrics).

    For the generic task without a `labels` option the label set is read from the train
    split of `data_dir` (the sorted distinct labels).
    """
    options = {**self.bound_options, **options}
    self._check_options(options)
    spec = dataclasses.replace(self, bound_options=options)
    if self.configurer is not None:
      spec = self.configurer(spec, data_dir, options)
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
