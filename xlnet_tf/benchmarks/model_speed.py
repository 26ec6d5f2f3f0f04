"""Times the forward pass and one training step of XLNet (python -m experiments.benchmark_model,
`make bench`): pretraining inputs (random tokens, a random factorization order,
`num_predict` targets per row, two segments + <cls>) through our model, and through
HuggingFace's PyTorch XLNet at the same config in the same run when torch and transformers
are installed (ratios printed)."""

import os

import numpy as np
import tensorflow as tf
import tf_keras

from xlnet_tf import XLNetConfig
from xlnet_tf import build_pretrainer
from xlnet_tf.benchmarks.hf_steps import benchmark_hf
from xlnet_tf.benchmarks.timing import median_seconds
from xlnet_tf.synthetic import random_pretraining_inputs


def benchmark_ours(config, inputs, mems_shape, steps, jit_compile):
  model = build_pretrainer(config)
  feed = {k: tf.constant(v) for k, v in inputs.items()}
  if mems_shape:
    feed["mems"] = [tf.random.normal(mems_shape) for _ in range(config.n_layer)]
  labels = feed["target"]
  optimizer = tf_keras.optimizers.Adam(1e-4)

  @tf.function(jit_compile=jit_compile)
  def forward():
    return model(feed, training=False)["logits"]

  @tf.function(jit_compile=jit_compile)
  def train_step():
    with tf.GradientTape() as tape:
      logits = model(feed, training=True)["logits"]
      loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss

  return (median_seconds(lambda: forward().numpy(), steps),
          median_seconds(lambda: train_step().numpy(), steps))


def benchmark(batch_size: int, seq_len: int, num_predict: int, mem_len: int, n_layer: int,
              d_model: int, n_head: int, n_token: int, steps: int, jit_compile: bool,
              precision: str, compare_hf: bool) -> None:
  """Prints the tokens/s of our forward pass and training step (Keras policy `precision`,
  XLA with `jit_compile`), and HuggingFace's with `compare_hf` (if installed)."""
  tf_keras.mixed_precision.set_global_policy(precision)
  config = XLNetConfig(n_layer=n_layer, d_model=d_model, n_head=n_head,
                       d_head=d_model // n_head, d_inner=4 * d_model,
                       n_token=n_token, dropout=0.1, dropatt=0.1,
                       mem_len=mem_len)
  inputs = random_pretraining_inputs(np.random.default_rng(0), batch_size, seq_len,
                                     num_predict, vocab_size=n_token)
  mems_shape = [batch_size, mem_len, d_model] if mem_len else None
  tokens = batch_size * seq_len
  print(f"config: {config.n_layer} layers, d_model {config.d_model}, {config.n_head} heads, "
        f"seq {seq_len}, batch {batch_size}, {num_predict} targets/row, "
        f"mem {mem_len}; {os.cpu_count()} CPU cores; ours: {precision}"
        f"{', XLA' if jit_compile else ''}")
  rows = [("xlnet_tf", *benchmark_ours(config, inputs, mems_shape, steps,
                                       jit_compile))]
  if compare_hf:
    try:
      rows.append(("HF PyTorch (fp32)",
                   *benchmark_hf(config, inputs, mems_shape, steps)))
    except ImportError as e:
      print(f"HuggingFace comparison skipped: {e}")
  print(f"{'model':<20} {'forward tok/s':>14} {'train step tok/s':>17} {'fwd s':>7} "
        f"{'step s':>7}")
  for name, fwd, step in rows:
    print(f"{name:<20} {tokens / fwd:>14.0f} {tokens / step:>17.0f} {fwd:>7.2f} {step:>7.2f}")
  if len(rows) == 2:
    print(f"ratio xlnet_tf / HF: forward {rows[1][1] / rows[0][1]:.2f}x, "
          f"train step {rows[1][2] / rows[0][2]:.2f}x")
