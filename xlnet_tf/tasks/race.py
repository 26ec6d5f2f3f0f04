"""RACE (multiple choice reading comprehension) as a Model Garden task.

  >>> from official.core import exp_factory, task_factory
  >>> import xlnet_tf.tasks.all_tasks                        # registers every task
  >>> params = exp_factory.get_exp_config("xlnet/race")
  >>> params.override({"task": {"data_dir": "RACE", "init_checkpoint": "converted/large"}})
  >>> task = task_factory.get_task(params.task)
  >>> model = task.build_model(); task.initialize(model)     # warm start from init_checkpoint
  >>> dataset = task.build_inputs(params.task.train_data)    # input_ids [B, 4, T], ...

The pieces are the existing ones: questions from `data.race.read_race`
(DATA_DIR/{train,dev,test}/{middle,high}/*.txt), features cached as TFRecords by
`data.race.cached_features` and read by `data.race.race_dataset` (one record per question,
its four `article <sep> question+option <sep> <cls>` rows, its label and level), the model
`models.xlnet_multiple_choice.XLNetMultipleChoice` (a 1-logit classifier over the rows,
logits [B, 4]) with the fine-tuning run options of `XLNetConfig.for_finetuning`, its loss
`models.xlnet_multiple_choice.multiple_choice_loss` (softmax cross-entropy over the options),
the accuracy per level of `evaluation.race_metrics.accuracy_per_level` (middle, high and
overall; the overall "accuracy" chooses the best model), the model directory of
`model_directory` (xlnet_config.json, model.ckpt, spiece.model and race.json)
and the raw-text SavedModel of `serving.race_export`.

Training runs through `tasks.train_lib` (experiments/train.py, experiments/run_race.py)
with the common `training.trainer.Trainer`, as for every XLNet task.
"""

import dataclasses
import glob
import os
from typing import Any, Dict, List, Mapping, Optional, Tuple

import numpy as np
from official.core import config_definitions as cfg
from official.core import exp_factory
from official.core import task_factory
import tensorflow as tf
import tf_keras

from xlnet_tf.data import race
from xlnet_tf.evaluation import race_metrics
from xlnet_tf.models.xlnet_multiple_choice import OPTION_INPUTS
from xlnet_tf.models.xlnet_multiple_choice import build_multiple_choice
from xlnet_tf.serving import race_export
from xlnet_tf.tasks import base
from xlnet_tf.models.xlnet_multiple_choice import RaceSpec
from xlnet_tf.models.xlnet_multiple_choice import XLNetMultipleChoice
from xlnet_tf.convert.heads.race import RaceConversion
from xlnet_tf import task_kind
from xlnet_tf.training import model_functions

TASK_NAME = "race"
_NO_DATA_DIR = ("task.data_dir is empty: give the RACE directory (train/dev/test with "
                "middle/ and high/ of *.txt; no RACE data is bundled)")


def _eval_step(model, batch):
  """(float32 logits [B, 4], the batch's summed loss) of one evaluation batch."""
  outputs = model({k: batch[k] for k in OPTION_INPUTS}, training=False)
  outputs = {"logits": tf.cast(outputs["logits"], tf.float32)}
  loss_sum, _ = multiple_choice_loss(outputs, batch)
  return outputs["logits"], loss_sum


# `_eval_step`'s graph, traced once per model (and input signature).
_EVAL_STEPS = model_functions.ModelFunctions(_eval_step)


@dataclasses.dataclass
class RaceDataConfig(base.TaskDataConfig):
  """One split of RACE: "train", "dev" or "test" (see `base.TaskDataConfig`). The
  training shuffle buffer is the released --shuffle_buffer (2048 questions)."""
  shuffle_buffer_size: int = 2048


