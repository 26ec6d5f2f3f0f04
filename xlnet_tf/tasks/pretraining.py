"""Pretraining (the permutation LM, or the masked-LM or causal-LM baseline) as a Model
Garden task.

  >>> params = exp_factory.get_exp_config("xlnet/pretraining")
  >>> params.override({"task": {"train_data": {"input_path": "records/"}}})
  >>> task = task_factory.get_task(params.task)
  >>> model = task.build_model()                         # XLNetPretrainer

The records are `data_prep.create_pretraining_data`'s: the data settings (seq_len,
reuse_len, num_predict, bi_data, the batch layout) come from their manifest, the
architecture from `task.model` (or a released xlnet_config.json in `task.model.model_config`).
Training is the driver's, as for every task (`train_lib.train`: `loop.train_model`, the
common `Trainer`, here with per-replica Transformer-XL memories, `build_memories`);
evaluation is the mean target cross-entropy over one ordered pass
of the validation records, with the memories carried from row to row as in training
(`METRIC` "loss", lower is better). The model directory (final/ and best/ alike) is
`pretrained.save_pretrained`'s, with the records' text normalisation;
the SavedModel serves the encoder's hidden states of raw text (`serving.encoder_export`).
"""

import dataclasses
import os

from absl import logging
from typing import Any, Dict, List, Optional

from official.core import config_definitions as cfg
from official.core import exp_factory
from official.core import task_factory
import tensorflow as tf
import tf_keras

from xlnet_tf import configs
from xlnet_tf import model_directory
from xlnet_tf import pretrained
from xlnet_tf.configs import XLNetConfig
from xlnet_tf.data.pretrain_reader import pretrain_dataset
from xlnet_tf.models.xlnet_pretrainer import build_pretrainer
from xlnet_tf.models.xlnet_pretrainer import objective_attn_type
from xlnet_tf.models.xlnet_pretrainer import XLNetPretrainer
from xlnet_tf import task_kind
from xlnet_tf.convert.heads.pretrained import PretrainedConversion
from xlnet_tf.serving import encoder_export
from xlnet_tf.tasks import base
from xlnet_tf.data import pretrain_records
from xlnet_tf.models.losses import target_cross_entropy
from xlnet_tf.training.memory import ReplicaMemories
from xlnet_tf.training.memory import local_replica_count
from xlnet_tf.training import model_functions

MODEL_INPUTS = ("input_ids", "segment_ids", "input_mask", "perm_mask", "target_mapping")


# The record settings the held-out loss shares with training: the model's memory and
# bidirectional halves (reuse_len, bi_data), the row length and the text normalisation.
VALIDATION_LAYOUT = ("seq_len", "reuse_len", "bi_data", "uncased", "keep_accents")


PretrainModelConfig = base.network_config(
    "PretrainModelConfig", __name__,
    "The network: a released-format xlnet_config.json (`model_config`) or XLNetConfig's "
    "released keys (default: the base size; n_token None is the records' vocabulary "
    "size); and the run options of pretraining (dropout, recomputation, the memory, the "
    "initializer; bi_data and reuse_len come from the records, attn_type from the "
    "objective). `init_std` is the old name of initializer_range, still read.",
    roles=(configs.RELEASED, configs.RUN, configs.MEMORY, configs.INITIALIZER),
    defaults=dict(n_layer=12, d_model=768, n_head=12, d_head=64, d_inner=3072, n_token=None,
                  mem_len=384),
    before=(("model_config", str, ""),), after=(("init_std", Optional[float], None),))


def _initializer_range(model: PretrainModelConfig) -> float:
  """task.model.initializer_range; the old key task.model.init_std is still read, with a
  warning saying its new name (both given and different: a ValueError)."""
  if model.init_std is None:
    return model.initializer_range
  if model.initializer_range not in (0.02, model.init_std):
    raise ValueError(f"task.model.init_std ({model.init_std}) and task.model."
                     f"initializer_range ({model.initializer_range}) disagree: init_std is "
                     f"the old name of initializer_range; give initializer_range alone")
  logging.warning("task.model.init_std is now task.model.initializer_range (XLNetConfig's "
                  "name); the value %s was used. Rename the key in your YAML or "
                  "--params_override.", model.init_std)
  return model.init_std


@dataclasses.dataclass
class PretrainDataConfig(cfg.DataConfig):
  """Pretraining records: `input_path` is a record directory (or its manifest.json).
  The batch is the records' (bsz_per_host rows per host and step)."""
  input_path: str = ""


