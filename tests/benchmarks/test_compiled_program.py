"""The compiled (XLA) training step as a program: its size, and the figures
`experiments.profile_step --program` reports (XLA's cost analysis, largest buffers).

The tests that compile a training step with XLA, and the command lines (one interpreter for
all of them, `probe`), are slow; the cost-analysis readers are checked on small programs."""

import re

import numpy as np
import pytest
import tensorflow as tf
import tf_keras
from absl import flags

from experiments import benchmark_pretrain  # noqa: F401  (defines the flags the step reads)
from probe import probe
from xlnet_tf.benchmarks import step_speed
from xlnet_tf.benchmarks import profile_step
from xlnet_tf.layers.positional_encoding import RelativePositionalEncoding


@pytest.fixture(autouse=True)
def parsed_flags():
  if not flags.FLAGS.is_parsed():
    flags.FLAGS(["test"])


@pytest.mark.slow
def test_base_step_is_a_small_program_without_large_literals():
  """The base step (12 x 768, seq 512) used to carry its relative encoding as 24 literal
  copies of [1, 1024, 768] (80 MB); computed in the program it is a few MB."""
  config, feed, _, _ = step_speed.config_and_feed("base", 512, 85, 32000, 2)
  step = step_speed.compiled_train_step(config, feed, jit=True)
  size = profile_step.program_size(profile_step.hlo_program(step, feed))
  assert size["constants_over_64k"] == 0, size
  assert size["largest_constant_bytes"] <= 64 * 1024, size
  assert size["portable_program_bytes"] < 5_000_000, size


def test_encodings_in_a_compiled_program_equal_the_graphs():
  """Kept from folding, the encodings are computed by XLA: equal to TensorFlow's within
  float32 rounding, clamped and bi_data ones included. (The angles reach 1280 radians,
  where float32 numbers are 1.2e-4 apart: XLA's and Eigen's sines agree within 1e-5.)"""
  layer = RelativePositionalEncoding(d_model=64, attn_type="bi", bi_data=True, clamp_len=300)
  graph = tf.function(lambda: layer(qlen=512, klen=768))()
  compiled = tf.function(lambda: layer(qlen=512, klen=768), jit_compile=True)()
  assert compiled.shape == graph.shape == (2, 1280, 64)
  np.testing.assert_allclose(compiled.numpy(), graph.numpy(), rtol=0, atol=1e-5)


@pytest.mark.slow
def test_compiled_step_loss_equals_the_graph_step_and_traces_once():
  config, feed, _, _ = step_speed.config_and_feed("small", 128, 20, 1000)
  steps = {}
  for jit in (False, True):
    tf_keras.utils.set_random_seed(0)                # the same initial weights
    steps[jit] = step_speed.compiled_train_step(config, feed, jit=jit)
  losses = [(steps[False](feed).numpy(), steps[True](feed).numpy()) for _ in range(3)]
  for graph_loss, compiled_loss in losses:
    np.testing.assert_allclose(compiled_loss, graph_loss, rtol=2e-5)
  assert abs(losses[2][0] - losses[0][0]) > 1e-3       # it trained (warmup: lr 0 at step 0)
  assert steps[True].experimental_get_tracing_count() == 1


def test_cost_analysis_of_a_matmul_is_xlas_count():
  """XLA's cost analysis, as `compiled_cost` reads it, of one [64, 32] x [32, 16]
  product: 2 * 64 * 32 * 16 FLOPs, and its operands and result in bytes."""
  feed = {"a": tf.ones([64, 32]), "b": tf.ones([32, 16])}
  step = tf.function(lambda f: tf.matmul(f["a"], f["b"], name="product"), jit_compile=True)
  cost = profile_step.compiled_cost(profile_step.hlo_program(step, feed))
  assert cost["flops"] == 2 * 64 * 32 * 16
  assert cost["bytes_accessed"] == 4 * (64 * 32 + 32 * 16 + 64 * 16)


