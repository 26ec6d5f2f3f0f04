r"""create_pretraining_data on Apache Beam: the same records, on a distributed engine.

  pip install -r requirements-beam.txt          # beside requirements.txt
  python -m data_prep.create_pretraining_data_beam \
      --input_glob='corpus/*.txt' --spiece_model=spiece.model --output_dir=records \
      --seq_len=512 --reuse_len=256 --bsz_per_host=32 --num_core_per_host=8 --bi_data \
      --num_predict=85 --num_passes=20 [--runner=DirectRunner] [-- BEAM OPTIONS]

Takes the data flags of `data_prep.create_pretraining_data` (the same definitions) and
writes the same `pretrain-c*-p*.tfrecord` shards, `.stats.json` files and manifest, byte
for byte, for the same flags. Beyond them:

  --runner                  DirectRunner (default, in this process), DataflowRunner,
                            FlinkRunner, SparkRunner, ...
  --beam_pipeline_options   Beam options, comma-separated ("--project=p,--region=r");
                            options after `--` on the command line are passed on too.
  --num_workers             must stay 1: the runner decides the parallelism (for the
                            DirectRunner: `-- --direct_num_workers=2
                            --direct_running_mode=multi_processing`).

Bad input (a missing SentencePiece model, a glob that matches nothing, an unwritable
--output_dir, inconsistent flags) fails with a message naming the flag before the pipeline
is launched. Commands for Dataflow, Flink and Spark, and what their workers need (the
image of Dockerfile.beam): see `data_prep.beam_pipeline` and docs/pretraining-data.md
("On a distributed engine").
"""

from xlnet_tf import console

console.start()  # before TensorFlow is imported: the log levels of --verbosity

from absl import app  # noqa: E402
from absl import flags  # noqa: E402
from absl import logging  # noqa: E402

from data_prep import beam_pipeline  # noqa: E402
# Defines the data flags (--input_glob, --seq_len, ...) and settings_from_flags.
from data_prep import create_pretraining_data as local_tool  # noqa: E402
from xlnet_tf import paths  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_string("runner", beam_pipeline.DEFAULT_RUNNER, "The Beam runner.")
flags.DEFINE_string("beam_pipeline_options", "", "Further Beam pipeline options, "
                    "comma-separated, e.g. \"--project=p,--region=r,--temp_location=gs://b/t\""
                    "; options after `--` on the command line are passed on too.")


def main(argv):
  beam_args = beam_pipeline.split_options(FLAGS.beam_pipeline_options) + list(argv[1:])
  stray = [arg for arg in beam_args if not arg.startswith("-")]
  if stray:
    raise app.UsageError(f"unexpected arguments: {stray} (write Beam options as --name=value)")
  if FLAGS.num_workers != 1:
    raise app.UsageError(
        "--num_workers is the local tool's process count; with Beam the runner decides "
        "(DirectRunner: -- --direct_num_workers=N --direct_running_mode=multi_processing)")
  try:
    manifest = beam_pipeline.run(
        local_tool.settings_from_flags(), FLAGS.input_glob, FLAGS.spiece_model,
        FLAGS.output_dir, runner=FLAGS.runner, beam_args=beam_args,
        task_index=FLAGS.task_index, num_tasks=FLAGS.num_tasks)
  except (ValueError, FileNotFoundError, NotADirectoryError, PermissionError,
          paths.DirectoryLockedError) as e:
    logging.error("%s", e)
    raise SystemExit(f"create_pretraining_data_beam: {e}") from None
  print(f"{FLAGS.runner}: {local_tool.summary(manifest, FLAGS.output_dir)}")


if __name__ == "__main__":
  app.run(main)
