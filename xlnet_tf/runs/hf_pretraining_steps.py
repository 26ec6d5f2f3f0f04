r"""Our pretraining and HuggingFace's XLNetLMHeadModel stepped side by side on the same records
(python -m experiments.hf_pretraining_steps; needs torch and transformers, the
[huggingface] extra).

The method, the settings and what the figures mean are the command's
(`experiments/hf_pretraining_steps.py`, its --help); this module holds the code it runs.
"""

import dataclasses
import os
import tempfile
import time

import numpy as np
import tensorflow as tf
import torch
import transformers

from xlnet_tf import paths
from xlnet_tf import pretrained
from xlnet_tf.runs.hf_training import PretrainingSteps
from xlnet_tf.runs.hf_training import ReleasedOptimizer
from xlnet_tf.configs import XLNetConfig
from xlnet_tf.convert import to_huggingface
from xlnet_tf.data import pretrain_records
from xlnet_tf.data.pretrain_reader import pretrain_dataset
from xlnet_tf.models.xlnet_pretrainer import build_pretrainer
from xlnet_tf.training import optimization
from xlnet_tf.runs import pretraining
from xlnet_tf.training import loop

ADAM_BIAS_CORRECTIONS = optimization.ADAM_BIAS_CORRECTIONS   # of our optimizer and HF's


def set_threads(threads: int) -> None:
  """CPU threads of TensorFlow's ops (intra-op) and of PyTorch."""
  tf.config.threading.set_intra_op_parallelism_threads(threads)
  torch.set_num_threads(threads)


def check_inputs(train_data: str, output: str, steps: int, train_steps: int):
  """The records' manifest, after refusing what cannot run (naming the flag)."""
  paths.check_input_path(train_data, "--train_data", "record directory")
  paths.check_output_file(output, "--output")
  if os.path.exists(output):
    raise FileExistsError(f"--output {output} exists; give a new file name")
  records = os.path.abspath(train_data)
  if os.path.commonpath([records, os.path.abspath(output)]) == records:
    raise ValueError(f"--output {output} lies inside --train_data {train_data}; write it "
                     f"elsewhere (the records are only read)")
  if steps > train_steps:
    raise ValueError(f"--steps ({steps}) must be <= --train_steps ({train_steps})")
  return pretrain_records.check_data(train_data)


def initial_model(config: XLNetConfig, seed: int, work_dir: str):
  """(our model directory, HF's XLNetLMHeadModel) of one initial model drawn with `seed`."""
  tf.keras.utils.set_random_seed(seed)
  ours = os.path.join(work_dir, "init")
  pretrained.save_pretrained(build_pretrainer(config), ours)
  theirs = os.path.join(work_dir, "init_hf")
  to_huggingface.export_to_huggingface(ours, theirs)
  return ours, transformers.XLNetLMHeadModel.from_pretrained(theirs).train()


def hf_losses(model, options: loop.RunOptions, config: XLNetConfig,
              train_data: str, manifest, steps: int):
  """HF's per-step losses on the batches our pretraining reads (same seed)."""
  optimizer = ReleasedOptimizer(
      model.named_parameters(), options.learning_rate, options.train_steps,
      options.warmup_steps, options.min_lr_ratio, options.weight_decay, options.adam_epsilon,
      options.clip_norm, bias_correction=optimization.uses_bias_correction(
          options.adam_bias_correction, options.weight_decay))
  rows = manifest["settings"]["bsz_per_host"]
  hf_steps = PretrainingSteps(model, optimizer, config.mem_len, rows)
  tf.keras.utils.set_random_seed(options.seed)
  batches = pretrain_dataset(train_data, rows, seed=options.seed, manifest=manifest)
  return [hf_steps.step({k: v.numpy() for k, v in batch.items()})
          for batch in batches.take(steps)]


def compare(ours, theirs, print_every: int, report=print):
  """Reports the curves every `print_every` steps; returns the summary of their gap."""
  differences = np.asarray(ours) - np.asarray(theirs)
  report(f"{'step':>5} {'ours':>8} {'HF':>8} {'ours-HF':>9}")
  for step in range(print_every, len(ours) + 1, print_every):
    report(f"{step:5d} {ours[step - 1]:8.4f} {theirs[step - 1]:8.4f} "
           f"{differences[step - 1]:+9.2e}")
  last = slice(-min(print_every, len(ours)), None)
  summary = {"mean_abs_difference": float(np.mean(np.abs(differences))),
             "max_abs_difference": float(np.max(np.abs(differences))),
             "final_loss_ours": float(ours[-1]), "final_loss_hf": float(theirs[-1]),
             "last_steps_mean_ours": float(np.mean(ours[last])),
             "last_steps_mean_hf": float(np.mean(theirs[last]))}
  report(f"mean |ours - HF| {summary['mean_abs_difference']:.2e} (max "
         f"{summary['max_abs_difference']:.2e}); final loss ours {summary['final_loss_ours']:.4f}"
         f", HF {summary['final_loss_hf']:.4f}; mean of the last {-last.start} steps ours "
         f"{summary['last_steps_mean_ours']:.4f}, HF {summary['last_steps_mean_hf']:.4f}")
  return summary


def run(train_data: str, output: str, config_values, steps: int, train_steps: int,
        learning_rate: float, warmup_steps: int, adam_bias_correction: str, seed: int,
        print_every: int, report=print):
  """Trains both sides, reports and writes `output`; returns what was written."""
  manifest = check_inputs(train_data, output, steps, train_steps)
  settings = manifest["settings"]
  config = XLNetConfig(**config_values, n_token=manifest["spiece"]["vocab_size"],
                       dropout=0.0, dropatt=0.0, reuse_len=settings["reuse_len"],
                       bi_data=settings["bi_data"])
  with tempfile.TemporaryDirectory(prefix="hf_pretraining_steps-") as work_dir:
    options = pretraining.pretrain_options(
        os.path.join(work_dir, "run"), train_steps,
        stop_at_step=steps, learning_rate=learning_rate, warmup_steps=warmup_steps,
        adam_bias_correction=adam_bias_correction, steps_per_loop=1, save_steps=steps,
        seed=seed)
    init_dir, hf_model = initial_model(config, seed, work_dir)
    options = dataclasses.replace(options, init_checkpoint=init_dir)
    start = time.time()
    ours = pretraining.pretrain(config, train_data, options)["losses"]
    ours_seconds = time.time() - start
    start = time.time()
    theirs = hf_losses(hf_model, options, config, train_data, manifest, steps)
    hf_seconds = time.time() - start
  report(f"{steps} steps: ours {ours_seconds:.0f} s, HF {hf_seconds:.0f} s")
  result = {
      "train_data": os.path.abspath(train_data), "config": config.to_dict(),
      "steps": steps, "train_steps": train_steps, "learning_rate": learning_rate,
      "warmup_steps": warmup_steps, "adam_bias_correction": adam_bias_correction,
      "weight_decay": options.weight_decay, "adam_epsilon": options.adam_epsilon,
      "clip_norm": options.clip_norm, "min_lr_ratio": options.min_lr_ratio, "seed": seed,
      "transformers": transformers.__version__, "torch": torch.__version__,
      "seconds": {"ours": ours_seconds, "hf": hf_seconds},
      "losses": {"ours": ours, "hf": theirs},
      **compare(ours, theirs, print_every, report)}
  os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
  paths.write_json(output, result, sort_keys=True)
  return result
