"""Helpers shared by the tests (small configs, the parity criterion, input builders)."""

import numpy as np

from xlnet_tf import synthetic
from xlnet_tf.configs import XLNetConfig


def small_config(**overrides) -> XLNetConfig:
  """A 2-layer model small enough for many forward passes on a CPU."""
  values = dict(n_layer=2, d_model=16, n_head=2, d_head=8, d_inner=32, n_token=50,
                dropout=0.0, dropatt=0.0)
  values.update(overrides)
  return XLNetConfig(**values)


def max_rel_error(actual, reference) -> float:
  """max |actual - reference| / max(1, max |reference|): the parity criterion."""
  actual, reference = np.asarray(actual), np.asarray(reference)
  assert actual.shape == reference.shape, (actual.shape, reference.shape)
  return float(np.max(np.abs(actual - reference)) / max(1.0, np.max(np.abs(reference))))



def pretraining_inputs(rng, batch, seqlen, num_predict, num_targets, vocab=50,
                       segments=True, padding=0):
  """Model inputs like a pretraining row (see xlnet_tf.synthetic), without the labels."""
  inputs = synthetic.random_pretraining_inputs(rng, batch, seqlen, num_predict, num_targets,
                                               vocab, segments, padding)
  del inputs["target"], inputs["target_mask"]
  return inputs
