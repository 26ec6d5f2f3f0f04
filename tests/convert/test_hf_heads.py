"""HuggingFace task models with their heads -> our task models, against HF's PyTorch models.

Each test builds an HF XLNet task model with random weights (tests/hf_reference.py), saves
it with HF's own `save_pretrained`, converts the directory with `xlnet_tf.convert`, loads
our model with the model-directory loaders and compares the outputs with HF's on the same
left-padded inputs in eval mode: max |ours - HF| <= 1e-5. The end-to-end test goes from an
HF directory with the released SentencePiece model to a SavedModel served in a fresh
process (TensorFlow and tensorflow-text only) and compares it with HF's tokenizer + model.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import unicodedata

import numpy as np
import pytest
import tensorflow as tf
import torch
import transformers

from hf_reference import make_hf_model
from helpers import serve_fresh
from helpers import serve_fresh_signatures
from helpers import small_config
from released_checkpoint import classification_head_arrays
from released_checkpoint import original_encoder_arrays
from released_checkpoint import summary_arrays
from released_checkpoint import write_released_dir
from xlnet_tf import model_card
from xlnet_tf import model_directory
from xlnet_tf.convert.importer import ConvertOptions
from xlnet_tf.convert.importer import convert
from xlnet_tf.models.xlnet_classifier import ClassifierSpec
from xlnet_tf.models.xlnet_multiple_choice import RaceSpec
from xlnet_tf.models.xlnet_simple_qa import SimpleQASpec
from xlnet_tf.models.xlnet_squad import SquadSpec
from xlnet_tf.models.xlnet_tagger import TaggerSpec

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RELEASED_SPIECE = os.path.join(ROOT, "tests", "fixtures", "released_spiece", "spiece.model")
SENTIMENT = os.path.join(ROOT, "data_prep", "sample_data", "sentiment",
                         "movieReviewSnippets_GroundTruth.txt")
TOLERANCE = 1e-5
CONFIG = small_config()                    # n_token 50, d_model 16, dropout off
D = CONFIG.d_model


# ---- helpers ----------------------------------------------------------------------------------

def _hf_dir(tmp_path, model_class, name="hf", seed=0, config=CONFIG, **hf_values):
  """(HF model in eval mode, its save_pretrained directory)."""
  model = make_hf_model(config, seed=seed, model_class=model_class, **hf_values)
  directory = os.fspath(tmp_path / name)
  model.save_pretrained(directory)
  return model, directory


def _inputs(seed=0, batch=3, length=10, lengths=(10, 7, 4), n_token=CONFIG.n_token):
  """Left-padded rows in the released layout `A <sep> B <sep> <cls>` (input_mask 1 at
  padding, segment 4 there)."""
  rng = np.random.default_rng(seed)
  ids = np.full([batch, length], 5, np.int32)
  segments = np.full([batch, length], 4, np.int32)
  mask = np.ones([batch, length], np.float32)
  for b, n in enumerate(lengths[:batch]):
    row = rng.integers(9, n_token, n)
    half = max(1, (n - 3) // 2)
    row[half], row[-2], row[-1] = 4, 4, 3
    ids[b, length - n:] = row
    segments[b, length - n:] = [0] * (half + 1) + [1] * (n - half - 2) + [2]
    mask[b, length - n:] = 0.0
  return {"input_ids": ids, "segment_ids": segments, "input_mask": mask}


def _hf_run(model, inputs, **extra):
  """HF's forward on numpy inputs (our names) in eval mode, with `extra` torch kwargs."""
  with torch.no_grad():
    return model(input_ids=torch.as_tensor(inputs["input_ids"], dtype=torch.long),
                 token_type_ids=torch.as_tensor(inputs["segment_ids"], dtype=torch.long),
                 input_mask=torch.as_tensor(inputs["input_mask"], dtype=torch.float32),
                 return_dict=True, **extra)


def _ours(model, inputs, **extra):
  feed = {k: tf.constant(v) for k, v in {**inputs, **extra}.items()}
  return {k: v.numpy() for k, v in model(feed, training=False).items()}


def _max_diff(ours, theirs) -> float:
  ours, theirs = np.asarray(ours, np.float64), np.asarray(theirs, np.float64)
  assert ours.shape == theirs.shape, (ours.shape, theirs.shape)
  return float(np.max(np.abs(ours - theirs)))


def _no_output_left(tmp_path, name="out"):
  assert not (tmp_path / name).exists()
  assert not [p for p in os.listdir(tmp_path) if name in p and p != "hf"], os.listdir(tmp_path)


# ---- XLNetForSequenceClassification ---------------------------------------------------------

SLOW = pytest.mark.slow


# Three cases in the fast tier (the released default, cls_index without projection or
# activation, regression); the other summaries and activations slow.
@pytest.mark.parametrize("summary_type, use_proj, activation, num_labels, extra", [
    ("last", True, "tanh", 3, {}),
    pytest.param("first", True, "gelu", 2, {}, marks=SLOW),
    pytest.param("mean", False, "tanh", 3, {}, marks=SLOW),   # the activation without proj
    ("cls_index", False, "", 2, {}),          # "" = no activation; cls_index -> last
    pytest.param("last", False, "relu", 3, {}, marks=SLOW),
    pytest.param("mean", True, "linear", 2, {}, marks=SLOW),
    pytest.param("cls_index", True, "gelu_new", 4, {}, marks=SLOW),
    ("last", True, "tanh", 1, {}),            # num_labels 1: regression
    pytest.param("first", False, "sigmoid", 1, {"problem_type": "regression"}, marks=SLOW),
])
def test_sequence_classification(tmp_path, summary_type, use_proj, activation, num_labels,
                                 extra):
  regression = num_labels == 1
  names = [f"label_{chr(ord('a') + i)}" for i in range(num_labels)][::-1]
  id2label = {} if regression else {"id2label": dict(enumerate(names)),
                                    "label2id": {n: i for i, n in enumerate(names)}}
  hf_model, source = _hf_dir(
      tmp_path, transformers.XLNetForSequenceClassification, num_labels=num_labels,
      summary_type=summary_type, summary_use_proj=use_proj, summary_activation=activation,
      **id2label, **extra)
  report = convert(source, os.fspath(tmp_path / "out"))
  model, spec = model_directory.load(os.fspath(tmp_path / "out"), ClassifierSpec)

  inputs = _inputs(seed=1)
  theirs = _hf_run(hf_model, inputs).logits.numpy()                     # [B, C]
  ours = _ours(model, inputs)
  diff = _max_diff(ours["logits"], theirs)
  print(f"\n  XLNetForSequenceClassification summary {summary_type} proj {use_proj} "
        f"activation {activation!r} labels {num_labels}: max |logit diff| {diff:.2e}; at "
        f"conversion {report['parity']['max_abs_diff']:.2e}")
  assert diff <= TOLERANCE
  assert report["parity"]["measured"] and report["parity"]["max_abs_diff"] <= TOLERANCE
  assert spec.is_regression == regression
  if regression:
    assert spec.labels is None
    np.testing.assert_array_equal(ours["score"], ours["logits"][:, 0])
  else:
    assert list(spec.labels) == names
  assert spec.summary_type == {"mean": "mean_with_padding", "cls_index": "last"}.get(
      summary_type, summary_type)
  assert spec.use_proj == use_proj
  assert report["output_kind"] == "classifier"
  assert report["architecture"] == "XLNetForSequenceClassification"


