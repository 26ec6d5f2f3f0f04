"""Where the bundled sample data is: `data_prep/sample_data/` (Moby-Dick, the movie-review
sentiment set, a Brown corpus subset, QA samples; see its README.md).

The directory is package data of the `data_prep` package, located through
`importlib.resources`, so it is found the same way in a checkout and in an installed wheel
(`pip install .` ships `data_prep` with its `sample_data/`). Nothing is read here; a missing
file is reported by the reader that opens it, naming the path.

A configuration names a bundled file as "sample_data:" + its path under the directory
(`resolve`; e.g. experiments/configs/squad_demo.yaml's "sample_data:qa/squad.json"), so
that it works from any working directory.
"""

import importlib.resources
import os

PACKAGE = "data_prep"
DIRECTORY = "sample_data"
# A configured path that starts with this names a file of the bundled sample data.
PREFIX = DIRECTORY + ":"


def root() -> str:
  """The sample-data directory on the file system."""
  location = importlib.resources.files(PACKAGE).joinpath(DIRECTORY)
  try:
    return os.fspath(location)
  except TypeError:  # a package inside a zip file: no file-system path to give
    raise FileNotFoundError(
        f"the bundled sample data ({PACKAGE}/{DIRECTORY}) is inside {location!r}, not a "
        f"directory: install xlnet_tf unzipped (pip install .)") from None


def path(*parts: str) -> str:
  """A path under the sample-data directory, e.g. path("brown") or
  path("moby_dick", "chapter_*.txt")."""
  return os.path.join(root(), *parts)


def resolve(value: str) -> str:
  """`value` itself, or for "sample_data:RELATIVE" (`PREFIX`) the file RELATIVE ("/"-
  separated) of the bundled sample data, e.g. resolve("sample_data:qa/squad.json").

  Raises:
    ValueError: RELATIVE is empty or leaves the directory ("..", an absolute path).
  """
  if not value.startswith(PREFIX):
    return value
  relative = value[len(PREFIX):]
  parts = relative.split("/")
  if not relative or relative.startswith("/") or any(p in ("", ".", "..") for p in parts):
    raise ValueError(f"{value}: expected {PREFIX}PATH, PATH a file under the bundled "
                     f"sample data ({PACKAGE}/{DIRECTORY}), e.g. {PREFIX}qa/squad.json")
  return path(*parts)
