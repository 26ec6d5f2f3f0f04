"""What every XLNet fine-tuning task shares: the network config, the optimisation settings,
the input config, and `XLNetTask`, the Model Garden `base_task.Task` the driver
(`tasks.train_lib`) runs.

A task subclass owns its problem: the model (`build_model`), its cached TFRecord features
and `tf.data` input (`features_path`, `build_inputs`), its loss for the common
`training.trainer.Trainer` (`loss_fn`, `INPUT_KEYS`), its evaluation
(`evaluate` -> metrics, `METRIC` the one the best model is chosen by), its model directory
(`save_model_dir`) and what its SavedModel serves (`export`). The rest is here: the config of
the network (sizes from `init_checkpoint`'s xlnet_config.json or given), the warm start,
the SentencePiece model, the per-replica micro-batch size.

  >>> task = task_factory.get_task(params.task)
  >>> model = task.build_model(); task.initialize(model)
  >>> dataset = task.build_inputs(params.task.train_data)       # micro-batches
  >>> loss_sum, count = task.loss_fn()(model(batch), batch)
"""

import dataclasses
import os
from typing import Any, Dict, Optional, Sequence, Tuple

from official.core import base_task
from official.core import config_definitions as cfg
from official.modeling.hyperparams import base_config
import tensorflow as tf
import tf_keras

from xlnet_tf import configs
from xlnet_tf import model_directory
from xlnet_tf import presets
from xlnet_tf import task_kind
from xlnet_tf import pretrained
from xlnet_tf.configs import RELEASED_KEYS
from xlnet_tf.configs import XLNetConfig
from xlnet_tf.data import feature_cache
from xlnet_tf.data import tokenization
from xlnet_tf.training import loop
from xlnet_tf.training import optimization


def network_config(name: str, module: str, doc: str, roles: Sequence[str],
                   defaults: Optional[Dict[str, Any]] = None,
                   before: Sequence[Tuple[str, type, Any]] = (),
                   after: Sequence[Tuple[str, type, Any]] = ()) -> type:
  """A task config's `model` section, derived from `XLNetConfig`: its fields of `roles`
  (`configs.keys_of`), with XLNetConfig's names, types and defaults (`defaults` overrides
  them; a field without a default, or with default None, is Optional and None), between the
  task's own fields `before` and `after` ((name, type, default) each)."""
  defaults = defaults or {}
  fields = [(n, t, dataclasses.field(default=d)) for n, t, d in before]
  for field in dataclasses.fields(XLNetConfig):
    if field.metadata["role"] not in roles:
      continue
    default = defaults.get(field.name, field.default)
    if default is dataclasses.MISSING or default is None:
      fields.append((field.name, Optional[field.type], dataclasses.field(default=None)))
    else:
      fields.append((field.name, field.type, dataclasses.field(default=default)))
  fields += [(n, t, dataclasses.field(default=d)) for n, t, d in after]
  cls = dataclasses.make_dataclass(name, fields, bases=(base_config.Config,))
  cls.__module__, cls.__doc__ = module, doc
  return cls


XLNetModelConfig = network_config(
    "XLNetModelConfig", __name__,
    "The network: XLNetConfig's released keys (None: read from `task.init_checkpoint`'s "
    "xlnet_config.json; a size given must then agree with it; without init_checkpoint the "
    "sizes must be given, a randomly initialised model) and run options (dropout, dropatt, "
    "recompute); and the sequence summary of the classification heads: summary_type (last "
    "(<cls>), first, mean, mean_with_padding, attn) and use_proj (dense + tanh on the "
    "summary, the original's --use_summ_proj).",
    roles=(configs.RELEASED, configs.RUN), defaults=dict.fromkeys(RELEASED_KEYS),
    after=(("summary_type", str, "last"), ("use_proj", bool, True)))


@dataclasses.dataclass
class TaskDataConfig(cfg.DataConfig):
  """One split's input: examples read by the task, features cached under `cache_dir`.

  global_batch_size is the examples of one update (all replicas and, for training, all
  `grad_accum_steps` micro-batches). `spiece_model` "" is the init_checkpoint's
  spiece.model; `cache_dir` "" is MODEL_DIR/features when run by the driver.
  """
  split: str = "train"
  cache_dir: str = ""
  spiece_model: str = ""
  shuffle_buffer_size: int = 100_000
  seed: Optional[int] = 0


