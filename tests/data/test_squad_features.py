"""SQuAD windows: the released layout token by token, doc-stride windows, labels that
decode to the gold text exactly (real questions from data_prep/sample_data/qa)."""

import glob
import os

import pytest

from xlnet_tf.data import squad
from xlnet_tf.data import squad_features
from xlnet_tf.data import tokenization
from xlnet_tf.data.tokenization import CLS_ID, PAD_ID, SEP_ID

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

QA_FILES = sorted(glob.glob(os.path.join(
    ROOT, "data_prep", "sample_data",
    "qa", "*.json")))


def _examples():
  return [e for path in QA_FILES for e in squad.read_squad(path)[0]]


def test_layout_token_by_token(spiece_model):
  sp = tokenization.load_spiece(spiece_model)
  example = min(_examples(), key=lambda e: len(e.context))
  [window] = squad_features.squad_windows(sp, example, max_seq_length=512, doc_stride=128,
                                          max_query_length=64, is_training=False)
  paragraph = tokenization.encode_ids(sp, tokenization.normalize_text(example.context))
  question = tokenization.encode_ids(sp, tokenization.normalize_text(example.question))
  n, q = len(paragraph), len(question)
  used = n + 1 + q + 2
  assert window.input_ids == paragraph + [SEP_ID] + question + [SEP_ID, CLS_ID] + \
      [PAD_ID] * (512 - used)
  assert window.segment_ids == [0] * (n + 1) + [1] * (q + 1) + [2] + [3] * (512 - used)
  bare = [float(i == sp.piece_to_id("▁")) for i in paragraph]         # before '"', "("
  assert sum(bare) > 0
  assert window.p_mask == bare + [1.0] * (q + 2) + [0.0] + [1.0] * (512 - used)
  assert window.input_mask == [0.0] * used + [1.0] * (512 - used)
  assert window.cls_index == used - 1
  assert window.start_position == window.end_position == window.cls_index
  assert all(span is not None for span in window.raw_spans[:n])
  assert all(span is None for span in window.raw_spans[n:])


def test_windows_cover_the_paragraph_with_one_max_context_each(spiece_model):
  sp = tokenization.load_spiece(spiece_model)
  example = max(_examples(), key=lambda e: len(e.context))
  windows = squad_features.squad_windows(sp, example, max_seq_length=96, doc_stride=24,
                                         max_query_length=16, is_training=False)
  assert len(windows) > 3
  [whole] = squad_features.squad_windows(sp, example, 4096, 128, 16, False)
  num_pieces = sum(1 for span in whole.raw_spans if span is not None)
  question = tokenization.encode_ids(sp, tokenization.normalize_text(example.question))
  starts = squad_features.window_starts(num_pieces, 96 - len(question[:16]) - 3, 24)
  assert len(starts) == len(windows)
  assert [s for s, _ in starts][1:4] == [24, 48, 72]
  owners = {}
  for window, (start, length) in zip(windows, starts):
    for k in range(length):
      if window.max_context[k]:
        assert start + k not in owners
        owners[start + k] = window.window_index
  assert len(owners) == num_pieces                         # every piece exactly once


def test_training_labels_decode_to_the_gold_text(spiece_model):
  sp = tokenization.load_spiece(spiece_model)
  checked = 0
  for example in _examples():
    answer = example.answers[0]
    for max_seq_length in (512, 128):
      windows = squad_features.squad_windows(sp, example, max_seq_length, doc_stride=32,
                                             max_query_length=32, is_training=True)
      inside = [w for w in windows if not w.is_impossible]
      assert inside or max_seq_length < 512
      for window in windows:
        if window.is_impossible:
          assert window.start_position == window.end_position == window.cls_index
          continue
        begin = window.raw_spans[window.start_position][0]
        end = window.raw_spans[window.end_position][1]
        assert example.context[begin:end] == answer.text
        assert window.p_mask[window.start_position] == 0.0
        checked += 1
  assert checked >= 21


def test_impossible_question_points_at_cls_and_query_is_truncated(spiece_model):
  sp = tokenization.load_spiece(spiece_model)
  base = _examples()[0]
  impossible = squad.SquadExample("constructed", "Who painted the dome in 1990, and why, "
                                  "and with which colours exactly?", base.context, (), True)
  windows = squad_features.squad_windows(sp, impossible, 128, 64, max_query_length=5,
                                         is_training=True)
  for window in windows:
    assert window.is_impossible and window.start_position == window.cls_index
    assert window.segment_ids.count(1) == 5 + 1            # 5 question pieces + <sep>


def test_no_room_for_the_paragraph_is_an_error(spiece_model):
  sp = tokenization.load_spiece(spiece_model)
  with pytest.raises(ValueError, match="no room for the paragraph"):
    squad_features.squad_windows(sp, _examples()[0], max_seq_length=5, doc_stride=4,
                                 max_query_length=64, is_training=False)
