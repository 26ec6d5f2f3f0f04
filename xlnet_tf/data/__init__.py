"""Input data for XLNet: SentencePiece tokenization (`tokenization`), the text layouts
(`layouts`), the pretraining records (`pretrain_records`, read by
`pretrain_reader.pretrain_dataset`), the fine-tuning readers and feature caches, and the
ranking task's files (TREC formats, BM25 candidates, embedding stores). The package file
imports nothing: the preprocessing tools import only the modules they use (and no
TensorFlow)."""
