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
from xlnet_tf.convert.importer import convert
from xlnet_tf.layers.squad_head import SquadHead
from xlnet_tf.tasks.squad import squad_loss

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
  # HF's training feeds the answer class the gold start's state ("gold").
  head = SquadHead(config.d_model, start_n_top=K1, end_n_top=K2,
                   layer_norm_epsilon=config.layer_norm_eps, dropout_rate=0.0,
                   answer_class_start="gold")
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


def _released_training_outputs(w, hidden, p_mask, cls_index, start_positions):
  """The released get_qa_outputs(is_training=True), re-derived in numpy (batch-major):
  logits masked as logits * (1 - p) - 1e30 * p; the end reads [h_t ; h_gold_start]
  through dense_0 (tanh), a LayerNorm (epsilon 1e-12) and dense_1; the answer class
  reads [sum_t softmax(start)_t h_t ; h_cls] through dense_0 (tanh) and dense_1 (no
  bias) -- the averaged start, in training as at inference."""
  def mask(x):
    return x * (1 - p_mask) - 1e30 * p_mask
  batch, length, _ = hidden.shape
  start = mask(hidden @ w["start_logits/dense/kernel"][:, 0] + w["start_logits/dense/bias"])
  gold = hidden[np.arange(batch), start_positions]                            # [B, D]
  x = np.tanh(np.concatenate([hidden, np.repeat(gold[:, None], length, 1)], -1)
              @ w["end_logits/dense_0/kernel"] + w["end_logits/dense_0/bias"])
  x = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-12)
  x = x * w["end_logits/LayerNorm/gamma"] + w["end_logits/LayerNorm/beta"]
  end = mask(x @ w["end_logits/dense_1/kernel"][:, 0] + w["end_logits/dense_1/bias"])
  probs = np.exp(start - start.max(-1, keepdims=True))
  probs /= probs.sum(-1, keepdims=True)
  averaged = np.einsum("bt,btd->bd", probs, hidden)
  cls = hidden[np.arange(batch), cls_index]
  a = np.tanh(np.concatenate([averaged, cls], -1) @ w["answer_class/dense_0/kernel"]
              + w["answer_class/dense_0/bias"])
  return start, end, a @ w["answer_class/dense_1/kernel"][:, 0]


def test_training_answer_class_reads_the_averaged_start_as_released():
  d = 16
  head = SquadHead(d, dropout_rate=0.0)
  head.build()
  rng = np.random.default_rng(11)
  weights = {}
  for variable in head.weights:
    name = variable.name.split(":")[0]
    value = rng.normal(size=variable.shape) * (0.1 if "gamma" not in name else 1.0)
    variable.assign(value + (1.0 if "gamma" in name else 0.0))
    weights[name] = variable.numpy().astype(np.float64)
  hidden = rng.normal(size=[3, 12, d])
  p_mask = np.zeros([3, 12])
  p_mask[:, 6:11] = 1.0
  cls_index, start_positions = np.array([11, 11, 0]), np.array([2, 0, 11])
  end_positions, impossible = np.array([4, 3, 11]), np.array([0.0, 0.0, 1.0])
  got = head(tf.constant(hidden, tf.float32), tf.constant(p_mask, tf.float32),
             tf.constant(cls_index), start_positions=tf.constant(start_positions))
  start, end, cls = _released_training_outputs(weights, hidden, p_mask, cls_index,
                                               start_positions)
  keep = p_mask == 0
  np.testing.assert_allclose(got["start_logits"].numpy()[keep], start[keep], atol=1e-5)
  np.testing.assert_allclose(got["end_logits"].numpy()[keep], end[keep], atol=1e-5)
  np.testing.assert_allclose(got["cls_logits"].numpy(), cls, atol=1e-5)
  # The released loss: (start CE + end CE) / 2 + answer-class BCE / 2, batch means.
  def cross_entropy(logits, gold):
    logits = logits - logits.max(-1, keepdims=True)
    return np.log(np.exp(logits).sum(-1)) - logits[np.arange(3), gold]
  bce = np.maximum(cls, 0) - cls * impossible + np.log1p(np.exp(-np.abs(cls)))
  expected = ((cross_entropy(start, start_positions) + cross_entropy(end, end_positions))
              .mean() / 2 + bce.mean() / 2)
  loss = squad_loss(got, tf.constant(start_positions), tf.constant(end_positions),
                    tf.constant(impossible))
  assert float(loss) == pytest.approx(expected, rel=1e-5)
  # Train and inference now agree: inference's answer class is the same number.
  inferred = head(tf.constant(hidden, tf.float32), tf.constant(p_mask, tf.float32),
                  tf.constant(cls_index))
  np.testing.assert_allclose(inferred["cls_logits"].numpy(), cls, atol=1e-5)
  with pytest.raises(ValueError, match=r"answer_class_start must be one of \('expected', "
                                       r"'gold'\), got 'argmax'"):
    SquadHead(d, answer_class_start="argmax")


def test_head_serializes():
  head = SquadHead(16, start_n_top=4, end_n_top=3, dropout_rate=0.2,
                   answer_class_start="gold")
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
