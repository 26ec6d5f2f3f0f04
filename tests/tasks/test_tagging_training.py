"""Fine-tuning a tiny tagger on the bundled Brown corpus, and serving it from raw text in a
fresh process (TensorFlow + tensorflow-text only).

The tagger (2 layers, d_model 64, random init, the 4000-piece Moby-Dick SentencePiece model)
trains 100 steps of 16 sentences (about 7 s on a CPU); its tag accuracy on the held-out
test sentences is compared with the majority-tag baseline (always "nn"). The export serves
whitespace-separated words and must give the Python model's tags.
"""

import collections

import numpy as np
import pytest
import tensorflow as tf

from helpers import build_for_training
from helpers import serve_fresh
from helpers import train_tagger
from xlnet_tf import model_directory
from xlnet_tf.configs import XLNetConfig
from xlnet_tf.data import brown
from xlnet_tf.data import tagging_features
from xlnet_tf.data import tokenization
from xlnet_tf.serving.tagger_export import export_tagger
from xlnet_tf.models.xlnet_tagger import TaggerSpec
from xlnet_tf.tasks import tagging
from xlnet_tf.training import loop

SEQ = 96
BATCH = 16
STEPS = 100


@pytest.fixture(scope="module")
def trained(spiece_model, tmp_path_factory):
  """(model, spec, splits, summary, tagger directory) of a 100-step run."""
  work = tmp_path_factory.mktemp("tagger")
  sentences = brown.read_brown()
  splits = brown.split_sentences(sentences)
  spec = TaggerSpec("brown", tuple(brown.tag_list(sentences)),
                    max_seq_length=SEQ)
  path = tagging_features.cached_features(
      splits["train"], spiece_model, SEQ, label_list=spec.labels, task="brown",
      split="train", input_files=brown.document_paths(), cache_dir=str(work / "cache"))
  config = XLNetConfig(n_layer=2, d_model=64, n_head=2, d_head=32, d_inner=128,
                       n_token=4000)
  options = loop.RunOptions(
      model_dir=str(work / "run"), train_steps=STEPS, learning_rate=5e-3,
      warmup_steps=STEPS // 10, steps_per_loop=10, save_steps=STEPS, seed=0)
  strategy = tf.distribute.get_strategy()
  model, optimizer = build_for_training(
      strategy, config.for_finetuning(dropout=0.0, dropatt=0.0), spec, options, dropout=0.0)
  summary = train_tagger(
      strategy, model, optimizer,
      lambda ctx: tagging_features.tagging_dataset(path, BATCH, is_training=True, seed=0,
                                                   input_context=ctx),
      options, run_settings={"data": path, "batch_size": BATCH})
  tagger_dir = str(work / "tagger")
  model_directory.save(model, tagger_dir, spec, spiece_model)
  return model, spec, splits, summary, tagger_dir


def test_tagger_learns_brown_pos_tags(trained, spiece_model):
  model, spec, splits, summary, _ = trained
  losses = summary["losses"]                                      # one per 10 steps
  assert summary["step"] == STEPS and len(losses) == STEPS // 10
  assert losses[-1] < 0.5 * losses[0]

  sp = tokenization.load_spiece(spiece_model)
  metrics = tagging.evaluate_tagger(model, sp, splits["test"], spec)
  counts = collections.Counter(t for s in splits["train"] for t in s.tags)
  majority = counts.most_common(1)[0][0]
  gold = [t for s in splits["test"] for t in s.tags]
  baseline = np.mean([t == majority for t in gold])
  # For scale (not asserted): each word's most frequent training tag, else the majority.
  by_word = collections.defaultdict(collections.Counter)
  for s in splits["train"]:
    for w, t in zip(s.words, s.tags):
      by_word[w][t] += 1
  unigram = np.mean([(by_word[w].most_common(1)[0][0] if w in by_word else majority) == t
                     for s in splits["test"] for w, t in zip(s.words, s.tags)])
  print(f"loss {losses[0]:.3f} -> {losses[-1]:.3f}; test accuracy {metrics['accuracy']:.4f} "
        f"(majority tag '{majority}' {baseline:.4f}, per-word unigram {unigram:.4f}), micro "
        f"F1 {metrics['micro_f1']:.4f}, macro F1 {metrics['macro_f1']:.4f}, "
        f"{metrics['untagged']} of {metrics['words']} words cut by max_seq_length {SEQ}")
  assert metrics["words"] == len(gold) == 6644
  assert metrics["accuracy"] > baseline + 0.3


def test_raw_text_export_gives_the_python_models_tags(trained, spiece_model, tmp_path):
  model, spec, splits, _, tagger_dir = trained
  export_dir = export_tagger(tagger_dir, str(tmp_path / "saved_model"))
  # Real held-out sentences (the longest ones lose words to max_seq_length), and edge cases:
  # no words, odd whitespace, a word without pieces (a lone combining mark).
  sentences = [list(s.words) for s in splits["test"][:40]]
  sentences += [list(max(splits["test"], key=lambda s: len(s.words)).words)]
  texts = [" ".join(words) for words in sentences]
  texts += ["", "  The\u00a0jury\tsaid \u3000 it ", "\u0301 Amélie ``naïve''"]
  served = serve_fresh(export_dir, {"text": texts}, tmp_path)   # TensorFlow (+ text) only

  sp = tokenization.load_spiece(spiece_model)
  words = [text.split() for text in texts]
  expected = tagging.predict_tags(model, sp, words, spec)
  labels = list(spec.labels)
  untagged = 0
  for k, (text_words, tags) in enumerate(zip(words, expected)):
    n = len(text_words)
    assert served["num_words"][k] == n and served["words"][k][:n] == text_words, k
    assert served["tags"][k][:n] == [t or "" for t in tags], k
    assert served["num_tagged"][k] == sum(t is not None for t in tags)
    assert served["tag_ids"][k][:n] == [labels.index(t) if t else -1 for t in tags]
    untagged += n - served["num_tagged"][k]
  assert untagged > 0                                              # truncation exercised
  assert served["num_words"][len(sentences)] == 0                 # "" has no words
  assert served["words"][len(sentences) + 1][:4] == ["The", "jury", "said", "it"]

  # The probabilities too: the Python model's softmax at each word's first piece.
  encoded = list(tagging_features.encode_sentences(
      sp, [tagging_features.TaggedSentence(str(k), tuple(w)) for k, w in enumerate(words)],
      SEQ))
  inputs = {key: tf.constant(np.stack([f[key] for f in encoded]))
            for key in tagging_features.MODEL_INPUTS}
  probabilities = tf.nn.softmax(model(inputs)["logits"]).numpy()
  worst = 0.0
  for k, features in enumerate(encoded):
    positions = features["word_positions"]
    got = np.array(served["probabilities"][k])[:len(positions)]
    worst = max(worst, float(np.abs(got - probabilities[k, positions]).max(initial=0.0)))
  print(f"{len(texts)} texts, {sum(map(len, words))} words ({untagged} past max_seq_length): "
        f"tags equal; max |probability diff| {worst:.2e}")
  assert worst <= 1e-5
