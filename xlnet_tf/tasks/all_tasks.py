"""The one list of the task modules of xlnet_tf: importing it registers every task (Model
Garden's `task_factory`), its record (`xlnet_tf.task_kind`) and its experiment
(`exp_factory`). Import it where every kind must be known (the entry points, the driver's
callers, `xlnet_tf.hub`); adding a task adds its line here."""

from xlnet_tf.tasks import classification  # noqa: F401
from xlnet_tf.tasks import pretraining  # noqa: F401
from xlnet_tf.tasks import race  # noqa: F401
from xlnet_tf.tasks import ranking  # noqa: F401
from xlnet_tf.tasks import squad  # noqa: F401
from xlnet_tf.tasks import tagging  # noqa: F401
