"""The start of the console commands (pyproject.toml's [project.scripts]: xlnet-train,
xlnet-convert, ...) and of the `python -m` entry points (experiments/, data_prep/).

Quiet by default: `start()`, called by each command's module before it imports TensorFlow,
sets the log levels from absl's --verbosity flag of the command line. Without --verbosity
only warnings and errors of Python's logging are shown (absl's `app.run` would show INFO)
and only errors of TensorFlow's C++ code (TF_CPP_MIN_LOG_LEVEL "2"; a value already in the
environment is kept): none of TensorFlow's start-up lines (oneDNN, cpu_feature_guard, CUDA
stubs, ...). With --verbosity=N both show the lines of absl level N and above: 0 (INFO)
everything, -1 (WARNING) warnings and errors, -2 (ERROR) errors, -3 (FATAL) fatal errors.

  from xlnet_tf import console

  console.start()      # before TensorFlow is imported

  import tensorflow as tf  # noqa: E402

`start` also makes TensorFlow's own Keras the one this package uses (TF_USE_LEGACY_KERAS
"1", tf_keras; a value already in the environment is kept): otherwise `import tensorflow`
loads Keras 3 (and scikit-learn through it), which no command uses, for ~1.3 s of every
start.

absl's --help shows the docstring and the flags of `__main__`, which for a console command
is pip's wrapper script (no docstring, no flags): `run` lends the entry module's docstring
and flags to it, then runs `main` as `python -m module` would. Flag values are not read
here.

This module imports neither TensorFlow nor anything of xlnet_tf, so that every command's
module can import it first.
"""

import os
import sys
from typing import Callable, Optional, Sequence

from absl import app
from absl import flags
from absl import logging

LOG_LEVEL_VARIABLE = "TF_CPP_MIN_LOG_LEVEL"
QUIET_LOG_LEVEL = "2"                   # C++ errors only
KERAS_VARIABLE = "TF_USE_LEGACY_KERAS"  # "1": tf.keras is tf_keras, Keras 3 is not loaded


def verbosity(argv: Sequence[str]) -> Optional[int]:
  """The value of absl's --verbosity (or -v) in a command line (argv[0] the program; a
  --flagfile read as absl reads it); None when it is not given or not an integer (absl
  reports that when it parses the flags)."""
  if not argv:
    return None
  values = flags.FlagValues()
  flags.DEFINE_integer("verbosity", None, "absl's logging verbosity.", short_name="v",
                       flag_values=values)
  try:
    values(list(argv), known_only=True)
  except flags.Error:
    return None
  return values.verbosity


def log_level(argv: Sequence[str]) -> Optional[str]:
  """TF_CPP_MIN_LOG_LEVEL for a command line: the C++ lines of --verbosity's level and
  above (0 INFO: "0", -1 WARNING: "1", -2 ERROR: "2", -3 FATAL: "3"); None without
  --verbosity."""
  value = verbosity(argv)
  if value is None:
    return None
  return str(min(3, max(0, -value)))


def _warnings_unless_asked() -> None:
  """After `app.run` parsed the flags: WARNING, not absl's INFO, without --verbosity."""
  if not flags.FLAGS["verbosity"].present:
    logging.set_verbosity(logging.WARNING)


def start(argv: Optional[Sequence[str]] = None) -> None:
  """Sets the log levels for the command line `argv` (default sys.argv) and tf_keras as
  TensorFlow's Keras (see the module docstring). Call it before TensorFlow is imported:
  TensorFlow reads both variables once, when it loads."""
  os.environ.setdefault(KERAS_VARIABLE, "1")
  level = log_level(sys.argv if argv is None else argv)
  if level is None:
    os.environ.setdefault(LOG_LEVEL_VARIABLE, QUIET_LOG_LEVEL)
  else:
    os.environ[LOG_LEVEL_VARIABLE] = level
  app.call_after_init(_warnings_unless_asked)


def run(main: Callable[[Sequence[str]], None], module: str,
        flag_modules: Sequence[str] = ()) -> None:
  """app.run(main), with --help describing `module` (its __name__) and the flags defined by
  it and by `flag_modules` (module names, e.g. "official.common.flags"); Python's logging
  shows warnings and errors unless --verbosity is given (as after `start`)."""
  main_module = sys.modules["__main__"]
  if module != "__main__":                   # else `python -m module`: absl knows it
    values = flags.FLAGS
    for name in (module, *flag_modules):
      for flag in values.get_key_flags_for_module(name):
        values.register_key_flag_for_module(sys.argv[0], flag)
    if not main_module.__doc__:
      main_module.__doc__ = sys.modules[module].__doc__
  app.call_after_init(_warnings_unless_asked)
  app.run(main)
