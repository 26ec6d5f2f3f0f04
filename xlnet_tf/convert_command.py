"""The console command `xlnet-convert` (pyproject.toml's [project.scripts]): the command
line of `xlnet_tf.convert.__main__` (its docstring and flags are xlnet-convert's --help),
started quiet.

The console script cannot point at `xlnet_tf.convert.__main__` itself: importing that
module imports the package `xlnet_tf.convert` first, and the package imports TensorFlow,
before any line of `__main__` runs. This module sets the log levels (`console.start`),
then imports the command.
"""

from xlnet_tf import console

console.start()  # before TensorFlow is imported: the log levels of --verbosity

from xlnet_tf.convert import __main__ as convert_main  # noqa: E402


def run() -> None:
  """`xlnet-convert`: `xlnet_tf.convert.__main__.run`."""
  convert_main.run()
