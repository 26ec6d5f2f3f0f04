"""Fine-tuning a tiny tagger on the bundled Brown corpus (slow: a learning test).

The tagger (2 layers, d_model 64, random init, the 4000-piece Moby-Dick SentencePiece model)
trains 100 steps of 16 sentences (about 7 s on a CPU); its tag accuracy on the held-out
test sentences is compared with the majority-tag baseline (always "nn"). (That the export
serves raw text as the Python model tags it: the tagging kind's one step,
tests/tasks/test_tasks_tagging.py.)
"""

import collections

import numpy as np
import pytest
import tensorflow as tf

from helpers import build_for_training
from helpers import train_tagger
from xlnet_tf.configs import XLNetConfig
from xlnet_tf.data import brown
from xlnet_tf.data import tagging_features
from xlnet_tf.data import tokenization
from xlnet_tf.models.xlnet_tagger import TaggerSpec
from xlnet_tf.tasks import tagging
from xlnet_tf.training import loop

SEQ = 96
BATCH = 16
STEPS = 100


@pytest.fixture(scope="module")
def trained(spiece_model, tmp_path_factory):
  """(model, spec, splits, summary) of a 100-step run."""
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
  return model, spec, splits, summary


@pytest.mark.slow
def test_tagger_learns_brown_pos_tags(trained, spiece_model):
  model, spec, splits, summary = trained
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
