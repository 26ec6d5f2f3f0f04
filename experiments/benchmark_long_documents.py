r"""Long documents (issue 30): what does it cost to serve a whole document?

  python -m experiments.benchmark_long_documents
  (results: docs/benchmarks.md, "Long documents"; whether reading whole documents pays:
  python -m experiments.long_documents)

Milliseconds per document for raw text of 1k, 4k and 16k pieces served whole: the
whole-document export (segments of --serving_segment_length through a memory of as many
positions: linear in the length) against an export that reads the whole text in one
segment without memory (its max_seq_length = the length: quadratic), where that fits in
--memory_budget_gb. The measurement is xlnet_tf/benchmarks/document_serving_latency.py.
"""

import os

from xlnet_tf import console  # noqa: E402

console.start()  # before TensorFlow is imported: the log levels of --verbosity

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from experiments import common_flags  # noqa: E402
from xlnet_tf.benchmarks import document_serving_latency  # noqa: E402

FLAGS = flags.FLAGS
common_flags.define_flags(
    ("work_dir", "calls", "spiece_model"),
    notes={"work_dir": "the measurement goes to WORK_DIR/serving", "calls": "per row",
           "spiece_model": "default: the released one if present, else trained on the "
                           "bundled corpus"},
    work_dir="runs/long_documents", calls=3)
common_flags.define_network_flags(("n_layer", "d_model"), notes={"d_model": "heads of 64"},
                                  n_layer=12, d_model=768)
_LENGTHS = flags.DEFINE_list("lengths", ["1024", "4096", "16384"],
                             "Document lengths N in pieces.")
_SERVING_SEGMENT = flags.DEFINE_integer("serving_segment_length", 512,
                                        "The whole export's segment (and memory).")
_BUDGET = flags.DEFINE_float("memory_budget_gb", 12.0, "One pass is run only where "
                             "its attention per layer fits this.")


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  try:
    lengths = [int(n) for n in _LENGTHS.value]
  except ValueError:
    raise app.UsageError(f"--lengths must be integers, got {_LENGTHS.value}") from None
  if not lengths or min(lengths) <= _SERVING_SEGMENT.value:
    raise app.UsageError(f"--lengths must be longer than --serving_segment_length "
                         f"({_SERVING_SEGMENT.value}), got {lengths}")
  for name, least in (("n_layer", 1), ("d_model", 64), ("calls", 1),
                      ("serving_segment_length", 8)):
    if FLAGS[name].value < least:
      raise app.UsageError(f"--{name} must be >= {least}, got {FLAGS[name].value}")
  work = os.path.join(FLAGS.work_dir, "serving")
  os.makedirs(work, exist_ok=True)
  document_serving_latency.run(work, FLAGS.n_layer, FLAGS.d_model, lengths,
                               _SERVING_SEGMENT.value, FLAGS.calls, _BUDGET.value,
                               FLAGS.spiece_model)


if __name__ == "__main__":
  app.run(main)
