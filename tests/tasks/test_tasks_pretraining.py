"""Pretraining as a Model Garden experiment: the driver trains, resumes exactly, evaluates
the held-out loss at intervals, keeps the best model and exports the encoder."""

import glob
import json
import os

from official.core import exp_factory
from official.core import task_factory
import numpy as np
import pytest
import tensorflow as tf

from helpers import serve_fresh
from xlnet_tf import pretrained
from xlnet_tf.data.pretrain_reader import pretrain_dataset
from xlnet_tf.models.losses import target_cross_entropy
from xlnet_tf.tasks import pretraining
from xlnet_tf.tasks import train_lib
from xlnet_tf.training import run_directory

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEMO = os.path.join(ROOT, "experiments", "configs", "pretraining_demo.yaml")


def _params(records, override=""):
  return train_lib.parse_params(
      pretraining.KIND.experiment, [DEMO],
      f"task.train_data.input_path={records},task.validation_data.input_path={records}"
      + override)


def test_every_pretraining_yaml_parses_and_builds_its_task(pretraining_records):
  records, _ = pretraining_records
  for path in sorted(glob.glob(os.path.join(ROOT, "experiments", "configs",
                                            "pretraining_*.yaml"))):
    params = train_lib.parse_params(pretraining.KIND.experiment, [path],
                                    f"task.train_data.input_path={records}")
    task = task_factory.get_task(params.task)
    assert isinstance(task, pretraining.PretrainingTask)
    config = task.xlnet_config()
    assert config.bi_data and config.reuse_len == 32              # from the manifest
    if "large" in path:
      assert (config.n_layer, config.d_model, config.mem_len) == (24, 1024, 384)
      assert params.task.optimization.precision == "bfloat16"
    elif "small" in path:                   # the small-model recipe (docs/small-models.md)
      assert task.build_model().config.n_layer == 2
      assert (config.d_model, config.mem_len) == (128, 64)
      assert params.task.optimization.adam_bias_correction == "always"
    else:
      assert task.build_model().config.n_layer == 1
  assert exp_factory.get_exp_config(pretraining.KIND.experiment).task.optimization.min_lr_ratio \
      == 0.001


def test_resumes_exactly_evaluates_and_exports(pretraining_records, tmp_path):
  records, _ = pretraining_records
  params = _params(records)
  straight = train_lib.run(params, "train", str(tmp_path / "straight"))["train"]
  assert straight["step"] == 20 and len(straight["losses"]) == 2

  run_dir = str(tmp_path / "run")
  first = train_lib.run(params, "train_and_eval", run_dir, stop_at_step=10)["train"]
  second = train_lib.run(params, "train_and_eval", run_dir)["train"]
  assert (first["step"], second["start_step"], second["step"]) == (10, 10, 20)
  assert first["losses"] + second["losses"] == straight["losses"]   # memories included
  evals = first["evals"] + second["evals"]
  assert len(evals) == 2 and all(e["num_targets"] > 0 for e in evals)
  assert glob.glob(os.path.join(run_dir, "validation", "events.out.tfevents.*"))
  best = json.loads(open(os.path.join(run_dir, "best", "eval_results.json")).read())
  assert best["loss"] == min(e["loss"] for e in evals)

  # The held-out loss, recomputed here: rows in order, each reading its stream's memory.
  model = pretrained.load_directory(os.path.join(run_dir, "final"), mem_len=16,
                                    reuse_len=32, bi_data=True, dropout=0.0, dropatt=0.0)
  total = count = 0.0
  mems = None
  for batch in pretrain_dataset(records, 8, repeat=False, shuffle_shards=False).take(4):
    inputs = {k: batch[k] for k in ("input_ids", "segment_ids", "input_mask", "perm_mask",
                                    "target_mapping")}
    if mems is not None:
      keep = (batch["stream_step"].numpy() > 0)[:, None, None]
      inputs["mems"] = [tf.constant(np.where(keep, m.numpy(), 0.0)) for m in mems]
    outputs = model(inputs, training=False)
    loss, n = target_cross_entropy(outputs["logits"], batch["target"], batch["target_mask"])
    total, count = total + float(loss), count + float(n)
    mems = outputs["new_mems"]
  assert evals[-1]["loss"] == pytest.approx(total / count, rel=1e-5)

  with pytest.raises(run_directory.RunSettingsError, match="learning_rate"):
    train_lib.run(_params(records, ",task.optimization.learning_rate=0.1"), "train", run_dir)

  export_dir = train_lib.run(params, "export", run_dir)["export"]
  served = serve_fresh(export_dir, {"text": ["Call me Ishmael."]}, tmp_path)
  assert np.array(served["hidden_states"]).shape == (1, 64, 32)
  assert np.array(served["summary"]).shape == (1, 32)
