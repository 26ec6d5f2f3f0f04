"""The Model Garden driver (experiments/train.py, xlnet_tf/tasks/train_lib.py) and the
released-flag wrappers given what a careless user gives them (issue 27): more GPUs than
the machine has, a TPU that is not there, broken or empty YAML, a malformed override,
absurd model sizes, a bad validation_steps, an eval of another run's directory, a NaN or
SavedModel init checkpoint, and --max_checkpoints=0. Each ends before any work with one
error naming the flag, file or field."""

import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from official.core import exp_factory

from experiments import common_flags
from helpers import small_config
from xlnet_tf import model_directory
from xlnet_tf.models.xlnet_pretrainer import build_pretrainer
from xlnet_tf.tasks import classification
from xlnet_tf.tasks import pretraining
from xlnet_tf.tasks import train_lib as driver
from xlnet_tf.training import loop
from xlnet_tf.training import run_directory
from xlnet_tf.training.checkpointing import GuardedCheckpointManager

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEMO = os.path.join(ROOT, "experiments", "configs", "classification_demo.yaml")
NO_GPU = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "TF_CPP_MIN_LOG_LEVEL": "2"}


def _spiece_override(spiece_model, cache_dir=None):
  return (f"task.train_data.spiece_model={spiece_model},"
          f"task.validation_data.spiece_model={spiece_model}" +
          (f",task.train_data.cache_dir={cache_dir},task.validation_data.cache_dir={cache_dir}"
           if cache_dir else ""))


def _demo_params(spiece_model, override=""):
  return driver.parse_params(classification.KIND.experiment, [DEMO],
                             _spiece_override(spiece_model) + override)


def _run(module, args, timeout=240):
  return subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, env=NO_GPU,
                        capture_output=True, text=True, check=False, timeout=timeout)


def _last_line(result):
  return result.stderr.strip().splitlines()[-1] if result.stderr.strip() else ""


# ---- 1. more GPUs than the machine has --------------------------------------------------------

@pytest.mark.slow
def test_more_gpus_than_the_machine_has_ends_at_once_naming_both(spiece_model,
                                                                 pretraining_records,
                                                                 tmp_path):
  """Before: MirroredStrategy on GPU:0, GPU:1 was built on a machine without GPUs and the
  run waited forever (killed at 300 s). Now the driver and the wrapper end within the
  timeout, naming what was asked for and what TensorFlow sees."""
  records, _ = pretraining_records
  driver_run = _run("experiments.train", [
      "--experiment=xlnet/classification", f"--config_file={DEMO}",
      "--params_override=" + _spiece_override(spiece_model) +
      ",runtime.distribution_strategy=mirrored,runtime.num_gpus=2",
      "--mode=train", f"--model_dir={tmp_path / 'driver'}"], timeout=120)
  wrapper_run = _run("experiments.pretrain", [
      f"--train_data={records}", f"--model_dir={tmp_path / 'wrapper'}", "--n_layer=1",
      "--d_model=16", "--n_head=2", "--d_head=8", "--d_inner=32", "--train_steps=2",
      "--strategy=mirrored", "--num_gpus=2"], timeout=120)
  for tool, result in (("train", driver_run), ("pretrain", wrapper_run)):
    assert result.returncode != 0 and "Traceback" not in result.stderr, result.stderr[-3000:]
    assert _last_line(result) == (
        f"{tool}: runtime.num_gpus=2 (--num_gpus) with runtime.distribution_strategy="
        f"mirrored asks for 2 GPU(s), but TensorFlow sees 0 on this machine; give "
        f"--num_gpus=0 or less")
  assert not os.path.exists(tmp_path / "driver") and not os.path.exists(tmp_path / "wrapper")


def test_the_device_check_is_where_every_strategy_is_built():
  """The one builder (`train_lib.strategy_of`) checks; the flags module has no twin."""
  assert not hasattr(common_flags, "strategy_from_flags")
  gpus = len(tf.config.list_physical_devices("GPU"))
  params = driver.parse_params(
      pretraining.KIND.experiment,
      params_override={"runtime": {"distribution_strategy": "one_device",
                                   "num_gpus": gpus + 1}})
  with pytest.raises(driver.ConfigError, match=f"sees {gpus} on this machine"):
    driver.strategy_of(params)


# ---- 11. the pretraining wrapper: a SavedModel as --init_checkpoint, --use_tpu without a TPU ---

