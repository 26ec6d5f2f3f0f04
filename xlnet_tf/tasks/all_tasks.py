"""Every task module of xlnet_tf, imported: each registers its task with Model Garden's
`task_factory` and its record with `xlnet_tf.task_kind`. Import this module where every
kind must be known (the driver, the converters' command line, `xlnet_tf.hub`); adding a
task adds its module here."""

from xlnet_tf.tasks import classification  # noqa: F401
from xlnet_tf.tasks import pretraining  # noqa: F401
from xlnet_tf.tasks import race  # noqa: F401
from xlnet_tf.tasks import ranking  # noqa: F401
from xlnet_tf.tasks import squad  # noqa: F401
from xlnet_tf.tasks import tagging  # noqa: F401