def test_mean_summary_depends_on_padding_as_in_hf(tmp_path):
  """HF's "mean" averages over the padding too: the same text padded more gives other
  logits in HF, and the same other logits in ours."""
  hf_model, source = _hf_dir(tmp_path, transformers.XLNetForSequenceClassification,
                             num_labels=2, summary_type="mean")
  convert(source, os.fspath(tmp_path / "out"))
  model, _ = model_directory.load(os.fspath(tmp_path / "out"), ClassifierSpec)
  short = _inputs(seed=2, batch=1, length=6, lengths=(6,))
  padded = {k: np.concatenate([np.full([1, 4], v, dtype=short[k].dtype), short[k]], axis=1)
            for k, v in (("input_ids", 5), ("segment_ids", 4), ("input_mask", 1.0))}
  theirs = [_hf_run(hf_model, x).logits.numpy() for x in (short, padded)]
  assert _max_diff(theirs[0], theirs[1]) > 1e-3          # the padding changes HF's logits
  for x, reference in zip((short, padded), theirs):
    assert _max_diff(_ours(model, x)["logits"], reference) <= TOLERANCE


# ---- XLNetForMultipleChoice -------------------------------------------------------------------

@pytest.mark.parametrize("summary_type, use_proj, activation", [
    ("last", True, "tanh"), ("mean", False, "relu")])
def test_multiple_choice(tmp_path, summary_type, use_proj, activation):
  hf_model, source = _hf_dir(tmp_path, transformers.XLNetForMultipleChoice,
                             summary_type=summary_type, summary_use_proj=use_proj,
                             summary_activation=activation)
  report = convert(source, os.fspath(tmp_path / "out"))
  model, spec = model_directory.load(os.fspath(tmp_path / "out"), RaceSpec)
  rows = _inputs(seed=3, batch=3, length=9, lengths=(9, 6, 8))
  inputs = {k: np.stack([v, v[::-1], np.roll(v, 1, axis=0)], axis=0)           # [3, 3, T]
            for k, v in rows.items()}
  theirs = _hf_run(hf_model, inputs).logits.numpy()                            # [B, C]
  ours = _ours(model, inputs)["logits"]
  diff = _max_diff(ours, theirs)
  print(f"\n  XLNetForMultipleChoice summary {summary_type} proj {use_proj} activation "
        f"{activation}: max |logit diff| {diff:.2e}")
  assert ours.shape == (3, 3) and diff <= TOLERANCE
  assert report["output_kind"] == "race" and report["parity"]["max_abs_diff"] <= TOLERANCE
  assert (spec.use_proj, spec.summary_activation) == (
      use_proj, {"tanh": "tanh", "relu": "relu"}[activation])


# ---- XLNetForTokenClassification ----------------------------------------------------------------

def test_token_classification(tmp_path):
  tags = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
  hf_model, source = _hf_dir(tmp_path, transformers.XLNetForTokenClassification,
                             id2label=dict(enumerate(tags)),
                             label2id={t: i for i, t in enumerate(tags)})
  report = convert(source, os.fspath(tmp_path / "out"))
  model, spec = model_directory.load(os.fspath(tmp_path / "out"), TaggerSpec)
  inputs = _inputs(seed=4)
  theirs = _hf_run(hf_model, inputs).logits.numpy()                    # [B, T, C]
  ours = _ours(model, inputs)["logits"]
  diff = _max_diff(ours, theirs)
  print(f"\n  XLNetForTokenClassification: max |logit diff| {diff:.2e}")
  assert diff <= TOLERANCE
  assert list(spec.labels) == tags and spec.scheme == "bio"
  assert report["output_kind"] == "tagger" and report["parity"]["max_abs_diff"] <= TOLERANCE


# ---- XLNetForQuestionAnsweringSimple ---------------------------------------------------------

def _p_mask(inputs):
  """1 at padding, <sep>, <cls> and the first segment (the question)."""
  return ((inputs["input_mask"] > 0) | np.isin(inputs["input_ids"], (3, 4)) |
          (inputs["segment_ids"] == 0)).astype(np.float32)


def _log_softmax(x):
  shifted = x - x.max(-1, keepdims=True)
  return shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))


def test_question_answering_simple(tmp_path):
  hf_model, source = _hf_dir(tmp_path, transformers.XLNetForQuestionAnsweringSimple)
  report = convert(source, os.fspath(tmp_path / "out"))
  model, spec = model_directory.load(os.fspath(tmp_path / "out"), SimpleQASpec, start_n_top=2,
                                     end_n_top=3)
  inputs = _inputs(seed=5, batch=3, length=14, lengths=(14, 12, 13))
  out = _hf_run(hf_model, inputs)
  ours = _ours(model, inputs)
  diffs = {k: _max_diff(ours[k], getattr(out, k).numpy())
           for k in ("start_logits", "end_logits")}
  print(f"\n  XLNetForQuestionAnsweringSimple: max |diff| {diffs}")
  assert max(diffs.values()) <= TOLERANCE
  assert report["output_kind"] == "qa_simple" and (spec.start_n_top, spec.end_n_top) == (5, 5)

  # With a p_mask: the top-k of HF's logits, masked, as log-probabilities (start-major).
  p_mask = _p_mask(inputs)
  top = _ours(model, inputs, p_mask=p_mask)
  for key, k in (("start", 2), ("end", 3)):
    logits = np.where(p_mask > 0, -1e30, getattr(out, f"{key}_logits").numpy())
    log_probs = _log_softmax(logits)
    order = np.argsort(-log_probs, axis=-1, kind="stable")[:, :k]          # [B, k]
    expected = np.take_along_axis(log_probs, order, axis=-1)
    index, values = top[f"{key}_top_index"], top[f"{key}_top_log_probs"]
    if key == "end":                     # the same ends for each of the 2 starts
      assert index.shape == (3, 2, 3)
      index, values = index[:, 1], values[:, 1]
    np.testing.assert_array_equal(index, order)
    assert _max_diff(values, expected) <= TOLERANCE


