r"""What a pretraining run has learned, checkpoint by checkpoint (issue 28).

  python -m experiments.pretraining_diagnostics --model_dir=runs/pt \
      --records=records/heldout --train_records=records/train \
      --checkpoints=500,2000 --num_batches=50 --grad_batches=4 --output=diag.json

--model_dir is the model directory of a permutation-LM pretraining run of the driver
(`python -m experiments.train --experiment=xlnet/pretraining`): its run_settings.json gives
the model, its ckpt-<step> checkpoints the weights (all, or the steps --checkpoints names).
--records are held-out records and --train_records training records, both of the run's
layout (seq_len, reuse_len, bi_data, casing, SentencePiece model). Every checkpoint is
measured in eval mode (no dropout) on the same first --num_batches batches of --records,
read in order with the memory carried from row to row as in evaluation
(`PretrainingTask.evaluate`: zeros for the first batch and where a stream starts).

Measures (markdown tables printed; every number in the --output JSON), defined in
xlnet_tf/benchmarks/pretraining_diagnostics.py: the held-out loss split into span and
single targets, context-free and unigram losses; per stream, layer and head the attention
entropy and its mass on <sep>, <cls>, the row's own token and its neighbours; per group of
weights the gradient norm and the weights' RMS; the embedding's top singular direction
against log frequency.
"""


from xlnet_tf import console

console.start()  # before TensorFlow is imported: the log levels of --verbosity

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from experiments import common_flags  # noqa: E402
from xlnet_tf.benchmarks import pretraining_diagnostics  # noqa: E402

common_flags.define_flags(
    ("model_dir",), notes={"model_dir": "the pretraining run's: run_settings.json and "
                                        "ckpt-<step> checkpoints"})
flags.DEFINE_string("records", None, "Held-out pretraining records (a record directory "
                    "of the run's layout).")
flags.DEFINE_string("train_records", None, "Training records of the run's layout (for "
                    "the gradient norms).")
flags.DEFINE_list("checkpoints", [], "Steps of the checkpoints to measure (default: "
                  "every ckpt-<step> in --model_dir).")
flags.DEFINE_integer("num_batches", 50, "Held-out batches per checkpoint.")
flags.DEFINE_integer("grad_batches", 4, "Training batches for the gradient norms.")
flags.DEFINE_string("output", None, "The JSON file to write (every number).")


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  options = flags.FLAGS
  try:
    report = pretraining_diagnostics.diagnose(
        options.model_dir, options.records, options.train_records, options.output,
        options.checkpoints, options.num_batches, options.grad_batches)
  except (ValueError, OSError) as e:
    raise SystemExit(f"pretraining_diagnostics: {e}") from None
  print(pretraining_diagnostics.tables(report["checkpoints"]))
  print(f"\nwrote {options.output}")


if __name__ == "__main__":
  app.run(main)
