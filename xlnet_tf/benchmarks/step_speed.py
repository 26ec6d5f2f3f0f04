r"""Pretraining step throughput: xlnet_tf vs TF Model Garden's XLNetBase and HuggingFace's
PyTorch XLNet, in one run (fp32, XLA, bf16): python -m experiments.benchmark_pretrain
(`make bench-pretrain`).

The method, the settings and what the figures mean are the command's
(`experiments/benchmark_pretrain.py`, its --help); this module holds the code it runs.
"""

import json
import os
import subprocess
import sys
from typing import Sequence

import numpy as np
import tensorflow as tf
import tf_keras

from xlnet_tf import XLNetConfig
from xlnet_tf import build_pretrainer
from xlnet_tf.benchmarks.hf_steps import benchmark_hf
from xlnet_tf.benchmarks.timing import bfloat16_description
from xlnet_tf.benchmarks.timing import cpu_description
from xlnet_tf.benchmarks.timing import median_seconds
from xlnet_tf.synthetic import random_pretraining_inputs
from xlnet_tf.training import host_memory
from xlnet_tf.training import optimization

CONFIGS = {   # name: (n_layer, d_model, n_head, d_inner, batch)
    "small": (4, 256, 4, 1024, 4),
    "base": (12, 768, 12, 3072, 2),
    "large": (24, 1024, 16, 4096, 1),
}
MODES = ("fp32", "xla", "bf16", "bf16_xla")
# The command that measures one (model, mode) in a process of its own (--peak_memory).
ENTRY_POINT = "experiments.benchmark_pretrain"


def keep_freed_memory() -> bool:
  """malloc keeps freed memory, as the trainer does under XLA (the graph is unaffected);
  whether it does (xlnet_tf.training.host_memory)."""
  return host_memory.keep_freed_memory()


def matmul_peak_gflops(n=2048, repeats=10, dtype=tf.float32, jit=False, batch=None,
                       depth=None):
  """This CPU's matmul rate (GFLOP/s) in `dtype`, the median of timed [n, n] x [n, n]
  (or [batch, n, depth] x [batch, depth, n]: attention's score products), as a TF graph
  or an XLA program."""
  depth = depth or n
  lead = [batch] if batch else []
  a = tf.cast(tf.random.normal(lead + [n, depth]), dtype)
  b = tf.cast(tf.random.normal(lead + [depth, n]), dtype)
  run = tf.function(lambda: tf.reduce_sum(tf.matmul(a, b)), jit_compile=jit)
  flops = 2 * n * n * depth * (batch or 1)
  return flops / (median_seconds(lambda: run().numpy(), repeats) * 1e9)


def xla_matmul_line() -> str:
  """What XLA:CPU makes of matmuls here, against TF's kernels: float32 and bfloat16
  [2048, 2048]^2, and the attention scores' batched [16, 512, 64] x [16, 64, 512]."""
  rates = {(dtype.name, jit): matmul_peak_gflops(dtype=dtype, jit=jit)
           for dtype in (tf.float32, tf.bfloat16) for jit in (False, True)}
  batched = [matmul_peak_gflops(n=512, depth=64, batch=16, repeats=20, jit=jit)
             for jit in (False, True)]
  return (f"XLA:CPU matmuls (GFLOP/s, TF graph -> XLA): float32 {rates['float32', False]:.0f}"
          f" -> {rates['float32', True]:.0f}, bfloat16 {rates['bfloat16', False]:.0f} -> "
          f"{rates['bfloat16', True]:.0f} (XLA's bfloat16 / float32: "
          f"{rates['bfloat16', True] / rates['float32', True]:.2f}), attention-shaped "
          f"batched float32 {batched[0]:.0f} -> {batched[1]:.0f}")


def step_flops(config: XLNetConfig, batch: int, seq: int, predict: int) -> float:
  """Matmul FLOPs of one training step (forward x 3: backward is about twice the forward).

  Per layer: q/k/v/o projections of the T content rows, q/o of the P query rows, the
  positional projection of R = 2T relative positions, attention scores and values for
  both streams (content + position terms), and the feed-forward for T + P rows; plus the
  LM head on the P query rows.
  """
  d, inner, hd = config.d_model, config.d_inner, config.n_head * config.d_head
  t, p, r = seq, predict, 2 * seq
  per_layer = (2 * t * d * hd * 4 + 2 * p * d * hd * 2 + 2 * r * d * hd
               + (t + p) * (2 * t * hd * 2 + 2 * r * hd)         # ac + bd, then probs · v
               + (t + p) * 2 * 2 * d * inner)
  forward = batch * (config.n_layer * per_layer + 2 * p * d * config.n_token)
  return 3.0 * forward