@pytest.mark.slow
def test_question_answering_simple_saved_model(tmp_path):
  """The SQuAD SavedModel of a simple QA model answers with the best span of HF's logits
  (on the window our text encoder builds; decoded here in numpy). Exported at
  max_seq_length 64: the question (10 pieces) and the context (37) fit one window."""
  from xlnet_tf.serving import squad_text  # pylint: disable=g-import-not-at-top
  from xlnet_tf.serving.text_encoder import XLNetTextEncoder  # pylint: disable=g-import-not-at-top
  hf_model, source = _hf_dir(tmp_path, transformers.XLNetForQuestionAnsweringSimple,
                             config=small_config(n_token=32000), seed=3)
  shutil.copy(RELEASED_SPIECE, source)
  export = tmp_path / "export"
  report = convert(source, os.fspath(tmp_path / "out"), saved_model=os.fspath(export),
                   options=ConvertOptions(max_seq_length=64, max_query_length=16))
  assert report["saved_model"] == os.fspath(export)
  card = (export / "README.md").read_text()
  assert card == (tmp_path / "out" / "README.md").read_text()
  assert f"- **SavedModel**: {export}" in card
  print("\n  " + next(line for line in card.splitlines() if "SavedModel" in line))
  question = "Who hunted the white whale across the oceans?"
  context = ("Captain Ahab, the monomaniacal commander of the Pequod, hunted Moby Dick, the "
             "white whale that had taken his leg, from Nantucket to the Pacific.")
  features = {k: v.numpy()[0] for k, v in squad_text.squad_inputs(
      XLNetTextEncoder(RELEASED_SPIECE), tf.constant([question]), tf.constant([context]),
      64, 16).items()}
  out = _hf_run(hf_model, {k: features[k][None] for k in ("input_ids", "segment_ids",
                                                          "input_mask")})
  best = (-np.inf, None)
  log_probs = {key: _log_softmax(np.where(features["p_mask"] > 0, -1e30,
                                          getattr(out, f"{key}_logits").numpy()[0]))
               for key in ("start", "end")}
  tops = {key: np.argsort(-lp, kind="stable")[:5] for key, lp in log_probs.items()}
  for start in tops["start"]:
    for end in tops["end"]:
      valid = (features["raw_begin"][start] >= 0 and features["raw_end"][end] >= 0 and
               1 <= end - start + 1 <= 64)
      score = log_probs["start"][start] + log_probs["end"][end]
      if valid and score > best[0]:
        best = (score, context[features["raw_begin"][start]:features["raw_end"][end]])
  assert best[1], "no valid span among the candidates (choose another seed)"
  os.makedirs(tmp_path / "fresh_dir")
  served = serve_fresh(export, {"question": [question], "context": [context]},
                       tmp_path / "fresh_dir")
  print(f"\n  XLNetForQuestionAnsweringSimple SavedModel: {served['answer_text'][0]!r}, score "
        f"{served['score'][0]:.6f} (HF logits decoded: {best[1]!r}, {best[0]:.6f})")
  assert served["answer_text"] == [best[1]] and "is_impossible" not in served
  assert abs(served["score"][0] - best[0]) <= TOLERANCE


# ---- XLNetForQuestionAnswering ------------------------------------------------------------------

def test_question_answering(tmp_path):
  hf_model, source = _hf_dir(tmp_path, transformers.XLNetForQuestionAnswering,
                             start_n_top=3, end_n_top=4)
  report = convert(source, os.fspath(tmp_path / "out"))
  out_dir = os.fspath(tmp_path / "out")
  model, settings = model_directory.load(out_dir, SquadSpec)
  assert settings["answer_class_start"] == "gold"
  assert (settings["start_n_top"], settings["end_n_top"]) == (3, 4)
  assert model.head.answer_class_start == "gold"
  assert any("answer_class_start 'gold'" in note for note in report["notes"])

  inputs = _inputs(seed=6, batch=3, length=14, lengths=(14, 12, 13))
  p_mask = _p_mask(inputs)
  cls_index = np.full([3], 13, np.int32)
  out = _hf_run(hf_model, inputs, p_mask=torch.as_tensor(p_mask),
                cls_index=torch.as_tensor(cls_index, dtype=torch.long))
  ours = _ours(model, inputs, p_mask=p_mask, cls_index=cls_index)
  # HF's *_log_probs are softmax probabilities; its ends are [B, K2 * K1], end-major.
  hf_end = lambda x: x.numpy().reshape(3, 4, 3).transpose(0, 2, 1)           # [B, K1, K2]
  np.testing.assert_array_equal(ours["start_top_index"], out.start_top_index.numpy())
  np.testing.assert_array_equal(ours["end_top_index"], hf_end(out.end_top_index))
  diffs = {"start_top_probs": _max_diff(np.exp(ours["start_top_log_probs"]),
                                        out.start_top_log_probs.numpy()),
           "end_top_probs": _max_diff(np.exp(ours["end_top_log_probs"]),
                                      hf_end(out.end_top_log_probs)),
           "cls_logits": _max_diff(ours["cls_logits"], out.cls_logits.numpy())}
  print(f"\n  XLNetForQuestionAnswering (inference): max |diff| {diffs}")
  assert max(diffs.values()) <= TOLERANCE
  assert report["parity"]["indices_equal"] and report["parity"]["max_abs_diff"] <= TOLERANCE

  # Training (start_positions given): HF's answer class reads the gold start, so its loss
  # is ours with answer_class_start "gold" (dropout off in both).
  from xlnet_tf.tasks.squad import squad_loss  # pylint: disable=g-import-not-at-top
  starts, ends = np.array([6, 7, 9]), np.array([9, 11, 10])       # answerable positions
  assert not np.take_along_axis(p_mask, np.stack([starts, ends], 1), 1).any()
  impossible = np.array([0.0, 1.0, 0.0], np.float32)
  hf_loss = float(_hf_run(hf_model, inputs, p_mask=torch.as_tensor(p_mask),
                          cls_index=torch.as_tensor(cls_index, dtype=torch.long),
                          start_positions=torch.as_tensor(starts),
                          end_positions=torch.as_tensor(ends),
                          is_impossible=torch.as_tensor(impossible)).loss)

  def our_loss():
    outputs = model({**{k: tf.constant(v) for k, v in inputs.items()},
                     "p_mask": tf.constant(p_mask), "cls_index": tf.constant(cls_index),
                     "start_positions": tf.constant(starts, tf.int32)}, training=False)
    return float(squad_loss(outputs, tf.constant(starts, tf.int32),
                            tf.constant(ends, tf.int32), tf.constant(impossible)))
  loss = our_loss()
  model.head.answer_class_start = "expected"           # the original's answer class
  released_loss = our_loss()
  print(f"  XLNetForQuestionAnswering (training loss): ours {loss:.6f}, HF {hf_loss:.6f} "
        f"(with the original's expected start: {released_loss:.6f})")
  assert abs(loss - hf_loss) <= TOLERANCE * max(1.0, abs(hf_loss))
  assert abs(released_loss - hf_loss) > 1e-3