def test_largest_intermediates_and_traffic_name_the_tensorflow_op():
  x = tf.ones([256, 512])
  step = tf.function(lambda x: tf.reduce_sum(tf.exp(tf.matmul(x, x, transpose_b=True,
                                                              name="gram"), name="grow")),
                     jit_compile=True)
  cost = profile_step.compiled_cost(profile_step.hlo_program(step, x))
  largest = profile_step.largest_intermediates(cost["hlo_text"], 1)[0]
  size, shape, label, count = largest
  assert (size, shape.split("{")[0], label, count) == (4 * 256 * 256, "f32[256,256]", "gram", 1)
  rows, total = profile_step.traffic_by_op(cost["hlo_text"], 10)
  assert dict(rows)["gram"] == 4 * (256 * 512 * 2 + 256 * 256)
  assert total == pytest.approx(cost["bytes_accessed"], rel=0.01)


def test_shape_bytes():
  assert profile_step.shape_bytes("f32[2,512]{1,0}") == 4096
  assert profile_step.shape_bytes("(bf16[3,4]{1,0}, pred[7], s32[])") == 24 + 7 + 4


REPORT = ["--program", "--configs=small", "--modes=xla", "--seq_len=128", "--num_predict=20",
          "--n_token=1000", "--batch_size=2", "--top=3"]
BAD_FLAGS = [
    (["--program", "--modes=fp32"], "--program reports a compiled step: --modes must be xla "
                                    "or bf16_xla, got 'fp32'"),
    (["--program", "--configs=huge"], "--configs: unknown 'huge'; choose from ['base', "
                                      "'large', 'small']"),
    (["--program", "--modes=xla", "--batch_size=-1"], "--batch_size must be >= 0"),
]


@pytest.fixture(name="profile_step_runs", scope="module")
def _profile_step_runs():
  """`python -m experiments.profile_step` with REPORT's flags, then with each of BAD_FLAGS'
  (one interpreter, `probe`): command line -> its CompletedProcess."""
  cases = [REPORT] + [args for args, _ in BAD_FLAGS]
  return {tuple(args): run for args, run in zip(cases, probe("experiments.profile_step", cases))}


@pytest.mark.slow
def test_profile_step_program_prints_the_report(profile_step_runs):
  result = profile_step_runs[tuple(REPORT)]
  assert result.returncode == 0, result.stderr[-3000:]
  out = result.stdout
  assert "small, xla, batch 2: program" in out
  assert "0 constants over 64 KB" in out
  assert re.search(r"XLA cost analysis \(XLA:CPU, jaxlib\): [\d,.]+ GFLOP, [\d,.]+ GB accessed",
                   out)
  assert "largest intermediates" in out and "traffic" in out


@pytest.mark.slow
@pytest.mark.parametrize("args, message", BAD_FLAGS)
def test_profile_step_refuses_bad_flags(profile_step_runs, args, message):
  result = profile_step_runs[tuple(args)]
  assert result.returncode != 0
  assert message in result.stderr


@pytest.mark.slow
def test_recomputation_survives_a_newer_xla():
  """Compiled by jaxlib's XLA (newer than TensorFlow's; the GPU scripts' compiler), the
  step with recompute "layer" recomputes the forward pass (more FLOPs) and keeps less
  live than "none". With tf.recompute_grad's guard, which that XLA folds, it kept more."""
  costs = {}
  for recompute in ("none", "layer"):
    config, feed, _, _ = step_speed.config_and_feed("small", 128, 20, 1000, 2,
                                                    recompute)
    step = step_speed.compiled_train_step(config, feed, jit=True)
    costs[recompute] = profile_step.compiled_cost(profile_step.hlo_program(step, feed))
  assert costs["layer"]["flops"] > 1.2 * costs["none"]["flops"]
  assert costs["layer"]["temp_bytes"] < 0.8 * costs["none"]["temp_bytes"]
