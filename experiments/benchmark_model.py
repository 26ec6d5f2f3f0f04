r"""Times the forward pass and one training step of XLNet; prints tokens/s.

Pretraining inputs (random tokens, a random factorization order, `num_predict` targets per
row, two segments + <cls>) through our model, and through HuggingFace's PyTorch XLNet at
the same config in the same run when torch and transformers are installed (ratios printed).

  python -m experiments.benchmark_model                       # base: 12 layers, 768, seq 512
  python -m experiments.benchmark_model --jit_compile --batch_size 4 --mem_len 384

The measuring is xlnet_tf/benchmarks/model_speed.py.
"""


from xlnet_tf import console

console.start()  # before TensorFlow is imported: the log levels of --verbosity

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from xlnet_tf.benchmarks import model_speed  # noqa: E402

_BATCH = flags.DEFINE_integer("batch_size", 2, "Rows per step.")
_SEQ = flags.DEFINE_integer("seq_len", 512, "Tokens per row.")
_PREDICT = flags.DEFINE_integer("num_predict", 85, "Targets per row (query stream rows).")
_MEM = flags.DEFINE_integer("mem_len", 0, "Memory length (memory from a previous step).")
_LAYERS = flags.DEFINE_integer("n_layer", 12, "Layers.")
_D_MODEL = flags.DEFINE_integer("d_model", 768, "Hidden size.")
_HEADS = flags.DEFINE_integer("n_head", 12, "Heads (d_head = d_model / n_head).")
_VOCAB = flags.DEFINE_integer("n_token", 32000, "Vocabulary size.")
_STEPS = flags.DEFINE_integer("steps", 5, "Timed steps (after one warm-up step); the median "
                              "is reported.")
_JIT = flags.DEFINE_bool("jit_compile", False, "Compile our steps with XLA.")
_PRECISION = flags.DEFINE_enum("precision", "float32",
                               ["float32", "mixed_bfloat16", "mixed_float16"],
                               "Keras policy for our model_speed.")
_COMPARE_HF = flags.DEFINE_bool("compare_hf", True,
                                "Also time HuggingFace's PyTorch XLNet (if installed).")


def main(argv):
  del argv
  model_speed.benchmark(_BATCH.value, _SEQ.value, _PREDICT.value, _MEM.value, _LAYERS.value,
                  _D_MODEL.value, _HEADS.value, _VOCAB.value, _STEPS.value, _JIT.value,
                  _PRECISION.value, _COMPARE_HF.value)


if __name__ == "__main__":
  app.run(main)