# ---- tokenizer settings, specs, the model card, --overwrite ------------------------------------

def _tokenizer_config(directory, **values):
  with open(os.path.join(directory, "tokenizer_config.json"), "w") as f:
    json.dump({"tokenizer_class": "XLNetTokenizer", **values}, f)


def test_tokenizer_settings_card_and_overwrite(tmp_path):
  _, source = _hf_dir(tmp_path, transformers.XLNetForSequenceClassification, num_labels=2)
  _tokenizer_config(source, do_lower_case=True, keep_accents=True, remove_space=True)
  with open(os.path.join(source, "README.md"), "w") as f:
    f.write("---\nlanguage: en\nlicense: mit\n---\n# a model\n")
  out = os.fspath(tmp_path / "out")
  report = convert(source, out)
  _, spec = model_directory.load(out, ClassifierSpec)
  assert (spec.uncased, spec.keep_accents) == (True, True)
  assert report["tokenizer"]["from"] == os.path.join(source, "tokenizer_config.json")
  card = open(os.path.join(out, "README.md"), encoding="utf-8").read()
  assert "- **Licence**: mit" in card and "- **Labels** (id: name): 0: LABEL_0, 1: LABEL_1" in card
  assert "max |diff|" in card and "XLNetForSequenceClassification" in card
  assert "keep_accents True" in card

  # README.md is a conversion's own file: --overwrite replaces the output.
  report = convert(source, out, overwrite=True)
  assert os.path.isfile(os.path.join(out, "README.md"))

  # A spec written before keep_accents / summary_activation existed still loads.
  path = os.path.join(out, ClassifierSpec.FILE)
  values = json.load(open(path))
  assert (values["keep_accents"], values["summary_activation"]) == (True, "tanh")
  for key in ("keep_accents", "summary_activation"):
    del values[key]
  json.dump(values, open(path, "w"))
  model, spec = model_directory.load(out, ClassifierSpec)
  assert (spec.keep_accents, spec.summary_activation) == (False, None)
  assert model.sequence_summary.activation == "tanh"          # the released default


def test_parity_not_measured_without_transformers(tmp_path, monkeypatch):
  _, source = _hf_dir(tmp_path, transformers.XLNetForTokenClassification, num_labels=3)
  monkeypatch.setitem(sys.modules, "transformers", None)        # import fails
  report = convert(source, os.fspath(tmp_path / "out"))
  text = "not measured (transformers/torch not installed: install xlnet_tf[huggingface])"
  assert report["parity"] == {"measured": False, "text": text}
  card = open(tmp_path / "out" / "README.md", encoding="utf-8").read()
  assert f"- **Parity**: {text}" in card


@pytest.mark.slow
def test_keep_accents_reaches_the_saved_model(tmp_path):
  """tokenizer_config.json keep_accents true: the SavedModel's text path keeps the accents
  (transformers 5's own XLNetTokenizer ignores keep_accents, so the reference ids come from
  the SentencePiece library on the text with its accents). Exported at max_seq_length 32
  (the text is 18 pieces with its accents, 9 without)."""
  import sentencepiece  # pylint: disable=g-import-not-at-top
  _, source = _hf_dir(tmp_path, transformers.XLNetForSequenceClassification,
                      config=small_config(n_token=32000), num_labels=2, seed=4)
  shutil.copy(RELEASED_SPIECE, source)
  _tokenizer_config(source, keep_accents=True)
  export = tmp_path / "export"
  convert(source, os.fspath(tmp_path / "out"), saved_model=os.fspath(export),
          options=ConvertOptions(max_seq_length=32))
  text = "Un café très naïf à Montréal"
  sp = sentencepiece.SentencePieceProcessor(model_file=RELEASED_SPIECE)
  kept, stripped = sp.encode(text), _released_ids(sp, text, lower=False)
  assert kept != stripped
  signatures = tf.saved_model.load(os.fspath(export)).signatures
  served = signatures["serving_default"](text_a=tf.constant([text]))["probabilities"].numpy()

  def by_ids(pieces):
    row = pieces + [4, 3]
    ids = np.full([1, 32], 5, np.int32)
    ids[0, 32 - len(row):] = row
    segments = np.full([1, 32], 4, np.int32)
    segments[0, 32 - len(row):] = [0] * (len(row) - 1) + [2]
    mask = np.ones([1, 32], np.float32)
    mask[0, 32 - len(row):] = 0.0
    return signatures["serving_ids"](input_ids=tf.constant(ids), segment_ids=tf.constant(
        segments), input_mask=tf.constant(mask))["probabilities"].numpy()
  assert _max_diff(served, by_ids(kept)) <= TOLERANCE
  assert _max_diff(served, by_ids(stripped)) > 1e-4


