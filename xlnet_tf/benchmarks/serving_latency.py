r"""Serving latency on real text: the bucketed export vs the fixed-length one vs HuggingFace
(python -m experiments.benchmark_serving, `make bench-serving`).

The method, the settings and what the figures mean are the command's
(`experiments/benchmark_serving.py`, its --help); this module holds the code it runs.
"""

import copy
import datetime
import json
import os
import shutil
import tempfile
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from absl import logging
import numpy as np
import tensorflow as tf
import tf_keras

from xlnet_tf import model_directory
from xlnet_tf.benchmarks.timing import cpu_description
from xlnet_tf.configs import XLNetConfig
from xlnet_tf.convert import to_huggingface
from xlnet_tf.data import classifier_tasks
from xlnet_tf.data import sample_data
from xlnet_tf.data import tokenization
from xlnet_tf.models.xlnet_classifier import ClassifierSpec
from xlnet_tf.models.xlnet_classifier import build_classifier
from xlnet_tf.serving.classifier_export import export_classifier
from xlnet_tf.serving.text_encoder import XLNetTextEncoder
from xlnet_tf.serving.text_layouts import classifier_inputs

# The checkout (tests/data holds the released SentencePiece model).
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RELEASED_SPIECE = os.path.join(_ROOT, "tests", "fixtures", "released_spiece", "spiece.model")

SYSTEMS = ("fixed", "bucketed", "hf")


def held_out_texts() -> List[str]:
  """The movie_reviews held-out sentences (dev, then test), in file order."""
  task = classifier_tasks.get_task("movie_reviews")
  return [e.text_a for split in ("dev", "test") for e in task.read(None, split)]


def requests(texts: Sequence[str], batch: int, calls: int) -> List[List[str]]:
  """`calls` runs of `batch` consecutive texts, their starts spread evenly over `texts`."""
  runs = len(texts) // batch
  if calls > runs:
    raise ValueError(f"--calls={calls}: only {runs} batches of {batch} in {len(texts)} texts")
  starts = np.linspace(0, runs - 1, calls).round().astype(int) * batch
  return [list(texts[s:s + batch]) for s in starts]


def spread(seconds: Sequence[float]) -> Dict[str, float]:
  """Median, 10th and 90th percentile of call times, in ms."""
  ms = np.asarray(seconds) * 1e3
  return {"median": float(np.median(ms)), "p10": float(np.percentile(ms, 10)),
          "p90": float(np.percentile(ms, 90))}


def spiece_model(work: str, spiece: Optional[str] = None) -> str:
  """`spiece` if given, else the released model if present, else one trained (vocabulary
  8000) on the bundled corpus in `work`."""
  if spiece:
    return spiece
  if os.path.exists(RELEASED_SPIECE):
    return RELEASED_SPIECE
  from data_prep import train_sentencepiece  # pylint: disable=g-import-not-at-top
  return train_sentencepiece.train(sample_data.path("moby_dick", "*.txt"),
                                   os.path.join(work, "spiece"), 8000, num_threads=2)


def hf_tokenizer(spiece: str, work: str):
  """HF's XLNet tokenizer of `spiece` (left padding, as HF's XLNet pads), loaded from a
  directory like a model's, with the tokenizer files `xlnet-convert --to huggingface`
  writes (`to_huggingface.tokenizer_files`, cased): transformers 5's
  `XLNetTokenizer(vocab_file=...)` gives other ids (every piece <unk>, wrong special ids);
  from_pretrained converts the model."""
  import transformers  # pylint: disable=g-import-not-at-top
  directory = os.path.join(work, "hf_tokenizer")
  os.makedirs(directory, exist_ok=True)
  shutil.copy(spiece, os.path.join(directory, "spiece.model"))
  files = to_huggingface.tokenizer_files({"uncased": False, "keep_accents": False})
  for name, content in files.items():
    with open(os.path.join(directory, name), "w", encoding="utf-8") as f:
      json.dump(content, f)
  tokenizer = transformers.AutoTokenizer.from_pretrained(directory)
  text = "A gripping, beautifully acted film."
  assert tokenizer(text)["input_ids"] == tokenization.load_spiece(spiece).encode(text) + [
      tokenization.SEP_ID, tokenization.CLS_ID], "HF's tokenizer does not match spiece"
  assert tokenizer.padding_side == "left"
  return tokenizer


