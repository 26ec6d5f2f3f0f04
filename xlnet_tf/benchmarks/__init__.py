"""Benchmarks: what only measures, the library of experiments/benchmark_*.py and the other
measuring entry points (nothing here trains a model or defines absl flags).

Speed against HuggingFace and TF Model Garden: `model_speed` (forward and training step),
`step_speed` (the pretraining step, float32, XLA, bfloat16), `preprocessing_speed`
(corpus to records, the reader), `serving_latency` (raw-text SavedModels),
`document_serving_latency` (whole documents through the memory), `generation_speed`,
`ranking_latency` (embedding a collection, reranking a query); the compiled step:
`profile_step` (profiles, the program's size, XLA's cost analysis), `step_memory`
(activation memory with and without recomputation); a run's checkpoints:
`pretraining_diagnostics`. Shared: `timing` (medians, the machine's description),
`hf_steps` (HuggingFace's step, timed).

The HuggingFace and Model Garden references are imported only inside the functions that
time them.
"""
