"""XLNet models: networks plus heads."""

from xlnet_tf.models.xlnet_pretrainer import XLNetPretrainer
from xlnet_tf.models.xlnet_pretrainer import build_pretrainer