def fastest_threads(warm_up: Callable[[], Any], candidates: Sequence[int]) -> int:
  """Runs `warm_up` with each PyTorch thread count of `candidates` and leaves PyTorch at
  the fastest (returned). On a busy machine one thread can beat all cores by 10x or more:
  OpenMP's barriers wait for threads the scheduler has parked."""
  import torch  # pylint: disable=g-import-not-at-top
  best = None
  for count in candidates:
    torch.set_num_threads(count)
    elapsed, _ = timed(warm_up)
    if best is None or elapsed < best[0]:
      best = (elapsed, count)
  torch.set_num_threads(best[1])
  return best[1]


def timed(fn: Callable[[], Any]) -> Tuple[float, Any]:
  """(seconds, value) of one call of `fn`."""
  start = time.perf_counter()
  value = fn()
  return time.perf_counter() - start, value


def benchmark(work_dir: Optional[str], n_layer: int, d_model: int,
              max_seq_lengths: Sequence[str], batch_sizes: Sequence[str], calls: int,
              precisions: Sequence[str], spiece: Optional[str] = None,
              torch_threads: Optional[Sequence[str]] = None) -> None:
  """Prints the latency table (see the module docstring) of `precisions` (fp32, bf16); the
  model directories and exports go to `work_dir` (default: a temporary directory, removed
  at the end)."""
  logging.set_verbosity(logging.ERROR)            # no log lines between the table's rows
  tf.get_logger().setLevel("ERROR")
  work = work_dir or tempfile.mkdtemp(prefix="xlnet_bench_serving_")
  try:
    run(work, n_layer, d_model, max_seq_lengths, batch_sizes, calls, precisions, spiece,
        torch_threads)
  finally:
    if not work_dir:
      shutil.rmtree(work, ignore_errors=True)


