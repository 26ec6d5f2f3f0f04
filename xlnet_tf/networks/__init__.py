"""XLNet networks (encoders)."""

from xlnet_tf.networks.xlnet_encoder import XLNetEncoder
