"""SQuAD serving: in-graph text -> windows -> answers equal the Python path, and the
SavedModel answers raw questions in a fresh process (TensorFlow + tensorflow-text only).
The export and the uncased alignment sweep are slow."""

import glob
import json
import os
import re

import numpy as np
import pytest
import tensorflow as tf

from helpers import CORPUS_GLOB
from helpers import serve_fresh
from helpers import small_config
from helpers import squad_window_outputs
from helpers import with_extra_pieces
from xlnet_tf import model_directory
from xlnet_tf.data import squad
from xlnet_tf.data import squad_features
from xlnet_tf.data import text_alignment
from xlnet_tf.data import tokenization
from xlnet_tf.evaluation import squad_postprocess
from xlnet_tf.models.xlnet_squad import build_squad_model
from xlnet_tf.serving import squad_export
from xlnet_tf.serving import squad_text
from xlnet_tf.serving.text_encoder import XLNetTextEncoder
from xlnet_tf.models.xlnet_squad import SquadSpec

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
QA_FILES = sorted(glob.glob(os.path.join(ROOT, "data_prep", "sample_data", "qa", "*.json")))
STRESS = ["  In 2000, Ahab's ``Pequod'' sailed  ", "```x'''  '' ``", "a''b``c", "", "   ",
          "café naïve ﬁsh cafe\u0301 x\u0308 Ωmega", "\u1100\u1161\u11a8 한국어 Ж12,000 x",
          "ΣΑΣ ΟΔΟΣ. İstanbul", "tab\there\nnew\u3000line\u00a0\u2003end", "\x00nul\x00",
          "12,000, 3,4 1858, 2000,"]


def _examples():
  return [e for path in QA_FILES for e in squad.read_squad(path)[0]]


def _spans(python_spans):
  """align's raw spans with empty (and missing) spans as (-1, -1), like the graph."""
  return [(b, e) if span is not None and e > b else (-1, -1)
          for span in python_spans for b, e in [span or (0, 0)]]


