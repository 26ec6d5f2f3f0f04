"""Weight initialisers of the released code."""

import tf_keras


def normal_initializer(stddev: float = 0.02):
  """normal(0, stddev), as the original `init_std`.

  Returns a NEW initializer each call: tf_keras gives identical values every time one
  unseeded initializer instance is reused, which would start q, k and v equal.
  """
  return tf_keras.initializers.RandomNormal(stddev=stddev)
