"""Keras config round trips for every layer and model, and checkpoint save/restore."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from helpers import pretraining_inputs
from helpers import small_config
from xlnet_tf import XLNetEncoder
from xlnet_tf import XLNetPretrainer
from xlnet_tf import build_pretrainer
from xlnet_tf.layers.feed_forward import PositionwiseFeedForward
from xlnet_tf.layers.positional_encoding import RelativePositionalEncoding
from xlnet_tf.layers.relative_attention import RelativeMultiHeadAttention
from xlnet_tf.layers.tied_lm_head import TiedLMHead
from xlnet_tf.layers.two_stream_block import TwoStreamBlock


def _feed(seed=0, **kwargs):
  inputs = pretraining_inputs(np.random.default_rng(seed), 2, 6, num_predict=3,
                              num_targets=2, **kwargs)
  return {k: tf.constant(v) for k, v in inputs.items()}


def _attention_inputs(rng):
  d, n, h = 16, 2, 8
  return dict(position_encoding=tf.constant(rng.normal(size=[1, 12, d]), tf.float32),
              r_w_bias=tf.constant(rng.normal(size=[n, h]), tf.float32),
              r_r_bias=tf.constant(rng.normal(size=[n, h]), tf.float32),
              r_s_bias=tf.constant(rng.normal(size=[n, h]), tf.float32),
              seg_embed=tf.constant(rng.normal(size=[2, n, h]), tf.float32),
              content_segments=tf.constant(rng.random([2, 6, 6]) > 0.5))


LAYER_CASES = {
    "RelativePositionalEncoding": (
        lambda: RelativePositionalEncoding(16, attn_type="uni", bi_data=True,
                                                  clamp_len=3),
        lambda layer, rng: layer(6, 9)),
    "RelativeMultiHeadAttention": (
        lambda: RelativeMultiHeadAttention(2, 8, dropout_rate=0.1,
                                                  attention_dropout_rate=0.2),
        lambda layer, rng: layer(tf.constant(rng.normal(size=[2, 6, 16]), tf.float32),
                                 **_attention_inputs(rng))[0]),
    "PositionwiseFeedForward": (
        lambda: PositionwiseFeedForward(32, activation="gelu_exact", dropout_rate=0.1),
        lambda layer, rng: layer(tf.constant(rng.normal(size=[2, 6, 16]), tf.float32))),
    "TwoStreamBlock": (
        lambda: TwoStreamBlock(2, 8, 32, activation="relu", dropout_rate=0.1),
        lambda layer, rng: layer(tf.constant(rng.normal(size=[2, 6, 16]), tf.float32),
                                 **_attention_inputs(rng))[0]),
    "TiedLMHead": (
        lambda: TiedLMHead(50),
        lambda layer, rng: layer(tf.constant(rng.normal(size=[2, 3, 16]), tf.float32),
                                 tf.constant(rng.normal(size=[50, 16]), tf.float32))),
    "XLNetEncoder": (
        lambda: XLNetEncoder(small_config(mem_len=3, reuse_len=2, untie_r=False)),
        lambda layer, rng: layer(_feed())["query"]),
}


@pytest.mark.parametrize("name", sorted(LAYER_CASES))
def test_layer_config_round_trip(name):
  make, run = LAYER_CASES[name]
  layer = make()
  first = run(layer, np.random.default_rng(0))
  config = layer.get_config()
  clone = type(layer).from_config(config)
  assert clone.get_config() == config
  run(clone, np.random.default_rng(0))                 # builds the clone's weights
  clone.set_weights(layer.get_weights())
  np.testing.assert_array_equal(run(clone, np.random.default_rng(0)).numpy(), first.numpy())
  # Registered for tf_keras (de)serialisation without custom_objects.
  again = tf_keras.layers.deserialize(tf_keras.layers.serialize(layer))
  assert type(again) is type(layer) and again.get_config() == config


def test_pretrainer_config_round_trip():
  model = build_pretrainer(small_config(bi_data=True, clamp_len=4))
  clone = XLNetPretrainer.from_config(model.get_config())
  assert clone.get_config() == model.get_config()
  assert clone.config == model.config
  clone.build()
  clone.set_weights(model.get_weights())
  feed = _feed(padding=1)
  np.testing.assert_array_equal(clone(feed)["logits"].numpy(), model(feed)["logits"].numpy())


def test_pretrainer_around_a_built_encoder_keeps_its_weights():
  encoder = XLNetEncoder(small_config())
  encoder.build(None)
  before = [w.ref() for w in encoder.weights]
  model = XLNetPretrainer(encoder)
  model.build()
  assert [w.ref() for w in model.encoder.weights] == before
  assert len(model.weights) == len(before) + 1          # + the LM bias


def test_checkpoint_save_and_restore(tmp_path):
  model = build_pretrainer(small_config(mem_len=4))
  path = tf.train.Checkpoint(model=model).save(str(tmp_path / "ckpt"))
  fresh = build_pretrainer(small_config(mem_len=4))
  feed = _feed(seed=3)
  assert not np.allclose(fresh(feed)["logits"].numpy(), model(feed)["logits"].numpy())
  tf.train.Checkpoint(model=fresh).restore(path).assert_consumed()
  for key in ("content", "query", "logits"):
    np.testing.assert_array_equal(fresh(feed)[key].numpy(), model(feed)[key].numpy())
