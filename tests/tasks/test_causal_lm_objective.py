"""The causal-LM objective ("clm", issue 28's diagnostic baseline): its inputs from the
pretraining records, its loss against HuggingFace's XLNetLMHeadModel(attn_type="uni"),
a short run through the driver and the pretraining wrapper, fine-tuning its model
directory, and the refusals."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
import torch
import yaml

from hf_reference import make_hf_model
from helpers import PRETRAIN_SETTINGS
from helpers import build_for_training
from helpers import pretrain_config
from helpers import pretrain_options
from helpers import run_pretraining
from helpers import small_config
from helpers import train_classifier
from helpers import warm_start
from xlnet_tf import model_directory
from xlnet_tf import pretrained
from xlnet_tf import released_names
from xlnet_tf.configs import XLNetConfig
from xlnet_tf.convert.huggingface import hf_to_released
from xlnet_tf.data import classifier_features
from xlnet_tf.data import classifier_tasks
from xlnet_tf.data.pretrain_reader import pretrain_dataset
from xlnet_tf.models.xlnet_pretrainer import build_pretrainer
from xlnet_tf.tasks import pretraining
from xlnet_tf.tasks import train_lib
from xlnet_tf.tasks.pretraining import MODEL_INPUTS
from xlnet_tf.tasks.pretraining import pretraining_loss
from xlnet_tf.training import loop
from xlnet_tf.training import run_directory
from xlnet_tf.models.xlnet_classifier import ClassifierSpec

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIGS = os.path.join(ROOT, "experiments", "configs")
ROWS = PRETRAIN_SETTINGS.rows
TOLERANCE = 1e-5              # |ours - HF| / max(1, |HF|), per step


def _batches(records, objective, count):
  dataset = pretrain_dataset(records, ROWS.bsz_per_host, repeat=False, shuffle_shards=False,
                             objective=objective)
  return [{k: v.numpy() for k, v in b.items()} for b in dataset.take(count)]


def test_every_position_predicts_the_next_token_of_the_same_rows(pretraining_records):
  records, _ = pretraining_records
  plm, clm = _batches(records, "plm", 2), _batches(records, "clm", 2)
  for p, c in zip(plm, clm):
    assert "perm_mask" not in c and "target_mapping" not in c
    for key in ("input_ids", "segment_ids", "input_mask", "stream_index", "stream_step"):
      np.testing.assert_array_equal(c[key], p[key])
    ids = p["input_ids"]                                                  # [B, T]
    rows, length = ids.shape
    for b in range(rows):
      for i in range(length - 1):
        assert c["target"][b, i] == ids[b, i + 1] and c["target_mask"][b, i] == 1.0
      assert c["target_mask"][b, length - 1] == 0.0
  assert c["target"].dtype == np.int32 and c["target_mask"].dtype == np.float32


def test_clm_loss_equals_huggingface_uni_with_memory(pretraining_records):
  """Three consecutive steps of real rows (two segments, bi_data, memory carried and reset
  where a stream starts): our model + reader + loss against HF's logits, shifted here."""
  records, _ = pretraining_records
  config = pretrain_config(records, attn_type="uni")
  assert config.mem_len and config.reuse_len and config.bi_data
  hf_model = make_hf_model(config, seed=5)
  model = build_pretrainer(config, "clm")
  state = {k: v.numpy() for k, v in hf_model.state_dict().items()}
  released_names.assign_released(model, hf_to_released(state, config, "hf").arrays, "hf")

  batches = _batches(records, "clm", 3)
  assert [int(b["stream_step"].min()) for b in batches] == [0, 1, 2]
  rows = ROWS.bsz_per_host
  ours, hf, memory_effects = [], [], []
  mems = [tf.zeros([rows, config.mem_len, config.d_model])] * config.n_layer
  hf_mems = [torch.zeros(config.mem_len, rows, config.d_model)] * config.n_layer  # [M, B, D]
  for batch in batches:
    keep = batch["stream_step"] > 0
    inputs = {k: batch[k] for k in MODEL_INPUTS if k in batch}
    outputs = model({**inputs, "mems": [m * keep[:, None, None] for m in mems]},
                    training=False)
    loss_sum, count = pretraining_loss(outputs, batch)
    ours.append(float(loss_sum / count))
    mems = outputs["new_mems"]

    ids = torch.as_tensor(batch["input_ids"], dtype=torch.long)             # [B, T]
    segments = torch.as_tensor(batch["segment_ids"], dtype=torch.long)
    keep_hf = torch.as_tensor(keep, dtype=torch.float32)[None, :, None]
    with torch.no_grad():
      out = hf_model(input_ids=ids, token_type_ids=segments,
                     mems=[m * keep_hf for m in hf_mems], use_mems=True)
      forgetful = hf_model(input_ids=ids, token_type_ids=segments,
                           mems=[m * 0 for m in hf_mems], use_mems=True)
    logits = out.logits[:, :-1]                           # position i predicts token i + 1
    hf.append(float(torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))))
    memory_effects.append(float((out.logits - forgetful.logits).abs().max()))
    hf_mems = list(out.mems)

  errors = [abs(a - b) / max(1.0, abs(b)) for a, b in zip(ours, hf)]
  assert max(errors) <= TOLERANCE, list(zip(ours, hf))
  assert memory_effects[0] == 0.0 and min(memory_effects[1:]) > 0.05, memory_effects


