"""The distribution-strategy flags shared by the training entry points; the strategy
itself is built (and the devices checked) by `xlnet_tf.tasks.train_lib.strategy_of` from
the experiment's runtime (`released_flags.runtime_override`)."""

from absl import flags

flags.DEFINE_enum("strategy", "default", ["default", "one_device", "mirrored",
                                          "multi_worker", "tpu"],
                  "Distribution strategy: one device (default), mirrored (GPUs), "
                  "multi_worker (TF_CONFIG), tpu.")
flags.DEFINE_string("tpu", None, "Cloud TPU name or address (implies --strategy=tpu).")
flags.DEFINE_integer("num_gpus", 0, "GPUs for --strategy=mirrored/one_device.")

_NAMES = {"default": "off", "one_device": "one_device", "mirrored": "mirrored",
          "multi_worker": "multi_worker_mirrored", "tpu": "tpu"}


def distribution_strategy() -> str:
  """The `official.common.distribute_utils` name of the strategy the flags ask for (an
  experiment's runtime.distribution_strategy): "tpu" with --tpu, else --strategy's
  ("off" for default: TensorFlow's default strategy, one device)."""
  values = flags.FLAGS
  return "tpu" if values.tpu else _NAMES[values.strategy]

