"""Evaluation of fine-tuned models: task metrics and benchmark submission files."""
