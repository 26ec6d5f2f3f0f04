"""Bazel's main for the tests: runs pytest on one test file, exits with pytest's code.

tests/BUILD makes two py_test targets per tests/<package>/test_*.py:
  P/test_X       pytest_main.py --select=fast tests/P/test_X.py   (pytest -m "not slow")
  P/test_X_slow  pytest_main.py --select=slow tests/P/test_X.py   (pytest -m slow; "slow")
so `bazel test //...` runs every test of `make test` and `--test_tag_filters=-slow` those of
`make test-fast`. Usage: pytest_main.py [--select=fast|slow] FILE [PYTEST ARGS...]. With
--select a file whose tests the filter deselects entirely passes (pytest's exit code 5,
"no tests ran"): most files have no slow test, a few only slow ones.
"""

import os
import sys

NO_TESTS_COLLECTED = 5
MARKERS = {"fast": "not slow", "slow": "slow"}


def main(argv):
  select = [a for a in argv if a.startswith("--select=")]
  args = [a for a in argv if not a.startswith("--select=")]
  if select:
    # The marker expression is passed from here: Bazel would split "not slow" in `args`.
    args += ["-m", MARKERS[select[-1].split("=", 1)[1]]]
  try:
    import pytest  # pylint: disable=g-import-not-at-top
  except ImportError:
    sys.stderr.write(
        f"pytest_main: pytest is not importable by {sys.executable}: Bazel's Python must be "
        "the project's venv (third_party/bazel/venv_python.sh; run `make venv`).\n")
    return 1
  tmp = os.environ.get("TEST_TMPDIR")
  extra = ["-p", "no:cacheprovider", "-rfE"]
  if tmp:
    # pytest's tmp_path under Bazel's per-test directory, not a /tmp/pytest-of-* shared with
    # concurrent pytest runs.
    extra += ["--basetemp", os.path.join(tmp, "pytest")]
  xml = os.environ.get("XML_OUTPUT_FILE")
  if xml:
    extra += ["--junitxml", xml]
  code = int(pytest.main(args + extra))
  if code == NO_TESTS_COLLECTED and select:
    print(f"pytest_main: no test of this file is selected by {select[-1]} (passes)")
    return 0
  return code


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
