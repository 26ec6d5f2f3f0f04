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

from experiments import common_flags  # noqa: E402
from xlnet_tf.benchmarks import model_speed  # noqa: E402

FLAGS = flags.FLAGS
common_flags.define_flags(
    ("batch_size", "seq_len", "num_predict", "steps", "jit_compile"),
    notes={"batch_size": "rows per step", "num_predict": "query stream rows",
           "steps": "timed, after one warm-up step; the median is reported",
           "jit_compile": "our steps"},
    batch_size=2, seq_len=512, num_predict=85, steps=5)
common_flags.define_network_flags(
    ("mem_len", "n_layer", "d_model", "n_head", "n_token"),
    notes={"mem_len": "memory from a previous step", "n_head": "d_head = d_model / n_head"},
    n_layer=12, d_model=768, n_head=12)
# Keras' policy names (not the runs' --precision).
_PRECISION = flags.DEFINE_enum("precision", "float32",
                               ["float32", "mixed_bfloat16", "mixed_float16"],
                               "Keras policy for our model_speed.")
_COMPARE_HF = flags.DEFINE_bool("compare_hf", True,
                                "Also time HuggingFace's PyTorch XLNet (if installed).")


def main(argv):
  del argv
  model_speed.benchmark(FLAGS.batch_size, FLAGS.seq_len, FLAGS.num_predict, FLAGS.mem_len,
                        FLAGS.n_layer, FLAGS.d_model, FLAGS.n_head, FLAGS.n_token, FLAGS.steps,
                        FLAGS.jit_compile, _PRECISION.value, _COMPARE_HF.value)


if __name__ == "__main__":
  app.run(main)
