"""Keras layers of XLNet (no knowledge of data or training), one module each: relative
positional encoding, relative multi-head attention, the two-stream block, the feed-forward,
the tied LM head, the sequence summary, the SQuAD head, K-NRM's kernel pooling, step-keyed
dropout."""
