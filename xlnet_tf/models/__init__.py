"""XLNet models: networks plus heads."""

from xlnet_tf.models.xlnet_pretrainer import XLNetPretrainer
from xlnet_tf.models.xlnet_pretrainer import build_pretrainer
from xlnet_tf.models.xlnet_multiple_choice import XLNetMultipleChoice
from xlnet_tf.models.xlnet_multiple_choice import build_multiple_choice
