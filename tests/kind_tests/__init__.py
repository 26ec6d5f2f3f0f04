"""The per-kind test record: what the tests that walk the registry of task kinds
(`xlnet_tf.task_kind`) need of each kind, one module of this package per kind, named after
it (`kind_tests/classifier.py` holds the classifier's `RECORD`). A kind without one fails
those tests, naming the file to add; a task's record module is among the task's own files.

  >>> record = kind_tests.of("classifier")
  >>> record.example_spec                         # a spec of the kind, for round trips
  >>> yaml, override = record.demo_run(fixtures)  # its demo-size run (trained kinds)
"""

import dataclasses
import importlib
import os
from typing import Any, Callable, Optional, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIGS = os.path.join(ROOT, "experiments", "configs")


@dataclasses.dataclass(frozen=True)
class Fixtures:
  """What a demo run is built from: the session's SentencePiece model and pretraining
  records, and a fresh directory for the run's own files."""
  spiece_model: str
  records: str
  tmp_path: Any

  def fine_tuning(self) -> str:
    """The fine-tuning demos' override: the tests' SentencePiece model, dropout on."""
    return (f"task.train_data.spiece_model={self.spiece_model},"
            f"task.validation_data.spiece_model={self.spiece_model},"
            "task.model.dropout=0.1,task.model.dropatt=0.1")


@dataclasses.dataclass(frozen=True)
class KindTest:
  """One kind's test record.

  example_spec: a spec of the kind (its spec class's), for the round trip through a model
    directory; None for a kind without a spec file ("pretrained").
  demo_run: `demo_run(fixtures)` -> (the YAML file of experiments/configs, the
    --params_override that makes it run on the tests' data): the kind's demo-size run.
    None for a kind that is not trained here.
  config_override: `config_override(fixtures)` -> what every YAML file of the kind's
    experiment needs besides to build its task (data the YAML names, a stand-in
    checkpoint is the test's); None: the demo run's override.
  export_card: `export_card(config, spiece_model)` -> the card of the kind's SavedModel
    export (its serving module's, on a model of `config`): what a stand-in of the export
    is made from. None for the classifier, whose exports xlnet-classify serves.
  classify_refusal: what xlnet-classify says of the kind's export (after "error: DIR ").
  """
  example_spec: Any = None
  demo_run: Optional[Callable[[Fixtures], Tuple[str, str]]] = None
  config_override: Optional[Callable[[Fixtures], str]] = None
  export_card: Optional[Callable[[Any, str], Any]] = None
  classify_refusal: str = ""


def module_path(kind_name: str) -> str:
  return os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{kind_name}.py")


def of(kind_name: str) -> KindTest:
  """The test record of the kind `kind_name`; AssertionError naming the file to add when
  the kind has none."""
  try:
    module = importlib.import_module(f"{__name__}.{kind_name}")
  except ModuleNotFoundError as e:
    if e.name != f"{__name__}.{kind_name}":
      raise
    raise AssertionError(f"task kind {kind_name!r} has no test record: add "
                         f"{os.path.relpath(module_path(kind_name), ROOT)} with its "
                         f"RECORD = KindTest(...)") from None
  return module.RECORD


def recorded_names():
  """The kinds this package has a record module of."""
  directory = os.path.dirname(os.path.abspath(__file__))
  return sorted(name[:-3] for name in os.listdir(directory)
                if name.endswith(".py") and not name.startswith("_"))
