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

from xlnet_tf.benchmarks import document_serving_latency  # noqa: E402

_WORK_DIR = flags.DEFINE_string("work_dir", "runs/long_documents", "The measurement goes to "
                                "WORK_DIR/serving.")
_N_LAYER = flags.DEFINE_integer("n_layer", 12, "Layers.")
_D_MODEL = flags.DEFINE_integer("d_model", 768, "Hidden size (heads of 64).")
_LENGTHS = flags.DEFINE_list("lengths", ["1024", "4096", "16384"],
                             "Document lengths N in pieces.")
_SERVING_SEGMENT = flags.DEFINE_integer("serving_segment_length", 512,
                                        "The whole export's segment (and memory).")
_CALLS = flags.DEFINE_integer("calls", 3, "Timed calls per row.")
_BUDGET = flags.DEFINE_float("memory_budget_gb", 12.0, "One pass is run only where "
                             "its attention per layer fits this.")
_SPIECE = flags.DEFINE_string("spiece_model", None, "SentencePiece model (default: "
                              "the released one if present, else trained on the bundled "
                              "corpus).")


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
  for flag, least in ((_N_LAYER, 1), (_D_MODEL, 64), (_CALLS, 1), (_SERVING_SEGMENT, 8)):
    if flag.value < least:
      raise app.UsageError(f"--{flag.name} must be >= {least}, got {flag.value}")
  work = os.path.join(_WORK_DIR.value, "serving")
  os.makedirs(work, exist_ok=True)
  document_serving_latency.run(work, _N_LAYER.value, _D_MODEL.value, lengths,
                               _SERVING_SEGMENT.value, _CALLS.value, _BUDGET.value,
                               _SPIECE.value)


if __name__ == "__main__":
  app.run(main)
