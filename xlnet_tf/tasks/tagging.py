"""Token classification (part-of-speech tagging of the Brown corpus) as a Model Garden task.

  >>> from official.core import exp_factory, task_factory
  >>> import xlnet_tf.tasks.all_tasks                        # registers every task
  >>> params = exp_factory.get_exp_config("xlnet/tagging")
  >>> task = task_factory.get_task(params.task)
  >>> model = task.build_model(); task.initialize(model)     # warm start from init_checkpoint
  >>> dataset = task.build_inputs(params.task.train_data)

The pieces are the existing ones: sentences from `data.brown` (the bundled 30-document
subset, or the whole corpus in `data_dir`, split 80/10/10 by a hash of each sentence's
guid), features cached as TFRecords by `data.tagging_features` (each word's label on its
first piece; streamed, never held in memory), the model of `models.xlnet_tagger`
(HuggingFace's XLNetForTokenClassification) with the fine-tuning run options of
`XLNetConfig.for_finetuning`, the loss `tagging_loss` (cross-entropy of
the labelled words, normalised by the global count), the evaluation
`evaluate_tagger` (`evaluation.tagging_metrics`: token accuracy, micro and
macro tag F1, entity F1 for BIO tags), the model directory of `model_directory` (tagger.json)
and the raw-text SavedModel of `serving.tagger_export`.

The labels are the tags of the TRAIN split (`brown.tag_list`), unless `labels` lists them:
a tag that occurs only in the dev or test split cannot be learned, and such a word counts
as wrong in the evaluation (which compares tag strings, so it needs no id for it).

Training runs through `tasks.train_lib` (experiments/train.py) with the common
`training.trainer.Trainer`, as for every XLNet task.
"""

import dataclasses
from typing import Any, Dict, List, Optional, Sequence

import numpy as np
from official.core import config_definitions as cfg
from official.core import exp_factory
from official.core import task_factory
import sentencepiece as spm
import tensorflow as tf
import tf_keras

from xlnet_tf.data import brown
from xlnet_tf.data import tagging_features
from xlnet_tf.data import tokenization
from xlnet_tf.evaluation import tagging_metrics
from xlnet_tf.models.xlnet_tagger import build_tagger
from xlnet_tf.serving import tagger_export
from xlnet_tf.tasks import base
from xlnet_tf.models import losses
from xlnet_tf.models.xlnet_tagger import TaggerSpec
from xlnet_tf.models.xlnet_tagger import XLNetTagger
from xlnet_tf.convert.heads.tagger import TaggerConversion
from xlnet_tf import task_kind
from xlnet_tf.training import model_functions

TASK_NAME = "brown"


@dataclasses.dataclass
class TaggingDataConfig(base.TaskDataConfig):
  """One split of the tagging corpus: "train", "dev" or "test" (see `base.TaskDataConfig`)."""


@dataclasses.dataclass
class TaggingConfig(cfg.TaskConfig):
  """Part-of-speech tagging of the Brown corpus (`data.brown`).

  init_checkpoint: a pretrained model directory or preset name (xlnet_config.json, model.ckpt,
    spiece.model), e.g. from `xlnet_tf.convert`; "" for a random model.
  data_dir: a Brown corpus directory (files ca01 ... and cats.txt, e.g. NLTK's
    corpora/brown); "" for the bundled subset (data_prep/sample_data/brown).
  tagset: "brown" (the corpus' tags, np-tl, fw-nn, ...) or "base" (without the
    -tl/-hl/-nc markers and the fw- prefix).
  labels: the tags in id order; None: the train split's (`brown.tag_list`).
  scheme: "tags" (per-word metrics) or "bio" (also entity precision, recall and F1).
  head_dropout: dropout before the logit layer on top of the encoder's own (0.0, as
    HuggingFace's XLNetForTokenClassification). `model.summary_type` and `model.use_proj`
    are the classifier's and not used.
  """
  model: base.XLNetModelConfig = dataclasses.field(default_factory=base.XLNetModelConfig)
  data_dir: str = ""
  tagset: str = "brown"
  labels: Optional[List[str]] = None
  max_seq_length: int = 128
  uncased: bool = False
  scheme: str = "tags"
  head_dropout: float = 0.0
  train_data: TaggingDataConfig = base.data_config("train", True, 32, TaggingDataConfig)
  validation_data: TaggingDataConfig = base.data_config("dev", False, 64, TaggingDataConfig)
  optimization: base.FinetuneSettings = dataclasses.field(
      default_factory=base.FinetuneSettings)


# ---- prediction and evaluation ----------------------------------------------------------

