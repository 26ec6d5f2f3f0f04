"""SQuAD model: XLNet encoder (content stream) + `SquadHead`.

  >>> model = build_squad_model(config.replace(mem_len=0), start_n_top=5, end_n_top=5)
  >>> model(batch, training=True)    # batch with start_positions: start/end/cls logits
  >>> model(batch)                   # without: top-k starts, ends per start, cls logits

Inputs: input_ids, segment_ids, input_mask, p_mask [B, T]; cls_index [B]; for training
start_positions [B]. The head's variables carry the released names (`SQUAD_HEAD`:
`start_logits/...`, `end_logits/...`, `answer_class/...`).
"""

from typing import Any, ClassVar, Dict, Mapping, Optional

import tf_keras

from xlnet_tf import released_names
from xlnet_tf.configs import XLNetConfig
from xlnet_tf.models.encoder_model import EncoderModel
from xlnet_tf.layers.scoped_build import build_in_scope
from xlnet_tf.layers.squad_head import SquadHead
from xlnet_tf.models.head_spec import HeadSpec
from xlnet_tf.networks.xlnet_encoder import XLNetEncoder

ENCODER_INPUTS = ("input_ids", "segment_ids", "input_mask")
# The head's variables in the original's run_squad.py (get_qa_outputs: top-level scopes,
# tf.layers.dense's default and explicit names).
SQUAD_HEAD = ("start_logits/dense/kernel", "start_logits/dense/bias",
              "end_logits/dense_0/kernel", "end_logits/dense_0/bias",
              "end_logits/LayerNorm/gamma", "end_logits/LayerNorm/beta",
              "end_logits/dense_1/kernel", "end_logits/dense_1/bias",
              "answer_class/dense_0/kernel", "answer_class/dense_0/bias",
              "answer_class/dense_1/kernel")                  # dense_1: no bias


@tf_keras.utils.register_keras_serializable(package="xlnet_tf")
class XLNetForSquad(EncoderModel):
  """Encoder -> hidden [B, T, D] -> SquadHead (see its docstring for the outputs)."""

  def __init__(self, encoder: XLNetEncoder, start_n_top: int = 5, end_n_top: int = 5,
               dropout_rate: float = 0.1, answer_class_start: str = "expected", **kwargs):
    super().__init__(**kwargs)
    self.encoder = encoder
    c = encoder.config
    self.head = SquadHead(c.d_model, start_n_top=start_n_top, end_n_top=end_n_top,
                          layer_norm_epsilon=c.layer_norm_eps,
                          initializer_range=c.initializer_range, dropout_rate=dropout_rate,
                          answer_class_start=answer_class_start, name="squad_head")

  def build(self, input_shape=None):
    if not self.encoder.built:
      build_in_scope(self.encoder, None)
    if not self.head.built:
      self.head.build()
    self.built = True

  def call(self, inputs: Mapping[str, Any], training=None) -> Dict[str, Any]:
    hidden = self.encoder({k: inputs[k] for k in ENCODER_INPUTS if k in inputs},
                          training=training)["content"]                   # [B, T, D]
    return self.head(hidden, inputs["p_mask"], inputs["cls_index"],
                     start_positions=inputs.get("start_positions"), training=training)

  def get_config(self):
    return {"encoder": tf_keras.layers.serialize(self.encoder),
            "start_n_top": self.head.start_n_top, "end_n_top": self.head.end_n_top,
            "dropout_rate": self.head.dropout_rate,
            "answer_class_start": self.head.answer_class_start, "name": self.name}


class SquadSpec(HeadSpec, dict):
  """A SQuAD model's squad.json: the window settings of its task and export
  (max_seq_length, max_query_length, doc_stride, version_2, ...), the candidates its head
  searches (start_n_top, end_n_top; default 5 x 5), the answer class's start
  (answer_class_start: "expected" as released, "gold" for HuggingFace imports) and the
  null-score threshold the task chose. A dict: its fields grew with the task and are
  written as they are."""
  FILE: ClassVar[str] = "squad.json"
  WRITTEN_BY: ClassVar[str] = ("the xlnet/squad task (run_squad --do_train, "
                               "experiments.train) or xlnet_tf.convert")

  @classmethod
  def from_values(cls, values: Mapping[str, Any], source: str = "") -> "SquadSpec":
    del source
    return cls(values)

  def to_values(self) -> Dict[str, Any]:
    """squad.json's values: the dict as it is."""
    return dict(self)

  def build_model(self, config: XLNetConfig, start_n_top: Optional[int] = None,
                  end_n_top: Optional[int] = None) -> "XLNetForSquad":
    """The SQuAD model this spec describes (no dropout: a model read from disk is served
    or converted); `start_n_top`/`end_n_top` override the recorded search."""
    return build_squad_model(config, start_n_top or self.get("start_n_top", 5),
                             end_n_top or self.get("end_n_top", 5), 0.0,
                             answer_class_start=self.get("answer_class_start", "expected"))


def build_squad_model(config: XLNetConfig, start_n_top: int = 5, end_n_top: int = 5,
                      dropout_rate: float = 0.1,
                      answer_class_start: str = "expected") -> XLNetForSquad:
  """`answer_class_start`: see `SquadHead` ("expected" as released, "gold" as HF)."""
  model = XLNetForSquad(XLNetEncoder(config, name="transformer"), start_n_top=start_n_top,
                        end_n_top=end_n_top, dropout_rate=dropout_rate,
                        answer_class_start=answer_class_start, name="xlnet_squad")
  model.build()
  return model


def released_head_variables(model: XLNetForSquad) -> Dict[str, Any]:
  """Released (TF1 run_squad) name -> variable of the SQuAD head (`SQUAD_HEAD`)."""
  head = model.head
  return dict(zip(SQUAD_HEAD, (
      head.start_dense.kernel, head.start_dense.bias,
      head.end_dense_0.kernel, head.end_dense_0.bias,
      head.end_layer_norm.gamma, head.end_layer_norm.beta,
      head.end_dense_1.kernel, head.end_dense_1.bias,
      head.class_dense_0.kernel, head.class_dense_0.bias, head.class_dense_1.kernel)))


def load_released_squad(model: XLNetForSquad, prefix: str) -> None:
  """Loads a SQuAD checkpoint of the original code (TF1, released names): the encoder
  (`model/transformer/...`) and the head (`start_logits/...`, `end_logits/...`,
  `answer_class/...`). Raises ValueError naming the checkpoint and the variable."""
  targets = {**released_names.encoder_variables(model.encoder),
             **released_head_variables(model)}
  released_names.load_released_checkpoint(prefix, targets)