def run(work: str, n_layer: int, d_model: int, max_seq_lengths: Sequence[str],
        batch_sizes: Sequence[str], calls: int, precisions: Sequence[str],
        spiece: Optional[str] = None, torch_threads: Optional[Sequence[str]] = None) -> None:
  """The latency table, with the model directories and exports in `work`."""
  import torch  # pylint: disable=g-import-not-at-top
  import transformers  # pylint: disable=g-import-not-at-top
  torch_threads = ([int(n) for n in torch_threads] if torch_threads
                   else sorted({1, os.cpu_count()}))
  spiece = spiece_model(work, spiece)
  vocab = tokenization.load_spiece(spiece).get_piece_size()
  config = XLNetConfig(n_layer=n_layer, d_model=d_model, n_head=d_model // 64,
                       d_head=64, d_inner=4 * d_model, n_token=vocab, dropout=0.0,
                       dropatt=0.0)
  model = build_classifier(config, 2, dropout_rate=0.0)
  hf_fp32 = transformers.XLNetForSequenceClassification(transformers.XLNetConfig(
      **config.to_hf_dict(), num_labels=2)).eval()
  tokenizer = hf_tokenizer(spiece, work)
  encoder = XLNetTextEncoder(spiece)
  texts = held_out_texts()
  print(f"# Serving latency, raw text in: {datetime.date.today().isoformat()}")
  print(f"{cpu_description()}; TensorFlow {tf.__version__} (its default threads), PyTorch "
        f"{torch.__version__} (threads: the fastest of {torch_threads} on the warm-up "
        f"calls), transformers {transformers.__version__}")
  print(f"classifier {config.n_layer} x {d_model} (random weights), vocabulary {vocab} "
        f"({spiece}); {len(texts)} held-out movie_reviews sentences; {calls} timed "
        f"requests per row; ms per call: median (p10-p90)\n")
  print("| precision | T | batch | fixed-length export | bucketed export | HF PyTorch, "
        "padding longest, threads | fixed / bucketed | HF / bucketed | padded length: fixed, "
        "bucketed, HF |")
  print("|---|---|---|---|---|---|---|---|---|", flush=True)
  for precision in precisions:
    hf = copy.deepcopy(hf_fp32).to(torch.bfloat16) if precision == "bf16" else hf_fp32
    for seq_len in (int(t) for t in max_seq_lengths):
      model_dir = os.path.join(work, f"model_{seq_len}")
      if not os.path.exists(model_dir):
        spec = ClassifierSpec(task_name="movie_reviews",
                              labels=("negative", "positive"),
                              max_seq_length=seq_len)
        model_directory.save(model, model_dir, spec, spiece)
      served = {}
      tf_keras.mixed_precision.set_global_policy(
          "mixed_bfloat16" if precision == "bf16" else "float32")
      try:              # the model is rebuilt (in this policy) from the saved weights
        for name, bucketed in (("fixed", False), ("bucketed", True)):
          export_dir = os.path.join(work, f"export_{precision}_{seq_len}_{name}")
          if not os.path.exists(export_dir):
            export_classifier(model_dir, export_dir, bucketed=bucketed)
          served[name] = tf.saved_model.load(export_dir).signatures["serving_default"]
      finally:
        tf_keras.mixed_precision.set_global_policy("float32")

      def ours(name, batch):
        return lambda: served[name](text_a=tf.constant(batch))["probabilities"].numpy()

      def hf_call(batch):
        def call():
          with torch.inference_mode():
            inputs = tokenizer(batch, padding="longest", truncation=True,
                               max_length=seq_len, return_tensors="pt",
                               return_token_type_ids=True)
            torch.softmax(hf(**inputs).logits.float(), dim=-1).numpy()
          return int(inputs["input_ids"].shape[1])       # [B, L]: L is the padded length
        return call

      for batch_size in (int(b) for b in batch_sizes):
        batches = requests(texts, batch_size, calls)
        lengths = {"fixed": [seq_len] * len(batches), "bucketed": [
            int(classifier_inputs(encoder, tf.constant(b), None, seq_len,
                                  bucketed=True)["input_ids"].shape[1])
            for b in batches]}
        # One system after the other (two runtimes' thread pools interleaved on few cores
        # slow each other down), each warmed up first: the fixed export with one call, the
        # others with one call per distinct padded length of the requests.
        make = {"fixed": lambda b: ours("fixed", b), "bucketed": lambda b: ours("bucketed", b),
                "hf": hf_call}                   # batch -> a call
        warm = {n: batches[lengths["bucketed"].index(n)] for n in set(lengths["bucketed"])}
        seconds = {}
        for name in SYSTEMS:
          for batch in [batches[0]] if name == "fixed" else warm.values():
            make[name](batch)()
          if name == "hf":                       # HF at its best thread count
            threads = fastest_threads(lambda: [make["hf"](b)() for b in warm.values()],
                                      torch_threads)
          timings = [timed(make[name](batch)) for batch in batches]
          seconds[name] = [elapsed for elapsed, _ in timings]
        lengths["hf"] = [length for _, length in timings]        # the last block: HF's
        stats = {name: spread(seconds[name]) for name in SYSTEMS}
        cell = lambda s: f"{s['median']:,.1f} ({s['p10']:,.1f}-{s['p90']:,.1f})"  # noqa: E731
        lengths_cell = ", ".join(f"{np.mean(lengths[name]):.0f}" for name in SYSTEMS)
        print(f"| {precision} | {seq_len} | {batch_size} | {cell(stats['fixed'])} | "
              f"{cell(stats['bucketed'])} | {cell(stats['hf'])}, {threads} th. | "
              f"{stats['fixed']['median'] / stats['bucketed']['median']:.2f}x | "
              f"{stats['hf']['median'] / stats['bucketed']['median']:.2f}x | "
              f"{lengths_cell} |", flush=True)

