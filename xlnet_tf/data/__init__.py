"""Input data for XLNet: SentencePiece tokenization (see `tokenization`)."""

from xlnet_tf.data import tokenization
from xlnet_tf.data.tokenization import encode_ids
from xlnet_tf.data.tokenization import encode_lines
from xlnet_tf.data.tokenization import encode_pieces
from xlnet_tf.data.tokenization import load_spiece
from xlnet_tf.data.tokenization import normalize_text
from xlnet_tf.data.pretrain_reader import pretrain_dataset
