"""The pretrained layout's conversion: HuggingFace's XLNetLMHeadModel and XLNetModel into and
out of our `XLNetPretrainer` (no task head: the LM head's weight is tied to the embedding,
its bias is lm_loss.bias).

The parity at import compares the encoder's content stream with XLNetModel's last hidden
state; the parity at export the LM logits and the query stream's at two targets.
"""

import os
from typing import Any, Dict, Mapping, Optional

import numpy as np
import tensorflow as tf

from xlnet_tf import model_directory
from xlnet_tf import pretrained
from xlnet_tf.convert.heads import base
from xlnet_tf.models.xlnet_pretrainer import build_pretrainer

ENCODER_INPUTS = ("input_ids", "segment_ids", "input_mask")


class PretrainedConversion(base.Conversion):
  """See the module docstring."""
  hf_architectures_in = ("XLNetLMHeadModel", "XLNetModel")
  hf_architecture_out = "XLNetLMHeadModel"
  released_head = "model/lm_loss/bias (the LM head's bias; its weight is the embedding)"

  def reference_class(self, architecture: str) -> str:
    del architecture
    return "XLNetModel"

  def hf_outputs(self, out, model) -> Dict[str, np.ndarray]:
    del model
    return {"content": out.last_hidden_state.numpy()}

  def our_outputs(self, model, inputs) -> Dict[str, np.ndarray]:
    encoder_inputs = {k: inputs[k] for k in ENCODER_INPUTS}
    return {"content": model.encoder(encoder_inputs, training=False)["content"].numpy()}

  def load_model_dir(self, model_dir: str):
    # Not load_pretrained, which refuses non-finite weights by our names: the exporter's
    # own check names them by their HuggingFace names and --source, for every kind.
    model = build_pretrainer(model_directory.read_config(model_dir))
    pretrained.restore_weights(model,
                               os.path.join(model_dir, model_directory.CHECKPOINT_PREFIX))
    return model, {}

  def hf_tensors(self, model) -> Dict[str, np.ndarray]:
    return {"lm_loss.bias": base.value(model.lm_head.bias)}

  def export_pairs(self, model, hf_model, inputs, torch_in, feed, torch):
    pairs = super().export_pairs(model, hf_model, inputs, torch_in, feed, torch)
    # The query stream at two targets.
    batch, length = inputs["input_ids"].shape
    mapping = np.zeros([batch, 2, length], np.float32)
    mapping[:, 0, 2] = mapping[:, 1, 6] = 1.0
    extra = {"target_mapping": mapping}
    if model.config.attn_type != "uni":      # HF: no perm_mask with the causal mask
      perm = np.zeros([batch, length, length], np.float32)
      perm[:, :, [2, 6]] = 1.0                # the targets are hidden from everyone
      extra["perm_mask"] = perm
    query = model({**feed, **{k: tf.constant(v) for k, v in extra.items()}},
                  training=False)["logits"]
    hf_query = hf_model(**torch_in, **{k: torch.as_tensor(v) for k, v in extra.items()})
    pairs.append(("query-stream logits", query.numpy(), hf_query.logits.numpy()))
    return pairs

  def card_title(self, spec: Mapping[str, Any], task: str) -> str:
    del spec, task
    return "pretrained (LM head)"

  def export_options(self, text: Mapping[str, Any],
                     max_seq_length: Optional[int]) -> Dict[str, Any]:
    """The encoder's export has a fixed length (default 128)."""
    return {"max_seq_length": max_seq_length or 128, "lower": text["uncased"],
            "keep_accents": text["keep_accents"]}
