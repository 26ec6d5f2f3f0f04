"""The TPU path without a TPU: static shapes, the whole replica step compiled by XLA (as the
TPU compiles it), the host loop (many steps per call, no new trace for another step count),
and the Cloud TPU flagfiles with the paper's XLNet-Large hyperparameters. Slow: XLA
compiles, and command lines that parse the flagfiles."""

import json
import os
import re
import subprocess
import sys

import pytest
import tensorflow as tf

from helpers import pretrain_config
from xlnet_tf.data.pretrain_reader import pretrain_dataset
from xlnet_tf.data import pretrain_records
from xlnet_tf.models.xlnet_pretrainer import build_pretrainer
from xlnet_tf.tasks import pretraining
from xlnet_tf.training import optimization
from xlnet_tf.training.memory import ReplicaMemories
from xlnet_tf.training.trainer import NonFiniteLossError
from xlnet_tf.training.trainer import Trainer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FLAGFILES = os.path.join(ROOT, "experiments", "flagfiles")

pytestmark = pytest.mark.slow


def _trainer(records_dir, strategy):
  manifest = pretrain_records.load_manifest(records_dir)
  rows = manifest["settings"]["bsz_per_host"]
  config = pretrain_config(records_dir)
  with strategy.scope():
    model = build_pretrainer(config)
    optimizer = optimization.build_optimizer(1e-3, 10, 1)
  memories = ReplicaMemories(strategy, config.n_layer, rows, config.mem_len, config.d_model)
  dataset = pretrain_dataset(records_dir, rows, seed=0, manifest=manifest)
  trainer = Trainer(strategy, model, optimizer, strategy.experimental_distribute_dataset(dataset),
                    input_keys=pretraining.MODEL_INPUTS, loss_fn=pretraining.pretraining_loss,
                    memories=memories, tokens_per_step=rows * 64, jit_compile=True,
                    error=NonFiniteLossError)
  return trainer, dataset


def test_inputs_are_static_and_the_whole_replica_step_compiles_with_xla(pretraining_records):
  records_dir, _ = pretraining_records
  trainer, dataset = _trainer(records_dir, tf.distribute.get_strategy())
  for name, spec in dataset.element_spec.items():
    assert spec.shape.is_fully_defined(), (name, spec.shape)
  batch = next(iter(dataset))
  # One replica step on one micro-batch, compiled whole.
  step = tf.function(lambda b: trainer._replica_step([b]),  # pylint: disable=protected-access
                     jit_compile=True)
  hlo = step.experimental_get_compiler_ir(batch)(stage="hlo")
  assert "ENTRY" in hlo
  # Dynamic dimensions print as "<=N" in HLO shapes; the TPU needs none.
  assert not re.search(r"\[[^\]]*<=", hlo)
  before = int(trainer.optimizer.iterations.numpy())
  step(batch)                                   # runs as one XLA program
  assert int(trainer.optimizer.iterations.numpy()) == before + 1
  assert 0.0 < float(trainer.loss_metric.result()) < 20.0


def test_host_loop_runs_many_steps_per_call_without_retracing(pretraining_records):
  records_dir, _ = pretraining_records
  strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
  trainer, _ = _trainer(records_dir, strategy)
  trainer.train(tf.constant(3))                 # first call: creates the optimizer slots
  loop = trainer._train_loop_fn                # pylint: disable=protected-access
  traces = loop.experimental_get_tracing_count()
  trainer.train(tf.constant(2))                 # other step counts: the same program
  trainer.train(tf.constant(4))
  assert int(trainer.optimizer.iterations.numpy()) == 9
  assert loop.experimental_get_tracing_count() == traces


