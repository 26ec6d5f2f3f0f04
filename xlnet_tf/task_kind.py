"""The registry of task kinds: one record per kind of model directory, read by everything
that handles models of every task.

A kind is what a model directory holds: a pretrained model ("pretrained") or a fine-tuned
one with its head (one kind per head: "classifier", "squad", ...; `names()` lists them;
"qa_simple", HuggingFace's simple span-QA head, is imported and served but not trained
here). Each task module of `xlnet_tf.tasks` builds its record from the pieces below it
(model class and builder, spec class, SavedModel export, conversion) and registers it; the
consumers below the tasks (the model directory's readers, `convert` in both directions,
`hub.from_preset`) read the record instead of keeping tables of their own.

This module imports nothing of xlnet_tf: it is a leaf, so every layer may read it. The
records are registered when `xlnet_tf.tasks.all_tasks` is imported (the console commands,
the driver and `xlnet_tf.hub` do); asked before, every function here raises
`NoKindsRegistered`, naming that module.

  >>> from xlnet_tf import task_kind
  >>> kind = task_kind.of_model_dir("runs/sst2/final")      # the spec file decides
  >>> kind.name, kind.spec_class.FILE, kind.conversion.hf_architecture_out
  ('classifier', 'classifier.json', 'XLNetForSequenceClassification')
"""

import dataclasses
import os
from typing import Any, Callable, Dict, List, Optional, Tuple


@dataclasses.dataclass(frozen=True)
class TaskKind:
  """Everything the ring around the model needs to know about one kind of model.

  name: the kind ("classifier"); also the `--task` of `xlnet-convert`.
  description: what the head is, for messages and cards.
  model_class: the Keras model class of the kind.
  build_model: the model's builder, `build_model(config, *args, **kwargs)` (a fresh head),
    e.g. `build_classifier(config, num_classes)`: what `from_preset` calls.
  spec_class: the head's spec (a `models.head_spec.HeadSpec`: FILE, `from_values(values)`,
    `to_values()` and `build_model(config, **overrides)`), written to FILE in the model
    directory; None for "pretrained" (no spec file).
  card_task: the model card's task ("classification", "squad", ...), the HuggingFace
    pipeline it corresponds to.
  experiment: the `exp_factory` experiment that trains it ("xlnet/classification",
    registered beside the record by the task's module); None when not trained here.
  export: `export(model_dir, export_dir, **options)`, the SavedModel of a model directory
    of this kind (raw text in).
  conversion: the kind's conversion, every answer `xlnet_tf.convert` needs (an object of
    `xlnet_tf.convert.heads`, written in the kind's own module there: its HuggingFace
    classes and head tensors both ways, the original's head variables, the model and the
    spec a conversion writes, the parity probes, the card), or None when models of this
    kind are not converted, with `hf_not_exportable` saying why.
  hf_not_exportable: why a kind without a conversion has none (the refusal of an export
    to HuggingFace says it).
  max_seq_length: the sequence length a converted checkpoint of this kind is served at when
    neither it nor the user says (the original script's default: run_classifier.py 128,
    run_squad.py and run_race.py 512); None for "pretrained".
  """
  name: str
  description: str
  model_class: type
  build_model: Callable[..., Any]
  spec_class: Optional[type]
  card_task: str
  export: Callable[..., str]
  conversion: Optional[Any]
  hf_not_exportable: str = ""
  max_seq_length: Optional[int] = None
  experiment: Optional[str] = None

  def __post_init__(self):
    if (self.conversion is None) == (not self.hf_not_exportable):
      raise ValueError(f"task kind {self.name!r}: give a conversion, or None with "
                       f"hf_not_exportable saying why")

  @property
  def spec_file(self) -> Optional[str]:
    return self.spec_class.FILE if self.spec_class is not None else None


_KINDS: Dict[str, TaskKind] = {}
PRETRAINED = "pretrained"            # the kind of a directory without a spec file


def register(kind: TaskKind) -> TaskKind:
  """Adds `kind` (a task module calls this once, at import); a second record of one name
  or one spec file is refused."""
  if kind.name in _KINDS and _KINDS[kind.name] != kind:
    raise ValueError(f"task kind {kind.name!r} is registered already")
  for other in _KINDS.values():
    if other.name != kind.name and kind.spec_file and other.spec_file == kind.spec_file:
      raise ValueError(f"task kinds {other.name!r} and {kind.name!r} both use "
                       f"{kind.spec_file}")
  _KINDS[kind.name] = kind
  return kind


class NoKindsRegistered(LookupError):
  """A consumer asked for the kinds before any task module registered them."""


def kinds() -> List[TaskKind]:
  """Every registered kind, "pretrained" first, then by name; `NoKindsRegistered` (saying
  what to import) when no task module has registered its kind yet."""
  if not _KINDS:
    raise NoKindsRegistered("no task kinds are registered: import xlnet_tf.tasks.all_tasks "
                            "first (its task modules register them; the command lines, the "
                            "driver and xlnet_tf.hub do)")
  return sorted(_KINDS.values(), key=lambda k: (k.name != PRETRAINED, k.name))


def names() -> List[str]:
  return [kind.name for kind in kinds()]


def get(name: str) -> TaskKind:
  """The kind called `name`; KeyError listing the kinds (`NoKindsRegistered` when none
  is registered)."""
  if name not in _KINDS:
    raise KeyError(f"unknown task kind {name!r}; the kinds are {names()}")
  return _KINDS[name]


def head_kinds() -> Tuple[str, ...]:
  """The kinds with a task head (every kind but "pretrained")."""
  return tuple(name for name in names() if name != PRETRAINED)


def spec_files() -> Tuple[str, ...]:
  """The spec files of the fine-tuned kinds (each records the text settings); an error
  when no kind is registered (a model directory must never be misread for want of them)."""
  get(PRETRAINED)
  return tuple(kind.spec_file for kind in kinds() if kind.spec_file)


def of_model_dir(directory: str, exists: Callable[[str], bool] = os.path.exists) -> TaskKind:
  """The kind of a model directory: the one whose spec file it holds, else "pretrained".
  More than one spec file is an error naming them."""
  found = [kind for kind in kinds()
           if kind.spec_file and exists(os.path.join(directory, kind.spec_file))]
  if len(found) > 1:
    raise ValueError(f"{directory}: holds the spec files of several kinds "
                     f"({', '.join(k.spec_file for k in found)}); a model directory has one")
  return found[0] if found else get(PRETRAINED)


def of_model(model: Any) -> TaskKind:
  """The kind whose model class is `model`'s class (else one it derives from)."""
  for kind in kinds():
    if type(model) is kind.model_class:
      return kind
  for kind in kinds():                 # a subclass of a kind's class
    if isinstance(model, kind.model_class):
      return kind
  raise TypeError(f"{type(model).__name__}: no task kind has this model class; the "
                  f"classes are {sorted(k.model_class.__name__ for k in kinds())}")


def of_model_class(cls: type) -> TaskKind:
  """The kind of a model class (exactly that class)."""
  for kind in kinds():
    if kind.model_class is cls:
      return kind
  raise TypeError(f"{cls.__name__}: no task kind has this model class; the classes are "
                  f"{sorted(k.model_class.__name__ for k in kinds())}")