def test_released_conversion_card_has_the_weight_parity(tmp_path):
  config = small_config(n_token=32000)
  heads = {**summary_arrays(config),
           **classification_head_arrays(config, "imdb", 2)}
  write_released_dir(tmp_path / "src", config, original_encoder_arrays(config), extra=heads)
  report = convert(os.fspath(tmp_path / "src"), os.fspath(tmp_path / "out"))
  assert report["parity"]["max_abs_diff"] == 0.0
  card = open(tmp_path / "out" / "README.md", encoding="utf-8").read()
  assert f"- **Licence**: {model_card.RELEASED_LICENCE}" in card
  assert (f"weights written vs source checkpoint: max |diff| 0.0e+00 (bit-exact) over the "
          f"{report['parity']['arrays']} arrays of ") in card
  assert "(read back from the written model.ckpt)" in card


def test_weight_parity_reads_the_written_checkpoint(tmp_path, monkeypatch):
  """A converter bug that writes a transposed (square, so shape-checked fine) kernel shows
  in the TF1 parity figure, which compares the written model.ckpt with the source."""
  from xlnet_tf.convert import task_heads  # pylint: disable=g-import-not-at-top
  from xlnet_tf.models.xlnet_classifier import SUMMARY  # pylint: disable=g-import-not-at-top
  config = small_config(n_token=32000)
  heads = {**summary_arrays(config), **classification_head_arrays(config, "imdb", 2)}
  write_released_dir(tmp_path / "src", config, original_encoder_arrays(config), extra=heads)
  load = task_heads.load_task_model
  kernel = f"{SUMMARY}/summary/kernel"

  def load_transposed(model, head, *args, **kwargs):
    load(model, head, *args, **kwargs)
    variable = task_heads.head_variables(head, model)[kernel]
    variable.assign(tf.transpose(variable))
  monkeypatch.setattr(task_heads, "load_task_model", load_transposed)
  report = convert(os.fspath(tmp_path / "src"), os.fspath(tmp_path / "out"))
  expected = float(np.max(np.abs(heads[kernel] - heads[kernel].T)))
  assert report["parity"]["max_abs_diff"] == pytest.approx(expected) and expected > 0.1
  assert "(bit-exact)" not in report["parity"]["text"]
  assert report["parity"]["warning"] in report["notes"]


# ---- bad input: one exact message each, and nothing written -----------------------------------

def _rewrite_safetensors(directory, change):
  from safetensors.numpy import load_file, save_file  # pylint: disable=g-import-not-at-top
  path = os.path.join(directory, "model.safetensors")
  tensors = load_file(path)
  change(tensors)
  save_file(tensors, path, metadata={"format": "pt"})
  return path


def _rewrite_config(directory, change):
  path = os.path.join(directory, "config.json")
  values = json.load(open(path))
  change(values)
  json.dump(values, open(path, "w"))
  return path


def _expect_error(tmp_path, source, message, error=ValueError):
  with pytest.raises(error) as raised:
    convert(source, os.fspath(tmp_path / "out"))
  assert str(raised.value) == message
  _no_output_left(tmp_path)


def test_unknown_head_key(tmp_path):
  _, source = _hf_dir(tmp_path, transformers.XLNetForSequenceClassification, num_labels=2)
  path = _rewrite_safetensors(source, lambda t: t.update(
      {"logits_proj.scale": np.ones([2], np.float32)}))
  _expect_error(tmp_path, source, (
      f"{path}: unknown HuggingFace key 'logits_proj.scale' for an XLNet model: not a tensor "
      f"of any XLNet task head (sequence_summary.summary.*, logits_proj.*, qa_outputs.*, "
      f"start_logits.dense.*, end_logits.{{dense_0,LayerNorm,dense_1}}.*, "
      f"answer_class.{{dense_0.*,dense_1.weight}}, classifier.*)"))


@pytest.mark.parametrize("key, shape, expected", [
    ("logits_proj.weight", [2, 12], "[outputs, 16] (torch Linear [out, in]; d_model 16 from "
                                    "config.json)"),
    pytest.param("sequence_summary.summary.weight", [16, 8],
                 "[16, 16] ([d_model, d_model], d_model 16)", marks=SLOW),
    ("logits_proj.bias", [3], "[2] ([num_labels]: logits_proj.weight has 2 outputs)"),
])
def test_head_tensor_of_the_wrong_shape(tmp_path, key, shape, expected):
  _, source = _hf_dir(tmp_path, transformers.XLNetForSequenceClassification, num_labels=2)
  path = _rewrite_safetensors(source, lambda t: t.update(
      {key: np.zeros(shape, np.float32)}))
  _expect_error(tmp_path, source,
                f"{path}: tensor {key} has shape {shape}, expected {expected}")


def test_squad_head_tensor_of_the_wrong_shape(tmp_path):
  _, source = _hf_dir(tmp_path, transformers.XLNetForQuestionAnswering)
  path = _rewrite_safetensors(source, lambda t: t.update(
      {"end_logits.dense_0.weight": np.zeros([16, 16], np.float32)}))
  _expect_error(tmp_path, source, (
      f"{path}: tensor end_logits.dense_0.weight has shape [16, 16], expected [16, 32] "
      f"([d_model, 2 * d_model] (torch Linear [out, in]), d_model 16)"))


@pytest.mark.parametrize("model_class, key", [
    (transformers.XLNetForSequenceClassification, "logits_proj.weight"),
    pytest.param(transformers.XLNetForTokenClassification, "classifier.weight", marks=SLOW)])
def test_id2label_that_disagrees_with_the_head(tmp_path, model_class, key):
  _, source = _hf_dir(tmp_path, model_class, num_labels=2)
  config = _rewrite_config(source, lambda c: c.update(
      id2label={"0": "a", "1": "b", "2": "c"}, label2id={"a": 0, "b": 1, "c": 2}))
  _expect_error(tmp_path, source, (
      f"{config}: id2label has 3 labels ['a', 'b', 'c'], but the head's {key} has 2 "
      f"outputs (shape [2, 16]); expected one label per output"))


def test_one_output_head_with_several_labels(tmp_path):
  """A config whose id2label names 2 labels over a logits_proj with one output is not a
  regression model to convert silently."""
  _, source = _hf_dir(tmp_path, transformers.XLNetForSequenceClassification, num_labels=1)
  config = _rewrite_config(source, lambda c: c.update(
      id2label={"0": "neg", "1": "pos"}, label2id={"neg": 0, "pos": 1}))
  _expect_error(tmp_path, source, (
      f"{config}: id2label has 2 labels ['neg', 'pos'], but the head's logits_proj.weight "
      f"has one output (shape [1, {D}]): a regression head; expected id2label absent or of "
      f"exactly one entry (num_labels 1), or weights with one output per label"))


