"""HuggingFace's PyTorch XLNet as the reference implementation in tests.

Random weights from a small config, no download. Every parameter is redrawn (LayerNorm
gains and biases included) so that a misplaced or transposed weight cannot hide behind
an initializer's ones or zeros.
"""

import numpy as np
import torch
import transformers

from xlnet_tf.configs import XLNetConfig


def make_hf_model(config: XLNetConfig, seed: int = 0, model_class=None,
                  **hf_config_values) -> "transformers.XLNetPreTrainedModel":
  """An HF model in eval mode with the architecture and run options of `config`:
  XLNetLMHeadModel, or `model_class` (e.g. XLNetForTokenClassification) with
  `hf_config_values` (e.g. num_labels) added to its config."""
  hf_config = transformers.XLNetConfig(**config.to_hf_dict(), **hf_config_values)
  torch.manual_seed(seed)
  model = (model_class or transformers.XLNetLMHeadModel)(hf_config).eval()
  generator = torch.Generator().manual_seed(seed)
  with torch.no_grad():
    for name, param in model.named_parameters():
      noise = torch.randn(param.shape, generator=generator)
      if "layer_norm.weight" in name:
        param.copy_(1.0 + 0.1 * noise)
      elif name.endswith("word_embedding.weight") or name.endswith("mask_emb"):
        param.copy_(0.5 * noise)
      else:
        param.copy_(0.2 * noise)
    if not config.untie_r:   # one set of relative biases shared by all layers
      first = model.transformer.layer[0].rel_attn
      for layer in model.transformer.layer[1:]:
        for bias in ("r_w_bias", "r_r_bias", "r_s_bias"):
          getattr(layer.rel_attn, bias).copy_(getattr(first, bias))
  return model


def hf_forward(model, inputs, mems=None):
  """Runs HF on batch-major numpy inputs; returns batch-major numpy outputs.

  Returns a dict with content [B,T,D], query [B,P,D] (with target_mapping), logits,
  new_mems (list of [B,M,D]) and attentions (per layer, content stream [B,N,T,K]).
  """
  def tensor(name, dtype):
    return torch.as_tensor(np.asarray(inputs[name]), dtype=dtype) if name in inputs else None

  kwargs = dict(
      input_ids=tensor("input_ids", torch.long),
      token_type_ids=tensor("segment_ids", torch.long),
      input_mask=tensor("input_mask", torch.float32),
      perm_mask=tensor("perm_mask", torch.float32),
      target_mapping=tensor("target_mapping", torch.float32),
      use_mems=True, output_hidden_states=True, output_attentions=True, return_dict=True)
  if mems is not None:   # HF memories are time-major [M, B, D]
    kwargs["mems"] = [torch.as_tensor(np.asarray(m)).transpose(0, 1).contiguous()
                      for m in mems]
  with torch.no_grad():
    out = model(**kwargs)
  result = {"logits": out.logits.numpy(),
            "new_mems": [m.transpose(0, 1).numpy() for m in out.mems]}
  # Per layer [B, N, T, K]; with target_mapping HF gives (content, query) pairs.
  result["attentions"] = [(a[0] if isinstance(a, tuple) else a).numpy()
                          for a in out.attentions]
  if "target_mapping" in inputs:   # hidden_states = (h0, g0, ..., hL, gL)
    result["content"] = out.hidden_states[-2].numpy()
    result["query"] = out.hidden_states[-1].numpy()
  else:
    result["content"] = out.hidden_states[-1].numpy()
    result["hidden_states"] = [h.numpy() for h in out.hidden_states]   # L + 1 x [B, T, D]
  return result
