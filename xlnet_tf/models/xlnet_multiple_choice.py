"""Multiple choice model (RACE): a 1-logit `XLNetClassifier` scoring every option's row.

  >>> model = build_multiple_choice(config.replace(mem_len=0))
  >>> model({"input_ids": ids, "segment_ids": seg, "input_mask": pad})["logits"]  # [B, C]

Each question comes as C rows (one per option, e.g. RACE's `article <sep> question+option
<sep> <cls>`, see `xlnet_tf.data.race`) of T pieces: inputs [B, C, T]. The rows run as one
[B*C, T] batch through the classifier (encoder, sequence summary, a 1-output logit layer),
and the [B*C, 1] logits come back as [B, C]; the softmax over the options is the loss's
(`multiple_choice_loss`, the loss of the "xlnet/race" task).

The variables are exactly those of `build_classifier(config, 1, ...)` (the same
attributes: encoder, sequence_summary, logit), so checkpoints move between the two either
way: RACE models converted from the original (`xlnet_tf.convert`) and run_race.py's
MODEL_DIR/final written before this class existed load into it, and its checkpoints load
into a 1-class classifier.
"""

import dataclasses
from typing import Any, ClassVar, Dict, Mapping, Optional, Tuple, Union

import tensorflow as tf
import tf_keras

from xlnet_tf.configs import XLNetConfig
from xlnet_tf.models.head_spec import HeadSpec
from xlnet_tf.models.xlnet_classifier import XLNetClassifier
from xlnet_tf.networks.xlnet_encoder import XLNetEncoder

# The per-row inputs of the classifier that are given per option ([B, C, T]).
OPTION_INPUTS = ("input_ids", "segment_ids", "input_mask")


def flatten_options(inputs: Mapping[str, Any]
                    ) -> Tuple[Dict[str, tf.Tensor], Union[int, tf.Tensor]]:
  """([B, C, T] inputs -> [B*C, T] rows, C): the `OPTION_INPUTS` present in `inputs`,
  reshaped; C is static when the inputs' shape says it."""
  input_ids = tf.convert_to_tensor(inputs["input_ids"])
  if input_ids.shape.rank is not None and input_ids.shape.rank != 3:
    raise ValueError(f"multiple choice inputs are [batch, options, length]; input_ids has "
                     f"shape {input_ids.shape}")
  num_options = input_ids.shape[1]
  if num_options is None:
    num_options = tf.shape(input_ids)[1]
  length = tf.shape(input_ids)[2]
  flat = {key: tf.reshape(inputs[key], [-1, length])                    # [B*C, T]
          for key in OPTION_INPUTS if inputs.get(key) is not None}
  return flat, num_options


@tf_keras.utils.register_keras_serializable(package="xlnet_tf")
class XLNetMultipleChoice(XLNetClassifier):
  """Inputs [B, C, T] -> rows [B*C, T] -> 1-class classifier [B*C, 1] -> logits [B, C].

  Args:
    encoder: an `XLNetEncoder` (memory off for fine-tuning: mem_len 0).
    summary_type, use_proj, dropout_rate, summary_activation: the classifier's (see
      `XLNetClassifier`); the original's RACE model is summary_type "last" with the
      projection (and its tanh).
  Call with input_ids int [B, C, T], segment_ids int [B, C, T] and input_mask float
  [B, C, T] (1 at padding); the options' number C may vary from call to call. Returns
  {"logits": float32 [B, C]}.

  Example:
    >>> cfg = XLNetConfig(n_layer=2, d_model=16, n_head=2, d_head=8, d_inner=32, n_token=100)
    >>> model = build_multiple_choice(cfg)
    >>> model({"input_ids": tf.constant([[[5, 6, 4, 3]] * 4])})["logits"].shape
    TensorShape([1, 4])
  """

  def __init__(self, encoder: XLNetEncoder, summary_type: str = "last",
               use_proj: bool = True, dropout_rate: float = 0.1,
               summary_activation: Optional[str] = None, **kwargs):
    super().__init__(encoder, 1, summary_type=summary_type, use_proj=use_proj,
                     dropout_rate=dropout_rate, is_regression=False,
                     summary_activation=summary_activation, **kwargs)

  def call(self, inputs: Mapping[str, Any], training=None) -> Dict[str, tf.Tensor]:
    rows, num_options = flatten_options(inputs)                             # [B*C, T]
    logits = super().call(rows, training=training)["logits"]                # [B*C, 1]
    return {"logits": tf.reshape(logits, [-1, num_options])}               # [B, C]

  def get_config(self):
    config = super().get_config()
    del config["num_classes"], config["is_regression"]                      # always 1, False
    return config


@dataclasses.dataclass(frozen=True)
class RaceSpec(HeadSpec):
  """What a fine-tuned RACE model reads and how it is built (its model directory's
  race.json)."""
  FILE: ClassVar[str] = "race.json"
  WRITTEN_BY: ClassVar[str] = "the xlnet/race task (run_race --do_train, experiments.train)"
  OPTIONAL_FIELDS: ClassVar[Mapping[str, Any]] = {"summary_activation": None,
                                                  "keep_accents": False}
  task: str = "race"
  max_seq_length: int = 512
  max_qa_length: int = 128
  uncased: bool = False
  levels: Tuple[str, ...] = ("middle", "high")
  summary_type: str = "last"
  use_proj: bool = True
  summary_activation: Optional[str] = None   # see ClassifierSpec
  keep_accents: bool = False

  @classmethod
  def from_values(cls, values: Mapping[str, Any], source: str = "") -> "RaceSpec":
    """The spec of race.json's `values`; ValueError (naming `source`) unless its task is
    "race"."""
    if values.get("task") != "race":
      raise ValueError(f"{source}: {cls.FILE} is of task {values.get('task')!r}, not "
                       f"'race'")
    return cls(**{**values, "levels": tuple(values.get("levels", cls.levels))})

  def build_model(self, config: XLNetConfig, **kwargs) -> "XLNetMultipleChoice":
    """The model this spec describes (a fresh head); `kwargs` as `build_multiple_choice`."""
    return build_multiple_choice(config, summary_type=self.summary_type,
                                 use_proj=self.use_proj,
                                 summary_activation=self.summary_activation, **kwargs)


def build_multiple_choice(config: XLNetConfig, dropout_rate: float = 0.1,
                          summary_type: str = "last",
                          use_proj: bool = True,
                          summary_activation: Optional[str] = None) -> XLNetMultipleChoice:
  """A multiple choice model for `config` with every weight created (random)."""
  model = XLNetMultipleChoice(XLNetEncoder(config, name="transformer"),
                              summary_type=summary_type, use_proj=use_proj,
                              dropout_rate=dropout_rate,
                              summary_activation=summary_activation,
                              name="xlnet_multiple_choice")
  model.build()
  return model