def test_multiple_choice_refuses_labels(tmp_path):
  _, source = _hf_dir(tmp_path, transformers.XLNetForMultipleChoice)
  with pytest.raises(ValueError) as raised:
    convert(source, os.fspath(tmp_path / "out"),
            options=ConvertOptions(labels=("a", "b")))
  assert str(raised.value) == (
      "--labels ['a', 'b']: a XLNetForMultipleChoice head has no labels")
  _no_output_left(tmp_path)


def test_bf16_safetensors_convert_to_their_float32_values(tmp_path):
  """HF checkpoints saved in bfloat16 (numpy has no such dtype): each tensor becomes the
  float32 value of its bfloat16 one, exactly."""
  from safetensors.torch import load_file, save_file  # pylint: disable=g-import-not-at-top
  from xlnet_tf import pretrained  # pylint: disable=g-import-not-at-top
  from xlnet_tf.convert import to_huggingface  # pylint: disable=g-import-not-at-top
  _, source = _hf_dir(tmp_path, transformers.XLNetLMHeadModel)
  path = os.path.join(source, "model.safetensors")
  state = {k: v.to(torch.bfloat16) for k, v in load_file(path).items()}
  save_file(state, path, metadata={"format": "pt"})
  report = convert(source, os.fspath(tmp_path / "out"))
  model = pretrained.load_directory(os.fspath(tmp_path / "out"))
  ours = {**to_huggingface.encoder_tensors(model.encoder),
          "lm_loss.bias": model.lm_head.bias.numpy()}
  assert sorted(ours) == sorted(state)
  for key, value in state.items():
    expected = value.to(torch.float32).numpy()
    assert ours[key].dtype == np.float32 and np.array_equal(ours[key], expected), key
  assert report["parity"]["max_abs_diff"] <= TOLERANCE


def test_parity_that_fails_or_differs_is_a_warning(tmp_path, monkeypatch, caplog):
  from xlnet_tf.convert import hf_parity  # pylint: disable=g-import-not-at-top
  _, source = _hf_dir(tmp_path, transformers.XLNetForTokenClassification, num_labels=3)

  def broken(*args):
    raise RuntimeError("no such kernel")
  monkeypatch.setattr(hf_parity, "_hf_outputs", broken)
  with caplog.at_level("WARNING"):
    report = convert(source, os.fspath(tmp_path / "out"))
  assert report["parity"]["measured"] is False
  assert report["parity"]["text"].endswith("did not run: no such kernel)")
  assert any("parity not measured" in r.getMessage() and "no such kernel" in r.getMessage()
             for r in caplog.records), [r.getMessage() for r in caplog.records]
  monkeypatch.undo()

  hf_outputs = hf_parity._hf_outputs                     # pylint: disable=protected-access
  monkeypatch.setattr(hf_parity, "_hf_outputs", lambda *args: {
      k: v + 1e-3 for k, v in hf_outputs(*args).items()})
  caplog.clear()
  with caplog.at_level("WARNING"):
    report = convert(source, os.fspath(tmp_path / "out"), overwrite=True)
  parity = report["parity"]
  assert parity["measured"] and parity["max_abs_diff"] == pytest.approx(1e-3, rel=1e-2)
  assert parity["warning"] in report["notes"]
  assert "beyond 0.0001" in parity["warning"]
  assert any(parity["warning"] in r.getMessage() for r in caplog.records)
  assert parity["warning"] in open(tmp_path / "out" / "README.md", encoding="utf-8").read()


def test_truncated_safetensors_of_a_task_model(tmp_path):
  _, source = _hf_dir(tmp_path, transformers.XLNetForTokenClassification, num_labels=3)
  path = os.path.join(source, "model.safetensors")
  size = os.path.getsize(path)
  with open(path, "r+b") as f:
    f.truncate(size - 100)
  _expect_error(tmp_path, source, (
      f"{path}: truncated safetensors file: {size - 100:,} bytes, its header describes "
      f"{size:,} bytes. Download it again"))


def test_architectures_listing_two_heads(tmp_path):
  _, source = _hf_dir(tmp_path, transformers.XLNetForSequenceClassification, num_labels=2)
  architectures = ["XLNetForSequenceClassification", "XLNetForTokenClassification"]
  config = _rewrite_config(source, lambda c: c.update(architectures=architectures))
  _expect_error(tmp_path, source, (
      f"{config}: architectures {architectures} lists 2 models (the heads of different "
      f"tasks); expected the one class the weights were saved from"))


def test_weights_holding_heads_of_two_tasks(tmp_path):
  _, source = _hf_dir(tmp_path, transformers.XLNetForSequenceClassification, num_labels=2)
  path = _rewrite_safetensors(source, lambda t: t.update(
      {"qa_outputs.weight": np.zeros([2, D], np.float32),
       "qa_outputs.bias": np.zeros([2], np.float32)}))
  _expect_error(tmp_path, source, (
      f"{path}: holds the heads of several tasks (XLNetForSequenceClassification or "
      f"XLNetForMultipleChoice: logits_proj.bias, ...; XLNetForQuestionAnsweringSimple: "
      f"qa_outputs.bias, ...); expected the head of one HuggingFace model class "
      f"({os.path.join(source, 'config.json')} architectures: "
      f"['XLNetForSequenceClassification'])"))


def test_summary_proj_to_labels_that_hf_cannot_run(tmp_path):
  _, source = _hf_dir(tmp_path, transformers.XLNetForSequenceClassification, num_labels=3)
  config = _rewrite_config(source, lambda c: c.update(summary_proj_to_labels=True))
  _expect_error(tmp_path, source, (
      f"{config}: summary_proj_to_labels is true with summary_use_proj, so HuggingFace's "
      f"sequence summary projects to num_labels (3) features, but its logits_proj reads "
      f"d_model (16): XLNetForSequenceClassification cannot run such a config; expected "
      f"summary_proj_to_labels false (or num_labels == d_model)"))


def test_tokenizer_without_remove_space(tmp_path):
  _, source = _hf_dir(tmp_path, transformers.XLNetForSequenceClassification, num_labels=2)
  _tokenizer_config(source, remove_space=False)
  _expect_error(tmp_path, source, (
      f"{os.path.join(source, 'tokenizer_config.json')}: remove_space is false; XLNet's text "
      f"normalisation always removes leading, trailing and repeated spaces (the released "
      f"preprocessing, and our serving's), so such a tokenizer cannot be reproduced: "
      f"expected remove_space true"))


