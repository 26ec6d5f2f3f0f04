r"""Serving latency of an exported classifier vs HuggingFace's PyTorch XLNet forward.

Exports a base-size classifier (12 layers, 768; random weights: latency does not depend
on them) with a SentencePiece model trained on the bundled corpus, loads the SavedModel,
and times batch 1 and 32 at seq 128: `serving_default` (raw text: normalisation,
SentencePiece, layout and model in the graph) and `serving_ids` (model only), next to
`transformers.XLNetForSequenceClassification` at the same size (token ids in), in fp32
and in bf16 (ours exported under the `mixed_bfloat16` policy: bfloat16 matmuls and
activations; HF's model cast with `.to(torch.bfloat16)`).

  python -m experiments.benchmark_serving [--n_layer=12 --d_model=768 --batch_sizes=1,32]
"""

import os
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app  # noqa: E402
from absl import flags  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tf_keras  # noqa: E402

from data_prep import train_sentencepiece  # noqa: E402
from experiments.timing import median_seconds  # noqa: E402
from xlnet_tf import model_directory  # noqa: E402
from xlnet_tf.configs import XLNetConfig  # noqa: E402
from xlnet_tf.data import sample_data  # noqa: E402
from xlnet_tf.models.xlnet_classifier import build_classifier  # noqa: E402
from xlnet_tf.serving.export import export_classifier  # noqa: E402

_DATA = sample_data.root()
_LAYERS = flags.DEFINE_integer("n_layer", 12, "Layers.")
_D_MODEL = flags.DEFINE_integer("d_model", 768, "Hidden size (heads of 64).")
_SEQ = flags.DEFINE_integer("max_seq_length", 128, "Sequence length.")
_BATCHES = flags.DEFINE_list("batch_sizes", ["1", "32"], "Batch sizes.")
_STEPS = flags.DEFINE_integer("steps", 5, "Timed calls (median) after a warm-up call.")
_PRECISIONS = flags.DEFINE_list("precisions", ["fp32", "bf16"], "fp32 and/or bf16.")


def _sentences(count):
  path = os.path.join(_DATA, "sentiment", "movieReviewSnippets_GroundTruth.txt")
  with open(path, encoding="utf-8", newline="") as f:
    return [line.rstrip("\r\n").split("\t")[2] for line in f if line.strip()][:count]


def main(argv):
  del argv
  work = tempfile.mkdtemp(prefix="xlnet_bench_serving_")
  spiece = train_sentencepiece.train(os.path.join(_DATA, "moby_dick", "*.txt"),
                                     os.path.join(work, "spiece"), 8000, num_threads=2)
  d_model = _D_MODEL.value
  config = XLNetConfig(n_layer=_LAYERS.value, d_model=d_model, n_head=d_model // 64,
                       d_head=64, d_inner=4 * d_model, n_token=8000, dropout=0.0,
                       dropatt=0.0)
  spec = model_directory.ClassifierSpec(task_name="movie_reviews", labels=("negative", "positive"),
                                        max_seq_length=_SEQ.value)
  model_directory.save(build_classifier(config, dropout_rate=0.0), 2, spec,
                       os.path.join(work, "model"), spiece)

  import torch  # pylint: disable=g-import-not-at-top
  import transformers  # pylint: disable=g-import-not-at-top
  torch.set_num_threads(os.cpu_count())
  hf_fp32 = transformers.XLNetForSequenceClassification(transformers.XLNetConfig(
      **config.to_hf_dict(), num_labels=2)).eval()

  print(f"config {config.n_layer} x {d_model}, seq {_SEQ.value}, {os.cpu_count()} "
        f"CPU cores; median ms per call")
  print(f"{'precision':<10}{'batch':>6}{'SavedModel text':>17}{'SavedModel ids':>16}"
        f"{'HF PyTorch ids':>16}{'HF / ids':>10}")
  for precision in _PRECISIONS.value:
    if precision not in ("fp32", "bf16"):
      raise app.UsageError(f"--precisions: {precision!r} is not fp32 or bf16")
    tf_keras.mixed_precision.set_global_policy(
        "mixed_bfloat16" if precision == "bf16" else "float32")
    try:            # the model is rebuilt (in this policy) from the saved weights
      export_dir = export_classifier(os.path.join(work, "model"),
                                     os.path.join(work, f"export_{precision}"))
    finally:
      tf_keras.mixed_precision.set_global_policy("float32")
    loaded = tf.saved_model.load(export_dir)
    text_fn, ids_fn = loaded.signatures["serving_default"], loaded.signatures["serving_ids"]
    hf = hf_fp32.to(torch.bfloat16) if precision == "bf16" else hf_fp32
    for batch in (int(b) for b in _BATCHES.value):
      texts = tf.constant((_sentences(batch) * batch)[:batch])
      seq = _SEQ.value
      rng = np.random.default_rng(0)
      ids = rng.integers(10, 8000, [batch, seq]).astype(np.int32)
      ids[:, -2:] = [4, 3]
      segments = np.zeros([batch, seq], np.int32)
      segments[:, -1] = 2
      mask = np.zeros([batch, seq], np.float32)
      text_s = median_seconds(lambda: text_fn(text_a=texts)["probabilities"].numpy(),
                              _STEPS.value)
      ids_s = median_seconds(
          lambda: ids_fn(input_ids=tf.constant(ids), segment_ids=tf.constant(segments),
                         input_mask=tf.constant(mask))["probabilities"].numpy(),
          _STEPS.value)
      torch_ids = torch.as_tensor(ids, dtype=torch.long)
      torch_segments = torch.as_tensor(segments, dtype=torch.long)

      def hf_forward():
        with torch.no_grad():
          return hf(input_ids=torch_ids, token_type_ids=torch_segments).logits.float().numpy()

      hf_s = median_seconds(hf_forward, _STEPS.value)
      print(f"{precision:<10}{batch:>6}{text_s * 1e3:>17.1f}{ids_s * 1e3:>16.1f}"
            f"{hf_s * 1e3:>16.1f}{hf_s / ids_s:>9.2f}x", flush=True)
  print(f"artefacts in {work}")


if __name__ == "__main__":
  app.run(main)
