"""Pipelines: runs assembled from the whole stack, the top of the library (the entry points
of experiments/ parse their flags and call these).

`demo` (`make demo`: from bundled text to a served SavedModel, each stage reusable),
`ablation` (the paper's Table 6 in miniature), `transfer` (pretrained vs random init) on
the demo's stages; `plots` (permutation masks, attention maps, training curves). They may
import any module of xlnet_tf below them (tasks, training, serving, ...), never
xlnet_tf.benchmarks or xlnet_tf.applications, and they define no absl flags.
"""
