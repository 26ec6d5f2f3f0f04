"""Every YAML file in experiments/configs parses (strictly: an unknown key is an error) and
builds its task and network, every registered experiment is a trained kind's with a
demo-size file that the driver's tests train, and every trained kind trains in bfloat16
with gradient accumulation (slow: each kind's run; the driver's handling of both settings
is tested once, fast, in tests/tasks/test_driver.py). What a kind's YAML files need
besides comes from its test record (tests/kind_tests/<kind>.py);
`check_experiment_configs` is what a new kind must pass (tests/tasks/test_a_new_kind.py)."""

import os

import numpy as np
import pytest
import tf_keras
from official.core import exp_factory

import kind_checks
import kind_tests
from xlnet_tf import task_kind
from xlnet_tf.tasks import train_lib


def test_every_registered_experiment_is_a_trained_kinds_with_a_demo_config():
  # The trained kinds, as conftest's `trained_kind` parametrizes the tests below.
  trained = [kind for kind in task_kind.kinds() if kind.experiment]
  registry = exp_factory._REGISTERED_CONFIGS  # pylint: disable=protected-access
  registered = {f"xlnet/{name}" for name in registry["xlnet"]}      # nested by "/"
  assert registered == {kind.experiment for kind in trained}
  for kind in trained:
    record = kind_tests.of(kind.name)
    assert record.demo_run is not None, f"{kind.name}: its test record has no demo_run"
  claimed = [p for kind in trained for p in kind_checks.experiment_configs(kind)[0]]
  assert sorted(claimed) == kind_checks.CONFIGS    # every YAML is one experiment's


def test_every_yaml_of_the_kind_parses_and_builds_its_task(trained_kind, kind_fixtures):
  kind_checks.check_experiment_configs(task_kind.get(trained_kind), kind_fixtures)


@pytest.mark.slow
def test_the_kind_trains_in_bfloat16_with_gradient_accumulation(trained_kind, demo_run,
                                                                tmp_path):
  """The same precision (bfloat16: the mixed_bfloat16 policy) and accumulation settings
  work for every task (pretraining with memories takes no accumulation: the trainer
  refuses it, as a micro-batch's memory is the previous micro-batch's text)."""
  experiment, demo_file, override = demo_run
  accumulate = 1 if trained_kind == task_kind.PRETRAINED else 2
  override += (",trainer.train_steps=2,trainer.steps_per_loop=1,"
               "trainer.checkpoint_interval=2,task.optimization.warmup_steps=1,"
               "task.optimization.precision=bfloat16"
               + ("" if accumulate == 1 else
                  f",task.optimization.grad_accum_steps={accumulate}"))
  params = train_lib.parse_params(experiment,
                                  [os.path.join(kind_tests.CONFIGS, demo_file)], override)
  model_dir = str(tmp_path / "run")
  summary = train_lib.run(params, "train", model_dir)["train"]
  assert summary["step"] == 2 and len(summary["losses"]) == 2, trained_kind
  assert np.all(np.isfinite(summary["losses"])), (trained_kind, summary["losses"])
  assert tf_keras.mixed_precision.global_policy().name == "mixed_bfloat16"
  assert os.path.isdir(os.path.join(model_dir, "final")), trained_kind
