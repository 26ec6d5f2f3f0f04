r"""Times create_pretraining_data (1 and 2 workers) and the reader, and compares tokens/s
with TF Model Garden's legacy preprocessing script on the same corpus and settings.

On the bundled corpus (Moby-Dick) ×--copies (16) by default, at the paper's row layout (seq 512,
reuse 256, 85 targets, mask_alpha 6, mask_beta 1, bi_data, one pass; 8 streams on one
core); a SentencePiece model is trained first unless given.

  python -m experiments.benchmark_data
  python -m experiments.benchmark_data --input_glob='big/*.txt' --spiece_model=spiece.model \
      --input_format=sentence_per_line --workers=1,2,4
  python -m experiments.benchmark_data --references=legacy,nlp   # and the newer MG script

The measuring is xlnet_tf/benchmarks/preprocessing_speed.py.

Three parts:

1. `data_prep.pipeline.create` in this process at each of --workers (--input_format), and
2. the reader (`xlnet_tf.data.pretrain_dataset`) on the records of the first;
3. (--references) the comparison: every tool as its own command-line process(es) on the
   same files, in sentence_per_line (the only format Model Garden reads: a line is a
   sentence, a blank line ends a document), so that both tokenize the same lines and put
   an <eod> at the same places:
     ours      `python -m data_prep.create_pretraining_data --num_workers N` (one process
               and its pool of N workers), and `--task_index i --num_tasks N` (N processes,
               the way Model Garden shards);
     legacy    `official.legacy.xlnet.preprocess_pretrain_data` (the reference of the
               issue), N processes `--task i --num_task N` run at the same time;
     nlp       `official.nlp.data.create_xlnet_pretraining_data` (the newer script; it
               writes no targets: they are sampled online by its reader, so it does less
               work per row than the two others), `--task_id i --num_tasks N`.
   tokens = corpus tokens each tool tokenized (ours: its manifests; Model Garden: the
   "Raw data shape"/"Tokens shape" line of its log, bsz/2 streams × steps with bi_data);
   rows = records read back from the TFRecords each tool wrote. Whole-process seconds run
   from the launch to the exit of the last process, so they include starting Python and
   the imports; every tool is started by a small launcher that imports what the tool
   needs first (TensorFlow for Model Garden's scripts; `data_prep.pipeline`, which does
   not import TensorFlow, for ours), notes the time and the process's CPU seconds, then
   runs the tool as __main__, and the "net" columns subtract that start (wall: the mean
   over the launched processes, which start together; CPU: their sum). CPU seconds are those of the
   processes and all their descendants (this process becomes their child subreaper to
   collect a pool's forkserver and workers); unlike the wall clock they hardly depend on
   other jobs sharing the cores.

The legacy script does not run as installed under NumPy 2: `_int64_feature(is_masked)`
raises `TypeError: 'numpy.bool' object cannot be interpreted as an integer` (protobuf's
Int64List refuses a NumPy 2 bool array). The package is not modified: it is run through a
three-line wrapper that casts a bool array to int64 before that call (what NumPy 1 did
implicitly) and is otherwise the script's own `__main__`.
"""


from xlnet_tf import console

console.start()  # before TensorFlow is imported: the log levels of --verbosity

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from experiments import common_flags  # noqa: E402
from xlnet_tf.benchmarks import preprocessing_speed  # noqa: E402

_INPUT = flags.DEFINE_string("input_glob", preprocessing_speed.CORPUS, "Text to preprocess.")
_FORMAT = flags.DEFINE_string("input_format", "document_per_file", "As in "
                              "create_pretraining_data (in-process part only; the "
                              "comparison uses sentence_per_line).")
FLAGS = flags.FLAGS
common_flags.define_flags(
    ("spiece_model", "seq_len", "reuse_len"),
    notes={"spiece_model": "default: train one (vocab 8000) on --input_glob first"},
    seq_len=512, reuse_len=256)
_WORKERS = flags.DEFINE_list("workers", ["1", "2"], "Worker counts to time in this "
                             "process.")
_CHUNK = flags.DEFINE_integer("chunk_bytes", 256 << 10, "Bytes per chunk (>= workers "
                              "chunks are needed to keep every worker busy).")
_BSZ = flags.DEFINE_integer("bsz_per_host", 8, "Streams.")
_READ_STEPS = flags.DEFINE_integer("read_batches", 200, "Batches to time in the reader.")
_COPIES = flags.DEFINE_integer("copies", 16, "Preprocess this many copies of the input (the "
                               "bundled corpus is small: copies amortise the start of the "
                               "processes; the legacy script needs about 9 s per copy per "
                               "run on 2 idle cores, the benchmark about 5 min at 16).")
_REFERENCES = flags.DEFINE_list("references", ["legacy"], "Model Garden scripts to compare "
                                "with as subprocesses: legacy, nlp (see the docstring); "
                                "empty: no comparison.")
_PROCESSES = flags.DEFINE_list("processes", ["1", "2"], "Process counts of the comparison.")


def main(argv):
  del argv
  layout = preprocessing_speed.Layout(seq_len=FLAGS.seq_len, reuse_len=FLAGS.reuse_len,
                                      bsz_per_host=_BSZ.value, chunk_bytes=_CHUNK.value)
  preprocessing_speed.benchmark(_INPUT.value, _FORMAT.value, FLAGS.spiece_model, _WORKERS.value,
                                layout, _READ_STEPS.value, _COPIES.value, _REFERENCES.value,
                                _PROCESSES.value)


if __name__ == "__main__":
  app.run(main)
