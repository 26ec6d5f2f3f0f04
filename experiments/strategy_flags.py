"""The distribution-strategy flags shared by the training entry points; the strategy
itself is built (and the devices checked) by `xlnet_tf.tasks.train_lib.strategy_of` from
the experiment's runtime (`xlnet_tf.runs.released.flag_translation.runtime_override`)."""

from absl import flags

from xlnet_tf.runs.released import flag_translation

flags.DEFINE_enum("strategy", "default", list(flag_translation.STRATEGIES),
                  "Distribution strategy: one device (default), mirrored (GPUs), "
                  "multi_worker (TF_CONFIG), tpu.")
flags.DEFINE_string("tpu", None, "Cloud TPU name or address (implies --strategy=tpu).")
flags.DEFINE_integer("num_gpus", 0, "GPUs for --strategy=mirrored/one_device.")
