"""Runs: the library of the entry points that train models and report what they trained
(experiments/ parses the flags and calls these; nothing here defines absl flags).

`pretraining` (pretraining from Python through the driver), `released/` (the original's
train.py, run_classifier.py, run_squad.py and run_race.py as runs of our experiments, and
the translation of their flags), `demo` (`make demo`: bundled text to a served SavedModel,
each stage reusable), `ablation` (the paper's Table 6 in miniature), `transfer`
(pretrained vs random initialisation), `long_documents` (reading whole speeches through
the memory vs a segment), `ranking_folds` (BM25 vs K-NRM by query folds),
`precision_curves` (bfloat16 vs float32 loss curves), `hf_pretraining_steps` (ours and
HuggingFace's PyTorch model trained side by side, with its reference trainer
`hf_training`), and `plots` (masks, attention maps and training curves of a run).

What only measures is in `xlnet_tf.benchmarks`; a run imports nothing of it.
`hf_training` and `hf_pretraining_steps` import torch and transformers (the [huggingface]
extra) when imported.
"""
