"""Pretraining as a Model Garden experiment: its YAML files, and the kind's one step through
the driver on records made lower-cased and keeping accents: trained, the held-out loss
(recomputed here row by row, each row reading its stream's memory), best/ and final/ one
kind of directory recording the records' text normalisation, and the encoder's export
(in-process; in a fresh process: slow); the old key init_std. (Exact resume with memories
and dropout: tests/training/test_pretraining.py; the records skipped on resume:
tests/tasks/test_every_kind.py; the driver's rules: tests/tasks/test_driver.py.)"""

import dataclasses
import glob
import json
import logging
import os

from official.core import exp_factory
from official.core import task_factory
import numpy as np
import pytest
import tensorflow as tf

from data_prep import pipeline
import helpers
from helpers import CORPUS_GLOB
from helpers import PRETRAIN_SETTINGS
from xlnet_tf import model_directory
from xlnet_tf import pretrained
from xlnet_tf.data.pretrain_reader import pretrain_dataset
from xlnet_tf.models.losses import target_cross_entropy
from xlnet_tf.tasks import pretraining
from xlnet_tf.tasks import train_lib

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


@pytest.fixture(scope="module")
def uncased_records(spiece_model, tmp_path_factory):
  """Records of 8 chapters made lower-cased and keeping accents, small rows (16 tokens,
  8 reused)."""
  settings = dataclasses.replace(
      PRETRAIN_SETTINGS, uncased=True, keep_accents=True, num_passes=1,
      rows=dataclasses.replace(PRETRAIN_SETTINGS.rows, seq_len=16, reuse_len=8,
                               num_predict=3, perm_size=8))
  directory = str(tmp_path_factory.mktemp("uncased_records"))
  pipeline.create(settings, sorted(glob.glob(CORPUS_GLOB))[:8], spiece_model, directory)
  return directory


@pytest.fixture(scope="module")
def one_step(uncased_records, tmp_path_factory):
  """A 1-layer model (d_model 16, memory 8) pretrained 2 steps by train_and_eval, evaluated
  at the end on 2 batches of held-out records, then exported: (params, model directory,
  what train_and_eval returned, the export directory)."""
  params = exp_factory.get_exp_config(pretraining.KIND.experiment)
  params.override({
      "task": {"model": {"n_layer": 1, "d_model": 16, "n_head": 2, "d_head": 8,
                         "d_inner": 32, "mem_len": 8, "dropout": 0.0, "dropatt": 0.0},
               "train_data": {"input_path": uncased_records},
               "validation_data": {"input_path": uncased_records}},
      "trainer": {"train_steps": 2, "steps_per_loop": 1, "checkpoint_interval": 2,
                  "validation_interval": 2, "validation_steps": 2}})
  model_dir = str(tmp_path_factory.mktemp("pretraining") / "run")
  out = train_lib.run(params, "train_and_eval", model_dir)
  return params, model_dir, out, train_lib.run(params, "export", model_dir)["export"]


def test_one_step_evaluates_and_exports(uncased_records, one_step):
  params, model_dir, out, export_dir = one_step
  evals = out["train"]["evals"]
  assert out["train"]["step"] == 2
  assert len(evals) == 1 and all(e["num_targets"] > 0 for e in evals)   # at step 2
  assert glob.glob(os.path.join(model_dir, "validation", "events.out.tfevents.*"))
  best = json.loads(open(os.path.join(model_dir, "best", "eval_results.json")).read())
  assert best["loss"] == min(e["loss"] for e in evals)

  # final/ and best/ are one kind of directory (one writer: the task's save_model_dir),
  # recording the records' text normalisation, which every reader then applies.
  final, best_dir = (os.path.join(model_dir, name) for name in ("final", "best"))

  def written(directory):                 # best/ also has the evaluation that chose it
    return sorted(set(os.listdir(directory)) - {train_lib.RESULTS_FILE})

  assert written(final) == written(best_dir)
  assert model_directory.TEXT_FILE in written(final)
  for directory in (final, best_dir):
    assert model_directory.read_text_settings(directory) == {"uncased": True,
                                                             "keep_accents": True}
  # One evaluation at the last step: best/ is the final model.
  for ours, theirs in zip(pretrained.load_directory(final).variables,
                          pretrained.load_directory(best_dir).variables):
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())

  # The held-out loss, recomputed here: rows in order, each reading its stream's memory.
  model = pretrained.load_directory(final, mem_len=8, reuse_len=8, bi_data=True,
                                    dropout=0.0, dropatt=0.0)
  total = count = 0.0
  mems = None
  for batch in pretrain_dataset(uncased_records, 8, repeat=False,
                                shuffle_shards=False).take(2):
    inputs = {k: batch[k] for k in ("input_ids", "segment_ids", "input_mask", "perm_mask",
                                    "target_mapping")}
    if mems is not None:
      keep = (batch["stream_step"].numpy() > 0)[:, None, None]
      inputs["mems"] = [tf.constant(np.where(keep, m.numpy(), 0.0)) for m in mems]
    outputs = model(inputs, training=False)
    loss, n = target_cross_entropy(outputs["logits"], batch["target"], batch["target_mask"])
    total, count = total + float(loss), count + float(n)
    mems = outputs["new_mems"]
  assert mems is not None and evals[-1]["loss"] == pytest.approx(total / count, rel=1e-5)

  # The encoder's export.
  assert export_dir == os.path.join(model_dir, "export")
  served = helpers.serve_in_process(export_dir, {"text": ["Call me Ishmael."]})
  assert np.array(served["hidden_states"]).shape == (1, 16, 16)
  assert np.array(served["summary"]).shape == (1, 16)


def test_eval_mode_scores_the_last_checkpoint_as_training_did(one_step):
  """--mode=eval of the trained directory: the held-out loss of the step-2 checkpoint, the
  one train_and_eval computed, written to eval_results_validation.json (the records name
  no split)."""
  params, model_dir, out, _ = one_step
  results = train_lib.run(params, "eval", model_dir)["eval"]
  written = json.loads(open(os.path.join(model_dir, "eval_results_validation.json")).read())
  assert written == results
  assert (results["step"], results["checkpoint"]) == (2, "ckpt-2")
  assert results["loss"] == out["train"]["evals"][-1]["loss"]


@pytest.mark.slow
def test_the_export_serves_in_a_fresh_process(one_step, tmp_path):
  """The encoder's outputs in a fresh process with TensorFlow and tensorflow-text only
  are those served in this one."""
  inputs = {"text": ["Call me Ishmael."]}
  here = helpers.serve_in_process(one_step[3], inputs)
  fresh = helpers.serve_fresh(one_step[3], inputs, tmp_path)
  for key in ("hidden_states", "summary"):
    np.testing.assert_allclose(fresh[key], here[key], atol=1e-6, rtol=0)


def test_the_old_key_init_std_is_read_as_initializer_range_with_its_new_name(
    uncased_records, caplog):
  params = exp_factory.get_exp_config(pretraining.KIND.experiment)
  params.override({"task": {"train_data": {"input_path": uncased_records},
                            "model": {"init_std": 0.05}}})
  task = task_factory.get_task(params.task)
  with caplog.at_level(logging.WARNING):
    assert task.xlnet_config().initializer_range == 0.05
  assert "task.model.init_std is now task.model.initializer_range" in caplog.text
  params.override({"task": {"model": {"initializer_range": 0.01}}})
  with pytest.raises(ValueError, match="init_std is the old name of initializer_range"):
    task_factory.get_task(params.task).xlnet_config()
