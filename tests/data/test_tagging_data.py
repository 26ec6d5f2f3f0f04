"""The bundled Brown corpus reader, its split, and the tagging features (layout, labels on
first pieces, truncation, cache, tf.data reader)."""

import json
import os

import numpy as np
import pytest

from xlnet_tf.data import brown
from xlnet_tf.data import classifier_features
from xlnet_tf.data import layouts
from xlnet_tf.data import tagging_features as tf_
from xlnet_tf.data import tokenization
from xlnet_tf.data.tagging_features import IGNORE_LABEL_ID
from xlnet_tf.data.tagging_features import TaggedSentence


# ---- the corpus ------------------------------------------------------------------------------

def test_bundled_corpus_and_its_split():
  sentences = brown.read_brown()
  assert len(brown.document_names(brown.BROWN_DIR)) == 30
  assert len(sentences) == 3558 and sum(len(s.words) for s in sentences) == 69765
  first = sentences[0]
  assert first.guid == "ca01:3"
  assert first.words[:5] == ("The", "Fulton", "County", "Grand", "Jury")
  assert first.tags[:5] == ("at", "np-tl", "nn-tl", "jj-tl", "nn-tl")
  assert len(brown.tag_list(sentences)) == 212
  assert len(brown.tag_list(brown.read_brown(tagset="base"))) == 124

  splits = brown.split_sentences(sentences)
  assert {k: len(v) for k, v in splits.items()} == {"train": 2868, "dev": 342, "test": 348}
  guids = [{s.guid for s in v} for v in splits.values()]
  assert not (guids[0] & guids[1] or guids[0] & guids[2] or guids[1] & guids[2])
  # A sentence's split depends on its guid only: reading one document gives the same.
  alone = brown.split_sentences(brown.read_brown(documents=["cr02"]))
  assert alone["test"] == [s for s in splits["test"] if s.guid.startswith("cr02:")]
  # A word may contain "/": the tag follows the last one.
  assert brown.parse_line("1/2/cd inch/nn", "x", "x").words == ("1/2", "inch")
  assert brown.base_tag("np$-tl") == "np$" and brown.base_tag("fw-in+at-tl") == "in+at"


@pytest.mark.parametrize("token, problem", [("jury", "has no '/'"), ("/nn", "has an empty word"),
                                            ("jury/", "has an empty tag")])
def test_malformed_tokens_name_file_and_line(tmp_path, token, problem):
  path = tmp_path / "ca01"
  path.write_text("\n\tThe/at jury/nn said/vbd ./.\n\n\tIt/pps " + token + " ./.\n")
  with pytest.raises(ValueError) as error:
    brown.read_file(str(path))
  assert str(error.value) == (f"{path}:4: token 2 {token!r} {problem}; expected word/tag")


def test_reader_errors(tmp_path):
  (tmp_path / "ca01").write_bytes(b"\tThe/at\n\tjury/nn \xff/nn\n")
  with pytest.raises(ValueError, match=r"ca01:2: not UTF-8 \(byte 9 of the line"):
    brown.read_brown(str(tmp_path))
  (tmp_path / "ca01").write_text("\tThe/at jury/nn\n")
  assert brown.read_brown(str(tmp_path))[0].guid == "ca01:1"      # no cats.txt: by name
  (tmp_path / "cats.txt").write_text("ca01 news\nca02 news\n")
  with pytest.raises(FileNotFoundError, match="ca02: listed in cats.txt"):
    brown.read_brown(str(tmp_path))
  with pytest.raises(FileNotFoundError, match="no such directory"):
    brown.read_brown(str(tmp_path / "missing"))
  with pytest.raises(ValueError, match="tagset must be one of"):
    brown.read_brown(tagset="universal")


# ---- the features ----------------------------------------------------------------------------

