r"""Activation memory of the compiled pretraining step, recompute "none" vs "layer"
(`XLNetConfig.recompute`), from XLA's buffer assignment.

For each config (base: 12 x 768, 12 heads, d_inner 3072; large: 24 x 1024, 16 heads,
d_inner 4096), precision (fp32; bf16: the mixed_bfloat16 policy) and recompute mode, the
XLA training step of `xlnet_tf.benchmarks.step_speed` (seq --seq_len, --num_predict
targets, vocabulary --n_token, AdamW, no dropout, bi_data off) is compiled, not run, at
each of --batches in a fresh process; XLA's buffer assignment gives its peak (weights,
optimizer slots, batch, updated weights and the peak of the temporaries). The fit
peak(B) = fixed + B * per_sequence gives the largest batch within 16, 40 and 80 GiB.
These are XLA:CPU's figures: on a GPU the allocator adds fragmentation and cuDNN/cuBLAS
workspace. Compiling large takes minutes per point on a small CPU.

  python -m experiments.step_memory                         # base and large, fp32 and bf16
  python -m experiments.step_memory --configs=small --seq_len=128 --precisions=fp32

The measuring is xlnet_tf/benchmarks/step_memory.py.
"""

from xlnet_tf import console

console.start()  # before TensorFlow is imported: the log levels of --verbosity

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from experiments import common_flags  # noqa: E402
from xlnet_tf.benchmarks import step_speed  # noqa: E402
from xlnet_tf.benchmarks import step_memory  # noqa: E402

FLAGS = flags.FLAGS
common_flags.define_step_flags(step_memory.CONFIG_NAMES, modes=False)
common_flags.define_flags(("precisions",), precisions=list(step_memory.PRECISIONS))
_BATCHES = flags.DEFINE_list("batches", ["1", "2"], "Two or more batch sizes (the fit "
                             "takes the two smallest).")


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  for name, known in (("configs", step_speed.CONFIGS), ("precisions", step_memory.PRECISIONS)):
    unknown = sorted(set(FLAGS[name].value) - set(known))
    if unknown:
      raise app.UsageError(f"--{name}: unknown {unknown}; choose from {sorted(known)}")
  if not all(b.strip().isdigit() for b in _BATCHES.value):
    raise app.UsageError(f"--batches: give two or more positive integers, got "
                         f"{_BATCHES.value}")
  batches = sorted({int(b) for b in _BATCHES.value})
  if len(batches) < 2 or batches[0] < 1:
    raise app.UsageError(f"--batches: give two or more positive sizes, got {_BATCHES.value}")
  step_memory.benchmark(FLAGS.configs, FLAGS.precisions, batches, FLAGS.seq_len,
                        FLAGS.num_predict, FLAGS.n_token)


if __name__ == "__main__":
  app.run(main)