def make_train_step(model_fn, variables, embedding_fn, lm_bias, optimizer, jit):
  def step(inputs):
    with tf.GradientTape() as tape:
      hidden = model_fn(inputs)                                          # [B, P, D]
      embedding = tf.cast(embedding_fn(), hidden.dtype)        # bf16 policy: bf16 matmul
      logits = tf.cast(tf.einsum("bpd,vd->bpv", hidden, embedding), tf.float32) + lm_bias
      loss = tf.reduce_sum(tf.nn.sparse_softmax_cross_entropy_with_logits(
          labels=inputs["target"], logits=logits) * inputs["target_mask"])
      loss /= tf.reduce_sum(inputs["target_mask"])
    grads = tape.gradient(loss, variables)
    grads, _ = tf.clip_by_global_norm(grads, 1.0)
    optimizer.apply_gradients(zip(grads, variables))
    return loss
  return tf.function(step, jit_compile=jit)


# The encoder inputs of our step.
OUR_INPUTS = ("input_ids", "segment_ids", "input_mask", "perm_mask", "target_mapping")


def compiled_train_step(config, feed, jit):
  """Our training step (tf.function over a feed like `feed`) with its model and the
  optimizer's slots built: ready to run or to be lowered (`experimental_get_compiler_ir`)
  without running. The encoder runs in training mode, so `config.recompute` and dropout
  apply."""
  model = build_pretrainer(config)
  encoder = model.encoder
  optimizer = optimization.build_optimizer(1e-4, 1000, 10)
  step = make_train_step(
      lambda f: encoder({k: f[k] for k in OUR_INPUTS}, training=True)["query"],
      model.trainable_variables, lambda: encoder.word_embedding, model.lm_head.bias,
      optimizer, jit)
  # The slots now, as the first step would: lowering a step must not create variables.
  inner = getattr(optimizer, "inner_optimizer", optimizer)
  inner._create_all_weights(model.trainable_variables)  # pylint: disable=protected-access
  return step


def ours(config, feed, jit):
  step = compiled_train_step(config, feed, jit)
  return lambda: step(feed).numpy()


def model_garden(config, feed, jit):
  from official.nlp.modeling import networks  # pylint: disable=g-import-not-at-top
  network = networks.XLNetBase(
      vocab_size=config.n_token, num_layers=config.n_layer, hidden_size=config.d_model,
      num_attention_heads=config.n_head, head_size=config.d_head,
      inner_size=config.d_inner, dropout_rate=0.0, attention_dropout_rate=0.0,
      attention_type="bi", bi_data=False,
      initializer=tf_keras.initializers.RandomNormal(stddev=0.02), two_stream=True,
      tie_attention_biases=False, inner_activation="gelu")
  lm_bias = tf.Variable(tf.zeros([config.n_token]), name="lm_bias")
  masked = tf.reduce_max(feed["target_mapping"], axis=1)                 # [B, T]

  def run(f):
    output, _ = network(input_ids=f["input_ids"], segment_ids=f["segment_ids"],
                        input_mask=f["input_mask"], state=None,
                        permutation_mask=f["perm_mask"], target_mapping=f["target_mapping"],
                        masked_tokens=masked)
    return output

  run(feed)                                                           # create the weights
  optimizer = optimization.build_optimizer(1e-4, 1000, 10)
  step = make_train_step(run, network.trainable_variables + [lm_bias],
                         network.get_embedding_lookup_table, lm_bias, optimizer, jit)
  return lambda: step(feed).numpy()


def config_and_feed(name, seq_len, num_predict, n_token, batch=None, recompute="none"):
  """(config, the feed as tensors, batch, the feed as arrays) of CONFIGS[name] (its batch
  unless `batch` is given; no dropout; `recompute` the config's)."""
  n_layer, d_model, n_head, d_inner, default_batch = CONFIGS[name]
  batch = batch or default_batch
  config = XLNetConfig(n_layer=n_layer, d_model=d_model, n_head=n_head,
                       d_head=d_model // n_head, d_inner=d_inner, n_token=n_token,
                       dropout=0.0, dropatt=0.0, recompute=recompute)
  arrays = random_pretraining_inputs(np.random.default_rng(0), batch, seq_len,
                                     num_predict, vocab_size=n_token)
  arrays["input_mask"] = np.zeros([batch, seq_len], np.float32)
  return config, {k: tf.constant(v) for k, v in arrays.items()}, batch, arrays


def timed_step(model_name, config, feed, mode):
  """A callable running one training step of `model_name` in `mode` (weights built)."""
  bf16 = mode.startswith("bf16") and model_name == "ours"
  tf_keras.mixed_precision.set_global_policy("mixed_bfloat16" if bf16 else "float32")
  try:
    build = ours if model_name == "ours" else model_garden
    return build(config, feed, jit=mode.endswith("xla"))
  finally:
    tf_keras.mixed_precision.set_global_policy("float32")


