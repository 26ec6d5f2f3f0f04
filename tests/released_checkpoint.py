"""Writes a directory in the released XLNet layout, as the original TF1 code would.

The variable names and shapes are those of the original release (xlnet_facts.md). The
arrays are taken from an HF model's state dict with a mapping written out here by hand,
independently of xlnet_tf/convert/huggingface.py.

`original_encoder_arrays` and the `*_head_arrays` write what the original's fine-tuning
scripts save (zihangdai/xlnet modeling.transformer_xl without a query stream, and the heads of
function_builder.get_classification_loss / get_regression_loss / get_qa_outputs /
get_race_loss with modeling.summarize_sequence), their names and shapes written out here
from reading that code, not from xlnet_tf.
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


def original_encoder_arrays(config: XLNetConfig, seed=0, scale=0.3):
  """The encoder of a checkpoint of the original's fine-tuning scripts: transformer_xl with
  seg_id and no inp_q, so no mask_emb, and no lm_loss (random values, fixed seed).

  Layer norms get gamma near 1 and beta near 0, like trained ones.
  """
  rng = np.random.default_rng(seed)
  L, D, N, H, F = (config.n_layer, config.d_model, config.n_head, config.d_head,
                   config.d_inner)
  bias = [L, N, H] if config.untie_r else [N, H]
  shapes = {f"{T}/word_embedding/lookup_table": [config.n_token, D],
            f"{T}/r_w_bias": bias, f"{T}/r_r_bias": bias, f"{T}/r_s_bias": bias,
            f"{T}/seg_embed": [L, 2, N, H]}
  for i in range(L):
    for proj in "qkvro":
      shapes[f"{T}/layer_{i}/rel_attn/{proj}/kernel"] = [D, N, H]
    shapes[f"{T}/layer_{i}/ff/layer_1/kernel"] = [D, F]
    shapes[f"{T}/layer_{i}/ff/layer_1/bias"] = [F]
    shapes[f"{T}/layer_{i}/ff/layer_2/kernel"] = [F, D]
    shapes[f"{T}/layer_{i}/ff/layer_2/bias"] = [D]
  out = {name: (scale * rng.standard_normal(shape)).astype(np.float32)
         for name, shape in shapes.items()}
  for i in range(L):
    for block in ("rel_attn", "ff"):
      out[f"{T}/layer_{i}/{block}/LayerNorm/gamma"] = (
          1.0 + 0.1 * rng.standard_normal(D)).astype(np.float32)
      out[f"{T}/layer_{i}/{block}/LayerNorm/beta"] = (
          0.1 * rng.standard_normal(D)).astype(np.float32)
  return out


def _random(rng, shape, scale):
  return (scale * rng.standard_normal(shape)).astype(np.float32)


def summary_arrays(config: XLNetConfig, seed=1, projection=True, attention=False, scale=0.3):
  """modeling.summarize_sequence's variables in scope model/sequnece_summary (sic)."""
  rng = np.random.default_rng(seed)
  D, N, H = config.d_model, config.n_head, config.d_head
  out = {}
  if attention:      # summary_bias, multihead_attn(scope abs_attn, residual=False)
    out["model/sequnece_summary/summary_bias"] = _random(rng, [D], scale)
    for proj in "qkvo":
      out[f"model/sequnece_summary/abs_attn/{proj}/kernel"] = _random(rng, [D, N, H], scale)
    out["model/sequnece_summary/abs_attn/LayerNorm/gamma"] = (
        1.0 + _random(rng, [D], 0.1))
    out["model/sequnece_summary/abs_attn/LayerNorm/beta"] = _random(rng, [D], 0.1)
  if projection:     # tf.layers.dense(summary, d_model, tanh, name="summary")
    out["model/sequnece_summary/summary/kernel"] = _random(rng, [D, D], scale)
    out["model/sequnece_summary/summary/bias"] = _random(rng, [D], scale)
  return out


