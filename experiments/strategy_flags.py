"""The distribution-strategy flags shared by the training entry points."""

from absl import flags
from official.common import distribute_utils

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


def strategy_from_flags():
  """The tf.distribute strategy the flags ask for (official.common.distribute_utils)."""
  values = flags.FLAGS
  return distribute_utils.get_distribution_strategy(
      distribution_strategy=distribution_strategy(), num_gpus=values.num_gpus,
      tpu_address=values.tpu)