# The fields of `loop.RunOptions` that are not a task's `optimization` settings: the loop's
# (train_steps, steps_per_loop, checkpoint interval, max_to_keep) are in `trainer`, the
# warm start is `task.init_checkpoint`.
LOOP_FIELDS = ("model_dir", "train_steps", "steps_per_loop", "save_steps", "max_checkpoints",
               "init_checkpoint", "stop_at_step", "attempt")


def optimization_settings(name: str, module: str, doc: str, leave_out: Sequence[str] = (),
                          **defaults) -> type:
  """The `optimization` config class of a task: the fields of `loop.RunOptions` (same
  names and types) but LOOP_FIELDS and `leave_out`, with RunOptions' defaults or
  `defaults`."""
  unknown = set(defaults) - {f.name for f in dataclasses.fields(loop.RunOptions)}
  if unknown:
    raise ValueError(f"{name}: {sorted(unknown)} are not fields of RunOptions")
  cls = dataclasses.make_dataclass(
      name, [(f.name, f.type, dataclasses.field(default=defaults.get(f.name, f.default)))
             for f in dataclasses.fields(loop.RunOptions)
             if f.name not in LOOP_FIELDS and f.name not in leave_out],
      bases=(base_config.Config,))
  cls.__module__, cls.__doc__ = module, doc
  return cls


FinetuneSettings = optimization_settings(
    "FinetuneSettings", __name__, "The optimisation settings of a fine-tuning task "
    "(`loop.RunOptions`' names and defaults: the released run_classifier.py's).",
    leave_out=("objective",))


def data_config(split: str, is_training: bool, batch_size: int,
                kind=TaskDataConfig) -> Any:
  """A default `train_data` / `validation_data` field of a task config."""
  return dataclasses.field(default_factory=lambda: kind(
      split=split, is_training=is_training, global_batch_size=batch_size,
      drop_remainder=is_training))


def experiment_config(task: cfg.TaskConfig, train_steps: int, steps_per_loop: int,
                      checkpoint_interval: int, validation_interval: int,
                      max_to_keep: int = 3,
                      restrictions: Sequence[str] = ("task.train_data.is_training != None",
                                                     "task.validation_data.is_training != None")
                      ) -> cfg.ExperimentConfig:
  """The `exp_factory` experiment of a task (each task module registers its own, beside its
  KIND): `task`'s defaults, one device, and the loop's numbers."""
  return cfg.ExperimentConfig(
      task=task, runtime=cfg.RuntimeConfig(distribution_strategy="one_device"),
      trainer=cfg.TrainerConfig(
          train_steps=train_steps, steps_per_loop=steps_per_loop,
          checkpoint_interval=checkpoint_interval, max_to_keep=max_to_keep,
          summary_interval=steps_per_loop, validation_steps=-1,
          validation_interval=validation_interval),
      restrictions=list(restrictions))


def init_dir(init_checkpoint: str) -> str:
  """`init_checkpoint`: a model directory or a model.ckpt prefix (a preset's name is
  resolved to its model directory by the driver, `train_lib`, through `xlnet_tf.hub`);
  ValueError for a preset name that was not."""
  if (init_checkpoint and not tf.io.gfile.isdir(init_checkpoint) and
      init_checkpoint in presets.preset_names()):
    raise ValueError(f"task.init_checkpoint {init_checkpoint!r} names a preset: resolve it "
                     f"to its model directory first (xlnet_tf.hub.model_dir; the driver, "
                     f"xlnet_tf.tasks.train_lib, does)")
  return init_checkpoint


