"""Flags shared by the span and multiple-choice fine-tuning entry points (run_squad.py,
run_race.py), with the released scripts' defaults. The experiment overrides made of them
(`optimization_override`, `trainer_override`), the check of their paths and the full-disk
report around a run are xlnet_tf.runs.released.flag_translation'.

  define_task_flags(learning_rate=3e-5, lr_layer_decay_rate=0.75, train_steps=8000,
                    train_batch_size=48)
"""

from absl import flags

from xlnet_tf.runs.released import flag_translation


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
                    list(flag_translation.LR_LAYER_DECAY_MODES),
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
                    list(flag_translation.ADAM_BIAS_CORRECTIONS),
                    "released: none with --weight_decay > 0 (the released AdamWeightDecay"
                    "Optimizer), Adam's with 0 (tf.train.AdamOptimizer); always; never.")
  flags.DEFINE_float("clip", 1.0, "Gradient clipping by global norm.")
  flags.DEFINE_float("dropout", 0.1, "Dropout.")
  flags.DEFINE_float("dropatt", 0.1, "Attention dropout.")
  flags.DEFINE_integer("seed", 0, "Seed.")