def peak_memory_mib(name, model_name, mode, seq_len, num_predict, n_token):
  """Peak RSS growth (MiB) of one step of `model_name` in a fresh process."""
  result = subprocess.run(
      [sys.executable, "-m", ENTRY_POINT, f"--child={model_name}",
       f"--configs={name}", f"--modes={mode}", f"--seq_len={seq_len}",
       f"--num_predict={num_predict}", f"--n_token={n_token}"],
      capture_output=True, text=True, check=True)
  return json.loads(result.stdout.strip().splitlines()[-1])["peak_growth_mib"]


def _status_kib(field):
  with open("/proc/self/status") as f:
    return next(int(line.split()[1]) for line in f if line.startswith(field + ":"))


def child(model_name, name, mode, seq_len, num_predict, n_token):
  """Prints (JSON) the peak memory growth of two steps of `model_name` in this process."""
  config, feed, _, _ = config_and_feed(name, seq_len, num_predict, n_token)
  with open("/proc/self/clear_refs", "w") as f:   # Linux: reset the peak (VmHWM) to now
    f.write("5")
  before = _status_kib("VmRSS")
  step = timed_step(model_name, config, feed, mode)
  step()
  step()
  print(json.dumps({"peak_growth_mib": (_status_kib("VmHWM") - before) / 1024}))


def benchmark(configs: Sequence[str], modes: Sequence[str], seq_len: int, num_predict: int,
              n_token: int, steps: int, peak_memory: bool) -> None:
  """Prints the CPU, its matmul peak and per config and mode the tokens/s of ours, Model
  Garden's and HuggingFace's steps (with `peak_memory`, each step's peak memory)."""
  peak = matmul_peak_gflops()
  peak_bf16 = matmul_peak_gflops(dtype=tf.bfloat16)
  print(f"{cpu_description()}; {bfloat16_description()}; load average "
        f"{os.getloadavg()[0]:.2f}")
  print(f"XLA_FLAGS={os.environ.get('XLA_FLAGS', '')!r} (XLA modes); malloc keeps freed "
        f"memory (xlnet_tf.training.host_memory): {host_memory.keep_freed_memory()}")
  print(f"this CPU ({os.cpu_count()} cores): matmul peak fp32 {peak:.0f} GFLOP/s, bfloat16 "
        f"{peak_bf16:.0f} GFLOP/s (2048 x 2048, TF)")
  if any(mode.endswith("xla") for mode in modes):
    print(xla_matmul_line())
  print(f"{'config':<7}{'mode':<9}{'batch':>6}{'ours tok/s':>12}{'MG fp32 tok/s':>15}"
        f"{'HF fp32 tok/s':>15}{'vs MG':>7}{'vs best':>8}{'ours GFLOP/s':>14}"
        f"{'% of fp32 peak':>16}" + (f"{'ours MiB':>10}{'MG MiB':>8}"
                                     if peak_memory else ""))
  for name in configs:
    config, feed, batch, arrays = config_and_feed(name, seq_len, num_predict, n_token)
    tokens = batch * seq_len
    try:
      hf_s = benchmark_hf(config, arrays, None, steps, clip_norm=1.0)[1]
    except ImportError:
      hf_s = float("inf")                          # torch / transformers not installed
    mg_seconds = {}                               # by compilation: MG always runs float32
    for mode in modes:
      ours_s = median_seconds(timed_step("ours", config, feed, mode), steps)
      mg_mode = "xla" if mode.endswith("xla") else "fp32"
      if mg_mode not in mg_seconds:
        mg_seconds[mg_mode] = median_seconds(timed_step("mg", config, feed, mg_mode),
                                             steps)
      mg_s = mg_seconds[mg_mode]
      gflops = step_flops(config, batch, seq_len, num_predict) / ours_s / 1e9
      line = (f"{name:<7}{mode:<9}{batch:>6}{tokens / ours_s:>12.0f}{tokens / mg_s:>15.0f}"
              f"{tokens / hf_s:>15.0f}{mg_s / ours_s:>6.2f}x"
              f"{min(mg_s, hf_s) / ours_s:>7.2f}x{gflops:>14.0f}{100 * gflops / peak:>15.0f}%")
      if peak_memory:
        line += (f"{peak_memory_mib(name, 'ours', mode, seq_len, num_predict, n_token):>10.0f}"
                 f"{peak_memory_mib(name, 'mg', mg_mode, seq_len, num_predict, n_token):>8.0f}")
      print(line, flush=True)
