"""Keras layers of XLNet (no knowledge of data or training)."""

from xlnet_tf.layers.feed_forward import PositionwiseFeedForward
from xlnet_tf.layers.positional_encoding import RelativePositionalEncoding
from xlnet_tf.layers.relative_attention import RelativeMultiHeadAttention
from xlnet_tf.layers.relative_attention import gather_relative
from xlnet_tf.layers.relative_attention import rel_shift
from xlnet_tf.layers.tied_lm_head import TiedLMHead
from xlnet_tf.layers.two_stream_block import TwoStreamBlock
