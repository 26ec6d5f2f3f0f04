"""A small task of the tests' own, for testing the driver once (Model Garden style: a task
config, a task class registered with `task_factory`, an experiment "test/mock" registered
with `exp_factory`).

What the driver does the same for every task (`tasks.train_lib`: the lock, the run
settings, checkpoints, exact resume, precision and gradient accumulation, best/ and final/,
the export) is tested on this task (tests/tasks/test_driver.py) instead of once per kind.
Everything but the problem is `base.XLNetTask`'s, untouched; the model directory and the
export are the classifier kind's (`KIND = classification.KIND`).

The problem: sentences of four words drawn with a seed from `WORDS`, labelled "yes" when
`SIGNAL` is among them (learnable); cached through `classifier_features` (the one feature
cache of the classifier) and read by its `classifier_dataset`. The network: 1 layer,
d_model 8, sequences of 8 pieces, dropout 0.1.

  >>> import mock_task                        # registers the task and its experiment, once
  >>> params = mock_task.params(spiece_model, "trainer.train_steps=4")
  >>> train_lib.run(params, "train_and_eval", model_dir)

Importing it is all a process needs (tests/mock_task_main.py, the driver's command line with
the mock registered, does the same).
"""

import dataclasses
import functools
from typing import Any, Dict, Optional

import numpy as np
from official.core import config_definitions as cfg
from official.core import exp_factory
from official.core import task_factory
import tensorflow as tf
import tf_keras

from xlnet_tf.data import classifier_features
from xlnet_tf.data.classifier_examples import InputExample
from xlnet_tf.models.xlnet_classifier import ClassifierSpec
from xlnet_tf.tasks import base
from xlnet_tf.tasks import classification
from xlnet_tf.tasks import train_lib

EXPERIMENT = "test/mock"
WORDS = ("the", "sea", "ship", "captain", "harpoon", "boat", "oil", "night", "whale",
         "deck", "wind", "sail")
SIGNAL = "whale"
LABELS = ("no", "yes")
SPLIT_SEEDS = {"train": 0, "dev": 1}


@dataclasses.dataclass
class MockConfig(cfg.TaskConfig):
  """The mock task: `num_examples` examples a split, `max_seq_length` pieces each; the best
  model is chosen by `metric`."""
  model: base.XLNetModelConfig = dataclasses.field(
      default_factory=lambda: base.XLNetModelConfig(
          n_layer=1, d_model=8, n_head=1, d_head=8, d_inner=16, n_token=4000, dropout=0.1,
          dropatt=0.1))
  init_checkpoint: str = ""
  metric: str = "accuracy"               # or validation_loss (lower is better)
  num_examples: int = 64
  max_seq_length: int = 8
  train_data: base.TaskDataConfig = base.data_config("train", True, 8)
  validation_data: base.TaskDataConfig = base.data_config("dev", False, 16)
  optimization: base.FinetuneSettings = dataclasses.field(
      default_factory=lambda: base.FinetuneSettings(learning_rate=1e-3))


def examples(split: str, count: int):
  """`count` sentences of 4 words of `WORDS` (drawn with the split's seed), labelled
  "yes" when SIGNAL is one of them."""
  rng = np.random.default_rng(SPLIT_SEEDS[split])
  rows = []
  for i in range(count):
    words = [WORDS[j] for j in rng.integers(0, len(WORDS), 4)]
    rows.append(InputExample(f"{split}-{i}", " ".join(words), None,
                             LABELS[SIGNAL in words]))
  return rows


@task_factory.register_task_cls(MockConfig)
class MockTask(base.XLNetTask):
  """A classifier of the mock sentences: its own examples, loss and evaluation; the rest
  (and the model directory and export: the classifier kind's) is `base.XLNetTask`'s."""

  KIND = classification.KIND
  INPUT_KEYS = classification.MODEL_INPUTS

  def __init__(self, params: MockConfig, logging_dir: Optional[str] = None,
               name: Optional[str] = None):
    super().__init__(params, logging_dir=logging_dir, name=name)
    self.spec = ClassifierSpec("mock", LABELS, max_seq_length=params.max_seq_length)

  @property
  def METRIC(self) -> str:  # pylint: disable=invalid-name
    return self.task_config.metric

  @property
  def METRIC_HIGHER_IS_BETTER(self) -> bool:  # pylint: disable=invalid-name
    return self.task_config.metric != "validation_loss"

  def build_model(self) -> tf_keras.Model:
    return self.spec.build_model(self.xlnet_config(),
                                 dropout_rate=self.task_config.model.dropout)

  def features_path(self, data: base.TaskDataConfig) -> str:
    return classifier_features.cached_features(
        examples(data.split, self.task_config.num_examples), self.spiece_model(data),
        self.spec.max_seq_length, label_list=LABELS, task="mock", split=data.split,
        cache_dir=self.cache_dir(data))

  def build_inputs(self, params: base.TaskDataConfig,
                   input_context: Optional[tf.distribute.InputContext] = None,
                   path: Optional[str] = None) -> tf.data.Dataset:
    """Training: shuffled, repeated micro-batches (`replica_batch_size`); else one pass."""
    return classifier_features.classifier_dataset(
        path or self.features_path(params), self.replica_batch_size(params, input_context),
        params.is_training, seed=params.seed, input_context=input_context,
        shuffle_buffer_size=params.shuffle_buffer_size)

  def loss_fn(self):
    return functools.partial(classification.classifier_loss, is_regression=False)

  def evaluate(self, model: tf_keras.Model, params: Optional[base.TaskDataConfig] = None,
               num_steps: int = -1) -> Dict[str, Any]:
    """accuracy, validation_loss (mean cross-entropy) and num_examples of the split."""
    del num_steps
    logits, labels = [], []
    for batch in self.build_inputs(params or self.task_config.validation_data):
      outputs = model({k: batch[k] for k in self.INPUT_KEYS}, training=False)
      logits.append(outputs["logits"].numpy())
      labels.append(batch["label_id"].numpy())
    logits, labels = np.concatenate(logits), np.concatenate(labels)
    losses = tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits).numpy()
    return {"accuracy": float(np.mean(logits.argmax(-1) == labels)),
            "validation_loss": float(losses.mean()), "num_examples": int(len(labels))}

  def export_options(self) -> Dict[str, Any]:
    """One text a request, truncated at max_seq_length (the classifier's export without
    its whole-text reading, a quarter of the export time: the kinds' own tests export
    theirs as the driver does)."""
    return {"pair": False, "whole_text": False}


@exp_factory.register_config_factory(EXPERIMENT)
def mock_experiment() -> cfg.ExperimentConfig:
  """6 steps, a loop of 1, a checkpoint and an evaluation every 2 steps."""
  return base.experiment_config(MockConfig(), train_steps=6, steps_per_loop=1,
                                checkpoint_interval=2, validation_interval=2)


def spiece_override(spiece_model: str) -> str:
  """The --params_override giving both splits the SentencePiece model."""
  return (f"task.train_data.spiece_model={spiece_model},"
          f"task.validation_data.spiece_model={spiece_model}")


def params(spiece_model: str, override: str = ""):
  """The experiment's config with `spiece_model` and `override` (key=value pairs)."""
  return train_lib.parse_params(
      EXPERIMENT, None, ",".join(o for o in (spiece_override(spiece_model), override) if o))
