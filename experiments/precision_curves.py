r"""Does bfloat16 pretraining learn like float32? Loss curves of short runs, side by side.

  python -m experiments.precision_curves --work_dir=runs/precision --steps=600
  python -m experiments.precision_curves --work_dir=runs/precision_xla --jit_compile

The demo's small model and records (xlnet_tf/runs/demo.py, demo size) are
pretrained for `--steps` with `--precision=float32` and with `bfloat16` (the
`mixed_bfloat16` policy: bfloat16 matmuls and activations, float32 weights, optimizer and
loss), each with every seed of `--seeds` (the seed sets the initial weights, dropout and
the shard order); `--jit_compile` runs the compiled forward and backward pass (the XLA
program a TPU runs). The run-to-run noise is the spread between seeds; the precision
effect is the difference of the precisions' means (a seed's dropout draws differ between
the two precisions, so runs are not paired). Writes WORK_DIR/results.json and
WORK_DIR/precision_curves.png (loss per loop of `--steps_per_loop` steps). The runs are
xlnet_tf/runs/precision_curves.py.
"""


from xlnet_tf import console

console.start()  # before TensorFlow is imported: the log levels of --verbosity

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from xlnet_tf import settings_record  # noqa: E402
from xlnet_tf.runs import precision_curves  # noqa: E402

_WORK_DIR = flags.DEFINE_string("work_dir", "runs/precision", "Where runs and results go.")
_STEPS = flags.DEFINE_integer("steps", 600, "Pretraining steps per run.", lower_bound=1)
_STEPS_PER_LOOP = flags.DEFINE_integer("steps_per_loop", 25, "Steps per loss point.",
                                       lower_bound=1)
_SEEDS = flags.DEFINE_list("seeds", ["0", "1", "2"], "Seeds per precision.")
flags.register_validator("seeds", lambda seeds: bool(seeds) and all(
    s.isdigit() for s in seeds), message="expected non-negative integers, e.g. 0,1,2")
_JIT = flags.DEFINE_bool("jit_compile", False, "Compile the forward and backward pass "
                         "with XLA (what a TPU runs).")


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  try:
    precision_curves.train_curves(_WORK_DIR.value, _STEPS.value, _STEPS_PER_LOOP.value,
                                  [int(s) for s in _SEEDS.value], _JIT.value)
  except settings_record.SettingsMismatch as e:
    raise SystemExit(f"precision_curves: {e}") from None


if __name__ == "__main__":
  app.run(main)
