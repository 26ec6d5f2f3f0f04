r"""Where a pretraining step's time goes: tf.profiler's per-op statistics of our step.

  python -m experiments.profile_step --configs=base --modes=fp32 --profile_steps=3
  python -m experiments.profile_step --configs=small --modes=xla      # the XLA program

For a compiled mode (xla, bf16_xla) the step is one TensorFlow op, so the table is made
from the XLA program itself: XLA:CPU traces every thunk (a dot, a fusion, a reduction) it
runs, and the optimized HLO (dumped to --logdir/hlo with --xla_dump_to, added to XLA_FLAGS
for this process) names each instruction's TensorFlow op (op_type / op_name metadata).
The tables give each thunk's self time summed over threads (thunks run concurrently, so
the sum can exceed the step), grouped by TensorFlow op (layers merged), by HLO kind, and
the largest instructions.

Runs the training step of `experiments.benchmark_pretrain` (same flags: --configs,
--modes, --seq_len, --num_predict, --n_token; the first config and mode are used) under
`tf.profiler.experimental`, converts the trace with TensorFlow's own profiler tools
("framework_op_stats", the table TensorBoard's profile plugin shows) and prints the op
types and ops with the largest self time. The raw trace stays in --logdir for TensorBoard.
The profiling is xlnet_tf/benchmarks/profile_step.py.
"""


from xlnet_tf import console

console.start()  # before TensorFlow is imported: the log levels of --verbosity

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from experiments import benchmark_pretrain  # noqa: E402,F401  (defines the model flags)
from xlnet_tf.benchmarks import profile_step  # noqa: E402

_LOGDIR = flags.DEFINE_string("logdir", "runs/profile", "Where the trace goes.")
_PROFILE_STEPS = flags.DEFINE_integer("profile_steps", 3, "Steps traced (after warm-up).")
_TOP = flags.DEFINE_integer("top", 15, "Rows printed per table.")


def main(argv):
  del argv
  values = flags.FLAGS
  profile_step.profile(values.configs[0], values.modes[0], values.seq_len, values.num_predict,
                       values.n_token, _LOGDIR.value, _PROFILE_STEPS.value, _TOP.value)


if __name__ == "__main__":
  app.run(main)
