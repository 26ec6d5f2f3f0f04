"""Writes a directory in the released XLNet layout, as the original TF1 code would.

The variable names and shapes are those of the original release (xlnet_facts.md). The
arrays are taken from an HF model's state dict with a mapping written out here by hand,
independently of xlnet_tf/convert/huggingface.py.
"""

import json
import os

import numpy as np
import tensorflow as tf

from xlnet_tf.configs import XLNetConfig

T = "model/transformer"


def released_arrays_from_hf(hf_model, config: XLNetConfig):
  """Released name -> array for the weights of an HF XLNetLMHeadModel."""
  sd = {k: v.detach().numpy() for k, v in hf_model.state_dict().items()}
  layers = range(config.n_layer)
  out = {
      f"{T}/word_embedding/lookup_table": sd["transformer.word_embedding.weight"],
      f"{T}/mask_emb/mask_emb": sd["transformer.mask_emb"],
      f"{T}/seg_embed": np.stack(
          [sd[f"transformer.layer.{i}.rel_attn.seg_embed"] for i in layers]),
      "model/lm_loss/bias": sd["lm_loss.bias"],
  }
  for bias in ("r_w_bias", "r_r_bias", "r_s_bias"):
    per_layer = [sd[f"transformer.layer.{i}.rel_attn.{bias}"] for i in layers]
    out[f"{T}/{bias}"] = np.stack(per_layer) if config.untie_r else per_layer[0]
  for i in layers:
    attn, ff = f"transformer.layer.{i}.rel_attn", f"transformer.layer.{i}.ff"
    ours = f"{T}/layer_{i}"
    for proj in "qkvor":
      out[f"{ours}/rel_attn/{proj}/kernel"] = sd[f"{attn}.{proj}"]
    out[f"{ours}/rel_attn/LayerNorm/gamma"] = sd[f"{attn}.layer_norm.weight"]
    out[f"{ours}/rel_attn/LayerNorm/beta"] = sd[f"{attn}.layer_norm.bias"]
    out[f"{ours}/ff/layer_1/kernel"] = sd[f"{ff}.layer_1.weight"].T   # torch [out, in]
    out[f"{ours}/ff/layer_1/bias"] = sd[f"{ff}.layer_1.bias"]
    out[f"{ours}/ff/layer_2/kernel"] = sd[f"{ff}.layer_2.weight"].T
    out[f"{ours}/ff/layer_2/bias"] = sd[f"{ff}.layer_2.bias"]
    out[f"{ours}/ff/LayerNorm/gamma"] = sd[f"{ff}.layer_norm.weight"]
    out[f"{ours}/ff/LayerNorm/beta"] = sd[f"{ff}.layer_norm.bias"]
  return out


def write_released_dir(directory, config: XLNetConfig, arrays, with_optimizer=True,
                       extra=None, spiece_bytes=None):
  """xlnet_config.json (the 8 released keys) + xlnet_model.ckpt.* written by tf.compat.v1.

  `with_optimizer` adds the adam_m/adam_v slots and global_step a training run saves;
  `extra` adds more variables (e.g. task heads).
  """
  os.makedirs(directory, exist_ok=True)
  with open(os.path.join(directory, "xlnet_config.json"), "w") as f:
    json.dump(config.released_dict(), f)
  values = dict(arrays)
  if with_optimizer:
    for name, value in arrays.items():
      values[f"{name}/adam_m"] = np.zeros_like(value)
      values[f"{name}/adam_v"] = np.ones_like(value)
  values.update(extra or {})
  with tf.Graph().as_default():
    for name, value in values.items():
      tf.compat.v1.get_variable(name, initializer=tf.constant(np.asarray(value)))
    if with_optimizer:
      tf.compat.v1.train.create_global_step()
    saver = tf.compat.v1.train.Saver()
    with tf.compat.v1.Session() as session:
      session.run(tf.compat.v1.global_variables_initializer())
      saver.save(session, os.path.join(directory, "xlnet_model.ckpt"),
                 write_meta_graph=True, write_state=False)
  if spiece_bytes is not None:
    with open(os.path.join(directory, "spiece.model"), "wb") as f:
      f.write(spiece_bytes)
