r"""Per-token latency of greedy generation: ours (`xlnet_tf.generation`, memory of keys and
values) vs HuggingFace's `XLNetLMHeadModel.generate` (its default memory, `use_mems=True`),
same weights, same prompt, in one run (python -m experiments.benchmark_generation; needs
torch and transformers).

The method, the settings and what the figures mean are the command's
(`experiments/benchmark_generation.py`, its --help); this module holds the code it runs.
"""

import os
import tempfile
import time

import numpy as np
import tensorflow as tf

from xlnet_tf import XLNetConfig
from xlnet_tf import load_pretrained
from xlnet_tf.benchmarks.timing import cpu_description
from xlnet_tf.convert.importer import convert
from xlnet_tf.generation import generate

def _tenths(latencies):
  """Median latency (s) of the first, middle and last tenth of `latencies`."""
  n = len(latencies)
  size = max(1, n // 10)
  middle = (n - size) // 2
  return [float(np.median(latencies[a:a + size])) for a in (0, middle, n - size)]


def _latencies(stamps, start):
  """(first token's latency, the other tokens' latencies) from per-token timestamps."""
  times = np.diff(np.concatenate([[start], stamps]))
  return times[0], times[1:]


def _time_ours(model, prompts, use_mems, new_tokens):
  generate(model, prompts, 3, stop_ids=(), use_mems=use_mems)          # traces once
  stamps = []
  start = time.perf_counter()
  tokens = generate(model, prompts, new_tokens, stop_ids=(), use_mems=use_mems,
                    callback=lambda step, token: stamps.append(time.perf_counter()))
  return tokens, _latencies(stamps, start)


def _time_hf(hf_model, prompts, new_tokens):
  import torch  # pylint: disable=g-import-not-at-top
  import transformers  # pylint: disable=g-import-not-at-top
  stamps = []

  class Stamp(transformers.StoppingCriteria):
    def __call__(self, input_ids, scores, **kwargs):
      stamps.append(time.perf_counter())
      return torch.zeros(input_ids.shape[0], dtype=torch.bool)

  ids = torch.as_tensor(prompts, dtype=torch.long)
  def run(n):
    with torch.no_grad():
      return hf_model.generate(ids, max_new_tokens=n, do_sample=False, eos_token_id=None,
                               pad_token_id=5, stopping_criteria=[Stamp()])
  run(3)
  stamps.clear()
  start = time.perf_counter()
  tokens = run(new_tokens)[:, prompts.shape[1]:].numpy()
  return tokens, _latencies(stamps, start)


def benchmark(n_layer: int, d_model: int, n_head: int, d_inner: int, n_token: int,
              prompt_len: int, new_tokens: int, batch: int, no_mems: bool, seed: int,
              threads: int) -> None:
  """Prints the per-token latencies of ours and HF's greedy generation of `new_tokens`
  after `prompt_len` random ids (with `no_mems`, ours with use_mems=False too); `threads`
  of torch and of TensorFlow's ops (0: one per core)."""
  import torch  # pylint: disable=g-import-not-at-top
  import transformers  # pylint: disable=g-import-not-at-top

  threads = threads or os.cpu_count()
  torch.set_num_threads(threads)
  tf.config.threading.set_intra_op_parallelism_threads(threads)
  config = XLNetConfig(n_layer=n_layer, d_model=d_model, n_head=n_head,
                       d_head=d_model // n_head, d_inner=d_inner,
                       n_token=n_token, dropout=0.0, dropatt=0.0)
  print(f"{cpu_description()}; {threads} threads each; load average before the run "
        f"{os.getloadavg()[0]:.1f}")
  print(f"model: {config.n_layer} layers, d_model {config.d_model}, {config.n_head} heads, "
        f"d_inner {config.d_inner}, vocabulary {config.n_token}; batch {batch}, "
        f"prompt {prompt_len} tokens, {new_tokens} new tokens, greedy, fp32, memory "
        f"unbounded (mem_len 0 / HF null)")
  torch.manual_seed(seed)
  hf_model = transformers.XLNetLMHeadModel(
      transformers.XLNetConfig(**config.to_hf_dict())).eval()
  with tempfile.TemporaryDirectory() as tmp:
    hf_model.save_pretrained(os.path.join(tmp, "hf"))
    convert(os.path.join(tmp, "hf"), os.path.join(tmp, "ours"))
    model = load_pretrained(os.path.join(tmp, "ours"))
  prompts = np.random.default_rng(seed).integers(
      10, config.n_token, [batch, prompt_len])

  runs = {"ours (memory)": _time_ours(model, prompts, use_mems=True, new_tokens=new_tokens),
          "HF generate (use_mems)": _time_hf(hf_model, prompts, new_tokens)}
  if no_mems:
    runs["ours (use_mems=False)"] = _time_ours(model, prompts, use_mems=False,
                                               new_tokens=new_tokens)
  (ours_tokens, _), (hf_tokens, _) = runs["ours (memory)"], runs["HF generate (use_mems)"]
  print(f"greedy tokens equal to HF's: {bool(np.array_equal(ours_tokens, hf_tokens))}")

  n = new_tokens - 1
  print(f"per-token latency (ms), median of each tenth of tokens 2..{new_tokens} "
        f"({max(1, n // 10)} tokens each); first token = prompt + 1 step")
  print(f"{'':<24}{'first token':>12}{'first 10%':>11}{'middle 10%':>12}{'last 10%':>10}"
        f"{'last/first':>12}{'total s':>9}")
  tenths = {}
  for name, (_, (first, rest)) in runs.items():
    tenths[name] = _tenths(rest)
    a, m, z = tenths[name]
    print(f"{name:<24}{1e3 * first:>12.1f}{1e3 * a:>11.1f}{1e3 * m:>12.1f}{1e3 * z:>10.1f}"
          f"{z / a:>12.2f}{first + rest.sum():>9.1f}")
  ratio = [h / o for h, o in zip(tenths["HF generate (use_mems)"], tenths["ours (memory)"])]
  print(f"{'HF / ours (memory)':<24}{'':>12}{ratio[0]:>10.2f}x{ratio[1]:>11.2f}x"
        f"{ratio[2]:>9.2f}x")

