"""Classification / regression model: XLNet encoder + sequence summary + logit layer.

  >>> model = build_classifier(config.replace(mem_len=0), num_classes=2)
  >>> model({"input_ids": ids, "segment_ids": seg, "input_mask": pad})["logits"]  # [B, 2]

A document longer than one segment is read whole through the Transformer-XL memory when
the inputs are [B, K, S] (K segments, `networks.document_reader`; the encoder then needs
mem_len > 0): the summary reads the last segment, which ends with the layout's
`<sep> <cls>`.

  >>> model = build_classifier(config, num_classes=2, mem_len=128)
  >>> model({"input_ids": ids, "segment_ids": seg, "input_mask": pad})   # each [B, K, S]

Released fine-tuned checkpoints name the head `model/sequnece_summary/summary/{kernel,bias}`
(the typo is theirs; `SUMMARY_ATTENTION` with summary_type attn) and
`model/classification_<task>/logit/{kernel,bias}` (or `regression_<task>`);
`released_head_variables` maps those names to our variables (the RACE model's summary
too: `summary_variables`).
"""

import dataclasses
from typing import Any, ClassVar, Dict, Mapping, Optional, Sequence

import tensorflow as tf
import tf_keras

from xlnet_tf import released_names
from xlnet_tf.configs import XLNetConfig
from xlnet_tf.models.encoder_model import EncoderModel
from xlnet_tf.layers.initializers import normal_initializer
from xlnet_tf.layers.scoped_build import build_in_scope
from xlnet_tf.layers.sequence_summary import SequenceSummary
from xlnet_tf.models.head_spec import HeadSpec
from xlnet_tf.networks.document_reader import read_document
from xlnet_tf.networks.xlnet_encoder import XLNetEncoder

# The sequence summary of the original's fine-tuning graphs (xlnet.py get_pooled_out ->
# modeling.summarize_sequence): under "model/", in a scope whose name the original misspells.
SUMMARY = "model/sequnece_summary"
SUMMARY_PROJECTION = (f"{SUMMARY}/summary/kernel", f"{SUMMARY}/summary/bias")
SUMMARY_ATTENTION = (f"{SUMMARY}/summary_bias",
                     *(f"{SUMMARY}/abs_attn/{p}/kernel" for p in "qkvo"),
                     f"{SUMMARY}/abs_attn/LayerNorm/gamma", f"{SUMMARY}/abs_attn/LayerNorm/beta")


@tf_keras.utils.register_keras_serializable(package="xlnet_tf")
class XLNetClassifier(EncoderModel):
  """Encoder (content stream) -> summary [B, D] -> logits float32 [B, C].

  Args:
    encoder: an `XLNetEncoder`: mem_len 0 for segments of one [B, T]; mem_len > 0
      (reuse_len 0) to read documents [B, K, S] segment by segment.
    num_classes: C; 1 for regression (then also `score` [B] = logits[:, 0]).
    summary_type, use_proj: see `SequenceSummary`; dropout_rate: on the summary.
    summary_activation: the summary's activation (`SequenceSummary`'s `activation`; None:
      the released tanh on the projection, none without it).
    bptt_segments: reading a document in training, the gradient flows through its last
      `bptt_segments` segments (the earlier ones are read under stop-gradient).
  Inputs: input_ids, segment_ids, input_mask, each [B, T] (one segment) or [B, K, S] (a
    document: K segments of S pieces, the first left-padded).
  Returns from call: {"logits": [B, C]} (+ "score" [B] for regression).
  """

  def __init__(self, encoder: XLNetEncoder, num_classes: int, summary_type: str = "last",
               use_proj: bool = True, dropout_rate: float = 0.1, is_regression: bool = False,
               summary_activation: Optional[str] = None, bptt_segments: int = 1, **kwargs):
    super().__init__(**kwargs)
    self.encoder = encoder
    self.num_classes = num_classes
    self.summary_type = summary_type
    self.use_proj = use_proj
    self.dropout_rate = dropout_rate
    self.is_regression = is_regression
    self.summary_activation = summary_activation
    self.bptt_segments = bptt_segments
    c = encoder.config
    self.sequence_summary = SequenceSummary(
        summary_type, use_proj=use_proj, dropout_rate=dropout_rate, num_heads=c.n_head,
        head_size=c.d_head, initializer_range=c.initializer_range,
        layer_norm_epsilon=c.layer_norm_eps, attention_dropout_rate=c.dropatt,
        activation=summary_activation, name="sequnece_summary")
    self.logit = tf_keras.layers.Dense(
        num_classes, kernel_initializer=normal_initializer(c.initializer_range),
        name="logit")

  def build(self, input_shape=None):
    d_model = self.encoder.config.d_model
    if not self.encoder.built:
      build_in_scope(self.encoder, None)
    build_in_scope(self.sequence_summary, tf.TensorShape([None, None, d_model]))
    build_in_scope(self.logit, tf.TensorShape([None, d_model]))
    self.built = True

  def call(self, inputs: Mapping[str, Any], training=None) -> Dict[str, tf.Tensor]:
    if inputs["input_ids"].shape.rank == 3:               # a document: [B, K, S]
      read = read_document(self.encoder, inputs, self.bptt_segments, training=training)
      content, padding = read["content"], read["input_mask"]             # [B, S, D], [B, S]
    else:
      content = self.encoder(inputs, training=training)["content"]        # [B, T, D]
      padding = inputs.get("input_mask")
    summary = self.sequence_summary(content, padding, training=training)
    logits = tf.cast(self.logit(summary), tf.float32)                     # [B, C]
    outputs = {"logits": logits}
    if self.is_regression:
      outputs["score"] = logits[:, 0]
    return outputs

  def get_config(self):
    return {"encoder": tf_keras.layers.serialize(self.encoder),
            "num_classes": self.num_classes, "summary_type": self.summary_type,
            "use_proj": self.use_proj, "dropout_rate": self.dropout_rate,
            "is_regression": self.is_regression,
            "summary_activation": self.summary_activation,
            "bptt_segments": self.bptt_segments, "name": self.name}