# The paper's pretraining values and the released train.py's flags; fine-tuning's settings
# (layer-wise decay, gradient accumulation: the memories take whole steps, the collapse
# check) are left out.
PretrainSettings = base.optimization_settings(
    "PretrainSettings", __name__, "The optimisation settings of pretraining "
    "(`loop.RunOptions`' names; the paper's values and the released train.py's flags).",
    leave_out=("lr_layer_decay_rate", "lr_layer_decay_mode", "grad_accum_steps",
               "collapse_check_steps", "restarts"),
    learning_rate=4e-4, weight_decay=0.01, adam_epsilon=1e-6, min_lr_ratio=0.001)


@dataclasses.dataclass
class PretrainingConfig(cfg.TaskConfig):
  """XLNet pretraining. init_checkpoint: start from these weights (a pretrained model
  directory); "" for a random model."""
  model: PretrainModelConfig = dataclasses.field(default_factory=PretrainModelConfig)
  train_data: PretrainDataConfig = dataclasses.field(
      default_factory=lambda: PretrainDataConfig(is_training=True))
  validation_data: PretrainDataConfig = dataclasses.field(
      default_factory=lambda: PretrainDataConfig(is_training=False))
  optimization: PretrainSettings = dataclasses.field(default_factory=PretrainSettings)


# ---- the loss (the trainer's `LossFn`: sum over the micro-batch, count) ----------

def pretraining_loss(outputs, batch):
  """(cross-entropy summed over the real targets, their number) of one micro-batch."""
  return target_cross_entropy(outputs["logits"], batch["target"], batch["target_mask"])


KIND = task_kind.register(task_kind.TaskKind(
    name=task_kind.PRETRAINED, description="pretrained model (encoder + LM head tied to "
                                           "the word embedding)",
    model_class=XLNetPretrainer, build_model=build_pretrainer, spec_class=None,
    card_task="pretrained", export=encoder_export.export_encoder,
    conversion=PretrainedConversion(),
    experiment="xlnet/pretraining"))


@exp_factory.register_config_factory(KIND.experiment)
def pretraining_experiment() -> cfg.ExperimentConfig:
  """100K steps, 1000 per loop, a checkpoint every 10K; optimisation as the paper's runs
  (lr 4e-4, weight decay 0.01, eps 1e-6, min_lr_ratio 0.001) (give
  task.train_data.input_path, a record directory)."""
  return base.experiment_config(PretrainingConfig(), train_steps=100_000, steps_per_loop=1000,
                                checkpoint_interval=10_000, validation_interval=10_000,
                                max_to_keep=5,
                                restrictions=("task.train_data.is_training != None",))


