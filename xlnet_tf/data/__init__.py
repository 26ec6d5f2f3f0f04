"""Input data for XLNet: SentencePiece tokenization (see `tokenization`) and the
pretraining record reader (`pretrain_dataset`, imported on first use: it needs TensorFlow,
which the preprocessing tools do not)."""

from xlnet_tf.data import tokenization
from xlnet_tf.data.tokenization import encode_ids
from xlnet_tf.data.tokenization import encode_lines
from xlnet_tf.data.tokenization import encode_pieces
from xlnet_tf.data.tokenization import load_spiece
from xlnet_tf.data.tokenization import normalize_text


def __getattr__(name):
  if name == "pretrain_dataset":
    from xlnet_tf.data.pretrain_reader import pretrain_dataset  # pylint: disable=g-import-not-at-top
    return pretrain_dataset
  raise AttributeError(f"module 'xlnet_tf.data' has no attribute {name!r}")
