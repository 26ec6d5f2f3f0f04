"""HuggingFace's XLNet trained in PyTorch the way the released code trains: the reference
that tests/training/test_training_parity.py and xlnet_tf.runs.hf_pretraining_steps
(python -m experiments.hf_pretraining_steps) step ours against.

`ReleasedOptimizer` is the released get_train_op (model_utils.py) written from torch
primitives, on float32 parameters: linear warmup / linear decay evaluated at the step
before the update, global-norm clipping, then the released layer-wise gradient scaling,
then Adam with or without its bias correction (the released AdamWeightDecayOptimizer has
none; tf.train.AdamOptimizer's is the "epsilon hat" form) and decoupled weight decay of the
variables the released names select. `PretrainingSteps` steps an `XLNetLMHeadModel` on our
pretraining batches (`xlnet_tf.data.pretrain_dataset`'s dicts, as numpy) with the loss of
our trainer (cross-entropy averaged over the real targets) and the Transformer-XL memories
carried from step to step, reset in the rows whose stream starts, as our trainer does.

  >>> optimizer = ReleasedOptimizer(model.named_parameters(), 1e-3, train_steps=2000,
  ...                               warmup_steps=100, min_lr_ratio=0.001,
  ...                               weight_decay=0.01, adam_epsilon=1e-6, clip=1.0,
  ...                               bias_correction=False)
  >>> steps = PretrainingSteps(model, optimizer, mem_len=64, rows=8)
  >>> loss = steps.step(batch)
"""

import re

import numpy as np
import torch

BETA_1, BETA_2 = 0.9, 0.999

# HuggingFace parameter -> released (TF1) variable name.
_RELEASED = [
    (r"transformer\.word_embedding\.weight",
     r"model/transformer/word_embedding/lookup_table"),
    (r"transformer\.mask_emb", r"model/transformer/mask_emb/mask_emb"),
    (r"transformer\.layer\.(\d+)\.rel_attn\.([qkvor])",
     r"model/transformer/layer_\1/rel_attn/\2/kernel"),
    (r"transformer\.layer\.(\d+)\.rel_attn\.(r_[wrs]_bias|seg_embed)", r"model/transformer/\2"),
    (r"transformer\.layer\.(\d+)\.(rel_attn|ff)\.layer_norm\.weight",
     r"model/transformer/layer_\1/\2/LayerNorm/gamma"),
    (r"transformer\.layer\.(\d+)\.(rel_attn|ff)\.layer_norm\.bias",
     r"model/transformer/layer_\1/\2/LayerNorm/beta"),
    (r"transformer\.layer\.(\d+)\.ff\.(layer_[12])\.weight",
     r"model/transformer/layer_\1/ff/\2/kernel"),
    (r"transformer\.layer\.(\d+)\.ff\.(layer_[12])\.bias",
     r"model/transformer/layer_\1/ff/\2/bias"),
    (r"lm_loss\.bias", r"model/lm_loss/bias"),
    (r"sequence_summary\.summary\.weight", r"model/sequnece_summary/summary/kernel"),
    (r"sequence_summary\.summary\.bias", r"model/sequnece_summary/summary/bias"),
    (r"logits_proj\.weight", r"model/classification_movie_reviews/logit/kernel"),
    (r"logits_proj\.bias", r"model/classification_movie_reviews/logit/bias"),
]


def released_name(hf_name: str) -> str:
  for pattern, replacement in _RELEASED:
    if re.fullmatch(pattern, hf_name):
      return re.sub(pattern, replacement, hf_name)
  raise KeyError(hf_name)


def released_decays(name: str) -> bool:
  """AdamWeightDecayOptimizer._do_use_weight_decay of the released code."""
  if any(re.search(p, name) for p in ("r_s_bias", "r_r_bias", "r_w_bias")):
    return True
  return not any(re.search(p, name) for p in ("LayerNorm", "layer_norm", "bias"))