class XLNetTask(base_task.Task):
  """The shared part of the XLNet tasks (see the module docstring for what a subclass
  gives). `task_config` has `model` (XLNetModelConfig), `init_checkpoint`, `train_data`,
  `validation_data` (TaskDataConfig) and `optimization` (FinetuneSettings)."""

  KIND: task_kind.TaskKind        # the task's record (`task_kind`), set by its module
  spec: Any                       # the kind's spec of this task's model (its spec class)
  INPUT_KEYS = ("input_ids", "segment_ids", "input_mask")
  LABEL_KEY = "label_id"               # the batch key of the labels (model.fit's target)
  fit_output = "logits"                # the model output the loss reads (model.fit)
  METRIC = "accuracy"                  # the metric the best model is chosen by
  METRIC_HIGHER_IS_BETTER = True

  # ---- the network -----------------------------------------------------------------------

  def xlnet_config(self) -> XLNetConfig:
    """The network's config with the fine-tuning run options (no memory, bidirectional)."""
    params = self.task_config
    given = {k: getattr(params.model, k) for k in RELEASED_KEYS
             if getattr(params.model, k) is not None}
    if params.init_checkpoint:
      config_file = os.path.join(self.init_dir(), model_directory.CONFIG_FILE)
      if not tf.io.gfile.exists(config_file):
        raise ValueError(f"task.init_checkpoint: {config_file} does not exist (expected a "
                         f"pretrained model directory, e.g. from xlnet_tf.convert)")
      config = XLNetConfig.from_json_file(config_file)
      differing = {k: (v, getattr(config, k)) for k, v in given.items()
                   if getattr(config, k) != v}
      if differing:
        raise ValueError("task.model " + ", ".join(
            f"{k}={v!r} differs from {params.init_checkpoint}'s {c!r}"
            for k, (v, c) in sorted(differing.items())) +
            "; leave the sizes unset (null) to take the checkpoint's")
    else:
      missing = [k for k in RELEASED_KEYS[:5] if k not in given]
      if missing:
        raise ValueError(f"task.model: {', '.join(missing)} must be set when "
                         f"task.init_checkpoint is empty (a randomly initialised model)")
      config = XLNetConfig(**given)
    return config.for_finetuning(params.model.dropout, params.model.dropatt).replace(
        recompute=params.model.recompute)

  def check_text_settings(self) -> None:
    """Raises ValueError when `task.init_checkpoint` records a text normalisation
    (text.json, or a fine-tuned model's spec file; `model_directory.read_text_settings`)
    the task's input pipeline cannot give: `uncased` differing from `task.uncased`, or
    `keep_accents` (the tasks' pipelines strip accents). A directory recording neither
    (released, or converted before text.json) is not checked."""
    params = self.task_config
    if not params.init_checkpoint or not hasattr(params, "uncased"):
      return
    directory = self.init_dir()
    source = model_directory.text_settings_file(directory)
    if source is None:
      return
    text = model_directory.read_text_settings(directory)
    if text["uncased"] != bool(params.uncased):
      raise ValueError(
          f"task.uncased={bool(params.uncased)} differs from the init_checkpoint's "
          f"uncased={text['uncased']} ({source}); set task.uncased to "
          f"{text['uncased']}")
    if text["keep_accents"]:
      raise ValueError(
          f"task.init_checkpoint: {source} records keep_accents=true, but the tasks' input "
          f"pipelines strip accents (tokenization.normalize_text); fine-tune a model "
          f"whose text has its accents stripped")

  def init_dir(self) -> str:
    """`task.init_checkpoint` as a directory: a preset name ("xlnet_base_cased", see
    `xlnet_tf.presets`) is its cached model, downloaded and converted on first use."""
    return init_dir(self.task_config.init_checkpoint)

  def initialize(self, model: tf_keras.Model) -> None:
    """Warm start: the encoder's weights from `init_checkpoint` (the head stays random)."""
    if self.task_config.init_checkpoint:
      pretrained.restore_encoder(model.encoder, self.init_dir())

  def spiece_model(self, data: Optional[TaskDataConfig] = None) -> str:
    """The SentencePiece model of `data` (default: the training data's)."""
    data = data or self.task_config.train_data
    if data.spiece_model:
      return data.spiece_model
    if self.task_config.init_checkpoint:
      return os.path.join(self.init_dir(), model_directory.SPIECE_FILE)
    raise ValueError(f"task.{data_name(data)}.spiece_model must be set when "
                     f"task.init_checkpoint is empty")

  def n_token_source(self) -> str:
    """Where the network's n_token comes from (for messages)."""
    if self.task_config.init_checkpoint:
      return os.path.join(self.init_dir(), model_directory.CONFIG_FILE)
    return "task.model.n_token"

  def check(self, training: bool = True, evaluating: bool = False) -> None:
    """Raises ValueError for what the configuration lacks or cannot be (naming the key),
    before anything is built: the network, and the SentencePiece model (its vocabulary
    within the network's n_token) and batch size of the splits the run reads; when
    evaluating, the validation data's SentencePiece model must be the training data's."""
    n_token = self.xlnet_config().n_token
    self.check_text_settings()
    splits = (([self.task_config.train_data] if training else []) +
              ([self.task_config.validation_data] if evaluating else []))
    for data in splits:
      spiece = self.spiece_model(data)
      if not tf.io.gfile.exists(spiece):
        raise ValueError(f"task.{data_name(data)}.spiece_model: {spiece} does not exist (a "
                         f"SentencePiece model; default: init_checkpoint's spiece.model)")
      try:
        pieces = tokenization.load_spiece(spiece).get_piece_size()
      except ValueError as e:
        raise ValueError(f"task.{data_name(data)}.spiece_model: {e}") from None
      if pieces > n_token:
        raise ValueError(f"task.{data_name(data)}.spiece_model: {spiece} has {pieces} "
                         f"pieces, more than the model's vocabulary (n_token={n_token}, "
                         f"{self.n_token_source()}); ids >= {n_token} have no embedding")
      if data.global_batch_size < 1:
        raise ValueError(f"task.{data_name(data)}.global_batch_size must be >= 1, got "
                         f"{data.global_batch_size}")
    if evaluating:
      self.check_validation_spiece()

  def check_validation_spiece(self) -> None:
    """Raises ValueError when the validation data's SentencePiece model is another file
    than the training data's (by content): its ids mean other pieces to the model, so the
    held-out metrics, and the best/ model chosen by them, would mean nothing. Not checked
    when the training data's model is not there (an eval-only run may lack it)."""
    train = self.spiece_model(self.task_config.train_data)
    validation = self.spiece_model(self.task_config.validation_data)
    if (train != validation and tf.io.gfile.exists(train) and
        tokenization.spiece_sha256(train) != tokenization.spiece_sha256(validation)):
      raise ValueError(f"task.validation_data.spiece_model: {validation} differs from the "
                       f"training data's SentencePiece model {train}; held-out metrics need "
                       f"the tokenizer the model is trained with: give the same file")

  # ---- inputs ----------------------------------------------------------------------------

  def cache_dir(self, data: TaskDataConfig) -> str:
    if not data.cache_dir:
      raise ValueError(f"task.{data_name(data)}.cache_dir is empty (the driver sets "
                       f"MODEL_DIR/features)")
    return data.cache_dir

  def replica_batch_size(self, params: TaskDataConfig,
                         input_context: Optional[tf.distribute.InputContext]) -> int:
    """Examples per replica and call: for training a MICRO-batch (global_batch_size /
    replicas / grad_accum_steps), else global_batch_size / replicas."""
    batch_size = params.global_batch_size
    if input_context is not None:
      batch_size = input_context.get_per_replica_batch_size(batch_size)
    if params.is_training:
      k = self.task_config.optimization.grad_accum_steps
      if batch_size % k:
        raise ValueError(f"task.train_data.global_batch_size ({params.global_batch_size}) "
                         f"must be divisible by replicas x grad_accum_steps ({k})")
      batch_size //= k
    return batch_size

  def features_path(self, data: TaskDataConfig) -> str:
    """The cached TFRecord features of `data.split` (built on first use)."""
    raise NotImplementedError

  # ---- the run's settings ----------------------------------------------------------------
  #
  # What defines a training run besides the network config and the optimisation options:
  # recorded in MODEL_DIR/run_settings.json, a rerun with the same settings resumes and one
  # with others is refused, listing what differs (`training.run_directory`). A task
  # overrides `run_settings` (what defines its model), `training_settings` (what else
  # defines how it trains) and `train_data_key` (what identifies its training data) as it
  # needs; pretraining, whose records define the run, replaces `train_run_settings` and
  # `model_run_settings` whole.

  RUN_PURPOSE = "fine-tuning"          # names the run in the directory's lock
  # {flattened key of `train_run_settings`: value} of the settings added after run
  # directories were written: such a directory ran with these values, and resumes when
  # they are the same now.
  RUN_SETTINGS_ADDED: Dict[str, Any] = {}

  def run_settings(self) -> Dict[str, Any]:
    """What defines the task's model: the spec's values (recorded under "task", and
    compared before an evaluation reads a checkpoint)."""
    return self.spec_values()

  def training_settings(self) -> Dict[str, Any]:
    """What else defines how the task trains (recorded under "task" in training)."""
    return {}

  def train_data_key(self, data: TaskDataConfig) -> Any:
    """What identifies the training data `data`: its feature cache's key."""
    info = feature_cache.read_cache_info(self.features_path(data))
    return info and info.get("key")

  def train_run_settings(self, data: TaskDataConfig,
                         strategy: tf.distribute.Strategy) -> Dict[str, Any]:
    """The settings a training run on `data` records: the task's, the training data's
    key, the batch and the replicas."""
    return {"task": {**self.run_settings(), **self.training_settings()},
            "train_data": self.train_data_key(data),
            "train_batch_size": data.global_batch_size,
            "replicas": strategy.num_replicas_in_sync}

  def model_run_settings(self) -> Dict[str, Any]:
    """The part of `train_run_settings` that shapes the model (what `train_lib.evaluate`
    compares before reading a checkpoint)."""
    return {"task": self.run_settings()}

  # ---- training: what the driver (`train_lib.train`) asks every task -------------------

  def train_dataset_fn(self, data: TaskDataConfig, grad_accum_steps: int):
    """`dataset_fn(input_context, start_step)` of `loop.train_model`: the training
    micro-batches from step `start_step` on (a step takes `grad_accum_steps` micro-batches
    for each replica an input pipeline feeds)."""
    path = self.features_path(data)

    def dataset_fn(ctx, start_step):
      replicas_per_pipeline = ctx.num_replicas_in_sync // ctx.num_input_pipelines
      return self.build_inputs(data, ctx, path=path).skip(
          start_step * grad_accum_steps * replicas_per_pipeline)
    return dataset_fn

  def build_memories(self, strategy: tf.distribute.Strategy, config: XLNetConfig):
    """The Transformer-XL memories a training step carries (None: fine-tuning has none)."""
    del strategy, config
    return None

  def tokens_per_step(self, strategy: tf.distribute.Strategy) -> Optional[int]:
    """Global tokens per step, for the tokens/s the trainer reports (None: not reported)."""
    del strategy
    return None

  def data_error(self, error: Exception) -> Exception:
    """The error to raise for tf.data's DataLossError while training (naming the file)."""
    return error

  def prepare_validation(self, data: TaskDataConfig) -> None:
    """Builds what evaluating `data` reads (its feature cache) before training starts."""
    self.features_path(data)

  def reference_loss(self, data: TaskDataConfig) -> Optional[Dict[str, Any]]:
    """The loss of predicting the training labels' prior (`collapse.reference_loss`) on
    the training data `data`, which the collapse check compares the training loss with;
    None: the task has none. A task that gives one writes the model card of its
    MODEL_DIR/final (`write_model_card`)."""
    del data
    return None

  def write_model_card(self, model: tf_keras.Model, directory: str,
                       details: Dict[str, str]) -> str:
    """Writes the README.md of the trained model directory `directory` with `details` (the
    collapse check's: the seed, abandoned attempts); returns its path."""
    raise NotImplementedError(f"{type(self).__name__} gives a reference_loss but no "
                              f"write_model_card")

  def train_step(self, inputs, model, optimizer, metrics=None):
    """Not Model Garden's per-batch step: XLNet tasks train with the common
    `training.trainer.Trainer` (gradient accumulation over micro-batches normalised by the
    global count, step-keyed dropout, clipping of the all-reduced gradient), run by
    `tasks.train_lib`; restating that step here would make another copy."""
    raise NotImplementedError(
        f"{type(self).__name__} trains with xlnet_tf.training.trainer.Trainer (python -m "
        f"experiments.train --experiment=... ), not with official.core.base_trainer; give "
        f"loss_fn() and build_inputs() to that Trainer")

  # ---- Keras habits: compile / fit ------------------------------------------------------

  def fit_optimizer(self, model: tf_keras.Model, train_steps: int):
    """The optimizer of task.optimization (the released Adam variant, warmup + decay over
    `train_steps`, layer-wise LR decay) clipping by global norm itself (clip_norm), for
    `model.fit`, where no training loop of ours clips."""
    o = self.task_config.optimization
    return optimization.build_optimizer(
        o.learning_rate, train_steps, o.warmup_steps, weight_decay=o.weight_decay,
        adam_epsilon=o.adam_epsilon, min_lr_ratio=o.min_lr_ratio,
        adam_bias_correction=o.adam_bias_correction, clip_norm=o.clip_norm,
        loss_scale=o.precision == "mixed_float16",
        **optimization.layerwise_decay(model, o.lr_layer_decay_rate, o.lr_layer_decay_mode))

  def fit_inputs(self, params: TaskDataConfig) -> tf.data.Dataset:
    """`build_inputs` as (inputs, {fit_output: labels}) pairs for `model.fit` (one step
    per batch, so task.optimization.grad_accum_steps must be 1)."""
    if params.is_training and self.task_config.optimization.grad_accum_steps > 1:
      raise ValueError("task.optimization.grad_accum_steps > 1 needs the driver "
                       "(experiments/train.py); model.fit takes one step per batch")
    return self.build_inputs(params).map(
        lambda batch: ({k: batch[k] for k in self.INPUT_KEYS if k in batch},
                       {self.fit_output: batch[self.LABEL_KEY]}))

  def compile_model(self, model: tf_keras.Model, train_steps: int,
                    metrics=None) -> tf_keras.Model:
    """`model.compile` with the task's own loss (`loss_fn`: sum / count over the batch,
    the trainer's mean) and `fit_optimizer` (clipping kept); returns the model.

      >>> task.compile_model(model, train_steps=1000)
      >>> model.fit(task.fit_inputs(params.task.train_data), epochs=1, steps_per_epoch=1000)
    """
    loss_fn = self.loss_fn()

    def loss(labels, predictions):                            # a scalar: the batch mean
      if predictions.shape.rank > 1 and labels.shape.rank == predictions.shape.rank:
        labels = tf.squeeze(labels, -1)          # Keras made class ids [B] into [B, 1]
      total, count = loss_fn({self.fit_output: predictions}, {self.LABEL_KEY: labels})
      return total / tf.maximum(count, 1.0)

    model.compile(optimizer=self.fit_optimizer(model, train_steps),
                  loss={self.fit_output: loss},
                  metrics=None if metrics is None else {self.fit_output: metrics})
    return model

  # ---- what the subclass gives -----------------------------------------------------------

  def loss_fn(self):
    """The task's loss in the form of the common `Trainer` (`trainer.LossFn`:
    `loss_fn(outputs, batch)` -> (sum over the micro-batch, count))."""
    raise NotImplementedError(f"{type(self).__name__} gives no loss_fn")

  def evaluate(self, model: tf_keras.Model, params: Optional[TaskDataConfig] = None,
               num_steps: int = -1) -> Dict[str, Any]:
    """The task's metrics on `params` (default: validation_data). `num_steps` (the
    driver's trainer.validation_steps) limits the batches where a partial pass means
    something (pretraining's held-out loss); -1 is the whole split, which is what the
    fine-tuning tasks always evaluate (their metrics are over whole examples)."""
    raise NotImplementedError

  def write_evaluation_files(self, directory: str,
                             split: Optional[str] = None) -> Sequence[str]:
    """Writes what the last `evaluate` produced beside its results into `directory` (the
    ranking task's TREC run file); `split` None: a model directory (best/), else the
    evaluated split's name. Returns the paths written (none by default)."""
    del directory, split
    return []

  def spec_values(self) -> Dict[str, Any]:
    """The spec's values as its file records them (`HeadSpec.to_values`)."""
    return self.spec.to_values()

  def model_spec(self, metrics: Optional[Dict[str, Any]] = None):
    """The spec a model directory of this task records (of the kind's spec class);
    `metrics` are an evaluation's, for tasks that keep a setting found by it, such as the
    SQuAD 2.0 null threshold."""
    del metrics
    return self.spec

  def load_options(self) -> Dict[str, Any]:
    """What the task adds to the spec when it builds a model read from disk (e.g. the
    SQuAD head's candidate search)."""
    return {}

  def export_options(self) -> Dict[str, Any]:
    """What the task adds to the kind's export (e.g. text pairs, a null threshold)."""
    return {}

  # ---- the model directory and the export: the kind's, the same for every task ----------

  def save_model_dir(self, model: tf_keras.Model, directory: str,
                     metrics: Optional[Dict[str, Any]] = None) -> None:
    """Writes the model directory through `model_directory` (checked finite, replacing
    an older one whole): the weights, `model_spec(metrics)` and the SentencePiece model."""
    model_directory.save(model, directory, self.model_spec(metrics), self.spiece_model())

  def load_model_dir(self, directory: str) -> tf_keras.Model:
    """The model of a model directory of the task's kind, every weight checked."""
    return model_directory.load(directory, self.KIND.spec_class, **self.load_options())[0]

  def export(self, model_dir: str, export_dir: str) -> str:
    """Writes the SavedModel of a model directory (the kind's export); returns
    export_dir."""
    return self.KIND.export(model_dir, export_dir, **self.export_options())


def data_name(data: TaskDataConfig) -> str:
  return "train_data" if data.is_training else "validation_data"
