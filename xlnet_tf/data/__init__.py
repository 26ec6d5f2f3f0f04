"""Input data for XLNet: SentencePiece tokenization (`tokenization`), the text layouts,
the pretraining records (`pretrain_records`, read by `pretrain_reader.pretrain_dataset`)
and the fine-tuning feature caches. This file re-exports the tokenization functions only,
so that the preprocessing tools import no TensorFlow."""

from xlnet_tf.data import tokenization
from xlnet_tf.data.tokenization import encode_ids
from xlnet_tf.data.tokenization import encode_lines
from xlnet_tf.data.tokenization import encode_pieces
from xlnet_tf.data.tokenization import load_spiece
from xlnet_tf.data.tokenization import normalize_text