class ReleasedOptimizer:
  """The released get_train_op on torch parameters (float32), from torch primitives.

  bias_correction: False is the released AdamWeightDecayOptimizer (weight_decay > 0), True
  tf.train.AdamOptimizer's correction; the decoupled decay (lr * weight_decay * w, before
  the Adam step, as Model Garden's AdamWeightDecay) applies either way when weight_decay > 0.
  """

  def __init__(self, named_parameters, learning_rate, train_steps, warmup_steps,
               min_lr_ratio, weight_decay, adam_epsilon, clip, lr_layer_decay_rate=1.0, *,
               bias_correction):
    self.params = [(released_name(n), p) for n, p in named_parameters]
    self.learning_rate, self.train_steps, self.warmup_steps = (learning_rate, train_steps,
                                                               warmup_steps)
    self.min_lr_ratio, self.weight_decay = min_lr_ratio, weight_decay
    self.adam_epsilon, self.clip, self.rate = adam_epsilon, clip, lr_layer_decay_rate
    self.bias_correction = bias_correction
    self.state = {}
    self.step = 0
    self.norms = []

  def learning_rate_now(self):
    s, w, total = self.step, self.warmup_steps, self.train_steps
    if s < w:
      return s / w * self.learning_rate
    end = self.learning_rate * self.min_lr_ratio
    return (self.learning_rate - end) * (1 - min(s - w, total - w) / (total - w)) + end

  @torch.no_grad()
  def apply(self):
    used = [(name, p) for name, p in self.params if p.grad is not None]   # as TF1: no grad,
    norm = torch.sqrt(sum(torch.sum(p.grad ** 2) for _, p in used))      # no update
    self.norms.append(float(norm))
    factor = self.clip / torch.maximum(norm, torch.tensor(self.clip))
    n_layer = 1 + max(int(m.group(1)) for name, _ in used
                      for m in [re.search(r"model/transformer/layer_(\d+)/", name)] if m)
    lr = self.learning_rate_now()
    t = self.step + 1
    lr_t = lr * np.sqrt(1 - BETA_2 ** t) / (1 - BETA_1 ** t) if self.bias_correction else lr
    for name, p in used:
      g = p.grad * factor
      layer = re.search(r"model/transformer/layer_(\d+)/", name)
      if layer and self.rate != 1.0:
        g = g * self.rate ** (n_layer - 1 - int(layer.group(1)))
      m, v = self.state.setdefault(id(p), (torch.zeros_like(p), torch.zeros_like(p)))
      m.mul_(BETA_1).add_(g, alpha=1 - BETA_1)
      v.mul_(BETA_2).addcmul_(g, g, value=1 - BETA_2)
      if self.weight_decay > 0 and released_decays(name):
        p.sub_(lr * self.weight_decay * p)
      p.sub_(lr_t * m / (torch.sqrt(v) + self.adam_epsilon))
      p.grad = None
    self.step += 1


class PretrainingSteps:
  """Training steps of an XLNetLMHeadModel on our pretraining batches, memories carried."""

  def __init__(self, model, optimizer: ReleasedOptimizer, mem_len: int, rows: int):
    """mem_len 0: no memory (HF would keep every past state: its mem_len 0 means no limit)."""
    d_model = model.config.d_model
    self.model, self.optimizer = model, optimizer
    self.mems = ([torch.zeros(mem_len, rows, d_model) for _ in range(model.config.n_layer)]
                 if mem_len else None)

  def step(self, batch) -> float:
    """One update on `batch` (numpy arrays by our feature names); returns its loss."""
    tensor = lambda k, dtype=torch.float32: torch.as_tensor(batch[k], dtype=dtype)
    mems = None
    if self.mems is not None:   # time-major [M, B, D]; a stream's first step starts afresh
      keep = torch.as_tensor(batch["stream_step"] > 0, dtype=torch.float32)[None, :, None]
      mems = [m * keep for m in self.mems]
    out = self.model(input_ids=tensor("input_ids", torch.long),
                     token_type_ids=tensor("segment_ids", torch.long),
                     input_mask=tensor("input_mask"), perm_mask=tensor("perm_mask"),
                     target_mapping=tensor("target_mapping"), mems=mems,
                     use_mems=mems is not None, return_dict=True)
    target_mask = tensor("target_mask")
    per_target = torch.nn.functional.cross_entropy(
        out.logits.reshape(-1, out.logits.shape[-1]), tensor("target", torch.long).reshape(-1),
        reduction="none").reshape(target_mask.shape)
    loss = torch.sum(per_target * target_mask) / torch.sum(target_mask)
    loss.backward()
    self.optimizer.apply()
    if mems is not None:
      self.mems = [m.detach() for m in out.mems]
    return float(loss.detach())
