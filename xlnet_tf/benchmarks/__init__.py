"""Measurements: speed against HuggingFace and TF Model Garden (`model`, `pretrain`,
`profile_step`, `data`, `serving`, `generation`; `timing`, `hf_steps`), the compiled step's
memory with and without recomputation (`step_memory`), and what a training
run does (`precision_curves`, `pretraining_diagnostics`; `hf_pretraining_steps` with its
PyTorch reference `hf_training`). The top of the library, with xlnet_tf.pipelines (which
they may import: precision_curves runs the demo's stages); experiments/benchmark_*.py and
the other entry points parse their flags and call these. They define no absl flags.

`hf_training` and `hf_pretraining_steps` import torch and transformers (the [huggingface]
extra) when imported; the others only inside the functions that time HuggingFace.
"""
