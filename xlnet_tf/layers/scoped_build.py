"""Building a sublayer under its own name scope."""

import tensorflow as tf


def build_in_scope(layer, input_shape) -> None:
  """`layer.build(input_shape)` inside `tf.name_scope(layer.name)`.

  Keras scopes a layer's variables by its name only when `__call__` builds it; an explicit
  `build()` does not. Building through this keeps variable names such as
  `transformer/layer_0/rel_attn/LayerNorm/gamma:0`, which weight-decay selection by name
  relies on, whichever way the model is built.
  """
  with tf.name_scope(layer.name):
    layer.build(input_shape)