_XNNPACK_STEP = """
import tensorflow as tf
from xlnet_tf import XLNetConfig, build_pretrainer
config = XLNetConfig(n_layer=2, d_model=16, n_head=2, d_head=8, d_inner=32, n_token=50)
model = build_pretrainer(config)
ids = tf.constant([[5, 6, 7, 8], [9, 10, 11, 12]])
feed = {"input_ids": ids, "segment_ids": tf.constant([[0, 0, 1, 1]] * 2),
        "perm_mask": tf.zeros([2, 4, 4]), "target_mapping": tf.one_hot([[1, 3]] * 2, 4)}
@tf.function(jit_compile=True)
def step():
  with tf.GradientTape() as tape:
    loss = tf.reduce_sum(model.encoder(feed)["query"] ** 2)
  return loss, tape.gradient(loss, model.trainable_variables)
loss, grads = step()
print("ok", float(loss), sum(g is not None for g in grads))
"""


def test_the_compiled_step_builds_with_xla_cpu_xnnpack_dots():
  """XLA:CPU's XNNPACK dots need the batch dimensions most major; the attention's batched
  matmuls merge theirs, so the program compiles with XLA_FLAGS=--xla_cpu_use_xnnpack=true
  (it did not: "RHS batch dims [0,1] must be in the most major dimensions")."""
  env = {**os.environ, "XLA_FLAGS": "--xla_cpu_use_xnnpack=true", "TF_CPP_MIN_LOG_LEVEL": "2",
         "PYTHONPATH": ROOT}
  result = subprocess.run([sys.executable, "-c", _XNNPACK_STEP], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
  assert result.returncode == 0, result.stderr[-2000:]
  assert result.stdout.split()[0] == "ok"


def _parse(module, flagfile, names, required):
  """The flag values `python -m module --flagfile=... REQUIRED` would run with."""
  argv = ["prog", f"--flagfile={flagfile}"] + required
  code = (f"import json, sys\nfrom absl import flags\nimport {module}\n"
          f"flags.FLAGS({argv!r})\n"
          f"print(json.dumps({{n: flags.FLAGS[n].value for n in {names!r}}}))")
  result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": ROOT}, timeout=300)
  assert result.returncode == 0, result.stderr[-2000:]
  return json.loads(result.stdout.strip().splitlines()[-1])


def test_large_flagfiles_hold_the_papers_hyperparameters():
  # The paper's XLNet-Large pretraining (Yang et al. 2019, appendix A.2 and Table 7).
  train = _parse("experiments.pretrain", os.path.join(FLAGFILES, "xlnet_large_tpu.flags"),
                 ["strategy", "n_layer", "d_model", "n_head", "d_head", "d_inner", "mem_len",
                  "seq_len", "reuse_len", "num_predict", "bi_data", "train_batch_size",
                  "train_steps", "warmup_steps", "learning_rate", "adam_epsilon",
                  "weight_decay", "clip", "precision"],
                 ["--train_data=gs://b/records", "--model_dir=gs://b/run"])
  assert train == {"strategy": "tpu", "n_layer": 24, "d_model": 1024, "n_head": 16,
                   "d_head": 64, "d_inner": 4096, "mem_len": 384, "seq_len": 512,
                   "reuse_len": 256, "num_predict": 85, "bi_data": True,
                   "train_batch_size": 8192, "train_steps": 500000, "warmup_steps": 40000,
                   "learning_rate": 4e-4, "adam_epsilon": 1e-6, "weight_decay": 0.01,
                   "clip": 1.0, "precision": "bfloat16"}
  data = _parse("data_prep.create_pretraining_data",
                os.path.join(FLAGFILES, "xlnet_large_data.flags"),
                ["seq_len", "reuse_len", "num_predict", "bsz_per_host", "num_core_per_host",
                 "bi_data", "mask_alpha", "mask_beta"],
                ["--input_glob=gs://b/*.txt", "--spiece_model=gs://b/sp.model",
                 "--output_dir=gs://b/records"])
  assert data["bsz_per_host"] * 64 == train["train_batch_size"]     # 64 hosts of a v3-512
  assert (data["seq_len"], data["reuse_len"], data["num_predict"], data["bi_data"]) == (
      train["seq_len"], train["reuse_len"], train["num_predict"], train["bi_data"])
  assert (data["mask_alpha"], data["mask_beta"]) == (6, 1)
  assert data["bsz_per_host"] % data["num_core_per_host"] == 0
