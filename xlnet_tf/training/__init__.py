"""Training: optimiser, per-replica memories, the pretraining loop."""
