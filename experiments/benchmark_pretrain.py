r"""Pretraining step throughput: xlnet_tf vs TF Model Garden's XLNetBase and HuggingFace's
PyTorch XLNet, in one run (fp32, XLA, bf16).

Both models get the same pretraining batch (seq 512, 85 targets per row in a random
factorization order, two segments + <cls>), the same tied LM loss (query stream at the
targets · word embedding^T + bias, mean cross-entropy), the same AdamW with clipping, and
no dropout; Model Garden's network is `official.nlp.modeling.networks.XLNetBase` (two
streams, untied relative biases, gelu). Prints tokens/s, the ratio, and the achieved FLOP/s
of our step as a fraction of this CPU's measured fp32 matmul peak. HuggingFace's
`XLNetLMHeadModel` (PyTorch eager, fp32, AdamW, clipping) trains on the same inputs when
torch and transformers are installed; "vs best" is ours over the faster reference.

Modes: fp32 (graph), xla (jit_compile), and bf16 / bf16_xla: our model under the
`mixed_bfloat16` policy (bfloat16 matmuls, float32 weights and loss) against Model
Garden's float32 step with the same compilation (the comparison the TPU recipe makes).
`--peak_memory` runs every (model, mode) in a fresh process and reports the growth of its
peak resident memory (Linux VmHWM, reset just before the model is built; CPU TensorFlow
keeps no allocator statistics) over the memory at that moment, i.e. weights, optimizer
slots, the traced program and the activations of a training step.

It first prints the CPU's SIMD flags, its bfloat16 instructions (avx512_bf16, amx_bf16;
without them bfloat16 is emulated there and the bf16 figures say nothing about bfloat16
hardware) and the XLA_FLAGS in effect (they change XLA:CPU's code: e.g.
--xla_cpu_use_xnnpack=true). Where the compiled step's time goes:
`python -m experiments.profile_step --modes=xla` (or bf16_xla), the XLA program's
breakdown by TensorFlow op and by HLO instruction.

  python -m experiments.benchmark_pretrain                       # small and base
  python -m experiments.benchmark_pretrain --configs=base --modes=fp32,bf16 --peak_memory

The measuring is xlnet_tf/benchmarks/step_speed.py.
"""


from xlnet_tf import console

console.start()  # before TensorFlow is imported: the log levels of --verbosity

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from experiments import common_flags  # noqa: E402
from xlnet_tf.benchmarks import step_speed  # noqa: E402

FLAGS = flags.FLAGS
common_flags.define_step_flags(["small", "base"])
common_flags.define_flags(("steps",), notes={"steps": "timed, after a warm-up step; the "
                                                      "median is reported"}, steps=3)
_PEAK_MEMORY = flags.DEFINE_bool("peak_memory", False, "Also measure each step's peak "
                                 "memory in a process of its own.")
_CHILD = flags.DEFINE_string("child", None, "Internal: time one model ('ours' or 'mg') "
                             "in this process and print JSON.")


def main(argv):
  del argv
  step_speed.keep_freed_memory()   # as the trainer does under XLA; the graph is unaffected
  if _CHILD.value:
    [name], [mode] = FLAGS.configs, FLAGS.modes
    step_speed.child(_CHILD.value, name, mode, FLAGS.seq_len, FLAGS.num_predict,
                     FLAGS.n_token)
    return
  unknown = sorted(set(FLAGS.modes) - set(step_speed.MODES))
  if unknown:
    raise app.UsageError(f"--modes: unknown {unknown}; choose from {step_speed.MODES}")
  step_speed.benchmark(FLAGS.configs, FLAGS.modes, FLAGS.seq_len, FLAGS.num_predict,
                       FLAGS.n_token, FLAGS.steps, _PEAK_MEMORY.value)


if __name__ == "__main__":
  app.run(main)
