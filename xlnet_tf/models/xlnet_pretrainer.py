"""The pretraining model: XLNet encoder + LM head tied to the word embedding."""

from typing import Any, Dict, Mapping

import tensorflow as tf
import tf_keras

from xlnet_tf.configs import XLNetConfig
from xlnet_tf.models.encoder_model import EncoderModel
from xlnet_tf.layers.tied_lm_head import TiedLMHead
from xlnet_tf.networks.xlnet_encoder import XLNetEncoder
from xlnet_tf.layers.scoped_build import build_in_scope


def objective_attn_type(objective: str) -> str:
  """The attention an objective trains with: "uni" (causal) for "clm", else "bi"."""
  return "uni" if objective == "clm" else "bi"


def check_attn_type(attn_type: str, objective: str) -> None:
  """Raises ValueError for objective "clm" with an attn_type other than "uni" (with "bi"
  every position would see the next token, which it predicts)."""
  if objective == "clm" and attn_type != "uni":
    raise ValueError(f"XLNetConfig.attn_type must be 'uni' (causal) for objective 'clm', "
                     f"got {attn_type!r}: each position would see the token it predicts")


@tf_keras.utils.register_keras_serializable(package="xlnet_tf")
class XLNetPretrainer(EncoderModel):
  """Encoder + tied LM head (`model/lm_loss/bias` in the released checkpoints).

  Call with the encoder's input dict. Returns the encoder's outputs plus
  `logits` float32: [B, P, V] from the query stream when `target_mapping` is given,
  else [B, T, V] from the content stream.

  objective: "plm" (XLNet) or "mlm", the BERT-style denoising baseline of the ablation:
  `target_mapping` then selects the targets' CONTENT-stream outputs (no query stream;
  the inputs carry <mask> and no perm_mask; see `xlnet_tf.data.masked_lm`); or "clm", the
  causal-LM diagnostic baseline: the encoder's config has attn_type "uni", the inputs
  have no perm_mask and no target_mapping, and the logits [B, T, V] are the content
  stream's at every position (see `xlnet_tf.data.causal_lm`).

  Example:
    >>> cfg = XLNetConfig(n_layer=2, d_model=16, n_head=2, d_head=8, d_inner=32, n_token=100)
    >>> model = XLNetPretrainer(XLNetEncoder(cfg))
    >>> model({"input_ids": tf.constant([[5, 6, 7]])})["logits"].shape
    TensorShape([1, 3, 100])
  """

  def __init__(self, encoder: XLNetEncoder, objective: str = "plm", **kwargs):
    super().__init__(**kwargs)
    if objective not in ("plm", "mlm", "clm"):
      raise ValueError(f"objective must be 'plm', 'mlm' or 'clm', got {objective!r}")
    check_attn_type(encoder.config.attn_type, objective)
    self.objective = objective
    self.encoder = encoder
    self.lm_head = TiedLMHead(encoder.config.n_token, name="lm_loss")

  def build(self, input_shape=None):
    """Creates every weight without running the model (an encoder built before is kept)."""
    for layer in (self.encoder, self.lm_head):
      if not layer.built:
        build_in_scope(layer, None)
    self.built = True

  def call(self, inputs: Mapping[str, Any], training=None) -> Dict[str, Any]:
    if self.objective == "clm":
      given = [k for k in ("target_mapping", "perm_mask") if inputs.get(k) is not None]
      if given:
        raise ValueError(f"objective 'clm' predicts every position from the content "
                         f"stream; its inputs have no {' or '.join(given)}")
    if self.objective == "mlm" and inputs.get("target_mapping") is not None:
      target_mapping = inputs["target_mapping"]                            # [B, P, T]
      encoder_inputs = {k: v for k, v in inputs.items()
                        if k not in ("target_mapping", "perm_mask")}
      outputs = dict(self.encoder(encoder_inputs, training=training))
      hidden = tf.einsum("bpt,btd->bpd", tf.cast(target_mapping, outputs["content"].dtype),
                         outputs["content"])                               # [B, P, D]
      outputs["logits"] = self.lm_head(hidden, self.encoder.word_embedding)
      return outputs
    outputs = dict(self.encoder(inputs, training=training))
    hidden = outputs["query"] if "query" in outputs else outputs["content"]
    outputs["logits"] = self.lm_head(hidden, self.encoder.word_embedding)
    return outputs

  def get_config(self):
    return {"encoder": tf_keras.layers.serialize(self.encoder), "objective": self.objective,
            "name": self.name}


def build_pretrainer(config: XLNetConfig, objective: str = "plm") -> XLNetPretrainer:
  """A pretraining model for `config` with all weights created (randomly initialised)."""
  model = XLNetPretrainer(XLNetEncoder(config, name="transformer"), objective=objective,
                          name="xlnet_pretrainer")
  model.build()
  return model