def classification_head_arrays(config: XLNetConfig, task, n_class, seed=2, regression=False,
                               scale=0.5):
  """classification_loss / regression_loss: dense "logit" in model/classification_<task>
  (model/regression_<task>, one output)."""
  rng = np.random.default_rng(seed)
  scope = f"model/{'regression' if regression else 'classification'}_{task}"
  width = 1 if regression else n_class
  return {f"{scope}/logit/kernel": _random(rng, [config.d_model, width], scale),
          f"{scope}/logit/bias": _random(rng, [width], scale)}


def squad_head_arrays(config: XLNetConfig, seed=3, scale=0.3):
  """get_qa_outputs: start_logits/dense; end_logits/dense_0 (tanh), LayerNorm, dense_1;
  answer_class/dense_0 (tanh), dense_1 (no bias)."""
  rng = np.random.default_rng(seed)
  D = config.d_model
  return {
      "start_logits/dense/kernel": _random(rng, [D, 1], scale),
      "start_logits/dense/bias": _random(rng, [1], scale),
      "end_logits/dense_0/kernel": _random(rng, [2 * D, D], scale),
      "end_logits/dense_0/bias": _random(rng, [D], scale),
      "end_logits/LayerNorm/gamma": 1.0 + _random(rng, [D], 0.1),
      "end_logits/LayerNorm/beta": _random(rng, [D], 0.1),
      "end_logits/dense_1/kernel": _random(rng, [D, 1], scale),
      "end_logits/dense_1/bias": _random(rng, [1], scale),
      "answer_class/dense_0/kernel": _random(rng, [2 * D, D], scale),
      "answer_class/dense_0/bias": _random(rng, [D], scale),
      "answer_class/dense_1/kernel": _random(rng, [D, 1], scale),
  }


def race_head_arrays(config: XLNetConfig, seed=4, scale=0.5):
  """get_race_loss: tf.layers.dense(summary, 1) in the top-level scope "logits"."""
  rng = np.random.default_rng(seed)
  return {"logits/dense/kernel": _random(rng, [config.d_model, 1], scale),
          "logits/dense/bias": _random(rng, [1], scale)}


def write_released_dir(directory, config: XLNetConfig, arrays, with_optimizer=True,
                       extra=None, spiece_bytes=None, checkpoint_name="xlnet_model.ckpt",
                       global_step=None, write_config=True):
  """xlnet_config.json (the 8 released keys) + xlnet_model.ckpt.* written by tf.compat.v1.

  `with_optimizer` adds the adam_m/adam_v slots and global_step a training run saves;
  `extra` adds more variables (e.g. task heads). The model_dir of the original's
  fine-tuning: checkpoint_name="model.ckpt", global_step=N (model.ckpt-N.* and the
  `checkpoint` file naming it), write_config=False (the config is a separate flag there).
  """
  os.makedirs(directory, exist_ok=True)
  if write_config:
    with open(os.path.join(directory, "xlnet_config.json"), "w") as f:
      json.dump(config.released_dict(), f)
  values = dict(arrays)
  if with_optimizer:
    for name, value in arrays.items():
      values[f"{name}/adam_m"] = np.zeros_like(value)
      values[f"{name}/adam_v"] = np.ones_like(value)
  values.update(extra or {})
  if with_optimizer:
    for name, value in (extra or {}).items():
      values[f"{name}/adam_m"] = np.zeros_like(value)
      values[f"{name}/adam_v"] = np.ones_like(value)
  with tf.Graph().as_default():
    for name, value in values.items():
      tf.compat.v1.get_variable(name, initializer=tf.constant(np.asarray(value)))
    if with_optimizer:
      tf.compat.v1.train.create_global_step()
    saver = tf.compat.v1.train.Saver()
    with tf.compat.v1.Session() as session:
      session.run(tf.compat.v1.global_variables_initializer())
      saver.save(session, os.path.join(directory, checkpoint_name), global_step=global_step,
                 write_meta_graph=True, write_state=global_step is not None)
  if spiece_bytes is not None:
    with open(os.path.join(directory, "spiece.model"), "wb") as f:
      f.write(spiece_bytes)
