"""The classifier: summary types, layer-wise decay, gradient accumulation, weight loading."""

import functools
import os

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from helpers import small_config
from released_checkpoint import write_released_dir
from xlnet_tf import build_pretrainer
from xlnet_tf import save_pretrained
from xlnet_tf import released_names
from xlnet_tf.layers.sequence_summary import SequenceSummary
from xlnet_tf.layers.step_dropout import step_seed
from xlnet_tf.layers.step_dropout import training_seed
from xlnet_tf.models.xlnet_classifier import build_classifier
from xlnet_tf.models.xlnet_classifier import load_released_classifier
from xlnet_tf.pretrained import restore_encoder
from xlnet_tf.tasks import classification
from xlnet_tf.training import optimization
from xlnet_tf.training.trainer import Trainer


def _batch(rng, size, seq=8, vocab=50):
  pad = np.zeros([size, seq], np.float32)
  pad[1::2, :3] = 1.0                                        # every other row left-padded
  segments = np.where(pad > 0, 4, 0).astype(np.int32)
  segments[:, -1] = 2
  return {"input_ids": rng.integers(10, vocab, [size, seq]).astype(np.int32),
          "segment_ids": segments, "input_mask": pad,
          "label_id": rng.integers(0, 3, [size]).astype(np.int32)}


@pytest.mark.parametrize("summary_type", ["last", "first", "mean", "attn"])
def test_summary_types_ignore_what_they_should(summary_type):
  layer = SequenceSummary(summary_type, use_proj=True, num_heads=2, head_size=4)
  hidden = tf.random.normal([2, 5, 8])
  mask = tf.constant([[1, 1, 0, 0, 0], [0, 0, 0, 0, 0]], tf.float32)
  out = layer(hidden, mask).numpy()
  changed = hidden.numpy().copy()
  changed[0, :2] += 5.0                                      # only row 0's padding changes
  out2 = layer(tf.constant(changed), mask).numpy()
  if summary_type == "first":
    assert np.abs(out2[0] - out[0]).max() > 1e-3             # position 0 is padding here
  else:
    np.testing.assert_allclose(out2[0], out[0], atol=1e-6)   # padding ignored
  np.testing.assert_allclose(out2[1], out[1], atol=1e-6)
  clone = SequenceSummary.from_config(layer.get_config())
  assert clone.get_config() == layer.get_config()


def test_attn_summary_drops_probabilities_at_dropatt_and_its_output_at_dropout():
  """The released `summarize_sequence("attn")` is multihead_attn(summary_bias, h, h) with
  dropatt on the attention probabilities and dropout on the attention output (then
  LayerNorm, no residual), then dropout on the summary: re-derived here in numpy with the
  layer's three dropout masks (calls 0, 1, 2 under the training seed)."""
  dropatt, dropout, heads, size = 0.5, 0.25, 2, 4
  layer = SequenceSummary("attn", use_proj=False, dropout_rate=dropout, num_heads=heads,
                          head_size=size, attention_dropout_rate=dropatt)
  hidden = tf.random.normal([3, 6, 8])
  pad = np.zeros([3, 6], np.float32)
  pad[0, :2] = 1.0
  seed = step_seed(11, 5, 0)
  with training_seed(seed):
    ours = layer(hidden, tf.constant(pad), training=True).numpy()

  def mask(shape, rate, call):
    keep = tf.nn.experimental.stateless_dropout(
        tf.ones(shape), rate, tf.random.experimental.stateless_fold_in(seed, call))
    return keep.numpy()

  h = hidden.numpy()
  q = np.einsum("d,dnh->nh", layer.summary_bias.numpy(), layer.q_kernel.numpy())
  k = np.einsum("btd,dnh->btnh", h, layer.k_kernel.numpy())
  v = np.einsum("btd,dnh->btnh", h, layer.v_kernel.numpy())
  score = np.einsum("nh,btnh->bnt", q, k) / np.sqrt(size) - 1e30 * pad[:, None, :]
  probs = np.exp(score - score.max(-1, keepdims=True))
  probs /= probs.sum(-1, keepdims=True)
  probs *= mask([3, heads, 6], dropatt, 0)                        # dropatt
  out = np.einsum("bnt,btnh,dnh->bd", probs, v, layer.o_kernel.numpy())
  out *= mask([3, 8], dropout, 1)                                  # dropout
  normed = (out - out.mean(-1, keepdims=True)) / np.sqrt(out.var(-1, keepdims=True) + 1e-12)
  expected = normed * mask([3, 8], dropout, 2)                     # summary dropout
  np.testing.assert_allclose(ours, expected, atol=1e-4)
  # The classifier takes dropatt from the config, as run_classifier passes it.
  model = build_classifier(small_config(dropatt=0.3), 2, summary_type="attn",
                           dropout_rate=0.1)
  assert (model.sequence_summary.attention_dropout_rate,
          model.sequence_summary.dropout_rate) == (0.3, 0.1)