@dataclasses.dataclass(frozen=True)
class ClassifierSpec(HeadSpec):
  """What a classifier predicts and how its inputs are made (its model directory's
  classifier.json)."""
  FILE: ClassVar[str] = "classifier.json"
  WRITTEN_BY: ClassVar[str] = ("the xlnet/classification task (run_classifier, "
                               "experiments.train) or xlnet_tf.convert")
  OPTIONAL_FIELDS: ClassVar[Mapping[str, Any]] = {"summary_activation": None,
                                                  "keep_accents": False, "mem_len": 0}
  task_name: str
  labels: Optional[Sequence[str]]          # None for regression
  is_regression: bool = False
  max_seq_length: int = 128
  uncased: bool = False
  summary_type: str = "last"
  use_proj: bool = True
  # The summary's activation (`SequenceSummary`): None is the released tanh on the
  # projection (none without it); models imported from HuggingFace record theirs.
  summary_activation: Optional[str] = None
  keep_accents: bool = False            # the text keeps its accents (HF's keep_accents)
  # 0: the model reads max_seq_length pieces (longer texts truncated, as released);
  # > 0: it was fine-tuned on whole documents, read in segments of max_seq_length pieces
  # through a memory of mem_len positions (`networks.document_reader`).
  mem_len: int = 0

  @property
  def num_classes(self) -> int:
    return 1 if self.is_regression else len(self.labels)

  @classmethod
  def from_values(cls, values: Mapping[str, Any], source: str = "") -> "ClassifierSpec":
    del source
    return cls(**values)

  def build_model(self, config: XLNetConfig, **kwargs) -> "XLNetClassifier":
    """The classifier this spec describes (a fresh head); `kwargs` as `build_classifier`
    (`mem_len` defaults to the spec's)."""
    kwargs.setdefault("mem_len", self.mem_len)
    return build_classifier(config, self.num_classes, summary_type=self.summary_type,
                            use_proj=self.use_proj, is_regression=self.is_regression,
                            **{"summary_activation": self.summary_activation, **kwargs})


def build_classifier(config: XLNetConfig, num_classes: int, mem_len: Optional[int] = None,
                     **kwargs) -> XLNetClassifier:
  """A classifier for `config` with every weight created (random). `mem_len`: None keeps
  the config's; n > 0 gives the encoder a memory of n positions (reuse_len 0) for reading
  documents, 0 none."""
  if mem_len is not None:
    config = config.replace(mem_len=mem_len, reuse_len=0)
  model = XLNetClassifier(XLNetEncoder(config, name="transformer"), num_classes,
                          name="xlnet_classifier", **kwargs)
  model.build()
  return model


def classification_scope(task_name: str, is_regression: bool = False) -> str:
  """model/classification_<task> (model/regression_<task>): the logit layer's scope."""
  return f"model/{'regression' if is_regression else 'classification'}_{task_name}"


def summary_variables(summary: SequenceSummary) -> Dict[str, tf.Variable]:
  """Released name -> variable of a built `SequenceSummary` (projection, attn pooling)."""
  names = {}
  if summary.use_proj:
    names.update(zip(SUMMARY_PROJECTION, (summary.summary.kernel, summary.summary.bias)))
  if summary.summary_type == "attn":
    names.update(zip(SUMMARY_ATTENTION, (
        summary.summary_bias, summary.q_kernel, summary.k_kernel, summary.v_kernel,
        summary.o_kernel, summary.attn_layer_norm.gamma, summary.attn_layer_norm.beta)))
  return names


def released_head_variables(model: XLNetClassifier, task_name: str) -> Dict[str, tf.Variable]:
  """Released (TF1) name -> variable of the classification head (summary + logit layer)."""
  scope = classification_scope(task_name, model.is_regression)
  return {**summary_variables(model.sequence_summary),
          f"{scope}/logit/kernel": model.logit.kernel, f"{scope}/logit/bias": model.logit.bias}


def load_released_classifier(model: XLNetClassifier, prefix: str, task_name: str) -> None:
  """Loads a fine-tuned checkpoint of the original code (TF1, released names): encoder and
  head. Raises ValueError naming the checkpoint and the missing or mis-shaped variable."""
  targets = {**released_names.encoder_variables(model.encoder),
             **released_head_variables(model, task_name)}
  released_names.load_released_checkpoint(prefix, targets, f"task_name {task_name!r}; ")