def test_a_position_sees_no_later_token():
  config = small_config(attn_type="uni", mem_len=4)
  model = build_pretrainer(config, "clm")
  rng = np.random.default_rng(0)
  ids = rng.integers(9, 50, size=[2, 10])
  changed = ids.copy()
  changed[:, 6:] = rng.integers(9, 50, size=[2, 4])
  memory = [tf.constant(rng.normal(size=[2, 4, 16]), tf.float32)] * config.n_layer
  first, second = (model({"input_ids": tf.constant(x), "mems": memory})["logits"].numpy()
                   for x in (ids, changed))                               # [B, T, V]
  np.testing.assert_allclose(first[:, :6], second[:, :6], atol=1e-6)
  assert np.abs(first[:, 6:] - second[:, 6:]).max() > 1e-3


def test_refusals_name_the_field():
  with pytest.raises(ValueError, match=r"^XLNetConfig.attn_type must be 'uni' \(causal\) "
                                       r"for objective 'clm', got 'bi'"):
    build_pretrainer(small_config(), "clm")
  model = build_pretrainer(small_config(attn_type="uni"), "clm")
  with pytest.raises(ValueError, match="objective 'clm' .* its inputs have no "
                                       "target_mapping or perm_mask"):
    model({"input_ids": tf.zeros([1, 4], tf.int32), "target_mapping": tf.zeros([1, 1, 4]),
           "perm_mask": tf.zeros([1, 4, 4])})
  with pytest.raises(ValueError, match=r"--objective must be one of \('plm', 'mlm', "
                                       r"'clm'\), got 'ar'"):
    loop.RunOptions(model_dir="unused", train_steps=1, objective="ar")


def test_run_pretraining_refuses_a_bidirectional_config_before_any_work(pretraining_records,
                                                                        tmp_path):
  records, _ = pretraining_records
  options = pretrain_options(model_dir=os.fspath(tmp_path / "run"), train_steps=2,
                             objective="clm")
  with pytest.raises(ValueError, match="^XLNetConfig.attn_type must be 'uni'"):
    run_pretraining(tf.distribute.get_strategy(), pretrain_config(records), records, options)
  assert not os.path.exists(tmp_path / "run")