@pytest.mark.slow
def test_pretrain_a_saved_model_init_checkpoint_and_use_tpu_are_one_line_errors(
    pretraining_records, tmp_path):
  """Before: tracebacks (FileNotFoundError: checkpoint not found: .../model.ckpt.index
  after the model was built; ValueError: Please provide a TPU Name to connect to.)."""
  records, _ = pretraining_records
  saved = tmp_path / "export"
  tf.saved_model.save(tf.Module(), str(saved))
  common = [f"--train_data={records}", "--n_layer=1", "--d_model=16", "--n_head=2",
            "--d_head=8", "--d_inner=32", "--mem_len=0", "--train_steps=2",
            "--steps_per_loop=1", "--save_steps=1"]
  result = _run("experiments.pretrain", [*common, f"--model_dir={tmp_path / 'a'}",
                                         f"--init_checkpoint={saved}"])
  assert result.returncode != 0 and "Traceback" not in result.stderr, result.stderr[-3000:]
  assert _last_line(result) == (
      f"pretrain: task.init_checkpoint (--init_checkpoint) {saved} is a SavedModel (an "
      f"export), not a model directory; give the model directory it was exported from "
      f"(xlnet_config.json, model.ckpt.*)")
  result = _run("experiments.pretrain", [*common, f"--model_dir={tmp_path / 'b'}",
                                         "--use_tpu"])
  assert result.returncode != 0 and "Traceback" not in result.stderr, result.stderr[-3000:]
  assert _last_line(result).startswith("pretrain: runtime.tpu='' (--tpu, --use_tpu): no TPU "
                                       "found (")
  assert not os.path.exists(tmp_path / "a") and not os.path.exists(tmp_path / "b")


# ---- 10. the driver: config files and overrides ----------------------------------------------

def test_broken_empty_or_directory_config_files_are_named(tmp_path):
  """Before: yaml.scanner.ScannerError / AttributeError: 'NoneType' object has no
  attribute 'items' / FailedPreconditionError: ...; Is a directory, as tracebacks."""
  bad = tmp_path / "bad.yaml"
  bad.write_text("task:\n  model:\n    n_layer: 2\n   bad: [\n")
  empty = tmp_path / "empty.yaml"
  empty.write_text("")
  listed = tmp_path / "list.yaml"
  listed.write_text("- task\n")
  for path, message in (
      (bad, f"--config_file {bad}: not valid YAML at line 4, column 4: expected <block "
            f"end>, but found '<block mapping start>'"),
      (empty, f"--config_file {empty} is empty; expected a YAML mapping of the "
              f"experiment's sections (task:, trainer:, runtime:)"),
      (listed, f"--config_file {listed} holds a list; expected a YAML mapping"),
      (tmp_path, f"--config_file {tmp_path} is a directory; expected a YAML file")):
    with pytest.raises(driver.ConfigError) as raised:
      driver.parse_params(classification.KIND.experiment, [DEMO, str(path)])
    assert str(raised.value).startswith(message)


def test_an_override_that_is_neither_pairs_nor_a_file_is_named(tmp_path):
  """Before: tensorflow NotFoundError: task.model.n_layer; No such file or directory."""
  for override in ("task.model.n_layer", "task.model.n_layer=2,trainer"):
    with pytest.raises(driver.ConfigError, match=(
        f"--params_override '{override}' is neither key=value pairs")):
      driver.parse_params(classification.KIND.experiment, [DEMO], override)
  # What works still works: pairs, a YAML mapping, a YAML file.
  as_file = tmp_path / "override.yaml"
  as_file.write_text("trainer:\n  train_steps: 7\n")
  for override, steps in (("trainer.train_steps=5", 5), ("{trainer: {train_steps: 6}}", 6),
                          (str(as_file), 7)):
    assert driver.parse_params(classification.KIND.experiment, [DEMO],
                               override).trainer.train_steps == steps


@pytest.mark.slow
def test_the_command_line_says_it_in_one_line(spiece_model, tmp_path):
  bad = tmp_path / "bad.yaml"
  bad.write_text("trainer:\n  train_steps: [1\n")
  for flag, message in (
      (f"--config_file={bad}", f"train: --config_file {bad}: not valid YAML at line 3"),
      ("--params_override=task.model.n_layer",
       "train: --params_override 'task.model.n_layer' is neither key=value pairs")):
    result = _run("experiments.train", ["--experiment=xlnet/classification", flag,
                                        "--mode=train", f"--model_dir={tmp_path / 'run'}"])
    assert result.returncode != 0 and "Traceback" not in result.stderr, result.stderr[-3000:]
    assert _last_line(result).startswith(message), result.stderr[-1000:]
    assert not os.path.exists(tmp_path / "run")


