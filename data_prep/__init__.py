"""Command-line tools that turn text into pretraining data (SentencePiece, TFRecords)."""
