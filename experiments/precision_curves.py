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

from experiments import common_flags  # noqa: E402
from xlnet_tf import settings_record  # noqa: E402
from xlnet_tf.runs import precision_curves  # noqa: E402

FLAGS = flags.FLAGS
common_flags.define_flags(
    ("work_dir", "steps", "steps_per_loop", "seeds", "jit_compile"),
    notes={"work_dir": "and the results", "steps": "pretraining steps per run",
           "steps_per_loop": "one loss point each", "seeds": "per precision",
           "jit_compile": "what a TPU runs"},
    lower_bounds={"steps": 1, "steps_per_loop": 1},
    work_dir="runs/precision", steps=600, steps_per_loop=25, seeds=["0", "1", "2"])
flags.register_validator("seeds", lambda seeds: bool(seeds) and all(
    s.isdigit() for s in seeds), message="expected non-negative integers, e.g. 0,1,2")


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  try:
    precision_curves.train_curves(FLAGS.work_dir, FLAGS.steps, FLAGS.steps_per_loop,
                                  [int(s) for s in FLAGS.seeds], FLAGS.jit_compile)
  except settings_record.SettingsMismatch as e:
    raise SystemExit(f"precision_curves: {e}") from None


if __name__ == "__main__":
  app.run(main)
