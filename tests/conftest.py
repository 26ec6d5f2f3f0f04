"""Shared test setup: quiet TensorFlow, float32 policy per test, small configs."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import tensorflow as tf  # noqa: E402
import tf_keras  # noqa: E402


@pytest.fixture(autouse=True)
def _float32_policy_and_seed():
  """Each test starts in float32 with fixed seeds, whatever the previous test did."""
  tf_keras.mixed_precision.set_global_policy("float32")
  tf_keras.utils.set_random_seed(1234)
  yield
  tf_keras.mixed_precision.set_global_policy("float32")