# The defaults are the released run_race.py's flags (zihangdai/xlnet run_race.py): lr 2e-5,
# no warmup, no weight decay, adam_epsilon 1e-6, clip 1.0, lr_layer_decay_rate 1.0,
# train_batch_size 8, eval_batch_size 32, max_seq_length 512, max_qa_length 128, cased,
# shuffle_buffer 2048, dropout/dropatt 0.1, summary_type "last" with the projection;
# train_steps 12000 and iterations 1000 are in the experiment's trainer
# (`experiments.race_experiment`). The README's Large recipe (scripts/tpu_race_large_bsz8.sh)
# adds 1000 warmup steps: experiments/configs/race_large.yaml.
@dataclasses.dataclass
class RaceConfig(cfg.TaskConfig):
  """Multiple choice reading comprehension on RACE (`data.race`).

  init_checkpoint: a pretrained model directory or preset name (xlnet_config.json, model.ckpt,
    spiece.model), e.g. from `xlnet_tf.convert`; "" for a random model.
  data_dir: the RACE directory (train/dev/test, each with middle/ and high/ of *.txt);
    required (no RACE data is bundled).
  levels: the subsets read, of "middle" and "high" (the released --middle_only /
    --high_only keep one).
  max_seq_length: T, the pieces of each (article, question+option) row.
  max_qa_length: the question+option pieces kept (its LAST ones).
  """
  model: base.XLNetModelConfig = dataclasses.field(default_factory=base.XLNetModelConfig)
  data_dir: str = ""
  levels: List[str] = dataclasses.field(default_factory=lambda: list(race.LEVELS))
  max_seq_length: int = 512
  max_qa_length: int = 128
  uncased: bool = False
  train_data: RaceDataConfig = base.data_config("train", True, 8, RaceDataConfig)
  validation_data: RaceDataConfig = base.data_config("dev", False, 32, RaceDataConfig)
  optimization: base.FinetuneSettings = dataclasses.field(
      default_factory=lambda: base.FinetuneSettings(learning_rate=2e-5, adam_epsilon=1e-6))


# ---- the loss (the trainer's `LossFn`: sum over the micro-batch, count) ----------

def multiple_choice_loss(outputs: Mapping[str, tf.Tensor], batch: Mapping[str, tf.Tensor]
                         ) -> Tuple[tf.Tensor, tf.Tensor]:
  """(softmax cross-entropy over the options summed over the micro-batch's questions,
  their number): logits [B, C] against batch["label"] [B] (the right option's index).
  The common `Trainer`'s `LossFn` of the "xlnet/race" task (`xlnet_tf.tasks.race`)."""
  labels = batch["label"]
  losses = tf.nn.sparse_softmax_cross_entropy_with_logits(labels, outputs["logits"])  # [B]
  return tf.reduce_sum(losses), tf.cast(tf.shape(labels)[0], tf.float32)


KIND = task_kind.register(task_kind.TaskKind(
    name="race", description="RACE head (logits/dense)",
    model_class=XLNetMultipleChoice, build_model=build_multiple_choice, spec_class=RaceSpec,
    card_task="multiple_choice", export=race_export.export_race,
    conversion=RaceConversion(),
    max_seq_length=512, experiment="xlnet/race"))


@exp_factory.register_config_factory(KIND.experiment)
def race_experiment() -> cfg.ExperimentConfig:
  """run_race.py's defaults: lr 2e-5, batch 8, 12000 steps, 1000 per loop; the released
  script saves no intermediate checkpoint, here one every 1000 steps (its README scripts'
  --save_steps) (give data_dir)."""
  return base.experiment_config(RaceConfig(), train_steps=12000, steps_per_loop=1000,
                                checkpoint_interval=1000, validation_interval=1000)


