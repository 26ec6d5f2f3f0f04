"""Serving: TensorFlow graphs that take raw strings and need none of this package at run time.

`text_encoder` holds the text side: XLNet text normalisation (`normalize_text_tf`) and
SentencePiece encoding with the released digit-comma re-split and the classification input
layout (`XLNetTextEncoder`), all as TF / TF Text ops, so a SavedModel built from them is
served with only `tensorflow` and `tensorflow_text` installed. `export` writes the
classifier's SavedModel; `squad_text` (pieces with their raw-character spans, the SQuAD
layout) and `squad_export` (span decoding, the QA SavedModel) do the same for SQuAD.
"""