def test_layerwise_learning_rates_by_name():
  """Effective rates: layer m of L=3 gets lr * 0.5^(2-m), the embeddings lr * 0.5^3,
  stacked per-layer variables their layer's rate per slice, the head lr. Checked on the
  update itself: with a tiny Adam epsilon the first update of every element is exactly
  lr_effective * sign(gradient)."""
  model = build_classifier(small_config(n_layer=3), 2)
  multipliers = optimization.layerwise_lr_multipliers(model, 0.5)
  expected = {
      "transformer/word_embedding/lookup_table:0": 0.125,
      "transformer/mask_emb/mask_emb:0": 0.125,
      "transformer/layer_0/rel_attn/q/kernel:0": 0.25,
      "transformer/layer_1/ff/LayerNorm/gamma:0": 0.5,
      "transformer/layer_2/ff/layer_2/bias:0": 1.0,
      "sequnece_summary/summary/kernel:0": 1.0,
      "logit/bias:0": 1.0,
  }
  for name, value in expected.items():
    assert multipliers[name] == value, name
  for name in ("transformer/r_w_bias:0", "transformer/seg_embed:0"):
    np.testing.assert_array_equal(np.ravel(multipliers[name]), [0.25, 0.5, 1.0])

  optimizer = optimization.build_optimizer(0.01, 100, 0, weight_decay=0.0,
                                           adam_epsilon=1e-30, lr_multipliers=multipliers)
  before = [v.numpy().copy() for v in model.trainable_variables]
  batch = _batch(np.random.default_rng(0), 4)
  with tf.GradientTape() as tape:
    logits = model({k: batch[k] for k in ("input_ids", "segment_ids", "input_mask")})["logits"]
    loss = tf.reduce_sum(logits ** 2)
  grads = tape.gradient(loss, model.trainable_variables)
  optimizer.apply_gradients(zip(grads, model.trainable_variables))
  checked = 0
  for variable, old, grad in zip(model.trainable_variables, before, grads):
    if grad is None:
      continue
    grad = tf.convert_to_tensor(grad).numpy()
    rate = 0.01 * np.broadcast_to(multipliers[variable.name], old.shape)
    moving = grad != 0
    np.testing.assert_allclose(np.abs(variable.numpy() - old)[moving], rate[moving],
                               rtol=1e-4, err_msg=variable.name)
    checked += 1
  assert checked >= 40


def test_gradient_accumulation_equals_the_larger_batch():
  """Two updates of k = 2 or 4 micro-batches of 8 / k rows equal two updates of the batch of
  8. The trainer's `train_step` (k micro-batches drawn from the iterator, one update) runs
  eagerly: orbit's loop around it would only add a trace of the model (seconds on a CPU;
  the drivers' runs with grad_accum_steps 2 trace it)."""
  rng = np.random.default_rng(1)
  data = _batch(rng, 8)
  weights = {}
  for accum, micro in ((1, 8), (2, 4), (4, 2)):
    tf_keras.utils.set_random_seed(7)
    model = build_classifier(small_config(), 3, dropout_rate=0.0)
    optimizer = optimization.build_optimizer(1e-3, 10, 0, weight_decay=0.01)
    dataset = tf.data.Dataset.from_tensor_slices(data).batch(micro).repeat()
    strategy = tf.distribute.get_strategy()
    distributed = strategy.experimental_distribute_dataset(dataset)
    trainer = Trainer(strategy, model, optimizer, distributed,
                      input_keys=classification.MODEL_INPUTS,
                      loss_fn=functools.partial(classification.classifier_loss,
                                                is_regression=False),
                      grad_accum_steps=accum)
    iterator = iter(distributed)
    for _ in range(2):                                       # two updates
      trainer.train_step(iterator)
    weights[accum] = [v.numpy() for v in model.trainable_variables]
    assert int(optimizer.iterations.numpy()) == 2
  for accum in (2, 4):
    for ours, reference in zip(weights[accum], weights[1]):
      np.testing.assert_allclose(ours, reference, atol=1e-5, rtol=0)


def test_wrong_size_checkpoint_names_the_variable(tmp_path):
  save_pretrained(build_pretrainer(small_config(d_inner=24)), str(tmp_path / "pretrained"))
  model = build_classifier(small_config(), 2)
  with pytest.raises(ValueError, match=r"model/transformer/layer_0/ff/layer_1/kernel has "
                                       r"shape \[16, 24\] in the checkpoint"):
    restore_encoder(model.encoder, str(tmp_path / "pretrained"))
  good = build_pretrainer(small_config())
  save_pretrained(good, str(tmp_path / "good"))
  restore_encoder(model.encoder, str(tmp_path / "good"))
  np.testing.assert_array_equal(model.encoder.word_embedding.numpy(),
                                good.encoder.word_embedding.numpy())


def test_released_fine_tuned_checkpoint_loads_encoder_and_head(tmp_path):
  config = small_config()
  source = build_classifier(config, 2)
  rng = np.random.default_rng(2)
  arrays = {name: rng.normal(size=v.shape).astype(np.float32)
            for name, v in released_names.encoder_variables(source.encoder).items()}
  head = {"model/sequnece_summary/summary/kernel": rng.normal(size=[16, 16]),
          "model/sequnece_summary/summary/bias": rng.normal(size=[16]),
          "model/classification_sst-2/logit/kernel": rng.normal(size=[16, 2]),
          "model/classification_sst-2/logit/bias": rng.normal(size=[2])}
  head = {k: v.astype(np.float32) for k, v in head.items()}
  write_released_dir(str(tmp_path / "ft"), config, arrays, extra=head)
  prefix = str(tmp_path / "ft" / "xlnet_model.ckpt")
  model = build_classifier(config, 2)
  load_released_classifier(model, prefix, "sst-2")
  np.testing.assert_array_equal(model.logit.kernel.numpy(),
                                head["model/classification_sst-2/logit/kernel"])
  np.testing.assert_array_equal(model.sequence_summary.summary.bias.numpy(),
                                head["model/sequnece_summary/summary/bias"])
  np.testing.assert_array_equal(model.encoder.seg_embed.numpy(),
                                arrays["model/transformer/seg_embed"])
  with pytest.raises(ValueError, match=r"no variable model/classification_mnli/logit/kernel"):
    load_released_classifier(build_classifier(config, 2), prefix, "mnli")
  assert os.path.exists(prefix + ".index")