# The logits of `predict_tags`, traced once per model and input signature (any batch size).
_PREDICT_LOGITS = model_functions.ModelFunctions(
    lambda model, inputs: model(inputs, training=False)["logits"])


def predict_tags(model: XLNetTagger, sp: spm.SentencePieceProcessor,
                 sentences: Sequence[Sequence[str]], spec: TaggerSpec,
                 batch_size: int = 32) -> List[List[Optional[str]]]:
  """One predicted tag per word of each sentence (a list of words; a raw text is
  `text.split()`), the argmax at the word's first piece; None for words cut away by
  `spec.max_seq_length`. The inputs are `tagging_features`' (what serving computes in the
  graph)."""
  if isinstance(sentences, str) or any(isinstance(s, str) for s in sentences):
    raise TypeError("predict_tags expects lists of words (split a text with text.split())")
  labels = list(spec.labels)
  encoded = list(tagging_features.encode_sentences(
      sp, [tagging_features.TaggedSentence(str(k), tuple(words))
           for k, words in enumerate(sentences)], spec.max_seq_length, uncased=spec.uncased))
  result = []
  for start in range(0, len(encoded), batch_size):
    chunk = encoded[start:start + batch_size]
    inputs = {key: tf.constant(np.stack([f[key] for f in chunk]))
              for key in tagging_features.MODEL_INPUTS}
    signature = {key: tf.TensorSpec([None, *value.shape[1:]], value.dtype)
                 for key, value in inputs.items()}                      # any batch size
    run = _PREDICT_LOGITS.get(model, signature)
    ids = np.argmax(run(inputs).numpy(), axis=-1)                       # [b, T]
    for row, features in zip(ids, chunk):
      tags = [labels[i] for i in row[features["word_positions"]]]
      result.append(tags + [None] * (features["num_words"] - len(tags)))
  return result


def evaluate_tagger(model: XLNetTagger, sp: spm.SentencePieceProcessor,
                    sentences: Sequence[tagging_features.TaggedSentence], spec: TaggerSpec,
                    batch_size: int = 32) -> Dict[str, float]:
  """`tagging_metrics.tagging_metrics` of the model's predictions on tagged sentences
  (words cut away by max_seq_length count as wrong, and as "untagged")."""
  predicted = predict_tags(model, sp, [s.words for s in sentences], spec, batch_size)
  return tagging_metrics.tagging_metrics([list(s.tags) for s in sentences], predicted,
                                         scheme=spec.scheme)


# ---- the loss (the trainer's `LossFn`: sum over the micro-batch, count) ----------

def tagging_loss(outputs: Dict[str, tf.Tensor], batch: Dict[str, tf.Tensor]):
  """The `Trainer` loss of a tagger: (cross-entropy summed over the micro-batch's labelled
  words, their number); `batch["label_ids"]` int [B, T] (negative = not labelled)."""
  return losses.token_cross_entropy(outputs["logits"], batch["label_ids"])


KIND = task_kind.register(task_kind.TaskKind(
    name="tagger", description="token classification head (HuggingFace's "
                               "XLNetForTokenClassification; the original has none)",
    model_class=XLNetTagger, build_model=build_tagger, spec_class=TaggerSpec,
    card_task="token_classification", export=tagger_export.export_tagger,
    conversion=TaggerConversion(),
    max_seq_length=128, experiment="xlnet/tagging"))


@exp_factory.register_config_factory(KIND.experiment)
def tagging_experiment() -> cfg.ExperimentConfig:
  """The fine-tuning defaults on the Brown corpus (bundled subset)."""
  return base.experiment_config(TaggingConfig(), train_steps=1000, steps_per_loop=100,
                                checkpoint_interval=1000, validation_interval=1000)