@task_factory.register_task_cls(RaceConfig)
class RaceTask(base.XLNetTask):
  """XLNet on RACE: model, inputs, loss, per-level evaluation, model directory, export."""

  KIND = KIND
  INPUT_KEYS = OPTION_INPUTS
  METRIC = "accuracy"                 # over every question of the split (all levels)
  METRIC_HIGHER_IS_BETTER = True

  def loss_fn(self):
    return multiple_choice_loss

  def __init__(self, params: RaceConfig, logging_dir: Optional[str] = None,
               name: Optional[str] = None):
    super().__init__(params, logging_dir=logging_dir, name=name)
    levels = tuple(params.levels or ())
    unknown = [level for level in levels if level not in race.LEVELS]
    if not levels or unknown or len(set(levels)) != len(levels):
      raise ValueError(f"task.levels must be distinct names of {list(race.LEVELS)}, got "
                       f"{list(levels)}")
    if params.max_qa_length < 1:
      raise ValueError(f"task.max_qa_length must be >= 1, got {params.max_qa_length}")
    if params.max_seq_length < params.max_qa_length + 4:
      raise ValueError(f"task.max_seq_length ({params.max_seq_length}) leaves no room for "
                       f"the article after max_qa_length ({params.max_qa_length}) and 3 "
                       f"special tokens (article <sep> qa <sep> <cls>); give "
                       f"max_seq_length >= {params.max_qa_length + 4} or a smaller "
                       f"max_qa_length")
    self.spec = RaceSpec(max_seq_length=params.max_seq_length,
                         max_qa_length=params.max_qa_length, uncased=params.uncased,
                         levels=tuple(level for level in race.LEVELS if level in levels),
                         summary_type=params.model.summary_type,
                         use_proj=params.model.use_proj)
    self._examples: Dict[str, List[race.RaceExample]] = {}

  # ---- what the task is ----------------------------------------------------------------

  @property
  def data_dir(self) -> str:
    if not self.task_config.data_dir:
      raise FileNotFoundError(_NO_DATA_DIR)
    return self.task_config.data_dir

  def check(self, training: bool = True, evaluating: bool = False) -> None:
    """For training or evaluating a task.data_dir; a given one must exist (an export needs
    none); then `XLNetTask.check`."""
    data_dir = self.task_config.data_dir
    if (training or evaluating) and not data_dir:
      raise ValueError(_NO_DATA_DIR)
    if data_dir and not tf.io.gfile.isdir(data_dir):
      raise ValueError(f"task.data_dir {data_dir}: no such directory (expected the RACE "
                       f"layout train/dev/test with middle/ and high/)")
    super().check(training, evaluating)

  def input_files(self, split: str) -> List[str]:
    return sorted(path for level in self.spec.levels
                  for path in glob.glob(os.path.join(self.data_dir, split, level, "*.txt")))

  def examples(self, split: str) -> List[race.RaceExample]:
    """The questions of `split` in the task's levels (`read_race`), read once per task."""
    if split not in self._examples:
      examples = race.read_race(self.data_dir, split, self.spec.levels)
      if not examples:
        raise ValueError(f"task {TASK_NAME}: the {split} split of {self.data_dir} has no "
                         f"questions")
      self._examples[split] = examples
    return self._examples[split]

  # ---- Model Garden's Task interface ---------------------------------------------------

  def build_model(self) -> tf_keras.Model:
    return build_multiple_choice(self.xlnet_config(),
                                 dropout_rate=self.task_config.model.dropout,
                                 summary_type=self.spec.summary_type,
                                 use_proj=self.spec.use_proj)

  def features_path(self, data: RaceDataConfig) -> str:
    """The cached TFRecord features of `data.split` (built on first use)."""
    return race.cached_features(
        self.examples(data.split), self.spiece_model(data), self.spec.max_seq_length,
        self.spec.max_qa_length, uncased=self.spec.uncased, split=data.split,
        input_files=self.input_files(data.split), cache_dir=self.cache_dir(data))

  def build_inputs(self, params: RaceDataConfig,
                   input_context: Optional[tf.distribute.InputContext] = None,
                   path: Optional[str] = None) -> tf.data.Dataset:
    """Batches of questions ([B, 4, T] rows, label, level) streamed from the cached
    features. For training: per-replica MICRO-batches (global_batch_size / replicas /
    grad_accum_steps), shuffled with the data seed and repeated; otherwise one pass in
    order."""
    return race.race_dataset(
        path or self.features_path(params), self.replica_batch_size(params, input_context),
        is_training=params.is_training, seed=params.seed,
        max_seq_length=self.spec.max_seq_length, input_context=input_context,
        shuffle_buffer_size=params.shuffle_buffer_size,
        drop_remainder=params.drop_remainder if params.is_training else False)

  # ---- a whole evaluation --------------------------------------------------------------

  def evaluate(self, model: tf_keras.Model, params: Optional[RaceDataConfig] = None,
               num_steps: int = -1) -> Dict[str, Any]:
    """The accuracy of every question of the validation split, per level and overall
    (`race_metrics.accuracy_per_level`: `<level>_accuracy`, `<level>_total`, `accuracy`,
    `total`; the levels from the cached features), the mean `validation_loss` and
    `num_examples`. `num_steps` is ignored: the accuracy is of the whole split."""
    del num_steps
    params = params or self.task_config.validation_data
    dataset = self.build_inputs(params)
    step = _EVAL_STEPS.get(model, dataset.element_spec)
    logits, labels, levels, loss_sum = [], [], [], 0.0
    for batch in dataset:
      batch_logits, batch_loss = step(batch)
      logits.append(batch_logits.numpy())
      labels.append(batch["label"].numpy())
      levels.append(batch["level"].numpy())
      loss_sum += float(batch_loss)
    if not logits:
      raise ValueError(f"task {TASK_NAME}: no {params.split} questions")
    logits, labels, levels = (np.concatenate(x) for x in (logits, labels, levels))
    by_level = {}
    for index, level in enumerate(race.LEVELS):
      chosen = levels == index
      if chosen.any():
        by_level[level] = (logits[chosen], labels[chosen])
    if (levels == race.NO_LEVEL).any():
      chosen = levels == race.NO_LEVEL
      by_level["unleveled"] = (logits[chosen], labels[chosen])
    results = race_metrics.accuracy_per_level(by_level)
    results["validation_loss"] = loss_sum / len(labels)
    results["num_examples"] = int(len(labels))
    return results
