"""The SQuAD head against HuggingFace's XLNetForQuestionAnswering (random weights): the
training loss, and at inference the top starts, the top ends per start and the answer
class; plus the start-major layout and the masking of impossible positions."""

import os

import numpy as np
import pytest
import tensorflow as tf
import torch
import transformers

from hf_reference import make_hf_model
from helpers import small_config
from xlnet_tf import load_pretrained
from xlnet_tf.convert import convert
from xlnet_tf.layers.squad_head import SquadHead
from xlnet_tf.layers.squad_head import squad_loss

K1, K2 = 3, 2


def _models(tmp_path):
  config = small_config(n_token=60)
  lm = make_hf_model(config, seed=7)
  lm.save_pretrained(os.fspath(tmp_path / "hf"))
  convert(os.fspath(tmp_path / "hf"), os.fspath(tmp_path / "ours"))
  encoder = load_pretrained(os.fspath(tmp_path / "ours")).encoder
  hf_config = transformers.XLNetConfig(**config.to_hf_dict(), start_n_top=K1, end_n_top=K2)
  qa = transformers.XLNetForQuestionAnswering(hf_config).eval()
  qa.transformer.load_state_dict(lm.transformer.state_dict())
  generator = torch.Generator().manual_seed(3)
  head = SquadHead(config.d_model, start_n_top=K1, end_n_top=K2,
                   layer_norm_epsilon=config.layer_norm_eps, dropout_rate=0.0)
  head.build()
  ours = {v.name.split(":")[0]: v for v in head.weights}
  with torch.no_grad():
    for name, param in qa.named_parameters():
      if name.startswith("transformer."):
        continue
      param.copy_(0.5 * torch.randn(param.shape, generator=generator)
                  + (1.0 if name.endswith("LayerNorm.weight") else 0.0))
      module, leaf = name.rsplit(".", 1)
      target = module.replace(".", "/") + "/" + {
          "weight": "gamma" if "LayerNorm" in module else "kernel",
          "bias": "beta" if "LayerNorm" in module else "bias"}[leaf]
      value = param.numpy()
      ours.pop(target).assign(value.T if value.ndim == 2 else value)
  assert not ours, f"head weights without an HF counterpart: {sorted(ours)}"
  return encoder, head, qa


def _inputs():
  rng = np.random.default_rng(0)
  ids = rng.integers(10, 60, [3, 12])
  ids[:, 6] = ids[:, 10] = 4                          # P <sep> Q <sep> <cls> pad
  ids[:, 11] = 3
  segments = np.array([[0] * 7 + [1] * 4 + [2]] * 3)
  p_mask = np.zeros([3, 12], np.float32)
  p_mask[:, 6:11] = 1.0
  p_mask[2, :2] = 1.0                                 # some paragraph positions excluded
  return ids, segments, p_mask