@task_factory.register_task_cls(TaggingConfig)
class TaggingTask(base.XLNetTask):
  """XLNet token classification: model, inputs, loss, evaluation, model directory, export."""

  KIND = KIND
  INPUT_KEYS = tagging_features.MODEL_INPUTS
  LABEL_KEY = "label_ids"             # [B, T], negative off the word starts
  METRIC = "accuracy"                 # tagging_metrics' token accuracy
  METRIC_HIGHER_IS_BETTER = True

  def loss_fn(self):
    return tagging_loss

  def __init__(self, params: TaggingConfig, logging_dir: Optional[str] = None,
               name: Optional[str] = None):
    super().__init__(params, logging_dir=logging_dir, name=name)
    if params.tagset not in brown.TAGSETS:
      raise ValueError(f"task.tagset must be one of {list(brown.TAGSETS)}, got "
                       f"{params.tagset!r}")
    if params.scheme not in tagging_metrics.SCHEMES:
      raise ValueError(f"task.scheme must be one of {list(tagging_metrics.SCHEMES)}, got "
                       f"{params.scheme!r}")
    if params.max_seq_length < 3:
      raise ValueError(f"task.max_seq_length must be >= 3 (a piece of text in "
                       f"text <sep> <cls>), got {params.max_seq_length}")
    self._splits = None
    labels = (list(params.labels) if params.labels
              else brown.tag_list(self.sentences("train")))
    self.spec = TaggerSpec(
        task_name=TASK_NAME, labels=tuple(labels), max_seq_length=params.max_seq_length,
        uncased=params.uncased, scheme=params.scheme)

  # ---- what the task is ----------------------------------------------------------------

  @property
  def data_dir(self) -> str:
    return self.task_config.data_dir or brown.BROWN_DIR

  def sentences(self, split: str) -> List[tagging_features.TaggedSentence]:
    """The tagged sentences of `split` (train, dev, test), read once per task."""
    if self._splits is None:
      self._splits = brown.split_sentences(
          brown.read_brown(self.data_dir, tagset=self.task_config.tagset))
    if split not in self._splits:
      raise ValueError(f"task {TASK_NAME}: no split {split!r} (one of "
                       f"{sorted(self._splits)})")
    if not self._splits[split]:
      raise ValueError(f"task {TASK_NAME}: the {split} split of {self.data_dir} is empty")
    return self._splits[split]

  def spec_values(self) -> Dict[str, Any]:
    values = dataclasses.asdict(self.spec)
    values["labels"] = list(self.spec.labels)
    return values

  def run_settings(self) -> Dict[str, Any]:
    return {**self.spec_values(), "tagset": self.task_config.tagset,
            "head_dropout": self.task_config.head_dropout}

  # ---- Model Garden's Task interface ---------------------------------------------------

  def build_model(self) -> tf_keras.Model:
    return build_tagger(self.xlnet_config(), self.spec.num_labels,
                        dropout_rate=self.task_config.head_dropout)

  def features_path(self, data: TaggingDataConfig) -> str:
    """The cached TFRecord features of `data.split` (built on first use). Training data
    carries the label ids; evaluation data only the words (its gold tags may lie outside
    the label list; `evaluate` scores the sentences' tag strings)."""
    sentences = self.sentences(data.split)
    if not data.is_training:
      sentences = [tagging_features.TaggedSentence(s.guid, s.words) for s in sentences]
    return tagging_features.cached_features(
        sentences, self.spiece_model(data), self.spec.max_seq_length,
        label_list=self.spec.labels if data.is_training else None,
        uncased=self.spec.uncased, task=f"{TASK_NAME}_{self.task_config.tagset}",
        split=data.split, input_files=brown.document_paths(self.data_dir),
        cache_dir=self.cache_dir(data))

  def build_inputs(self, params: TaggingDataConfig,
                   input_context: Optional[tf.distribute.InputContext] = None,
                   path: Optional[str] = None) -> tf.data.Dataset:
    """Batches streamed from the cached features. For training: per-replica
    MICRO-batches (global_batch_size / replicas / grad_accum_steps), shuffled with the
    data seed and repeated; otherwise one pass in order."""
    return tagging_features.tagging_dataset(
        path or self.features_path(params), self.replica_batch_size(params, input_context),
        is_training=params.is_training, seed=params.seed,
        max_seq_length=self.spec.max_seq_length, input_context=input_context,
        shuffle_buffer_size=params.shuffle_buffer_size,
        drop_remainder=params.drop_remainder if params.is_training else False)

  # ---- a whole evaluation --------------------------------------------------------------

  def evaluate(self, model: tf_keras.Model, params: Optional[TaggingDataConfig] = None,
               num_steps: int = -1) -> Dict[str, Any]:
    """`tagging_metrics.tagging_metrics` (accuracy, micro_f1, macro_f1, words, untagged;
    entity scores for scheme "bio") of the model's tags on every sentence of the
    validation split (`evaluate_tagger`: words cut away by max_seq_length
    and tags outside the label list count as wrong), and `num_examples` (sentences).
    `num_steps` is ignored: the metrics are of the whole split."""
    del num_steps
    params = params or self.task_config.validation_data
    sentences = self.sentences(params.split)
    sp = tokenization.load_spiece(self.spiece_model(params))
    results = evaluate_tagger(
        model, sp, sentences, self.spec,
        batch_size=self.replica_batch_size(params, None))
    results["num_examples"] = len(sentences)
    return results
