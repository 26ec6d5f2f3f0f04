"""The tagger against HuggingFace's XLNetForTokenClassification (random weights), its loss,
serialization and model directory.

The HF model is saved with `save_pretrained` and converted with `xlnet_tf.convert --task
pretrained` (the encoder alone, the task head set aside); the encoder is restored from the
converted directory and the head copied by HF's names (`classifier.weight` transposed,
`classifier.bias`). Inputs are real Brown sentences in the tagging layout (left padding,
first-piece labels).
"""

import os

import numpy as np
import pytest
import tensorflow as tf
import torch
import transformers

from helpers import max_rel_error
from helpers import small_config
from hf_reference import make_hf_model
from xlnet_tf import model_directory
from xlnet_tf.convert.importer import ConvertOptions
from xlnet_tf.convert.importer import convert
from xlnet_tf.data import brown
from xlnet_tf.data import tagging_features
from xlnet_tf.data import tokenization
from xlnet_tf.models import losses
from xlnet_tf.models.xlnet_tagger import XLNetTagger
from xlnet_tf.models.xlnet_tagger import build_tagger
from xlnet_tf.pretrained import restore_encoder
from xlnet_tf.models.xlnet_tagger import TaggerSpec

TOLERANCE = 1e-5
NUM_LABELS = 7
SEQ = 48


def _hf_tagger(config, seed):
  """XLNetForTokenClassification in eval mode, every parameter redrawn (`make_hf_model`)."""
  return make_hf_model(config, seed, transformers.XLNetForTokenClassification,
                       num_labels=NUM_LABELS)


def _brown_batch(spiece_model):
  sp = tokenization.load_spiece(spiece_model)
  # Short to long (padded rows and truncated ones): every 7th of the first 42 by length.
  sentences = sorted(brown.read_brown(tagset="base")[:42], key=lambda s: len(s.words))[::7]
  labels = sorted({t for s in sentences for t in s.tags})[:NUM_LABELS - 1]
  # Map the tags beyond NUM_LABELS - 1 to the last label: any valid ids will do here.
  clipped = [tagging_features.TaggedSentence(
      s.guid, s.words, tuple(t if t in labels else "other" for t in s.tags))
      for s in sentences]
  features = list(tagging_features.encode_sentences(sp, clipped, SEQ, labels + ["other"]))
  return {k: np.stack([f[k] for f in features])
          for k in tagging_features.MODEL_INPUTS + ("label_ids",)}


@pytest.mark.parametrize("overrides", [{}, {"untie_r": False, "ff_activation": "relu"}],
                         ids=["default", "tied_relu"])
def test_matches_huggingface_token_classification(spiece_model, tmp_path, overrides):
  config = small_config(n_token=4000, **overrides)
  hf_model = _hf_tagger(config, seed=3)
  hf_model.save_pretrained(os.fspath(tmp_path / "hf"))
  convert(os.fspath(tmp_path / "hf"), os.fspath(tmp_path / "ours"),
          options=ConvertOptions(task="pretrained"))
  model = build_tagger(config, NUM_LABELS)
  restore_encoder(model.encoder, os.fspath(tmp_path / "ours"))
  state = {k: v.detach().numpy() for k, v in hf_model.state_dict().items()}
  model.classifier.kernel.assign(state["classifier.weight"].T)
  model.classifier.bias.assign(state["classifier.bias"])

  batch = _brown_batch(spiece_model)
  assert (batch["input_mask"][:, 0] == 1).any()                   # some rows are padded
  assert (batch["input_mask"][:, 0] == 0).any()                   # some are cut
  with torch.no_grad():
    hf = hf_model(input_ids=torch.as_tensor(batch["input_ids"], dtype=torch.long),
                  token_type_ids=torch.as_tensor(batch["segment_ids"], dtype=torch.long),
                  input_mask=torch.as_tensor(batch["input_mask"]),
                  labels=torch.as_tensor(batch["label_ids"], dtype=torch.long),
                  return_dict=True)
  ours = model({k: tf.constant(batch[k]) for k in tagging_features.MODEL_INPUTS})["logits"]
  assert ours.shape == (len(batch["input_ids"]), SEQ, NUM_LABELS)
  logits_error = max_rel_error(ours, hf.logits.numpy())
  loss_sum, count = losses.token_cross_entropy(ours, batch["label_ids"])
  loss_error = abs(float(loss_sum / count) - float(hf.loss)) / max(1.0, float(hf.loss))
  print(f"{overrides or 'default'}: max |logits diff| {logits_error:.2e}, loss "
        f"{float(hf.loss):.5f} (|diff| {loss_error:.2e}), {int(count)} labelled words")
  assert int(count) == int((batch["label_ids"] != -100).sum())
  assert logits_error <= TOLERANCE
  assert loss_error <= TOLERANCE


def test_loss_reads_only_labelled_positions():
  logits = tf.random.normal([2, 5, 3], seed=1)
  labels = np.array([[-100, 2, -100, 0, -100], [-1, -100, 1, -100, -100]])
  loss_sum, count = losses.token_cross_entropy(logits, labels)
  log_p = tf.nn.log_softmax(logits).numpy()
  expected = -(log_p[0, 1, 2] + log_p[0, 3, 0] + log_p[1, 2, 1])  # -1: unlabeled word
  assert float(count) == 3.0
  np.testing.assert_allclose(float(loss_sum), expected, rtol=1e-6)
  changed = logits.numpy().copy()
  changed[:, 0] += 100.0                                          # an ignored position
  np.testing.assert_allclose(float(losses.token_cross_entropy(changed, labels)[0]),
                             expected, rtol=1e-6)


def test_config_round_trip_and_model_directory(spiece_model, tmp_path):
  model = build_tagger(small_config(n_token=4000), NUM_LABELS, dropout_rate=0.2)
  names = sorted(v.name for v in model.trainable_variables if "classifier" in v.name)
  assert names == ["classifier/bias:0", "classifier/kernel:0"]      # HF: classifier.*
  clone = XLNetTagger.from_config(model.get_config())
  assert clone.get_config() == model.get_config()
  ids = {"input_ids": tf.constant([[0, 0, 20, 30, 4, 3]]),
         "segment_ids": tf.constant([[4, 4, 0, 0, 0, 2]]),
         "input_mask": tf.constant([[1.0, 1.0, 0, 0, 0, 0]])}

  spec = TaggerSpec("brown", tuple(f"t{i}" for i in range(NUM_LABELS)),
                    max_seq_length=SEQ)
  model_directory.save(model, os.fspath(tmp_path / "tagger"), spec, spiece_model)
  loaded, loaded_spec = model_directory.load(os.fspath(tmp_path / "tagger"), TaggerSpec)
  assert loaded_spec == spec
  np.testing.assert_array_equal(loaded(ids)["logits"].numpy(), model(ids)["logits"].numpy())
  with pytest.raises(FileNotFoundError, match="no xlnet_config.json.*xlnet/tagging"):
    model_directory.load(os.fspath(tmp_path), TaggerSpec)