# ---- 10. the driver: values checked before any work ------------------------------------------

def test_model_sizes_no_machine_can_allocate_are_refused_before_work(spiece_model, tmp_path):
  """Before: d_model=100000000 built for minutes, wrote params.yaml, run_settings.json and
  the features, then died with ResourceExhaustedError (OOM ... shape[4000,100000000])."""
  run_dir = tmp_path / "run"
  for override in (",task.model.d_model=100000000",
                   ",task.model.n_layer=100000,task.model.d_model=100000"):
    params = _demo_params(spiece_model, override)
    with pytest.raises(driver.ConfigError, match=(
        r"task.model: n_layer=\d+, d_model=\d+, n_head=2, d_head=16, d_inner=64, "
        r"n_token=4000 make at least .* weights: .* GiB in float32 with their gradients and "
        r"Adam's moments, more than this machine's memory")):
      driver.run(params, "train", str(run_dir))
    assert not run_dir.exists()
  # Non-positive sizes keep their message, before any work.
  with pytest.raises(driver.ConfigError, match="XLNetConfig.d_model must be a positive "
                                               "integer, got -4"):
    driver.run(_demo_params(spiece_model, ",task.model.d_model=-4"), "train", str(run_dir))


def test_the_weight_count_is_a_lower_bound_close_to_the_real_one():
  for config in (small_config(), small_config(untie_r=False, n_layer=3, d_inner=64)):
    real = build_pretrainer(config).count_params()
    assert 0.8 * real <= config.min_weight_count() <= real


def test_negative_validation_steps_are_refused_before_training(spiece_model, tmp_path):
  """Before: trained 20 steps, then orbit's ValueError: `steps` (-5) should be > 0, or
  == -1."""
  params = _demo_params(spiece_model, ",trainer.validation_steps=-5")
  for mode in ("train_and_eval", "eval"):
    with pytest.raises(driver.ConfigError, match=(
        r"trainer.validation_steps must be -1 \(the whole split\) or >= 1, got -5")):
      driver.run(params, mode, str(tmp_path / "run"))
  assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_eval_of_a_directory_trained_with_another_model_lists_the_settings(spiece_model,
                                                                           tmp_path):
  """Before: TF's restore error (shape [32,64] vs [32,2] ... ) and dozens of warnings."""
  run_dir = str(tmp_path / "run")
  cache = str(tmp_path / "features")
  override = _spiece_override(spiece_model, cache) + ",trainer.train_steps=3"
  trained = driver.parse_params(classification.KIND.experiment, [DEMO], override)
  driver.run(trained, "train", run_dir)
  other = driver.parse_params(classification.KIND.experiment, [DEMO],
                              override + ",task.model.n_layer=2")
  results = os.path.join(run_dir, "eval_results_dev.json")
  with pytest.raises(run_directory.RunSettingsError) as raised:
    driver.run(other, "eval", run_dir)
  assert "evaluating reads its checkpoint" in str(raised.value)
  assert "config.n_layer: 1 in the directory, 2 now" in str(raised.value)
  assert not os.path.exists(results)
  # The same settings evaluate; settings that do not shape the model may differ.
  same = driver.parse_params(classification.KIND.experiment, [DEMO],
                             override + ",task.optimization.learning_rate=0.5")
  assert driver.run(same, "eval", run_dir)["eval"]["step"] == 3
  assert os.path.exists(results)


def _write_model_dir(directory, config, nan_weight=False):
  """A pretrained model directory as save_pretrained writes it, or (nan_weight) one whose
  first weight holds a NaN, which save_pretrained refuses to write."""
  model = build_pretrainer(config)
  if nan_weight:
    first = model.encoder.trainable_variables[0]
    first.assign(tf.fill(first.shape, np.nan))
  os.makedirs(directory)
  config.to_json_file(os.path.join(directory, model_directory.CONFIG_FILE))
  tf.train.Checkpoint(model=model).write(
      os.path.join(directory, model_directory.CHECKPOINT_PREFIX))
  return model.encoder.trainable_variables[0].name


