r"""The Model Garden driver: one experiment, configured by YAML and overrides, trained,
evaluated, both, or exported.

  xlnet-train --experiment=xlnet/classification \
      --config_file=experiments/configs/classification_demo.yaml \
      --params_override="task.train_data.spiece_model=runs/demo/spiece/spiece.model,\
task.validation_data.spiece_model=runs/demo/spiece/spiece.model" \
      --mode=train_and_eval --model_dir=runs/demo_classifier

(`python -m experiments.train ...` works the same from a checkout.) The YAML files are
experiments/configs/ of a checkout, installed with the package too (its experiments/
directory); --config_file takes a path.

Flags are Model Garden's (`official.common.flags`): --experiment (xlnet/classification,
xlnet/squad, xlnet/race, xlnet/tagging, xlnet/pretraining), --config_file (repeatable,
applied in order), --params_override (YAML/JSON string or file, last),
--mode=train|eval|train_and_eval|export, --model_dir, --tpu; and --stop_at_step,
--export_dir. An unknown key in a file or an override is refused, naming the key; so
are a --config_file that is not YAML (by its line), empty or a directory, and an
override that is neither key=value pairs nor a file.

The modes and what of Model Garden is not used (and why): `xlnet_tf/tasks/train_lib.py`.
"""

from xlnet_tf import console

console.start()  # before TensorFlow is imported: the log levels of --verbosity

from absl import app  # noqa: E402
from absl import flags  # noqa: E402
from official.common import flags as tfm_flags  # noqa: E402
from official.core import train_utils  # noqa: E402

from experiments import common_flags  # noqa: E402
from xlnet_tf import paths  # noqa: E402
import xlnet_tf.tasks.all_tasks  # noqa: E402,F401  (registers every task and its experiment)
from xlnet_tf.tasks import train_lib  # noqa: E402
from xlnet_tf.training import run_directory  # noqa: E402

FLAGS = flags.FLAGS


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  try:
    train_lib.check_experiment_files(FLAGS.config_file, FLAGS.params_override)
    params = train_utils.parse_configuration(FLAGS)
  except (KeyError, ValueError) as e:         # a key typo (KeyError is a LookupError)
    raise SystemExit(f"train: {e}") from None
  except LookupError:                         # exp_factory: no such experiment
    raise SystemExit(f"train: --experiment {FLAGS.experiment!r} is not registered (each "
                     f"task module of xlnet_tf/tasks/ registers its own; all_tasks lists "
                     f"them)") from None
  try:
    with paths.reporting_disk_full(FLAGS.export_dir or FLAGS.model_dir,
                                   run_directory.temporaries(FLAGS.model_dir)):
      train_lib.run(params, FLAGS.mode, FLAGS.model_dir, FLAGS.stop_at_step,
                    FLAGS.export_dir)
  except (ValueError, OSError) + run_directory.RUN_STOPPED as e:   # ConfigError included
    raise SystemExit(f"train: {e}") from None


def define_flags():
  tfm_flags.define_flags()
  delattr(FLAGS, "mode")               # Model Garden's enum has no export mode
  flags.DEFINE_enum("mode", None, list(train_lib.MODES), "What to run: train, eval, "
                    "train_and_eval, or export (the SavedModel of MODEL_DIR/best or final).")
  common_flags.define_flags(
      ("stop_at_step", "export_dir"),
      notes={"stop_at_step": "the schedule stays that of trainer.train_steps",
             "export_dir": "--mode=export; default MODEL_DIR/export"})
  flags.mark_flags_as_required(["experiment", "mode", "model_dir"])


def run():
  """The console command `xlnet-train` (pyproject.toml's [project.scripts])."""
  define_flags()
  console.run(main, __name__, flag_modules=("official.common.flags",))


if __name__ == "__main__":
  run()