@task_factory.register_task_cls(PretrainingConfig)
class PretrainingTask(base.XLNetTask):
  """XLNet pretraining: model, records, loss, held-out loss."""

  KIND = KIND
  INPUT_KEYS = MODEL_INPUTS
  METRIC = "loss"
  METRIC_HIGHER_IS_BETTER = False

  def loss_fn(self):
    return pretraining_loss

  def manifest(self, data: Optional[PretrainDataConfig] = None) -> Dict[str, Any]:
    """The records' manifest (every shard checked to be there with its size)."""
    data = data or self.task_config.train_data
    if not data.input_path:
      raise ValueError(f"task.{base.data_name(data)}.input_path is empty (a record "
                       f"directory of data_prep.create_pretraining_data)")
    return pretrain_records.check_data(data.input_path)

  def xlnet_config(self) -> XLNetConfig:
    """task.model's network with the records' reuse_len and bi_data; the attention is the
    objective's (`objective_attn_type`: "uni" for "clm", else "bi")."""
    model = self.task_config.model
    settings = self.manifest()["settings"]
    attn_type = objective_attn_type(self.task_config.optimization.objective)
    run = dict(dropout=model.dropout, dropatt=model.dropatt, recompute=model.recompute,
               mem_len=model.mem_len,
               reuse_len=settings["reuse_len"], attn_type=attn_type, bi_data=settings["bi_data"],
               clamp_len=model.clamp_len, same_length=model.same_length,
               initializer_range=_initializer_range(model))
    if model.model_config:
      return XLNetConfig.from_json_file(model.model_config).replace(**run)
    return XLNetConfig(
        n_layer=model.n_layer, d_model=model.d_model, n_head=model.n_head,
        d_head=model.d_head, d_inner=model.d_inner, ff_activation=model.ff_activation,
        untie_r=model.untie_r,
        n_token=model.n_token or self.manifest()["spiece"]["vocab_size"], **run)

  def spiece_model(self, data=None) -> Optional[str]:
    """The records' SentencePiece model (None when it is no longer where they say)."""
    path = self.manifest(data)["spiece"]["path"]
    return path if tf.io.gfile.exists(path) else None

  def n_token_source(self) -> str:
    model = self.task_config.model
    if model.model_config:
      return model.model_config
    return "task.model.n_token" if model.n_token else "the training records' vocabulary"

  def check(self, training: bool = True, evaluating: bool = False) -> None:
    """The training records (every shard there with its size; the model is built from
    them, also to evaluate) and their vocabulary within the model's n_token; when
    evaluating, validation records of their layout (VALIDATION_LAYOUT) and SentencePiece
    model."""
    params = self.task_config
    n_token = self.xlnet_config().n_token       # reads (and checks) the training records
    train = self.manifest()
    pretrain_records.check_vocabulary(n_token, self.n_token_source(), train,
                                      f"task.train_data.input_path {params.train_data.input_path}")
    if evaluating:
      _check_same_layout(train, self.manifest(params.validation_data))

  def build_model(self) -> tf_keras.Model:
    return build_pretrainer(self.xlnet_config(), self.task_config.optimization.objective)

  def initialize(self, model: tf_keras.Model) -> None:
    if self.task_config.init_checkpoint:
      pretrained.restore_weights(model, os.path.join(base.init_dir(
          self.task_config.init_checkpoint), model_directory.CHECKPOINT_PREFIX))

  def build_inputs(self, params: PretrainDataConfig,
                   input_context: Optional[tf.distribute.InputContext] = None,
                   start_step: int = 0):
    """Per-replica batches of the records (the bsz_per_host rows of a step shared by the
    replicas of an input pipeline, each keeping its own streams), from step `start_step`
    on: training repeats with shuffled shard order (the data seed), evaluation is one
    ordered pass."""
    manifest = self.manifest(params)
    return pretrain_dataset(params.input_path,
                            manifest["settings"]["bsz_per_host"] // _replicas(input_context),
                            input_context, seed=self.task_config.optimization.seed,
                            repeat=params.is_training, shuffle_shards=params.is_training,
                            skip_steps=start_step, manifest=manifest,
                            objective=self.task_config.optimization.objective)

  # ---- training (`train_lib.train`) ---------------------------------------------------

  RUN_PURPOSE = "pretraining"

  def train_run_settings(self, data: PretrainDataConfig,
                         strategy: tf.distribute.Strategy) -> Dict[str, Any]:
    """The records (settings, SentencePiece model, shards: `pretrain_records.data_settings`)
    and the replicas; a host's replicas must share its bsz_per_host streams evenly."""
    rows = self.manifest(data)["settings"]["bsz_per_host"]
    local = local_replica_count(strategy)
    if rows % local:
      raise ValueError(f"{local} replicas per host cannot share bsz_per_host ({rows}) "
                       f"streams evenly; recreate the records with a multiple")
    return {"data": pretrain_records.data_settings(self.manifest(data)),
            "replicas": strategy.num_replicas_in_sync}

  def model_run_settings(self) -> Dict[str, Any]:
    return {}                            # the records shape the data, not the model

  def train_dataset_fn(self, data: PretrainDataConfig, grad_accum_steps: int):
    if grad_accum_steps != 1:
      raise ValueError("pretraining takes whole steps (the memories carry from one to the "
                       "next): grad_accum_steps must be 1")
    return lambda ctx, start_step: self.build_inputs(data, ctx, start_step)

  def build_memories(self, strategy: tf.distribute.Strategy, config: XLNetConfig):
    """One memory per replica and layer ([mem_len, rows of a replica, d_model]), or None
    without memory (mem_len 0)."""
    if config.mem_len <= 0:
      return None
    rows = self.manifest()["settings"]["bsz_per_host"] // local_replica_count(strategy)
    return ReplicaMemories(strategy, config.n_layer, rows, config.mem_len, config.d_model)

  def tokens_per_step(self, strategy: tf.distribute.Strategy) -> int:
    """bsz_per_host rows of seq_len tokens for every input pipeline (host)."""
    settings = self.manifest()["settings"]
    pipelines = max(1, strategy.num_replicas_in_sync // local_replica_count(strategy))
    return settings["bsz_per_host"] * pipelines * settings["seq_len"]

  def data_error(self, error: Exception) -> Exception:
    return pretrain_records.corrupt_data_error(self.manifest(),
                                               self.task_config.train_data.input_path, error)

  def prepare_validation(self, data: PretrainDataConfig) -> None:
    self.manifest(data)

  def spec_values(self) -> Dict[str, Any]:
    return {"objective": self.task_config.optimization.objective}

  def evaluate(self, model: tf_keras.Model, params: Optional[PretrainDataConfig] = None,
               num_steps: int = -1) -> Dict[str, Any]:
    """Mean target cross-entropy ("loss") and its exp ("perplexity") over one ordered
    pass of the validation records (its first `num_steps` batches if > 0); each row reads
    the memory its stream left (zeros at a stream's start), as in training;
    `num_targets` counted."""
    params = params or self.task_config.validation_data
    config = model.config
    mems, total, count = None, 0.0, 0.0
    dataset = self.build_inputs(params)
    step = _EVAL_STEPS.get(model)          # the records' shapes are static: one trace
    num_steps = int(num_steps)                      # orbit passes a tensor
    if num_steps > 0:
      dataset = dataset.take(num_steps)
    for batch in dataset:
      mems = row_memories(config, batch, mems)
      loss_sum, n, new_mems = step(batch, mems)
      if config.mem_len > 0:
        mems = [tf.cast(m, tf.float32) for m in new_mems]
      total += float(loss_sum)
      count += float(n)
    if count == 0:
      raise ValueError(f"task.validation_data.input_path {params.input_path}: no targets")
    loss = total / count
    return {"loss": loss, "perplexity": float(tf.exp(loss)), "num_targets": int(count)}

  def text_settings(self) -> Dict[str, bool]:
    """The records' text normalisation (their manifest's uncased and keep_accents)."""
    settings = self.manifest()["settings"]
    return {"uncased": bool(settings.get("uncased", False)),
            "keep_accents": bool(settings.get("keep_accents", False))}

  def save_model_dir(self, model, directory, metrics=None):
    """The pretrained model directory (`pretrained.save_pretrained`): config, weights, the
    records' SentencePiece model and their text normalisation. The one writer of a
    pretraining run's final/ and best/."""
    del metrics
    pretrained.save_pretrained(model, directory, self.spiece_model(),
                               text=self.text_settings())

  def load_model_dir(self, directory):
    return pretrained.load_directory(directory)

  def export_options(self) -> Dict[str, Any]:
    """The encoder's SavedModel (`serving.encoder_export`) at the records' seq_len and
    text normalisation."""
    text = self.text_settings()
    return {"max_seq_length": self.manifest()["settings"]["seq_len"],
            "lower": text["uncased"], "keep_accents": text["keep_accents"]}


def row_memories(config: XLNetConfig, batch: Dict[str, tf.Tensor],
                 mems: Optional[List[tf.Tensor]]) -> Optional[List[tf.Tensor]]:
  """The memories the rows of `batch` read in evaluation: the previous batch's `new_mems`
  (n_layer x [B, mem_len, D]), zeros for the first batch and for rows that start a stream
  (stream_step 0), as in training; None when mem_len is 0."""
  if config.mem_len == 0:
    return None
  if mems is None:
    rows = tf.shape(batch["input_ids"])[0]
    mems = [tf.zeros([rows, config.mem_len, config.d_model]) for _ in range(config.n_layer)]
  keep = tf.cast(batch["stream_step"] > 0, tf.float32)[:, None, None]        # [B, 1, 1]
  return [m * keep for m in mems]


def layout_differences(settings: Dict[str, Any], reference: Dict[str, Any]) -> List[str]:
  """The VALIDATION_LAYOUT settings in which two record directories' settings differ."""
  return [k for k in VALIDATION_LAYOUT if settings.get(k) != reference.get(k)]


def _check_same_layout(train: Dict[str, Any], validation: Dict[str, Any]) -> None:
  """Raises ValueError naming both record directories and what differs when the
  validation records (manifest) were made with another layout or SentencePiece model
  than the training records (the held-out loss would be of other inputs than the model
  learns)."""
  where = (f"task.validation_data.input_path {validation['directory']}",
           f"the training records (task.train_data.input_path {train['directory']})")
  settings = (validation["settings"], train["settings"])
  differing = layout_differences(*settings)
  if differing:
    made = [", ".join(f"{k}={s.get(k)}" for k in differing) for s in settings]
    raise ValueError(f"{where[0]}: made with {made[0]}, {where[1]} with {made[1]}; the "
                     f"held-out loss needs records of the training layout")
  if validation["spiece"]["sha256"] != train["spiece"]["sha256"]:
    raise ValueError(f"{where[0]}: made with the SentencePiece model "
                     f"{validation['spiece']['path']}, {where[1]} with "
                     f"{train['spiece']['path']} (another vocabulary); the held-out loss "
                     f"needs records of the training tokenizer")


def _eval_step(model, batch, mems):
  inputs = {k: batch[k] for k in MODEL_INPUTS if k in batch}
  if mems is not None:
    inputs["mems"] = mems
  outputs = model(inputs, training=False)
  loss_sum, count = pretraining_loss(outputs, batch)
  return loss_sum, count, outputs.get("new_mems")


def _replicas(input_context: Optional[tf.distribute.InputContext]) -> int:
  """The replicas one input pipeline feeds (1 without a context)."""
  if input_context is None:
    return 1
  return input_context.num_replicas_in_sync // input_context.num_input_pipelines


# `_eval_step`'s graph, traced once per model (and input shapes).
_EVAL_STEPS = model_functions.ModelFunctions(_eval_step)
