# `python -m xlnet_tf.convert`: the command xlnet-convert, whose flags and main are
# experiments/convert.py (no docstring here: --help shows that module's).

from xlnet_tf import console

console.start()  # before TensorFlow is imported: the log levels of --verbosity

from experiments import convert  # noqa: E402

if __name__ == "__main__":
  convert.run()