@pytest.mark.parametrize("lower", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_context_pieces_and_raw_spans_equal_the_python_alignment(spiece_model, tmp_path,
                                                                 lower):
  # A vocabulary with "▁2000," and friends exercises the digit-comma re-split.
  model = with_extra_pieces(spiece_model, ["▁2000,", "▁1858,", "00,"],
                            str(tmp_path / "sp.model"))
  sp = tokenization.load_spiece(model)
  texts = sorted({e.context for e in _examples()}) + STRESS
  for path in sorted(glob.glob(CORPUS_GLOB))[:30]:
    with open(path, encoding="utf-8") as f:
      texts.extend(line for line in f if line.strip())
  encoder = XLNetTextEncoder(model, lower=lower)
  graph = squad_text.context_pieces(encoder, tf.constant(texts))
  normalized, _, _ = squad_text.normalize_with_spans_tf(tf.constant(texts), lower=lower)
  assert len(texts) > 400
  for i, text in enumerate(texts):
    aligned = text_alignment.align(sp, text, lower=lower)
    assert normalized[i].numpy().decode() == aligned.normalized, repr(text)
    assert graph["ids"][i].numpy().tolist() == [sp.piece_to_id(p) for p in aligned.pieces]
    spans = list(zip(graph["raw_begin"][i].numpy().tolist(),
                     graph["raw_end"][i].numpy().tolist()))
    assert spans == _spans(aligned.raw_spans), repr(text)
  resplit = [p for i, t in enumerate(texts) if "2000," in t
             for p in graph["ids"][i].numpy().tolist()]
  assert sp.piece_to_id("▁2000,") not in resplit and resplit


def test_squad_inputs_equal_the_first_window(spiece_model):
  sp = tokenization.load_spiece(spiece_model)
  examples = _examples()
  seq, query = 320, 24
  encoder = XLNetTextEncoder(spiece_model)
  graph = squad_text.squad_inputs(encoder, tf.constant([e.question for e in examples]),
                                  tf.constant([e.context for e in examples]), seq, query)
  truncated = 0
  for i, example in enumerate(examples):
    windows = squad_features.squad_windows(sp, example, seq, 128, query, is_training=False)
    first = windows[0]
    for key in ("input_ids", "segment_ids", "input_mask", "p_mask"):
      assert graph[key][i].numpy().tolist() == getattr(first, key), (example.qas_id, key)
    assert int(graph["cls_index"][i]) == first.cls_index
    spans = list(zip(graph["raw_begin"][i].numpy().tolist(),
                     graph["raw_end"][i].numpy().tolist()))
    assert spans == _spans(first.raw_spans)
    assert bool(graph["paragraph_truncated"][i]) == (len(windows) > 1)
    truncated += len(windows) > 1
  assert 0 < truncated < len(examples)            # both kinds occur (SQuAD fits, QuAC not)
  with pytest.raises(ValueError, match="max_seq_length=40 leaves no room"):
    squad_text.squad_inputs(encoder, tf.constant(["q"]), tf.constant(["c"]), 40, 37)


def test_graph_and_python_windows_take_their_constants_from_layouts(spiece_model,
                                                                    monkeypatch):
  """One home for SQuAD's special ids and segment ids: changed in `layouts`, the graph's
  window and the Python one change alike."""
  from xlnet_tf.data import layouts  # pylint: disable=g-import-not-at-top
  for name, value in (("SQUAD_PAD_ID", 11), ("SQUAD_SEGMENT_PAD", 7), ("SEGMENT_A", 5),
                      ("SEGMENT_B", 6), ("SEGMENT_CLS", 9)):
    monkeypatch.setattr(layouts, name, value)
  sp = tokenization.load_spiece(spiece_model)
  example = squad.SquadExample("q", "Who sailed?", "Ahab sailed the Pequod.", ())
  graph = squad_text.squad_inputs(XLNetTextEncoder(spiece_model),
                                  tf.constant([example.question]),
                                  tf.constant([example.context]), 32, 8)
  window = squad_features.squad_windows(sp, example, 32, 128, 8, is_training=False)[0]
  for key in ("input_ids", "segment_ids"):
    assert graph[key][0].numpy().tolist() == getattr(window, key)
  assert set(window.segment_ids) == {5, 6, 9, 7} and window.input_ids[-1] == 11


@pytest.mark.slow
def test_exported_model_answers_raw_text_like_the_python_path(spiece_model, tmp_path):
  """The SQuAD export, asked the sample questions in a fresh process, answers as the Python
  path (windows -> model -> decode) does: texts, start characters, scores."""
  seq, query, answer_length = 1024, 64, 20
  examples = [e for e in _examples()
              if len(squad_features.squad_windows(
                  tokenization.load_spiece(spiece_model), e, seq, 128, query, False)) == 1]
  examples.append(squad.SquadExample("stress", "Who sailed in 2000?", STRESS[0], (), True))
  assert len(examples) == 22                      # every sample context fits one window
  tf.keras.utils.set_random_seed(3)
  model = build_squad_model(small_config(n_token=4000), start_n_top=8, end_n_top=8,
                            dropout_rate=0.0)
  # The Python path: windows (streamed from their TFRecord cache) -> model -> decode.
  windows, outputs = squad_window_outputs(model, examples, spiece_model, tmp_path / "cache",
                                          seq, 128, query)
  null = {w.qas_id: float(outputs["cls_logits"][k]) for k, w in enumerate(windows)}
  threshold = float(np.median(list(null.values())))   # some questions answered "", some not
  answers, nbest, _ = squad_postprocess.decode(examples, windows, outputs,
                                               max_answer_length=answer_length,
                                               null_threshold=threshold)
  model_dir = tmp_path / "model"
  model_dir.mkdir()
  tf.io.gfile.copy(spiece_model, str(model_dir / model_directory.SPIECE_FILE))
  (model_dir / SquadSpec.FILE).write_text(json.dumps({
      "max_seq_length": seq, "max_query_length": query, "uncased": False,
      "version_2_with_negative": True, "null_score_diff_threshold": threshold}))
  export_dir = squad_export.export_squad(model, str(model_dir), str(tmp_path / "saved"),
                                         max_answer_length=answer_length)
  card = open(os.path.join(export_dir, "README.md"), encoding="utf-8").read()
  assert "- **Task**: squad" in card and f"null_score_diff_threshold**: {threshold}" in card
  parity = re.search(r"- \*\*Parity\*\*: max \|diff\| (\S+) of score, is_impossible", card)
  assert parity and float(parity.group(1)) < 1e-4, card

  served = serve_fresh(export_dir, {"question": [e.question for e in examples],   # TF only
                                    "context": [e.context for e in examples]}, tmp_path)
  assert sorted(served) == ["answer_start_char", "answer_text", "is_impossible",
                            "paragraph_truncated", "score"]
  assert not any(served["paragraph_truncated"])
  blanks = no_span = 0
  for k, example in enumerate(examples):
    np.testing.assert_allclose(served["is_impossible"][k], 1 / (1 + np.exp(
        -null[example.qas_id])), atol=1e-5)
    assert served["answer_text"][k] == answers[example.qas_id], example.qas_id
    if not nbest[example.qas_id]:             # no candidate passes the filters
      no_span += 1
      assert served["score"][k] == -np.inf and served["answer_start_char"][k] == -1
      continue
    best = nbest[example.qas_id][0]
    assert served["score"][k] == pytest.approx(best.score, abs=1e-4)
    if answers[example.qas_id]:
      start = served["answer_start_char"][k]
      assert start == best.start_char
      assert example.context[start:start + len(best.text)] == best.text
    else:
      blanks += 1
      assert served["answer_start_char"][k] == -1
  assert 0 < blanks < len(examples) - no_span
  print(f"\n{len(examples)} questions: {blanks} null answers, {no_span} without a span")


def test_export_names_a_missing_settings_file(spiece_model, tmp_path):
  model = build_squad_model(small_config(n_token=4000))
  with pytest.raises(FileNotFoundError, match="squad.json: missing"):
    squad_export.export_squad(model, str(tmp_path), str(tmp_path / "saved"))


def test_best_spans_filters_and_breaks_ties_like_decode():
  # Positions 0-3 are paragraph pieces (3 is a bare "▁": no text), 4 is <cls>.
  features = {"raw_begin": tf.constant([[0, 5, 9, -1, -1]] * 3, tf.int64),
              "raw_end": tf.constant([[4, 8, 12, -1, -1]] * 3, tf.int64)}
  outputs = {
      "start_top_index": tf.constant([[1, 0], [3, 4], [2, 0]]),
      "start_top_log_probs": tf.constant([[-0.5, -1.0], [-0.1, -0.2], [-1.0, -1.0]]),
      # row 0: (1, 0) is end < start, (1, 2) is the best valid; row 1: no valid start;
      # row 2: (2, 2) and (0, 0) tie at -2.0: the earlier start rank wins.
      "end_top_index": tf.constant([[[0, 2], [1, 2]], [[3, 0], [4, 1]],
                                    [[2, 1], [0, 2]]]),
      "end_top_log_probs": tf.constant([[[-0.1, -0.3], [-0.2, -0.9]],
                                        [[-0.1, -0.2], [-0.3, -0.4]],
                                        [[-1.0, -3.0], [-1.0, -3.0]]])}
  spans = squad_export.best_spans(outputs, features, max_answer_length=2)
  assert spans["begin"].numpy().tolist() == [5, -1, 9]
  assert spans["end"].numpy().tolist() == [12, -1, 12]
  np.testing.assert_allclose(spans["score"].numpy(), [-0.8, -np.inf, -2.0])
  # With max_answer_length 1, row 0's valid spans (1, 2) and (0, 1) are too long.
  short = squad_export.best_spans(outputs, features, max_answer_length=1)
  assert short["begin"].numpy().tolist() == [-1, -1, 9]