@pytest.mark.slow
def test_driver_trains_clm_resume_keeps_it_and_its_model_directory_fine_tunes(
    pretraining_records, spiece_model, tmp_path):
  records, _ = pretraining_records
  run = os.fspath(tmp_path / "run")
  params = train_lib.parse_params(
      pretraining.KIND.experiment, [os.path.join(CONFIGS, "pretraining_demo.yaml")],
      f"task.train_data.input_path={records},task.optimization.objective=clm,"
      f"task.model.dropout=0.0,task.model.dropatt=0.0,task.optimization.learning_rate=1e-2,"
      f"trainer.train_steps=8,trainer.steps_per_loop=1,trainer.checkpoint_interval=8")
  summary = train_lib.run(params, "train", run)["train"]
  losses = summary["losses"]
  assert summary["step"] == 8 and len(losses) == 8
  assert losses[-1] < losses[0] - 0.3, losses
  with open(os.path.join(run, run_directory.SETTINGS_FILE)) as f:
    recorded = json.load(f)
  assert recorded["options"]["objective"] == "clm"
  assert recorded["config"]["attn_type"] == "uni"
  final = os.path.join(run, train_lib.FINAL_DIR)
  assert pretrained.load_directory(final).config.attn_type == "uni"

  with pytest.raises(run_directory.RunSettingsError) as refused:
    train_lib.run(params.replace(task={"optimization": {"objective": "plm"}}), "train", run)
  assert "options.objective: 'clm' in the directory, 'plm' now" in str(refused.value)
  assert "config.attn_type: 'uni' in the directory, 'bi' now" in str(refused.value)

  # Fine-tuning reads the clm model directory into a bidirectional classifier.
  config = XLNetConfig.from_json_file(
      os.path.join(final, model_directory.CONFIG_FILE)).for_finetuning()
  assert config.attn_type == "bi"
  task = classifier_tasks.get_task("movie_reviews").configure(None)
  features = classifier_features.cached_features(
      task.read(None, "train")[:16], spiece_model, 32, label_list=task.labels,
      task=task.name, split="train", cache_dir=os.fspath(tmp_path / "features"))
  spec = ClassifierSpec(task_name=task.name, labels=tuple(task.labels),
                        max_seq_length=32)
  options = loop.RunOptions(
      model_dir=os.fspath(tmp_path / "tuned"), train_steps=2, learning_rate=1e-3,
      steps_per_loop=1, save_steps=2, init_checkpoint=final)
  strategy = tf.distribute.get_strategy()
  model, optimizer = build_for_training(strategy, config, spec, options)
  warm_start(final)(model)                   # what train_model does first (no checkpoint)
  np.testing.assert_array_equal(model.encoder.word_embedding.numpy(),
                                pretrained.load_directory(final).encoder.word_embedding)
  tuned = train_classifier(
      strategy, model, optimizer, lambda ctx: classifier_features.classifier_dataset(
          features, 8, is_training=True, seed=0, max_seq_length=32), options)
  assert tuned["step"] == 2 and all(np.isfinite(tuned["losses"]))


@pytest.mark.slow
def test_pretrain_wrapper_takes_objective_clm(pretraining_records, tmp_path):
  records, _ = pretraining_records
  run = tmp_path / "run"
  result = subprocess.run(
      [sys.executable, "-m", "experiments.pretrain", f"--train_data={records}",
       f"--model_dir={run}", "--objective=clm", "--n_layer=1", "--d_model=16", "--n_head=2",
       "--d_head=8", "--d_inner=32", "--mem_len=8", "--train_steps=2", "--steps_per_loop=1",
       "--save_steps=2"], cwd=ROOT, capture_output=True, text=True, check=False,
      env={**os.environ, "PYTHONPATH": ROOT}, timeout=300)
  assert result.returncode == 0, result.stderr[-3000:]
  params = yaml.safe_load((run / "params.yaml").read_text())
  assert params["task"]["optimization"]["objective"] == "clm"
  assert json.loads((run / "final" / model_directory.CONFIG_FILE).read_text())[
      "attn_type"] == "uni"
