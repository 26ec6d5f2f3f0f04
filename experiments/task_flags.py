"""Flags shared by the span and multiple-choice fine-tuning entry points (run_squad.py,
run_race.py), with the released scripts' defaults; the experiment overrides they make of
them (`optimization_override`, `trainer_override`); the check of their paths; the full-disk
report around their `main` (`reporting_disk_full`, also used by run_classifier.py).

  define_task_flags(learning_rate=3e-5, lr_layer_decay_rate=0.75, train_steps=8000,
                    train_batch_size=48)
"""

import functools
from typing import Callable, Dict, Sequence

from absl import flags

from xlnet_tf import paths
from xlnet_tf.training import optimization
from xlnet_tf.training import run_directory

FLAGS = flags.FLAGS


def define_task_flags(learning_rate: float, lr_layer_decay_rate: float, train_steps: int,
                      train_batch_size: int) -> None:
  """The flags every task shares (with the task's own defaults where they differ)."""
  flags.DEFINE_string("model_dir", None, "The fine-tuned model goes to MODEL_DIR/final.")
  flags.DEFINE_string("output_dir", None, "Predictions and scores.")
  flags.DEFINE_string("init_checkpoint", None, "Pretrained weights (a directory in our "
                      "layout, with xlnet_config.json and spiece.model).")
  flags.DEFINE_string("spiece_model_file", None, "Default: the init_checkpoint's.")
  flags.DEFINE_string("model_config_path", None, "Default: the init_checkpoint's.")
  flags.DEFINE_bool("uncased", False, "Lower-case the text.")
  flags.DEFINE_integer("train_batch_size", train_batch_size, "Examples per update.")
  flags.DEFINE_float("learning_rate", learning_rate, "Peak learning rate.")
  flags.DEFINE_float("lr_layer_decay_rate", lr_layer_decay_rate,
                     "Layer m of L learns at lr * rate^(L-1-m); embeddings at lr * rate^L "
                     "(see --lr_layer_decay_mode).")
  flags.DEFINE_enum("lr_layer_decay_mode", "multiplier",
                    list(optimization.LR_LAYER_DECAY_MODES),
                    "multiplier: a real per-variable learning-rate multiplier. "
                    "released_gradient_scaling: as the released code, multiply the clipped "
                    "gradients of layer m by rate^(L-1-m) and nothing else (Adam mostly "
                    "cancels it); to rerun a published recipe as it was.")
  flags.DEFINE_integer("train_steps", train_steps, "Updates.")
  flags.DEFINE_integer("warmup_steps", 0, "Linear warmup updates.")
  flags.DEFINE_float("min_lr_ratio", 0.0, "Final learning rate / peak (linear decay).")
  flags.DEFINE_float("weight_decay", 0.0, "Decoupled weight decay.")
  flags.DEFINE_float("adam_epsilon", 1e-6, "Adam epsilon.")
  flags.DEFINE_enum("adam_bias_correction", "released",
                    list(optimization.ADAM_BIAS_CORRECTIONS),
                    "released: none with --weight_decay > 0 (the released AdamWeightDecay"
                    "Optimizer), Adam's with 0 (tf.train.AdamOptimizer); always; never.")
  flags.DEFINE_float("clip", 1.0, "Gradient clipping by global norm.")
  flags.DEFINE_float("dropout", 0.1, "Dropout.")
  flags.DEFINE_float("dropatt", 0.1, "Attention dropout.")
  flags.DEFINE_integer("seed", 0, "Seed.")


def optimization_override(**extra) -> Dict[str, object]:
  """task.optimization of the shared flags (plus `extra`, e.g. grad_accum_steps)."""
  return {"learning_rate": FLAGS.learning_rate, "warmup_steps": FLAGS.warmup_steps,
          "weight_decay": FLAGS.weight_decay, "adam_epsilon": FLAGS.adam_epsilon,
          "clip_norm": FLAGS.clip, "min_lr_ratio": FLAGS.min_lr_ratio,
          "lr_layer_decay_rate": FLAGS.lr_layer_decay_rate,
          "lr_layer_decay_mode": FLAGS.lr_layer_decay_mode,
          "adam_bias_correction": FLAGS.adam_bias_correction,
          "precision": FLAGS.precision, "seed": FLAGS.seed, **extra}


def trainer_override() -> Dict[str, object]:
  """The trainer section of the entry point's flags (each defines iterations, save_steps,
  max_checkpoints)."""
  return {"train_steps": FLAGS.train_steps, "steps_per_loop": FLAGS.iterations,
          "checkpoint_interval": FLAGS.save_steps, "max_to_keep": FLAGS.max_checkpoints}


def check_paths(tool: str, inputs: Dict[str, str], outputs: Sequence[str]) -> None:
  """Before any work: every given input path flag (name -> what it should be) exists and
  every output flag is a usable directory; otherwise exits with the flag and the path."""
  try:
    for name, kind in inputs.items():
      paths.check_input_path(FLAGS[name].value, f"--{name}", kind)
    for name in outputs:
      paths.check_output_dir(FLAGS[name].value, f"--{name}")
  except OSError as e:
    raise SystemExit(f"{tool}: {e}") from None


def reporting_disk_full(tool: str) -> Callable[[Callable], Callable]:
  """Decorates a wrapper's `main(argv)`: a full disk ends the run with one line, "TOOL: no
  space left on MOUNT while writing FILE" (`paths.reporting_disk_full`), after removing
  the temporaries of --model_dir (the run holds its lock)."""
  def decorate(main: Callable) -> Callable:
    @functools.wraps(main)
    def main_reporting_disk_full(argv):
      model_dir = FLAGS.model_dir
      temporaries = run_directory.temporaries(model_dir) if model_dir else ()
      try:
        with paths.reporting_disk_full(model_dir or FLAGS.output_dir or ".", temporaries):
          main(argv)
      except paths.DiskFullError as e:
        raise SystemExit(f"{tool}: {e}") from None
    return main_reporting_disk_full
  return decorate