def test_loss_and_inference_equal_huggingface(tmp_path):
  encoder, head, qa = _models(tmp_path)
  ids, segments, p_mask = _inputs()
  cls_index = np.full([3], 11)
  start, end, impossible = np.array([2, 0, 11]), np.array([4, 3, 11]), np.array([0., 0., 1.])
  hidden = encoder({"input_ids": tf.constant(ids), "segment_ids": tf.constant(segments)})[
      "content"]

  with torch.no_grad():
    hf_loss = qa(input_ids=torch.tensor(ids), token_type_ids=torch.tensor(segments),
                 p_mask=torch.tensor(p_mask), cls_index=torch.tensor(cls_index),
                 start_positions=torch.tensor(start), end_positions=torch.tensor(end),
                 is_impossible=torch.tensor(impossible)).loss.item()
  outputs = head(hidden, tf.constant(p_mask), tf.constant(cls_index),
                 start_positions=tf.constant(start))
  ours = float(squad_loss(outputs, tf.constant(start), tf.constant(end),
                          tf.constant(impossible)))
  assert ours == pytest.approx(hf_loss, rel=1e-5)

  with torch.no_grad():
    hf = qa(input_ids=torch.tensor(ids), token_type_ids=torch.tensor(segments),
            p_mask=torch.tensor(p_mask), cls_index=torch.tensor(cls_index))
  got = {k: v.numpy() for k, v in head(hidden, tf.constant(p_mask),
                                       tf.constant(cls_index)).items()}
  np.testing.assert_array_equal(got["start_top_index"], hf.start_top_index.numpy())
  # HF names probabilities "log_probs"; ours are log-probabilities.
  np.testing.assert_allclose(np.exp(got["start_top_log_probs"]),
                             hf.start_top_log_probs.numpy(), atol=1e-6)
  # HF flattens [B, end_n_top, start_n_top]; ours is [B, start_n_top, end_n_top].
  hf_end_index = hf.end_top_index.numpy().reshape(3, K2, K1).transpose(0, 2, 1)
  hf_end_probs = hf.end_top_log_probs.numpy().reshape(3, K2, K1).transpose(0, 2, 1)
  np.testing.assert_array_equal(got["end_top_index"], hf_end_index)
  np.testing.assert_allclose(np.exp(got["end_top_log_probs"]), hf_end_probs, atol=1e-6)
  np.testing.assert_allclose(got["cls_logits"], hf.cls_logits.numpy(), atol=1e-5)
  # Masked positions are never chosen.
  assert not np.isin(got["start_top_index"], np.flatnonzero(p_mask[0])).any()
  for b in range(3):
    assert p_mask[b][got["end_top_index"][b]].max() == 0.0


def test_head_serializes():
  head = SquadHead(16, start_n_top=4, end_n_top=3, dropout_rate=0.2)
  again = SquadHead.from_config(head.get_config())
  assert again.get_config() == head.get_config()


def test_released_squad_checkpoint_loads_encoder_and_head(tmp_path):
  from released_checkpoint import write_released_dir
  from xlnet_tf import released_names
  from xlnet_tf.models.xlnet_squad import build_squad_model
  from xlnet_tf.models.xlnet_squad import load_released_squad

  config = small_config()
  d = config.d_model
  model = build_squad_model(config)
  rng = np.random.default_rng(4)
  arrays = {name: rng.normal(size=v.shape).astype(np.float32)
            for name, v in released_names.encoder_variables(model.encoder).items()}
  # The released run_squad names and shapes, written out by hand (xlnet_facts.md).
  shapes = {"start_logits/dense/kernel": [d, 1], "start_logits/dense/bias": [1],
            "end_logits/dense_0/kernel": [2 * d, d], "end_logits/dense_0/bias": [d],
            "end_logits/LayerNorm/gamma": [d], "end_logits/LayerNorm/beta": [d],
            "end_logits/dense_1/kernel": [d, 1], "end_logits/dense_1/bias": [1],
            "answer_class/dense_0/kernel": [2 * d, d], "answer_class/dense_0/bias": [d],
            "answer_class/dense_1/kernel": [d, 1]}
  head = {name: rng.normal(size=shape).astype(np.float32) for name, shape in shapes.items()}
  write_released_dir(str(tmp_path / "squad"), config, arrays, extra=head)
  prefix = str(tmp_path / "squad" / "xlnet_model.ckpt")
  load_released_squad(model, prefix)
  np.testing.assert_array_equal(model.head.end_dense_0.kernel.numpy(),
                                head["end_logits/dense_0/kernel"])
  np.testing.assert_array_equal(model.head.class_dense_1.kernel.numpy(),
                                head["answer_class/dense_1/kernel"])
  np.testing.assert_array_equal(model.encoder.word_embedding.numpy(),
                                arrays["model/transformer/word_embedding/lookup_table"])
  wider = build_squad_model(small_config(d_model=24, d_head=12))
  with pytest.raises(ValueError, match=r"start_logits/dense/kernel has shape \[16, 1\]|"
                                       r"has shape .* the model needs"):
    load_released_squad(wider, prefix)
