"""xlnet_tf: XLNet (Yang et al., NeurIPS 2019) in TensorFlow 2 / tf_keras.

  >>> import xlnet_tf
  >>> model = xlnet_tf.load_pretrained("converted/xlnet_base", mem_len=384, reuse_len=256)
"""

from xlnet_tf.configs import XLNetConfig
from xlnet_tf.models.xlnet_pretrainer import XLNetPretrainer
from xlnet_tf.models.xlnet_pretrainer import build_pretrainer
from xlnet_tf.networks.xlnet_encoder import XLNetEncoder
from xlnet_tf.pretrained import load_pretrained
from xlnet_tf.pretrained import save_pretrained

__version__ = "0.1.0"
