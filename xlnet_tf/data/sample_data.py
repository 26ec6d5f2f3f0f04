"""Where the bundled sample data is: `data_prep/sample_data/` (Moby-Dick, the movie-review
sentiment set, a Brown corpus subset, QA samples; see its README.md).

The directory is package data of the `data_prep` package, located through
`importlib.resources`, so it is found the same way in a checkout and in an installed wheel
(`pip install .` ships `data_prep` with its `sample_data/`). Nothing is read here; a missing
file is reported by the reader that opens it, naming the path.
"""

import importlib.resources
import os

PACKAGE = "data_prep"
DIRECTORY = "sample_data"


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
