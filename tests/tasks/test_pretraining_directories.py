"""A pretraining run's model directories: final/ and best/ are written by one writer (the
pretraining task's `save_model_dir`), hold the same files, and record the records' text
normalisation (the manifest's uncased and keep_accents), which every reader of a model
directory then applies."""

import dataclasses
import glob
import logging
import os

import numpy as np
import pytest

from data_prep import pipeline
from helpers import CORPUS_GLOB
from helpers import PRETRAIN_SETTINGS
from official.core import exp_factory
from official.core import task_factory
from xlnet_tf import model_directory
from xlnet_tf import pretrained
from xlnet_tf.tasks import pretraining
from xlnet_tf.tasks import train_lib


@pytest.fixture(scope="module")
def uncased_records(spiece_model, tmp_path_factory):
  """Records of 8 chapters made lower-cased and keeping accents."""
  settings = dataclasses.replace(PRETRAIN_SETTINGS, uncased=True, keep_accents=True,
                                 num_passes=1)
  directory = str(tmp_path_factory.mktemp("uncased_records"))
  pipeline.create(settings, sorted(glob.glob(CORPUS_GLOB))[:8], spiece_model, directory)
  return directory


def test_final_and_best_are_one_kind_of_directory(uncased_records, tmp_path):
  params = exp_factory.get_exp_config(pretraining.KIND.experiment)
  params.override({
      "task": {"model": {"n_layer": 1, "d_model": 16, "n_head": 2, "d_head": 8,
                         "d_inner": 32, "mem_len": 8, "dropout": 0.0, "dropatt": 0.0},
               "train_data": {"input_path": uncased_records},
               "validation_data": {"input_path": uncased_records}},
      "trainer": {"train_steps": 2, "steps_per_loop": 1, "checkpoint_interval": 2,
                  "validation_interval": 2, "validation_steps": 1}})
  model_dir = str(tmp_path / "run")
  train_lib.run(params, "train_and_eval", model_dir)
  final, best = (os.path.join(model_dir, name) for name in ("final", "best"))

  def written(directory):                 # best/ also has the evaluation that chose it
    return sorted(set(os.listdir(directory)) - {train_lib.RESULTS_FILE})

  assert written(final) == written(best)
  assert model_directory.TEXT_FILE in written(final)
  for directory in (final, best):
    assert model_directory.read_text_settings(directory) == {"uncased": True,
                                                             "keep_accents": True}
  # One evaluation at the last step: best/ is the final model.
  for ours, theirs in zip(pretrained.load_directory(final).variables,
                          pretrained.load_directory(best).variables):
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


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