def test_a_nan_init_checkpoint_is_named_before_training(spiece_model, tmp_path):
  """Before: trained, then NonFiniteError: the loss became nan ... Lower --learning_rate,
  raise --warmup_steps (blaming the learning rate), after claiming the run directory."""
  init = str(tmp_path / "init")
  _write_model_dir(init, small_config(n_layer=1, d_model=32, n_head=2, d_head=16,
                                      d_inner=64, n_token=4000), nan_weight=True)
  params = _demo_params(spiece_model, f",task.init_checkpoint={init}")
  with pytest.raises(model_directory.NonFiniteError) as raised:
    driver.run(params, "train", str(tmp_path / "run"))
  message = str(raised.value)
  assert message.startswith(f"task.init_checkpoint (--init_checkpoint) {init}/model.ckpt: 1 "
                            f"weight(s) hold NaN or infinite values (e.g. model/")
  assert "learning" not in message
  assert not (tmp_path / "run").exists()
  assert isinstance(raised.value, run_directory.RUN_STOPPED)   # one line at the commands


def test_a_finite_init_checkpoint_passes_the_check(tmp_path):
  init = str(tmp_path / "init")
  _write_model_dir(init, small_config())
  prefix = os.path.join(init, model_directory.CHECKPOINT_PREFIX)
  assert model_directory.check_checkpoint(init, "x") == prefix
  assert model_directory.check_checkpoint(prefix, "x") == prefix
  with pytest.raises(ValueError, match="no checkpoint"):
    model_directory.check_checkpoint(str(tmp_path), "task.init_checkpoint")


# ---- docs: --max_checkpoints=0 keeps every checkpoint ----------------------------------------

def test_max_checkpoints_zero_keeps_every_checkpoint(tmp_path):
  """Before: ValueError: --max_checkpoints must be >= 1, got 0 (the docs said 0 keeps them
  all; only the released --max_save=0 did)."""
  loop.RunOptions(model_dir=str(tmp_path), train_steps=4, max_checkpoints=0)
  params = exp_factory.get_exp_config(pretraining.KIND.experiment)   # its own defaults
  params.override({"trainer": {"train_steps": 4, "max_to_keep": 0}})
  assert driver.run_options(params, str(tmp_path)).max_checkpoints == 0
  with pytest.raises(ValueError, match="--max_checkpoints must be >= 1, or 0 to keep every "
                                       "checkpoint, got -1"):
    loop.RunOptions(model_dir=str(tmp_path), train_steps=4, max_checkpoints=-1)
  step = tf.Variable(0, dtype=tf.int64)
  manager = GuardedCheckpointManager(tf.train.Checkpoint(step=step), str(tmp_path),
                                     max_to_keep=0, step_counter=step, save_steps=1)
  for _ in range(6):
    step.assign_add(1)
    manager.save()
  assert sorted(int(p.split("-")[1].split(".")[0]) for p in os.listdir(tmp_path)
                if p.endswith(".index")) == [1, 2, 3, 4, 5, 6]
  with open(os.path.join(ROOT, "docs", "fine-tuning.md"), encoding="utf-8") as f:
    assert "`--max_checkpoints` (0 keeps every checkpoint)" in f.read()
  params = driver.parse_params(classification.KIND.experiment, [DEMO], "trainer.max_to_keep=0")
  assert driver.run_options(params, str(tmp_path)).max_checkpoints == 0


def test_an_export_into_a_used_default_location_names_the_default_not_the_flag(tmp_path):
  """`xlnet-train --mode=export` and `run_race --do_export` without --export_dir used to
  say "--export_dir MODEL_DIR/export is not empty", a flag the user never gave."""
  model_dir = tmp_path / "run"
  (model_dir / "export").mkdir(parents=True)
  (model_dir / "export" / "saved_model.pb").write_bytes(b"the first export")
  with pytest.raises(FileExistsError) as caught:
    driver.check_export_dir(str(model_dir))
  assert str(caught.value) == (
      f"--do_export: {model_dir / 'export'} (the default of --export_dir, MODEL_DIR/export) "
      f"is not empty: the model was exported there already, and an export is never "
      f"overwritten; give --export_dir a new directory, or leave out --do_export. Nothing "
      f"was done")
  with pytest.raises(FileExistsError, match=r"\(--export_dir\) is not empty"):
    driver.check_export_dir(str(tmp_path / "other"), str(model_dir / "export"))
  assert driver.check_export_dir(str(model_dir), str(tmp_path / "new")) == str(tmp_path / "new")
  assert driver.check_export_dir(str(tmp_path / "fresh")) == str(tmp_path / "fresh" / "export")