def test_labels_sit_on_first_pieces_in_the_classifier_layout(spiece_model):
  sp = tokenization.load_spiece(spiece_model)
  words = ("The", "Pequod's", "``", "harpooneers", "''", "sailed", "1,000", "miles", ".")
  tags = ("at", "np$", "``", "nns", "''", "vbd", "cd", "nns", ".")
  labels = sorted(set(tags))
  sentence = TaggedSentence("s1", words, tags)
  per_word = [tokenization.encode_ids(sp, tokenization.normalize_text(w)) for w in words]
  assert tf_.word_ids(sp, words) == per_word
  assert any(len(ids) > 1 for ids in per_word)                    # some words have pieces
  seq = 40
  features = tf_.encode_sentence(sp, sentence, seq, labels)
  flat = [i for ids in per_word for i in ids]
  expected = classifier_features.classifier_layout(flat, None, seq)
  for key, value in zip(("input_ids", "segment_ids", "input_mask"), expected):
    np.testing.assert_array_equal(features[key], value)
  padding = seq - len(flat) - 2
  assert features["segment_ids"][0] == layouts.CLASSIFIER_SEGMENT_PAD
  starts = padding + np.cumsum([0] + [len(ids) for ids in per_word])[:-1]
  np.testing.assert_array_equal(features["word_positions"], starts)
  want = np.full([seq], IGNORE_LABEL_ID)
  want[starts] = [labels.index(t) for t in tags]
  np.testing.assert_array_equal(features["label_ids"], want)
  assert features["input_ids"][-2:].tolist() == [tokenization.SEP_ID, tokenization.CLS_ID]
  assert features["label_ids"][-2:].tolist() == [IGNORE_LABEL_ID] * 2

  # Truncation: T - 2 pieces survive; a word whose first piece is cut away gets no label.
  short = len(flat) - 3 + 2                                       # cut 3 pieces
  cut = tf_.encode_sentence(sp, sentence, short, labels)
  kept = [p for p in starts - padding if p < len(flat) - 3]
  assert cut["word_positions"].tolist() == kept
  assert (cut["label_ids"] != IGNORE_LABEL_ID).sum() == len(kept) < len(words)
  assert cut["input_mask"].sum() == 0

  # Unlabeled: NO_LABEL_ID at first pieces; a word of only combining marks -> <unk>.
  unlabeled = tf_.encode_sentence(sp, TaggedSentence("s2", ("a", "\u0301", "b")), 8)
  assert tokenization.normalize_text("\u0301") == ""
  assert unlabeled["word_positions"].tolist() == [3, 4, 5]
  assert unlabeled["input_ids"][4] == tokenization.UNK_ID
  assert unlabeled["label_ids"].tolist() == ([IGNORE_LABEL_ID] * 3 + [-1] * 3
                                             + [IGNORE_LABEL_ID] * 2)


def test_feature_errors(spiece_model):
  sp = tokenization.load_spiece(spiece_model)
  with pytest.raises(ValueError, match=r"sentence s1: word 1 'jury' has tag 'nn', which is "
                                       r"not in the label list \(1 labels\)"):
    tf_.encode_sentence(sp, TaggedSentence("s1", ("The", "jury"), ("at", "nn")), 16, ["at"])
  with pytest.raises(ValueError, match="sentence s2: 2 words but 1 tags"):
    TaggedSentence("s2", ("The", "jury"), ("at",))
  with pytest.raises(TypeError, match="split it first"):
    tf_.word_ids(sp, "The jury")


def test_cache_and_dataset(spiece_model, tmp_path):
  sentences = brown.read_brown(documents=["ca01"])[:10]
  labels = brown.tag_list(sentences)
  kwargs = dict(label_list=labels, task="brown", split="dev",
                input_files=brown.document_paths()[:1], cache_dir=str(tmp_path))
  path = tf_.cached_features(sentences, spiece_model, 32, **kwargs)
  info = json.loads(open(path + ".json").read())
  assert info["num_examples"] == 10 and info["format"] == tf_.FORMAT
  assert info["num_words"] == sum(len(s.words) for s in sentences)
  assert 0 < info["num_truncated_words"] < info["num_words"]      # T 32 cuts long ones
  stamp = os.path.getmtime(path)
  assert tf_.cached_features(sentences, spiece_model, 32, **kwargs) == path
  assert os.path.getmtime(path) == stamp                          # reused, not rewritten

  sp = tokenization.load_spiece(spiece_model)
  expected = list(tf_.encode_sentences(sp, sentences, 32, labels))
  batches = list(tf_.tagging_dataset(path, 4, is_training=False))
  assert [len(b["input_ids"]) for b in batches] == [4, 4, 2]
  for key in ("input_ids", "segment_ids", "input_mask", "label_ids"):
    got = np.concatenate([b[key].numpy() for b in batches])
    np.testing.assert_array_equal(got, np.stack([f[key] for f in expected]))
  train = next(iter(tf_.tagging_dataset(path, 4, is_training=True, seed=1)))
  assert train["label_ids"].shape == (4, 32) and train["label_ids"].dtype.name == "int32"
  with pytest.raises(ValueError, match="max_seq_length is 64, but the cache was built with 32"):
    tf_.tagging_dataset(path, 4, is_training=False, max_seq_length=64)
