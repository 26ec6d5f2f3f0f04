"""The start of the console commands that are absl programs (pyproject.toml's
[project.scripts]: xlnet-train, xlnet-convert, ...).

absl's --help shows the docstring and the flags of `__main__`, which for a console command
is pip's wrapper script (no docstring, no flags): `run` lends the entry module's docstring
and flags to it, then runs `main` as `python -m module` would. Flag values are not read
here.

`convert` starts `xlnet-convert`: TensorFlow's start-up messages (INFO and WARNING) are
silenced unless TF_CPP_MIN_LOG_LEVEL is set, before `xlnet_tf.convert` imports TensorFlow,
as the other commands' modules do in their first lines.
"""

import importlib
import os
import sys
from typing import Callable, Sequence

from absl import app
from absl import flags


def run(main: Callable[[Sequence[str]], None], module: str,
        flag_modules: Sequence[str] = ()) -> None:
  """app.run(main), with --help describing `module` (its __name__) and the flags defined by
  it and by `flag_modules` (module names, e.g. "official.common.flags")."""
  main_module = sys.modules["__main__"]
  if module != "__main__":                   # else `python -m module`: absl knows it
    values = flags.FLAGS
    for name in (module, *flag_modules):
      for flag in values.get_key_flags_for_module(name):
        values.register_key_flag_for_module(sys.argv[0], flag)
    if not main_module.__doc__:
      main_module.__doc__ = sys.modules[module].__doc__
  app.run(main)


def convert() -> None:
  """The console command `xlnet-convert` (pyproject.toml's [project.scripts])."""
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
  importlib.import_module("xlnet_tf.convert.__main__").run()
