r"""Where a pretraining step's time goes: tf.profiler's per-op statistics of our step; or,
with --program, what the compiled step is: its size, XLA's cost analysis (FLOPs, bytes
accessed) and its largest intermediate tensors, without running it.

  python -m experiments.profile_step --configs=base --modes=fp32 --profile_steps=3
  python -m experiments.profile_step --configs=small --modes=xla      # the XLA program
  python -m experiments.profile_step --program --configs=base --modes=xla --batch_size=16
  python -m experiments.profile_step --program --configs=base --modes=xla --recompute=layer

--program (compiled modes only) lowers the step to the HLO TensorFlow gives XLA and prints
the program's size (bytes, instructions, constants over 64 KB); XLA's cost analysis of it
compiled for this CPU by JAX's XLA client (jaxlib, in requirements-test.txt: TensorFlow has
no Python API for it); the largest buffers the optimized program writes, by TensorFlow op
(layers merged); and the bytes each op's stored buffers read and write.

For a compiled mode (xla, bf16_xla) the step is one TensorFlow op, so the table is made
from the XLA program itself: XLA:CPU traces every thunk (a dot, a fusion, a reduction) it
runs, and the optimized HLO (dumped to --logdir/hlo with --xla_dump_to, added to XLA_FLAGS
for this process) names each instruction's TensorFlow op (op_type / op_name metadata).
The tables give each thunk's self time summed over threads (thunks run concurrently, so
the sum can exceed the step), grouped by TensorFlow op (layers merged), by HLO kind, and
the largest instructions.

Runs the training step of `experiments.benchmark_pretrain` (the same flags, defined by
common_flags.py: --configs, --modes, --seq_len, --num_predict, --n_token; the first config
and mode are used) under
`tf.profiler.experimental`, converts the trace with TensorFlow's own profiler tools
("framework_op_stats", the table TensorBoard's profile plugin shows) and prints the op
types and ops with the largest self time. The raw trace stays in --logdir for TensorBoard.
The profiling is xlnet_tf/benchmarks/profile_step.py.
"""


from xlnet_tf import console

console.start()  # before TensorFlow is imported: the log levels of --verbosity

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from experiments import common_flags  # noqa: E402
from xlnet_tf.benchmarks import profile_step  # noqa: E402
from xlnet_tf.benchmarks import step_speed  # noqa: E402

FLAGS = flags.FLAGS
common_flags.define_step_flags(["small", "base"])
_LOGDIR = flags.DEFINE_string("logdir", "runs/profile", "Where the trace goes.")
_PROFILE_STEPS = flags.DEFINE_integer("profile_steps", 3, "Steps traced (after warm-up).")
_TOP = flags.DEFINE_integer("top", 15, "Rows printed per table.")
_PROGRAM = flags.DEFINE_bool("program", False, "Report the compiled program (size, XLA's "
                             "cost analysis, largest intermediates) instead of timing it.")
common_flags.define_flags(("batch_size",), notes={"batch_size": "with --program; 0: the "
                                                                "config's benchmark batch"},
                          batch_size=0)
common_flags.define_network_flags(("recompute",),
                                  notes={"recompute": "with --program: the step's"})


def main(argv):
  del argv
  name, mode = FLAGS.configs[0], FLAGS.modes[0]
  if name not in step_speed.CONFIGS:
    raise app.UsageError(f"--configs: unknown {name!r}; choose from "
                         f"{sorted(step_speed.CONFIGS)}")
  if mode not in step_speed.MODES:
    raise app.UsageError(f"--modes: unknown {mode!r}; choose from {step_speed.MODES}")
  if _PROGRAM.value and not mode.endswith("xla"):
    raise app.UsageError(f"--program reports a compiled step: --modes must be xla or "
                         f"bf16_xla, got {mode!r}")
  if not _PROGRAM.value and (FLAGS.batch_size or FLAGS.recompute != "none"):
    raise app.UsageError("--batch_size and --recompute apply only with --program")
  if FLAGS.batch_size < 0:
    raise app.UsageError(f"--batch_size must be >= 0 (0: the config's), got "
                         f"{FLAGS.batch_size}")
  if _PROGRAM.value:
    profile_step.program_report(name, mode, FLAGS.seq_len, FLAGS.num_predict, FLAGS.n_token,
                                FLAGS.batch_size, _TOP.value, FLAGS.recompute)
    return
  profile_step.profile(name, mode, FLAGS.seq_len, FLAGS.num_predict, FLAGS.n_token,
                       _LOGDIR.value, _PROFILE_STEPS.value, _TOP.value)


if __name__ == "__main__":
  app.run(main)
