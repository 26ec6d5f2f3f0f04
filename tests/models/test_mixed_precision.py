"""The model under mixed_bfloat16 and mixed_float16 policies: finite, close to float32.

Tolerances are 8 units of each format's roundoff (bfloat16 2^-8, float16 2^-11) relative
to max(1, max |float32 output|); measured: bfloat16 ~1.1e-2, float16 ~1.1e-3 on this model
(2 layers; 3 layers gave ~1.1e-2 and ~1.8e-3).
"""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from helpers import max_rel_error
from helpers import pretraining_inputs
from helpers import small_config
from xlnet_tf import build_pretrainer
from xlnet_tf import released_names

TOLERANCE = {"mixed_bfloat16": 8 * 2.0 ** -8, "mixed_float16": 8 * 2.0 ** -11}
COMPUTE_DTYPE = {"mixed_bfloat16": tf.bfloat16, "mixed_float16": tf.float16}


# mixed_bfloat16 (the TPU policy) in the fast tier, mixed_float16 slow.
@pytest.mark.parametrize("policy", [
    policy if policy == "mixed_bfloat16" else pytest.param(policy, marks=pytest.mark.slow)
    for policy in sorted(TOLERANCE)])
def test_mixed_precision_matches_float32(policy):
  """Under the policy the variables stay float32, the activations and memories take the
  compute type, the logits float32; the outputs (with a memory) are finite and within
  TOLERANCE of float32's; the gradients are finite."""
  config = small_config(n_layer=2, d_model=32, d_head=16, d_inner=64, mem_len=4)
  reference = build_pretrainer(config)
  inputs = pretraining_inputs(np.random.default_rng(0), 2, 8, 4, 3, padding=2)
  feed = {k: tf.constant(v) for k, v in inputs.items()}
  expected = reference(dict(feed, mems=reference(feed)["new_mems"]))

  tf_keras.mixed_precision.set_global_policy(policy)
  model = build_pretrainer(config)
  source = released_names.released_variables(reference)
  for name, variable in released_names.released_variables(model).items():
    assert variable.dtype == tf.float32, name
    variable.assign(source[name])
  outputs = model(dict(feed, mems=model(feed)["new_mems"]))

  assert outputs["content"].dtype == COMPUTE_DTYPE[policy]
  assert outputs["new_mems"][0].dtype == COMPUTE_DTYPE[policy]
  assert outputs["logits"].dtype == tf.float32
  for key in ("content", "query", "logits"):
    value = tf.cast(outputs[key], tf.float32).numpy()
    assert np.all(np.isfinite(value)), key
    assert max_rel_error(value, expected[key]) <= TOLERANCE[policy], key

  with tf.GradientTape() as tape:
    loss = tf.reduce_mean(model(feed, training=True)["logits"])
  grads = tape.gradient(loss, model.trainable_variables)
  assert all(np.all(np.isfinite(g.numpy())) for g in grads if g is not None)
