"""The samplers of create_pretraining_data, called directly, on real text (Moby-Dick)."""

import glob

import numpy as np
import pytest

from data_prep import sampling
from helpers import CORPUS_GLOB
from xlnet_tf.data import tokenization

SEGMENT = 256


@pytest.fixture(scope="module")
def corpus_ids(spiece_model):
  """Token ids and the word-start flags of the first chapters of the bundled corpus."""
  sp = tokenization.load_spiece(spiece_model)
  ids = []
  for path in sorted(glob.glob(CORPUS_GLOB))[:12]:
    with open(path, encoding="utf-8") as f:
      for line in f:
        if line.strip():
          ids += tokenization.encode_ids(sp, tokenization.normalize_text(line))
  ids = np.array(ids)
  return ids, tokenization.start_piece_table(sp)[ids]


def _segments(is_start, count):
  return [is_start[i * SEGMENT:(i + 1) * SEGMENT] for i in range(count)]


@pytest.mark.parametrize("span_unit", ["token", "word"])
def test_spans_start_on_word_starts_and_have_the_unit_length(corpus_ids, span_unit):
  _, is_start = corpus_ids
  rng = np.random.default_rng(0)
  num_spans = 0
  for segment in _segments(is_start, 40):
    sample = sampling.sample_spans(segment, None, rng, span_unit=span_unit)
    previous_end = 0
    for begin, end in sample.spans:
      assert begin >= previous_end and end > begin       # disjoint, left to right
      assert segment[begin], "a span must start at a word start"
      assert end < len(segment)
      if span_unit == "token":
        assert end - begin <= 5
      else:
        assert segment[end], "a word span must end where a word starts"
        assert 1 <= segment[begin:end].sum() <= 5          # 1..5 whole words
      previous_end = end
    expected = np.zeros(len(segment), bool)
    for begin, end in sample.spans:
      expected[begin:end] = True
    np.testing.assert_array_equal(sample.mask, expected)   # no goal: spans only
    num_spans += len(sample.spans)
  assert num_spans > 400


@pytest.mark.parametrize("span_unit", ["token", "word"])
def test_goal_gives_exactly_that_many_targets(corpus_ids, span_unit):
  _, is_start = corpus_ids
  rng = np.random.default_rng(1)
  for goal in (1, 7, 43, 85):
    for segment in _segments(is_start, 10):
      sample = sampling.sample_spans(segment, goal, rng, span_unit=span_unit)
      assert sample.mask.sum() == goal
      in_spans = sum(end - begin for begin, end in sample.spans)
      assert in_spans + len(sample.extra) == goal
      assert not set(sample.extra) & {p for b, e in sample.spans for p in range(b, e)}


@pytest.mark.parametrize("span_unit", ["token", "word"])
@pytest.mark.parametrize("span_context", ["released", "paper"])
def test_fraction_predicted_is_about_one_in_k_or_k_plus_1(corpus_ids, span_unit,
                                                          span_context):
  """Without a goal: with span_context="paper" a span of m tokens takes a group of K*m
  tokens plus the walk to the next word start, so the predicted fraction is at most 1/K
  and only a little lower (measured 0.95/K to 0.99/K on this text, whose words are 1.36
  tokens on average). With "released" (the default, the released code) a span of n units
  takes n + K*n tokens: at most 1/(K+1) for token spans (measured 0.97/(K+1), i.e.
  0.83/K to 0.86/K, outside the paper's range) and about 1.2/(K+1) for word spans (n
  words of about 1.36 tokens in n + K*n tokens; measured 1.21/(K+1) to 1.25/(K+1))."""
  _, is_start = corpus_ids
  groups = {"released": 1, "paper": 0}[span_context]     # K + groups tokens per unit
  for k in (6, 8):
    rng = np.random.default_rng(k)
    fractions = [sampling.sample_spans(s, None, rng, mask_alpha=k, span_unit=span_unit,
                                       span_context=span_context).mask.mean()
                 for s in _segments(is_start, 60)]
    mean = float(np.mean(fractions)) * (k + groups)
    if span_unit == "token" or span_context == "paper":
      assert 0.92 <= mean <= 1.0, (k, mean)
    else:
      assert 1.1 <= mean <= 1.35, (k, mean)


def test_span_lengths_follow_one_over_n(corpus_ids):
  _, is_start = corpus_ids
  rng = np.random.default_rng(2)
  lengths = [end - begin for s in _segments(is_start, 60)
             for begin, end in sampling.sample_spans(s, None, rng).spans]
  counts = np.bincount(lengths, minlength=6)[1:6] / len(lengths)
  expected = (1 / np.arange(1, 6)) / np.sum(1 / np.arange(1, 6))
  np.testing.assert_allclose(counts, expected, atol=0.05)


def test_local_permutation_ranks_share_one_permutation_per_block():
  rng = np.random.default_rng(3)
  ranks = sampling.local_permutation_ranks(12, 4, rng)
  assert sorted(ranks) == list(range(12))
  blocks = ranks.reshape(3, 4)
  np.testing.assert_array_equal(blocks - np.arange(0, 12, 4)[:, None],
                                np.tile(blocks[0], [3, 1]))       # same sigma, blocks in order
  with pytest.raises(ValueError, match="perm_size 5 must divide the length 12"):
    sampling.local_permutation_ranks(12, 5, rng)


def test_split_a_and_b_fills_the_row_and_b_follows_a_half_the_time():
  rng = np.random.default_rng(4)
  sent_ids = np.repeat(np.arange(200) % 2 == 1, rng.integers(3, 12, 200))
  boundaries = sampling.sentence_boundaries(sent_ids)
  total, continued = 40, 0
  for trial in range(400):
    begin = int(rng.integers(0, len(sent_ids) - total - 1))
    split = sampling.split_a_and_b(boundaries, len(sent_ids), begin, total, rng)
    a_len, b_len = split.a_end - split.a_begin, split.b_end - split.b_begin
    assert split.a_begin == begin and a_len >= 1 and b_len >= 1
    assert a_len + b_len == total
    if not split.b_is_random:
      continued += 1
      assert split.b_begin in boundaries                    # A was cut at a sentence end
      assert split.a_end <= split.b_begin                   # (then maybe trimmed)
  assert 160 <= continued <= 240                            # p = 1/2, 400 draws: ±4 sd
  assert sampling.split_a_and_b(boundaries, len(sent_ids), len(sent_ids) - total, total,
                                rng) is None


def test_streams_with_bi_data_are_per_core_forward_then_reversed():
  tokens = np.arange(48)
  streams, _, backward = sampling.make_streams(tokens, tokens % 2 == 0, bsz_per_host=8,
                                               num_core_per_host=2, bi_data=True)
  assert streams.shape == (8, 12)                 # 4 forward streams of 12 tokens
  np.testing.assert_array_equal(backward, [0, 0, 1, 1, 0, 0, 1, 1])
  np.testing.assert_array_equal(streams[0], np.arange(12))
  np.testing.assert_array_equal(streams[2], np.arange(12)[::-1])
  np.testing.assert_array_equal(streams[4], np.arange(24, 36))
  np.testing.assert_array_equal(streams[7], np.arange(36, 48)[::-1])
