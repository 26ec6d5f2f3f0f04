"""Serving whole documents: the memory's linear cost against one pass over the whole length
(issue 30; python -m experiments.benchmark_long_documents).

Two SavedModels of the same classifier (random weights: latency does not depend on them),
both raw text in, probabilities out:
  whole     `export_classifier` reading any length segment by segment through the memory
            (segments of `segment_length`, a memory of as many positions): linear.
  one pass  a truncating export whose max_seq_length is the document's length, so the
            whole text is one segment without memory: attention over N x N (and 2N
            relative positions) per head and layer, quadratic.
Documents are real text: the bundled State of the Union speeches, concatenated in
file-name order and cut to about N pieces of the SentencePiece model (`document_texts`;
then `<sep> <cls>`). One pass is skipped where its attention would not fit `memory_budget_gb`
(an estimate printed with the row).
"""

import datetime
import glob
import os
from typing import Dict, Optional, Sequence

import tensorflow as tf

from xlnet_tf import model_directory
from xlnet_tf.benchmarks import serving_latency
from xlnet_tf.benchmarks.timing import cpu_description
from xlnet_tf.benchmarks.timing import median_seconds
from xlnet_tf.configs import XLNetConfig
from xlnet_tf.data import sample_data
from xlnet_tf.data import tokenization
from xlnet_tf.models.xlnet_classifier import ClassifierSpec
from xlnet_tf.models.xlnet_classifier import build_classifier
from xlnet_tf.serving.classifier_export import export_classifier

SPEECHES_GLOB = sample_data.path("sotu", "*.txt")


def document_texts(spiece: str, lengths: Sequence[int]) -> Dict[int, str]:
  """{N: a text of about N - 2 pieces}: the first N - 2 pieces of the speeches'
  concatenation, decoded (tokenized again it gives a few more: 1,025 for N = 1,024 and
  4,100 for 4,096 with the released vocabulary, where decoding joins pieces)."""
  sp = tokenization.load_spiece(spiece)
  text = " ".join(open(p, encoding="utf-8").read().strip()
                  for p in sorted(glob.glob(SPEECHES_GLOB)))
  pieces = sp.encode_as_pieces(text[:20 * max(lengths)])           # enough characters
  texts = {}
  for length in lengths:
    if len(pieces) < length - 2:
      raise ValueError(f"the speeches give {len(pieces)} pieces, fewer than {length - 2}")
    texts[length] = sp.decode_pieces(pieces[:length - 2])
  return texts


def attention_gb(config: XLNetConfig, length: int) -> float:
  """An estimate of one layer's attention tensors over `length` pieces, in GB: the
  content scores, the positional scores before the relative shift (2N positions) and the
  probabilities, float32, per head."""
  return config.n_head * length * length * (1 + 2 + 1) * 4 / 1e9


def run(work: str, n_layer: int, d_model: int, lengths: Sequence[int], segment_length: int,
        calls: int, memory_budget_gb: float, spiece: Optional[str] = None) -> None:
  """Prints the table (ms per document) with the machine's facts."""
  spiece = serving_latency.spiece_model(work, spiece)
  vocab = tokenization.load_spiece(spiece).get_piece_size()
  config = XLNetConfig(n_layer=n_layer, d_model=d_model, n_head=d_model // 64, d_head=64,
                       d_inner=4 * d_model, n_token=vocab, dropout=0.0, dropatt=0.0)
  model = build_classifier(config, 2, dropout_rate=0.0)
  texts = document_texts(spiece, lengths)
  labels = ("negative", "positive")

  def exported(name: str, max_seq_length: int, whole_text: bool):
    model_dir = os.path.join(work, f"model_{max_seq_length}")
    if not os.path.exists(model_dir):
      model_directory.save(model, model_dir, ClassifierSpec(
          task_name="movie_reviews", labels=labels, max_seq_length=max_seq_length), spiece)
    export_dir = os.path.join(work, f"export_{name}")
    if not os.path.exists(export_dir):
      export_classifier(model_dir, export_dir, whole_text=whole_text)
    return tf.saved_model.load(export_dir).signatures["serving_default"]

  print(f"# Serving whole documents, raw text in: {datetime.date.today().isoformat()}")
  print(f"{cpu_description()}; TensorFlow {tf.__version__}")
  print(f"classifier {n_layer} x {d_model} (random weights), vocabulary {vocab}; whole: "
        f"segments of {segment_length} through a memory of {segment_length}; one pass: one "
        f"segment of N without memory; batch 1, {calls} timed call(s) after one warm-up; "
        f"ms per document, median\n")
  print("| N pieces | segments | whole (memory) | one pass | one pass / whole | "
        "attention per layer, one pass |")
  print("|---|---|---|---|---|---|", flush=True)
  whole = exported(f"whole_{segment_length}", segment_length, True)
  for length in lengths:
    request = tf.constant([texts[length]])
    whole_ms = 1000 * median_seconds(lambda: whole(text_a=request), calls)
    need = attention_gb(config, length)
    if need > memory_budget_gb:
      one_pass, ratio = f"not run: needs ~{need:.0f} GB > {memory_budget_gb:g} GB", "-"
    else:
      single = exported(f"one_pass_{length}", length, False)
      one_ms = 1000 * median_seconds(lambda: single(text_a=request), calls)
      one_pass, ratio = f"{one_ms:,.0f}", f"{one_ms / whole_ms:.2f}"
    print(f"| {length:,} | {-(-length // segment_length)} | {whole_ms:,.0f} | {one_pass} | "
          f"{ratio} | {need:.1f} GB |", flush=True)