def test_saved_model_location_is_checked_first(tmp_path):
  _, source = _hf_dir(tmp_path, transformers.XLNetForSequenceClassification, num_labels=2)
  shutil.copy(RELEASED_SPIECE, source)
  os.makedirs(tmp_path / "full")
  (tmp_path / "full" / "x").write_text("x")
  for export, message in (
      (os.path.join(source, "export"),
       f"--saved_model {os.path.join(source, 'export')} lies inside --source {source}; "
       f"expected a directory of its own, outside --source"),
      (os.fspath(tmp_path / "out" / "export"),
       f"--saved_model {tmp_path / 'out' / 'export'} lies inside --output "
       f"{tmp_path / 'out'}; expected a directory of its own, outside --output")):
    with pytest.raises(ValueError) as raised:
      convert(source, os.fspath(tmp_path / "out"), saved_model=export)
    assert str(raised.value) == message
  with pytest.raises(FileExistsError, match="exists and is not an empty directory"):
    convert(source, os.fspath(tmp_path / "out"), saved_model=os.fspath(tmp_path / "full"))
  _no_output_left(tmp_path)


def _fake_export(kind, model_dir, export_dir, text, max_seq_length):
  """Stands in for the SavedModel export (`convert.importer._export`): a file and a card."""
  del kind, text, max_seq_length
  os.makedirs(export_dir)
  with open(os.path.join(export_dir, "saved_model.pb"), "w") as f:
    f.write(model_dir)


def _hf_source_with_spiece(tmp_path):
  _, source = _hf_dir(tmp_path, transformers.XLNetForSequenceClassification, num_labels=2)
  shutil.copy(RELEASED_SPIECE, source)
  return source


def test_saved_model_and_output_appear_together(tmp_path, monkeypatch):
  """The export takes its name first; if the model directory then cannot take its name,
  the export goes back (an empty --saved_model directory that was there stays), so both
  appear or neither."""
  from xlnet_tf.convert import importer as convert_module  # pylint: disable=g-import-not-at-top
  source = _hf_source_with_spiece(tmp_path)
  export = tmp_path / "export"
  os.makedirs(export)
  monkeypatch.setattr(convert_module, "_export", _fake_export)

  out = os.fspath(tmp_path / "out")
  replace_directory = convert_module.paths.replace_directory

  def refuse(new, output):
    if output != out:                                     # the model directory's own writes
      return replace_directory(new, output)
    assert (export / "saved_model.pb").exists()          # the export was renamed first
    raise OSError("rename refused")
  monkeypatch.setattr(convert_module.paths, "replace_directory", refuse)
  with pytest.raises(OSError, match="rename refused"):
    convert(source, out, saved_model=os.fspath(export))
  assert os.listdir(export) == []                         # as it was: empty
  _no_output_left(tmp_path)
  assert not [p for p in os.listdir(tmp_path) if ".partial-" in p], os.listdir(tmp_path)
  monkeypatch.undo()

  # --saved_model filled while the conversion ran: refused, nothing written.
  monkeypatch.setattr(convert_module, "_export", lambda *args: (
      _fake_export(*args), (export / "theirs.txt").write_text("x")))
  with pytest.raises(FileExistsError) as raised:
    convert(source, os.fspath(tmp_path / "out"), saved_model=os.fspath(export))
  assert str(raised.value) == (
      f"--saved_model {export}: appeared or was filled during the conversion; expected a "
      f"new (or empty) directory for the SavedModel. Nothing was written")
  assert os.listdir(export) == ["theirs.txt"]
  _no_output_left(tmp_path)
  assert not [p for p in os.listdir(tmp_path) if ".partial-" in p], os.listdir(tmp_path)


def test_failed_export_leaves_no_partial_directories(tmp_path, monkeypatch):
  from xlnet_tf.convert import importer as convert_module  # pylint: disable=g-import-not-at-top
  source = _hf_source_with_spiece(tmp_path)

  def failing(kind, model_dir, export_dir, text, max_seq_length):
    # An export that built its own temporaries beside its directory, then failed.
    os.makedirs(export_dir + ".partial-123")
    os.makedirs(export_dir)
    (tmp_path / (os.path.basename(export_dir) + ".partial-123") / "x").write_text("x")
    raise RuntimeError("export failed")
  monkeypatch.setattr(convert_module, "_export", failing)
  with pytest.raises(RuntimeError, match="export failed"):
    convert(source, os.fspath(tmp_path / "out"), saved_model=os.fspath(tmp_path / "export"))
  assert not (tmp_path / "export").exists()
  _no_output_left(tmp_path)
  assert not [p for p in os.listdir(tmp_path) if ".partial" in p], os.listdir(tmp_path)


@pytest.mark.parametrize("model_class, signature, inputs, output", [
    (transformers.XLNetLMHeadModel, "serving_default", {"text": ["Call me Ishmael."]},
     "hidden_states"),
    (transformers.XLNetLMHeadModel, "serving_document",        # whole texts, any length
     {"text": ["Call me Ishmael. " * 40]}, "embedding"),
    (transformers.XLNetForTokenClassification, "serving_default",
     {"text": ["Call me Ishmael ."]}, "tags"),
    (transformers.XLNetForMultipleChoice, "serving_default",
     {"article": ["Call me Ishmael."], "question": ["Who?"],
      "options": [["Ahab", "Ishmael", "Queequeg", "Starbuck"]]}, "answer_letter"),
    (transformers.XLNetForQuestionAnswering, "serving_default",
     {"question": ["Who?"], "context": ["Call me Ishmael, said the sailor."]},
     "answer_text"),
])
@pytest.mark.slow
def test_saved_model_of_every_kind(tmp_path, model_class, signature, inputs, output):
  """--saved_model picks the export of the converted kind; the SavedModel answers.
  (Exported at max_seq_length 24, questions of at most 8 pieces: the inputs fit.)"""
  _, source = _hf_dir(tmp_path, model_class, config=small_config(n_token=32000))
  shutil.copy(RELEASED_SPIECE, source)
  export = tmp_path / "export"
  os.makedirs(export)                                  # an empty directory is accepted
  convert(source, os.fspath(tmp_path / "out"), saved_model=os.fspath(export),
          options=ConvertOptions(max_seq_length=24, max_query_length=8))
  serve = tf.saved_model.load(os.fspath(export)).signatures[signature]
  result = serve(**{k: tf.constant(v) for k, v in inputs.items()})
  assert result[output].shape[0] == 1
  assert (export / "README.md").exists()


