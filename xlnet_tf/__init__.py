"""xlnet_tf: XLNet (Yang et al., NeurIPS 2019) in TensorFlow 2 / tf_keras.

  >>> import xlnet_tf
  >>> model = xlnet_tf.load_pretrained("converted/xlnet_base", mem_len=384, reuse_len=256)
  >>> model = xlnet_tf.load_pretrained("xlnet_large_cased")   # a preset (xlnet_tf.presets)
  >>> clf = xlnet_tf.from_preset("xlnet_base_cased", xlnet_tf.XLNetClassifier, num_classes=2)

The names below are imported on first use, so that `import xlnet_tf.data.tokenization`
(the preprocessing tools' only need) does not import TensorFlow and Keras. Keras
deserialization (`tf_keras.models.load_model`) finds our layers once their modules are
imported: use one of the names (e.g. `from xlnet_tf import XLNetPretrainer`) or import
`xlnet_tf.models.xlnet_classifier` / `xlnet_squad` first.
"""

import importlib

__version__ = "0.1.0"

_EXPORTS = {
    "XLNetConfig": "xlnet_tf.configs",
    "XLNetPretrainer": "xlnet_tf.models.xlnet_pretrainer",
    "XLNetClassifier": "xlnet_tf.models.xlnet_classifier",
    "XLNetMultipleChoice": "xlnet_tf.models.xlnet_multiple_choice",
    "XLNetForSquad": "xlnet_tf.models.xlnet_squad",
    "XLNetSimpleQA": "xlnet_tf.models.xlnet_simple_qa",
    "XLNetTagger": "xlnet_tf.models.xlnet_tagger",
    "build_pretrainer": "xlnet_tf.models.xlnet_pretrainer",
    "XLNetEncoder": "xlnet_tf.networks.xlnet_encoder",
    "load_pretrained": "xlnet_tf.hub",
    "from_preset": "xlnet_tf.hub",
    "save_pretrained": "xlnet_tf.pretrained",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name):
  if name in _EXPORTS:
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value
  raise AttributeError(f"module 'xlnet_tf' has no attribute {name!r}")


def __dir__():
  return sorted(set(globals()) | set(_EXPORTS))
