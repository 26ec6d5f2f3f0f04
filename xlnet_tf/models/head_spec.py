"""The base of the head specs (`ClassifierSpec`, `RaceSpec`, ...): what a fine-tuned model's
spec file holds (`model_directory.save` writes `to_values()`, `load` reads it back with the
class's `from_values`)."""

import dataclasses
from typing import Any, ClassVar, Dict, Mapping


class HeadSpec:
  """A spec dataclass: FILE (its file in the model directory), WRITTEN_BY (what writes such
  a directory, for errors) and OPTIONAL_FIELDS, the fields added after files without them
  existed, with the value such a file means: written only when they differ from it, so the
  spec files of existing models stay as they were."""
  FILE: ClassVar[str]
  WRITTEN_BY: ClassVar[str]
  OPTIONAL_FIELDS: ClassVar[Mapping[str, Any]] = {}

  def to_values(self) -> Dict[str, Any]:
    """The spec file's JSON values (tuples as lists; `OPTIONAL_FIELDS` at their value left
    out)."""
    optional = type(self).OPTIONAL_FIELDS
    return {k: list(v) if isinstance(v, tuple) else v
            for k, v in dataclasses.asdict(self).items()
            if not (k in optional and v == optional[k])}
