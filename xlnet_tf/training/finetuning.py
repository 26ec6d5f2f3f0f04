"""Fine-tuning a classifier: options, the training driver, and the fine-tuned model's folder.

A fine-tuned model directory holds `xlnet_config.json`, `classifier.json` (task, labels,
regression, summary type, max_seq_length, casing), `model.ckpt` (tf.train.Checkpoint of the
classifier) and `spiece.model`: everything `export_saved_model` needs.
"""

import dataclasses
import json
import os
import shutil
from typing import Any, Callable, Dict, List, Optional, Sequence

import orbit
import tensorflow as tf
import tf_keras

from xlnet_tf import pretrained
from xlnet_tf.configs import XLNetConfig
from xlnet_tf.models.xlnet_classifier import XLNetClassifier
from xlnet_tf.models.xlnet_classifier import build_classifier
from xlnet_tf.training import optimization
from xlnet_tf.training.classifier_trainer import ClassifierTrainer
from xlnet_tf.training.pretraining import PRECISIONS

CLASSIFIER_FILE = "classifier.json"


@dataclasses.dataclass(frozen=True)
class ClassifierSpec:
  """What the classifier predicts and how its inputs are made."""
  task_name: str
  labels: Optional[Sequence[str]]          # None for regression
  is_regression: bool = False
  max_seq_length: int = 128
  uncased: bool = False
  summary_type: str = "last"
  use_proj: bool = True

  @property
  def num_classes(self) -> int:
    return 1 if self.is_regression else len(self.labels)


@dataclasses.dataclass(frozen=True)
class FinetuneOptions:
  model_dir: str
  train_steps: int
  learning_rate: float = 2e-5
  warmup_steps: int = 0
  weight_decay: float = 0.0
  adam_epsilon: float = 1e-6
  clip_norm: float = 1.0
  lr_layer_decay_rate: float = 1.0
  grad_accum_steps: int = 1
  steps_per_loop: int = 100
  save_steps: int = 1000
  max_checkpoints: int = 3
  precision: str = "float32"
  init_checkpoint: Optional[str] = None
  seed: int = 0


def finetune_config(config: XLNetConfig, dropout: float = 0.1,
                    dropatt: float = 0.1) -> XLNetConfig:
  """The run options of fine-tuning: no memory, no bi_data, bidirectional attention."""
  return config.replace(mem_len=0, reuse_len=0, bi_data=False, same_length=False,
                        attn_type="bi", dropout=dropout, dropatt=dropatt)


def build_for_training(strategy, config: XLNetConfig, spec: ClassifierSpec,
                       options: FinetuneOptions, dropout: float = 0.1):
  """(model, optimizer), in the strategy's scope, warm-started from `init_checkpoint`."""
  tf_keras.mixed_precision.set_global_policy(PRECISIONS[options.precision])
  tf_keras.utils.set_random_seed(options.seed)
  with strategy.scope():
    model = build_classifier(config, spec.num_classes, summary_type=spec.summary_type,
                             use_proj=spec.use_proj, dropout_rate=dropout,
                             is_regression=spec.is_regression)
    if options.init_checkpoint:
      pretrained.restore_encoder(model.encoder, options.init_checkpoint)
    multipliers = None
    if options.lr_layer_decay_rate != 1.0:
      multipliers = optimization.layerwise_lr_multipliers(model, options.lr_layer_decay_rate)
    optimizer = optimization.build_optimizer(
        options.learning_rate, options.train_steps, options.warmup_steps,
        weight_decay=options.weight_decay, adam_epsilon=options.adam_epsilon,
        loss_scale=options.precision == "mixed_float16", lr_multipliers=multipliers)
  return model, optimizer


def train_classifier(strategy: tf.distribute.Strategy, model: XLNetClassifier, optimizer,
                     dataset_fn: Callable, options: FinetuneOptions) -> Dict[str, Any]:
  """Trains to `train_steps` (resuming from `model_dir`); returns {"step", "losses"}.

  `dataset_fn(input_context)` returns per-replica MICRO-batches (the batch of one step
  divided by replicas and by `grad_accum_steps`).
  """
  checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer)
  manager = tf.train.CheckpointManager(
      checkpoint, options.model_dir, max_to_keep=options.max_checkpoints,
      step_counter=optimizer.iterations, checkpoint_interval=options.save_steps)
  dataset = strategy.distribute_datasets_from_function(dataset_fn)
  trainer = ClassifierTrainer(strategy, model, optimizer, dataset,
                              is_regression=model.is_regression,
                              grad_accum_steps=options.grad_accum_steps,
                              clip_norm=options.clip_norm, total_steps=options.train_steps)
  losses: List[float] = []
  controller = orbit.Controller(
      global_step=optimizer.iterations, trainer=trainer, strategy=strategy,
      steps_per_loop=options.steps_per_loop, checkpoint_manager=manager,
      summary_dir=os.path.join(options.model_dir, "train"),
      summary_interval=options.steps_per_loop,
      train_actions=[lambda output: losses.append(float(output["loss"]))])
  if int(optimizer.iterations.numpy()) < options.train_steps:
    controller.train(options.train_steps)
  return {"step": int(optimizer.iterations.numpy()), "losses": losses}


def save_classifier(model: XLNetClassifier, spec: ClassifierSpec, directory: str,
                    spiece_model: Optional[str]) -> None:
  """Writes the fine-tuned model directory (see the module docstring)."""
  tf.io.gfile.makedirs(directory)
  model.config.to_json_file(os.path.join(directory, pretrained.CONFIG_FILE))
  with tf.io.gfile.GFile(os.path.join(directory, CLASSIFIER_FILE), "w") as f:
    f.write(json.dumps(dataclasses.asdict(spec), indent=2) + "\n")
  tf.train.Checkpoint(model=model).write(os.path.join(directory, pretrained.CHECKPOINT_PREFIX))
  if spiece_model:
    shutil.copyfile(spiece_model, os.path.join(directory, pretrained.SPIECE_FILE))


def load_classifier(directory: str):
  """(model, spec) from a fine-tuned model directory; every weight checked."""
  for name in (pretrained.CONFIG_FILE, CLASSIFIER_FILE,
               pretrained.CHECKPOINT_PREFIX + ".index"):
    if not tf.io.gfile.exists(os.path.join(directory, name)):
      raise FileNotFoundError(f"{directory}: no {name}; expected a directory written by "
                              f"run_classifier (save_classifier)")
  config = XLNetConfig.from_json_file(os.path.join(directory, pretrained.CONFIG_FILE))
  with tf.io.gfile.GFile(os.path.join(directory, CLASSIFIER_FILE)) as f:
    values = json.loads(f.read())
  spec = ClassifierSpec(**values)
  model = build_classifier(config, spec.num_classes, summary_type=spec.summary_type,
                           use_proj=spec.use_proj, is_regression=spec.is_regression)
  status = tf.train.Checkpoint(model=model).read(
      os.path.join(directory, pretrained.CHECKPOINT_PREFIX))
  status.assert_existing_objects_matched().expect_partial()
  return model, spec