# ---- one command: an HF directory -> our model directory + a served SavedModel ----------------

def _sentiment_sentences():
  with open(SENTIMENT, encoding="utf-8", newline="") as f:
    rows = f.read().split("\r\n")
  return [row.split("\t")[2] for row in rows if row]


def _released_ids(sp, text, lower):
  """The released preprocessing written out (spaces collapsed, `` and '' as ", accents
  dropped after NFKD, lower-cased if uncased), then the SentencePiece library's ids."""
  text = " ".join(text.strip().split()).replace("``", '"').replace("''", '"')
  text = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
  return sp.encode(text.lower() if lower else text)


@pytest.mark.slow
@pytest.mark.parametrize("lower", [False, True])
def test_command_line_to_a_served_model(tmp_path, lower):
  """`python -m xlnet_tf.convert --saved_model` of an HF directory with HF's tokenizer files:
  our model directory has its tokenizer settings and labels, and the SavedModel served in a
  fresh process (TensorFlow and tensorflow-text only) gives HF's tokenizer + model's
  probabilities and labels on real sentences, and HF's probabilities on HF's ids through
  serving_ids. Exported at --max_seq_length 64 (the sentences are at most 52 pieces)."""
  import sentencepiece  # pylint: disable=g-import-not-at-top
  config = small_config(n_token=32000)
  hf_model, source = _hf_dir(tmp_path, transformers.XLNetForSequenceClassification,
                             config=config, num_labels=2, id2label={0: "neg", 1: "pos"},
                             label2id={"neg": 0, "pos": 1})
  # The tokenizer files as HF's XLNetTokenizer.save_pretrained writes them.
  spiece_dir = tmp_path / "spiece"
  os.makedirs(spiece_dir)
  shutil.copy(RELEASED_SPIECE, spiece_dir)
  _tokenizer_config(spiece_dir, do_lower_case=lower)
  transformers.AutoTokenizer.from_pretrained(os.fspath(spiece_dir)).save_pretrained(source)
  shutil.copy(RELEASED_SPIECE, source)
  tokenizer = transformers.AutoTokenizer.from_pretrained(source)
  assert tokenizer.do_lower_case == lower

  out, export = tmp_path / "out", tmp_path / "export"
  run = subprocess.run(
      [sys.executable, "-m", "xlnet_tf.convert", "--source", source, "--output",
       os.fspath(out), "--saved_model", os.fspath(export), "--max_seq_length=64"],
      capture_output=True, text=True,
      env=dict(os.environ, PYTHONPATH=ROOT), cwd=ROOT, check=False)
  assert run.returncode == 0, run.stderr[-3000:]
  assert (export / "saved_model.pb").exists() and (export / "README.md").exists()
  assert not [p for p in os.listdir(tmp_path) if ".partial-" in p]
  _, spec = model_directory.load(os.fspath(out), ClassifierSpec)
  assert (spec.uncased, spec.keep_accents, list(spec.labels)) == (lower, False,
                                                                  ["neg", "pos"])

  # Real sentences (and one with accents) where HF's tokenizer gives the ids of the
  # released preprocessing + SentencePiece (HF's tokenizers-based XLNetTokenizer differs on
  # some texts; the model parity of all of them is checked through serving_ids below).
  sp = sentencepiece.SentencePieceProcessor(model_file=RELEASED_SPIECE)
  accented = ["A naïve café résumé of Amélie's charms.", "Café au lait, s'il vous plaît."]
  sentences = _sentiment_sentences()[:80] + accented
  hf_ids = [tokenizer(s, add_special_tokens=False)["input_ids"] for s in sentences]
  agree = [s for s, ids in zip(sentences, hf_ids)
           if ids == _released_ids(sp, s, lower) and not re.search(r"\d,", s)
           and len(ids) <= 62]
  print(f"\n  lower {lower}: HF's tokenizer agrees with SentencePiece on {len(agree)} of "
        f"{len(sentences)} sentences")
  assert len(agree) >= 50 and agree[-2:] == accented

  # token_type_ids asked for: transformers 5's XLNetTokenizer leaves them out by default,
  # and XLNet without them is not the released input format.
  encoded = tokenizer(agree, padding=True, return_tensors="pt", return_token_type_ids=True)
  with torch.no_grad():
    hf_probs = torch.softmax(hf_model(**encoded).logits, -1).numpy()

  # serving_ids with HF's own ids (every sentence, left-padded to the export's 64).
  rows = [ids + [4, 3] for ids in hf_ids if len(ids) <= 62]
  ids = np.full([len(rows), 64], 5, np.int32)
  segments = np.full([len(rows), 64], 4, np.int32)
  mask = np.ones([len(rows), 64], np.float32)
  for b, row in enumerate(rows):
    ids[b, 64 - len(row):] = row
    segments[b, 64 - len(row):] = [0] * (len(row) - 1) + [2]
    mask[b, 64 - len(row):] = 0.0
  with torch.no_grad():
    reference = torch.softmax(hf_model(
        input_ids=torch.as_tensor(ids, dtype=torch.long),
        token_type_ids=torch.as_tensor(segments, dtype=torch.long),
        input_mask=torch.as_tensor(mask)).logits, -1).numpy()

  os.makedirs(tmp_path / "fresh_dir")
  fresh = serve_fresh_signatures(export, {
      "serving_default": {"text_a": agree},
      "serving_ids": {"input_ids": ids.tolist(), "segment_ids": segments.tolist(),
                      "input_mask": mask.tolist()}}, tmp_path / "fresh_dir")
  served, served_ids = fresh["serving_default"], fresh["serving_ids"]
  diff = _max_diff(served["probabilities"], hf_probs)
  print(f"  served text vs HF tokenizer + model: max |probability diff| {diff:.2e} on "
        f"{len(agree)} sentences")
  assert diff <= TOLERANCE
  assert served["label"] == [["neg", "pos"][i] for i in hf_probs.argmax(-1)]

  diff = _max_diff(served_ids["probabilities"], reference)
  print(f"  serving_ids with HF's ids: max |probability diff| {diff:.2e} on {len(rows)} "
        f"sentences")
  assert diff <= TOLERANCE
