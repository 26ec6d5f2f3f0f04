r"""Times the forward pass and one training step of XLNet; prints tokens/s.

Pretraining inputs (random tokens, a random factorization order, `num_predict` targets per
row, two segments + <cls>) through our model, and through HuggingFace's PyTorch XLNet at
the same config in the same run when torch and transformers are installed (ratios printed).

  python -m experiments.benchmark_model                       # base: 12 layers, 768, seq 512
  python -m experiments.benchmark_model --jit_compile --batch_size 4 --mem_len 384
"""

import os

from xlnet_tf import console

console.start()  # before TensorFlow is imported: the log levels of --verbosity

from absl import app  # noqa: E402
from absl import flags  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tf_keras  # noqa: E402

from experiments.hf_steps import benchmark_hf  # noqa: E402
from experiments.timing import median_seconds  # noqa: E402
from xlnet_tf import XLNetConfig  # noqa: E402
from xlnet_tf import build_pretrainer  # noqa: E402
from xlnet_tf.synthetic import random_pretraining_inputs  # noqa: E402

_BATCH = flags.DEFINE_integer("batch_size", 2, "Rows per step.")
_SEQ = flags.DEFINE_integer("seq_len", 512, "Tokens per row.")
_PREDICT = flags.DEFINE_integer("num_predict", 85, "Targets per row (query stream rows).")
_MEM = flags.DEFINE_integer("mem_len", 0, "Memory length (memory from a previous step).")
_LAYERS = flags.DEFINE_integer("n_layer", 12, "Layers.")
_D_MODEL = flags.DEFINE_integer("d_model", 768, "Hidden size.")
_HEADS = flags.DEFINE_integer("n_head", 12, "Heads (d_head = d_model / n_head).")
_VOCAB = flags.DEFINE_integer("n_token", 32000, "Vocabulary size.")
_STEPS = flags.DEFINE_integer("steps", 5, "Timed steps (after one warm-up step); the median "
                              "is reported.")
_JIT = flags.DEFINE_bool("jit_compile", False, "Compile our steps with XLA.")
_PRECISION = flags.DEFINE_enum("precision", "float32",
                               ["float32", "mixed_bfloat16", "mixed_float16"],
                               "Keras policy for our model.")
_COMPARE_HF = flags.DEFINE_bool("compare_hf", True,
                                "Also time HuggingFace's PyTorch XLNet (if installed).")


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


def main(argv):
  del argv
  tf_keras.mixed_precision.set_global_policy(_PRECISION.value)
  config = XLNetConfig(n_layer=_LAYERS.value, d_model=_D_MODEL.value, n_head=_HEADS.value,
                       d_head=_D_MODEL.value // _HEADS.value, d_inner=4 * _D_MODEL.value,
                       n_token=_VOCAB.value, dropout=0.1, dropatt=0.1,
                       mem_len=_MEM.value)
  inputs = random_pretraining_inputs(np.random.default_rng(0), _BATCH.value, _SEQ.value,
                                     _PREDICT.value, vocab_size=_VOCAB.value)
  mems_shape = [_BATCH.value, _MEM.value, _D_MODEL.value] if _MEM.value else None
  tokens = _BATCH.value * _SEQ.value
  print(f"config: {config.n_layer} layers, d_model {config.d_model}, {config.n_head} heads, "
        f"seq {_SEQ.value}, batch {_BATCH.value}, {_PREDICT.value} targets/row, "
        f"mem {_MEM.value}; {os.cpu_count()} CPU cores; ours: {_PRECISION.value}"
        f"{', XLA' if _JIT.value else ''}")
  rows = [("xlnet_tf", *benchmark_ours(config, inputs, mems_shape, _STEPS.value,
                                       _JIT.value))]
  if _COMPARE_HF.value:
    try:
      rows.append(("HF PyTorch (fp32)",
                   *benchmark_hf(config, inputs, mems_shape, _STEPS.value)))
    except ImportError as e:
      print(f"HuggingFace comparison skipped: {e}")
  print(f"{'model':<20} {'forward tok/s':>14} {'train step tok/s':>17} {'fwd s':>7} "
        f"{'step s':>7}")
  for name, fwd, step in rows:
    print(f"{name:<20} {tokens / fwd:>14.0f} {tokens / step:>17.0f} {fwd:>7.2f} {step:>7.2f}")
  if len(rows) == 2:
    print(f"ratio xlnet_tf / HF: forward {rows[1][1] / rows[0][1]:.2f}x, "
          f"train step {rows[1][2] / rows[0][2]:.2f}x")


if __name__ == "__main__":
  app.run(main)
