"""Checkpoints of the original's fine-tuning scripts: encoder-only, with a task head.

The checkpoints are written here in the original's layout (tests/released_checkpoint.py: the
names and shapes of zihangdai/xlnet's transformer_xl without a query stream and of its task
heads), converted, and the converted model's outputs compared with the original's head math
re-derived in numpy below (from modeling.summarize_sequence, classification_loss,
regression_loss and function_builder.get_qa_outputs / get_race_loss; dropout off). The
encoder output comes from our encoder with the same weights (its forward parity with the
original is tested elsewhere); its weights are checked to be the checkpoint's, bit for bit.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from helpers import serve_fresh
from helpers import small_config
from helpers import squad_window_outputs
from released_checkpoint import classification_head_arrays
from released_checkpoint import original_encoder_arrays
from released_checkpoint import race_head_arrays
from released_checkpoint import squad_head_arrays
from released_checkpoint import summary_arrays
from released_checkpoint import write_released_dir
from xlnet_tf import model_directory
from xlnet_tf import load_pretrained
from xlnet_tf import released_names
from xlnet_tf.configs import XLNetConfig
from xlnet_tf.convert.importer import ConvertOptions
from xlnet_tf.convert.importer import convert
from xlnet_tf.data import squad
from xlnet_tf.data import tokenization
from xlnet_tf.evaluation import squad_postprocess
from xlnet_tf.models.xlnet_classifier import build_classifier
from xlnet_tf.models.xlnet_classifier import load_released_classifier
from xlnet_tf.models.xlnet_squad import build_squad_model
from xlnet_tf.models.xlnet_squad import load_released_squad
from xlnet_tf.models.xlnet_classifier import ClassifierSpec
from xlnet_tf.models.xlnet_multiple_choice import RaceSpec

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The released cased SentencePiece model (32,000 pieces; see its README.md).
RELEASED_SPIECE = os.path.join(ROOT, "tests", "fixtures", "released_spiece", "spiece.model")
CONFIG = small_config(n_token=32000)          # the released vocabulary, a tiny model
D = CONFIG.d_model
MASK_EMB = "model/transformer/mask_emb/mask_emb"
LM_BIAS = "model/lm_loss/bias"


def _write(directory, heads, encoder=None, model_dir_layout=False):
  """The original's fine-tuning output: encoder + heads + Adam slots + global_step.

  model_dir_layout: model.ckpt-1000.* and a `checkpoint` file, no xlnet_config.json (as
  the original's --model_dir); else xlnet_config.json + xlnet_model.ckpt.*.
  """
  arrays = original_encoder_arrays(CONFIG) if encoder is None else encoder
  if model_dir_layout:
    write_released_dir(directory, CONFIG, arrays, extra=heads, checkpoint_name="model.ckpt",
                       global_step=1000, write_config=False)
  else:
    write_released_dir(directory, CONFIG, arrays, extra=heads)
  return arrays


def _inputs(rng, batch, length, lengths=None):
  """Left-padded inputs in the released layout (input_mask 1 at padding)."""
  lengths = lengths or [length - 3 * i for i in range(batch)]
  ids = np.zeros([batch, length], np.int32)
  segments = np.full([batch, length], 4, np.int32)
  mask = np.ones([batch, length], np.float32)
  for b, n in enumerate(lengths):
    ids[b, length - n:] = rng.integers(9, CONFIG.n_token, n)
    half = n // 2
    segments[b, length - n:] = [0] * half + [1] * (n - half - 1) + [2]
    mask[b, length - n:] = 0.0
  return {"input_ids": ids, "segment_ids": segments, "input_mask": mask}


def _assert_encoder_is_the_checkpoints(encoder, arrays):
  for name, variable in released_names.encoder_variables(encoder).items():
    if name != MASK_EMB:
      np.testing.assert_array_equal(variable.numpy(), arrays[name], err_msg=name)


def _check_absent(report, lm_bias_meaning):
  assert sorted(report["absent"]) == [LM_BIAS, MASK_EMB]
  assert "only for pretraining's query stream" in report["absent"][MASK_EMB]
  assert "Glorot uniform" in report["absent"][MASK_EMB]
  assert lm_bias_meaning in report["absent"][LM_BIAS]


# ---- the original's head math, in numpy --------------------------------------------------

def _dense(x, arrays, scope, activation=None):
  y = x @ arrays[f"{scope}/kernel"]
  if f"{scope}/bias" in arrays:
    y = y + arrays[f"{scope}/bias"]
  return np.tanh(y) if activation == "tanh" else y


def _layer_norm(x, gamma, beta, eps=1e-12):
  """tf.contrib.layers.layer_norm over the last axis (variance_epsilon 1e-12)."""
  mean = x.mean(-1, keepdims=True)
  var = ((x - mean) ** 2).mean(-1, keepdims=True)
  return (x - mean) / np.sqrt(var + eps) * gamma + beta


def _softmax(x, axis=-1):
  e = np.exp(x - x.max(axis, keepdims=True))
  return e / e.sum(axis, keepdims=True)


def _log_softmax(x, axis=-1):
  shifted = x - x.max(axis, keepdims=True)
  return shifted - np.log(np.exp(shifted).sum(axis, keepdims=True))


def original_summary(h, input_mask, arrays, summary_type, use_proj):
  """modeling.summarize_sequence, batch-major h [B, T, D], dropout off."""
  s = "model/sequnece_summary"
  if summary_type == "last":
    summary = h[:, -1]
  elif summary_type == "mean":
    summary = h.mean(axis=1)                 # tf.reduce_mean over time: padding included
  elif summary_type == "attn":
    # multihead_attn(q=summary_bias, k=v=h, mask=input_mask, residual=False)
    q = np.einsum("d,dnh->nh", arrays[f"{s}/summary_bias"], arrays[f"{s}/abs_attn/q/kernel"])
    k = np.einsum("btd,dnh->btnh", h, arrays[f"{s}/abs_attn/k/kernel"])
    v = np.einsum("btd,dnh->btnh", h, arrays[f"{s}/abs_attn/v/kernel"])
    score = np.einsum("nh,btnh->bnt", q, k) / np.sqrt(CONFIG.d_head)
    score = score - 1e30 * input_mask[:, None, :]
    attended = np.einsum("bnt,btnh->bnh", _softmax(score), v)
    out = np.einsum("bnh,dnh->bd", attended, arrays[f"{s}/abs_attn/o/kernel"])
    summary = _layer_norm(out, arrays[f"{s}/abs_attn/LayerNorm/gamma"],
                          arrays[f"{s}/abs_attn/LayerNorm/beta"])
  else:
    raise NotImplementedError(summary_type)
  if use_proj:
    summary = _dense(summary, arrays, f"{s}/summary", "tanh")
  return summary


def original_squad(h, p_mask, cls_index, arrays, start_n_top, end_n_top):
  """get_qa_outputs at inference (is_training False), batch-major h [B, T, D]."""
  start = _dense(h, arrays, "start_logits/dense")[..., 0]                     # [B, T]
  start = start * (1 - p_mask) - 1e30 * p_mask
  start_log_probs = _log_softmax(start)
  start_index = np.argsort(-start_log_probs, axis=-1, kind="stable")[:, :start_n_top]
  start_top = np.take_along_axis(start_log_probs, start_index, -1)
  end_top, end_index = [], []
  for b in range(h.shape[0]):
    rows_p, rows_i = [], []
    for k in start_index[b]:
      x = np.concatenate([h[b], np.broadcast_to(h[b, k], h[b].shape)], -1)   # [T, 2D]
      x = _dense(x, arrays, "end_logits/dense_0", "tanh")
      x = _layer_norm(x, arrays["end_logits/LayerNorm/gamma"],
                      arrays["end_logits/LayerNorm/beta"])
      end = _dense(x, arrays, "end_logits/dense_1")[:, 0]
      end = end * (1 - p_mask[b]) - 1e30 * p_mask[b]
      log_probs = _log_softmax(end)
      top = np.argsort(-log_probs, kind="stable")[:end_n_top]
      rows_p.append(log_probs[top])
      rows_i.append(top)
    end_top.append(rows_p)
    end_index.append(rows_i)
  cls_feature = h[np.arange(h.shape[0]), cls_index]
  start_feature = np.einsum("btd,bt->bd", h, _softmax(start))
  x = _dense(np.concatenate([start_feature, cls_feature], -1), arrays,
             "answer_class/dense_0", "tanh")
  cls_logits = _dense(x, arrays, "answer_class/dense_1")[:, 0]               # no bias
  return {"start_top_log_probs": start_top, "start_top_index": start_index,
          "end_top_log_probs": np.array(end_top), "end_top_index": np.array(end_index),
          "cls_logits": cls_logits}


# ---- conversions -------------------------------------------------------------------------

CLASSIFIER_CASES = {
    # task, classes, regression, summary projection, attention summary, labels expected
    "imdb": ("imdb", 2, False, True, False, ("neg", "pos")),
    "sts-b": ("sts-b", 1, True, False, False, None),
    "attn": ("mytask", 3, False, True, True, ("0", "1", "2")),
    "mean": ("mytask", 2, False, True, "mean", ("0", "1")),
}


# imdb and sts-b (classification, regression) in the fast tier; the attn and mean summaries
# (the same conversion with other summary variables) slow.
@pytest.mark.parametrize("case", [
    case if case in ("imdb", "sts-b") else pytest.param(case, marks=pytest.mark.slow)
    for case in sorted(CLASSIFIER_CASES)])
def test_classifier_checkpoint_converts_with_its_head(case, tmp_path):
  task, classes, regression, projection, attention, labels = CLASSIFIER_CASES[case]
  heads = {**summary_arrays(CONFIG, projection=projection, attention=attention is True),
           **classification_head_arrays(CONFIG, task, classes, regression=regression)}
  arrays = _write(tmp_path / "orig", heads)
  original_type = {True: "attn", False: "last", "mean": "mean"}[attention]
  options = ConvertOptions(summary_type="mean") if attention == "mean" else None
  report = convert(os.fspath(tmp_path / "orig"), os.fspath(tmp_path / "out"),
                   options=options)

  assert report["output_kind"] == "classifier"
  _check_absent(report, "the task model has no LM head")
  assert sorted(report["task_head"]["variables"]) == sorted(heads)
  assert report["skipped_task_head_variables"] == []
  assert report["variables"] == len(arrays) + len(heads)
  model, spec = model_directory.load(os.fspath(tmp_path / "out"), ClassifierSpec)
  assert (spec.task_name, spec.is_regression) == (task, regression)
  assert (None if spec.labels is None else tuple(spec.labels)) == labels
  # The original's "mean" includes the padding: ours is "mean_with_padding".
  ours_type = {"mean": "mean_with_padding"}.get(original_type, original_type)
  assert (spec.summary_type, spec.use_proj) == (ours_type, projection)
  assert spec.max_seq_length == 128              # the original run_classifier's default
  _assert_encoder_is_the_checkpoints(model.encoder, arrays)

  inputs = _inputs(np.random.default_rng(1), 4, 16)
  feed = {k: tf.constant(v) for k, v in inputs.items()}
  hidden = model.encoder(feed, training=False)["content"].numpy().astype(np.float64)
  summary = original_summary(hidden, inputs["input_mask"], heads, original_type, projection)
  scope = f"model/{'regression' if regression else 'classification'}_{task}"
  expected = _dense(summary, heads, f"{scope}/logit")
  out = model(feed, training=False)
  diff = float(np.max(np.abs(out["logits"].numpy() - expected)))
  print(f"classifier {case}: max |logit diff| {diff:.2e}")
  assert diff < 1e-5
  if regression:
    np.testing.assert_allclose(out["score"].numpy(), expected[:, 0], atol=1e-5)


def test_squad_checkpoint_converts_with_its_head(tmp_path):
  heads = squad_head_arrays(CONFIG)
  arrays = _write(tmp_path / "orig", heads)
  options = ConvertOptions(start_n_top=3, end_n_top=2, null_score_diff_threshold=-1.5)
  report = convert(os.fspath(tmp_path / "orig"), os.fspath(tmp_path / "out"),
                   options=options)
  assert report["output_kind"] == "squad"
  _check_absent(report, "the task model has no LM head")
  assert sorted(report["task_head"]["variables"]) == sorted(heads)
  settings = json.loads((tmp_path / "out" / "squad.json").read_text())
  assert settings == {"max_seq_length": 512, "uncased": False, "doc_stride": 128,
                      "max_query_length": 64, "start_n_top": 3, "end_n_top": 2,
                      "version_2_with_negative": True, "null_score_diff_threshold": -1.5}

  # Loaded by hand (the checkpoint holds the whole model: encoder and head).
  out = tmp_path / "out"
  model = build_squad_model(XLNetConfig.from_json_file(os.fspath(out / "xlnet_config.json")),
                            start_n_top=3, end_n_top=2, dropout_rate=0.0)
  tf.train.Checkpoint(model=model).read(os.fspath(out / "model.ckpt")
                                        ).assert_existing_objects_matched()
  _assert_encoder_is_the_checkpoints(model.encoder, arrays)

  rng = np.random.default_rng(2)
  inputs = _inputs(rng, 3, 20)
  p_mask = inputs["input_mask"].copy()
  p_mask[:, -1] = 1.0                                     # <cls>
  p_mask[:, -6:-3] = 1.0                                  # "question" and <sep>
  cls_index = np.full([3], 19, np.int32)
  feed = {k: tf.constant(v) for k, v in inputs.items()}
  hidden = model.encoder(feed, training=False)["content"].numpy().astype(np.float64)
  expected = original_squad(hidden, p_mask, cls_index, heads, 3, 2)
  got = model({**feed, "p_mask": tf.constant(p_mask), "cls_index": tf.constant(cls_index)},
              training=False)
  for key in ("start_top_index", "end_top_index"):
    np.testing.assert_array_equal(got[key].numpy(), expected[key], err_msg=key)
  diff = max(float(np.max(np.abs(got[key].numpy() - expected[key])))
             for key in ("start_top_log_probs", "end_top_log_probs", "cls_logits"))
  print(f"squad: max |log-prob / cls logit diff| {diff:.2e}")
  assert diff < 1e-5


def test_race_checkpoint_converts_with_its_head(tmp_path):
  heads = {**summary_arrays(CONFIG), **race_head_arrays(CONFIG)}
  arrays = _write(tmp_path / "orig", heads)
  report = convert(os.fspath(tmp_path / "orig"), os.fspath(tmp_path / "out"))
  assert report["output_kind"] == "race"
  _check_absent(report, "the task model has no LM head")
  assert report["task_settings"]["max_seq_length"] == 512

  out = tmp_path / "out"     # loaded as the xlnet/race task loads MODEL_DIR/final (run_race)
  model, spec = model_directory.load(os.fspath(out), RaceSpec)
  assert (spec.summary_type, spec.use_proj) == ("last", True)
  _assert_encoder_is_the_checkpoints(model.encoder, arrays)

  rows = _inputs(np.random.default_rng(3), 8, 14, lengths=[14, 12, 9, 11, 14, 6, 8, 13])
  batch = {k: tf.constant(v.reshape(2, 4, 14)) for k, v in rows.items()}
  got = model(batch, training=False)["logits"].numpy()                      # [2, 4]
  hidden = model.encoder({k: tf.constant(v) for k, v in rows.items()},
                         training=False)["content"].numpy().astype(np.float64)
  summary = original_summary(hidden, rows["input_mask"], heads, "last", True)
  expected = _dense(summary, heads, "logits/dense").reshape(2, 4)
  diff = float(np.max(np.abs(got - expected)))
  print(f"race: max |logit diff| {diff:.2e}")
  assert diff < 1e-5


def test_encoder_only_checkpoint_without_a_head_converts_to_the_pretrained_layout(tmp_path):
  arrays = _write(tmp_path / "orig", {})
  report = convert(os.fspath(tmp_path / "orig"), os.fspath(tmp_path / "out"))
  assert report["output_kind"] == "pretrained"
  _check_absent(report, "Set to zeros, its initial value in the original")
  model = load_pretrained(os.fspath(tmp_path / "out"))
  _assert_encoder_is_the_checkpoints(model.encoder, arrays)
  np.testing.assert_array_equal(model.lm_head.bias.numpy(), np.zeros([CONFIG.n_token]))
  mask_emb = model.encoder.mask_emb.numpy()
  assert mask_emb.shape == (1, 1, D)
  assert np.all(np.abs(mask_emb) <= np.sqrt(6 / (1 + D))) and np.std(mask_emb) > 0.1

  # --task=pretrained keeps the encoder of a fine-tuned checkpoint and leaves its head out.
  heads = {**summary_arrays(CONFIG), **classification_head_arrays(CONFIG, "imdb", 2)}
  _write(tmp_path / "tuned", heads)
  report = convert(os.fspath(tmp_path / "tuned"), os.fspath(tmp_path / "out2"),
                   options=ConvertOptions(task="pretrained"))
  assert report["output_kind"] == "pretrained"
  assert sorted(report["skipped_task_head_variables"]) == sorted(heads)
  _check_absent(report, "Set to zeros")


@pytest.mark.slow
def test_converted_classifier_serves_raw_text(tmp_path):
  """The original's model_dir (model.ckpt-N + checkpoint, config apart) through the command
  line, exported with experiments/export_saved_model.py, serving real sentences."""
  heads = {**summary_arrays(CONFIG), **classification_head_arrays(CONFIG, "imdb", 2)}
  _write(tmp_path / "orig_run", heads, model_dir_layout=True)
  assert not (tmp_path / "orig_run" / "xlnet_config.json").exists()
  (tmp_path / "xlnet_config.json").write_text(json.dumps(CONFIG.released_dict()))
  env = dict(os.environ, PYTHONPATH=ROOT)
  run = subprocess.run(
      [sys.executable, "-m", "xlnet_tf.convert", "--source", os.fspath(tmp_path / "orig_run"),
       "--output", os.fspath(tmp_path / "imdb" / "final"), "--model_config_path",
       os.fspath(tmp_path / "xlnet_config.json"), "--spiece_model_file", RELEASED_SPIECE,
       "--max_seq_length", "24"], capture_output=True, text=True, env=env, cwd=ROOT,
      check=False)
  assert run.returncode == 0, run.stderr[-3000:]
  assert "classifier model directory (model/classification_imdb/logit" in run.stdout
  assert f"absent: {MASK_EMB}" in run.stdout and f"absent: {LM_BIAS}" in run.stdout
  report = json.loads((tmp_path / "imdb" / "final" / "conversion.json").read_text())
  assert report["source_file"].endswith("model.ckpt-1000")

  export = subprocess.run(
      [sys.executable, "-m", "experiments.export_saved_model", "--model_dir",
       os.fspath(tmp_path / "imdb"), "--export_dir", os.fspath(tmp_path / "export")],
      capture_output=True, text=True, env=env, cwd=ROOT, check=False)
  assert export.returncode == 0, export.stderr[-3000:]

  import tensorflow_text  # noqa: F401  pylint: disable=g-import-not-at-top,unused-import
  from xlnet_tf.data import classifier_features  # pylint: disable=g-import-not-at-top
  from xlnet_tf.data.classifier_tasks import InputExample  # pylint: disable=g-import-not-at-top
  texts = ["A gripping, beautifully acted film.", "Two hours I will never get back.",
           "The plot was thin, but the music in 2019's re-release is superb!",
           "Nothing much happens.", "Call me Ishmael."]
  serve = tf.saved_model.load(os.fspath(tmp_path / "export")).signatures["serving_default"]
  served = serve(text_a=tf.constant(texts))

  model, spec = model_directory.load(os.fspath(tmp_path / "imdb" / "final"), ClassifierSpec)
  sp = tokenization.load_spiece(RELEASED_SPIECE)
  features = [classifier_features.encode_example(sp, InputExample(str(i), t, None, None), 24)
              for i, t in enumerate(texts)]
  feed = {k: tf.constant(np.stack([f[k] for f in features]))
          for k in ("input_ids", "segment_ids", "input_mask")}
  expected = tf.nn.softmax(model(feed, training=False)["logits"]).numpy()
  diff = float(np.max(np.abs(served["probabilities"].numpy() - expected)))
  print(f"served: max |probability diff| {diff:.2e}")
  assert diff < 1e-5
  assert [x.decode() for x in served["label"].numpy()] == [
      ("neg", "pos")[i] for i in expected.argmax(-1)]


SQUAD_SAMPLE = os.path.join(ROOT, "data_prep", "sample_data", "qa", "squad.json")


@pytest.mark.slow
def test_converted_squad_model_serves_raw_text(tmp_path):
  """The original run_squad's model_dir (model.ckpt-N + checkpoint, config apart), converted,
  exported with experiments/run_squad.py --do_export, and asked the bundled SQuAD questions
  in a fresh process (TensorFlow + tensorflow-text only): the served answers are those of
  the converted model loaded in Python, decoded from the same windows."""
  heads = squad_head_arrays(CONFIG)
  arrays = _write(tmp_path / "orig_run", heads, model_dir_layout=True)
  (tmp_path / "xlnet_config.json").write_text(json.dumps(CONFIG.released_dict()))
  final = tmp_path / "squad" / "final"                 # run_squad's MODEL_DIR/final
  report = convert(os.fspath(tmp_path / "orig_run"), os.fspath(final), options=ConvertOptions(
      model_config_path=os.fspath(tmp_path / "xlnet_config.json"),
      spiece_model_file=RELEASED_SPIECE, max_seq_length=256))
  assert report["output_kind"] == "squad" and report["spiece_model"]
  settings = json.loads((final / "squad.json").read_text())
  assert "null_score_diff_threshold" not in settings    # none given: the export uses 0.0

  env = dict(os.environ, PYTHONPATH=ROOT)
  export = subprocess.run(
      [sys.executable, "-m", "experiments.run_squad", "--do_export", "--model_dir",
       os.fspath(tmp_path / "squad")], capture_output=True, text=True, env=env, cwd=ROOT,
      check=False)
  assert export.returncode == 0, export.stderr[-3000:]
  export_dir = tmp_path / "squad" / "export"             # the default --export_dir
  assert f"exported the SavedModel (question, context -> answer) to {export_dir}" in \
      export.stdout

  examples, _ = squad.read_squad(SQUAD_SAMPLE)
  assert len(examples) == 5
  served = serve_fresh(export_dir, {"question": [e.question for e in examples],   # TF only
                                    "context": [e.context for e in examples]}, tmp_path)
  assert sorted(served) == ["answer_start_char", "answer_text", "is_impossible",
                            "paragraph_truncated", "score"]
  assert not any(served["paragraph_truncated"])

  # The converted model in Python, loaded as run_squad loads MODEL_DIR/final, on the windows
  # of run_squad --do_predict (one per question: the paragraphs fit 256 pieces). run_squad
  # builds it with its own --start_n_top/--end_n_top (default 5; squad.json's copies are
  # not read back), here the same as the conversion's.
  assert (settings["start_n_top"], settings["end_n_top"]) == (5, 5)
  model = build_squad_model(XLNetConfig.from_json_file(os.fspath(final / "xlnet_config.json")),
                            5, 5, 0.0)
  tf.train.Checkpoint(model=model).read(os.fspath(final / "model.ckpt")
                                        ).assert_existing_objects_matched()
  _assert_encoder_is_the_checkpoints(model.encoder, arrays)
  windows, outputs = squad_window_outputs(
      model, examples, os.fspath(final / "spiece.model"), tmp_path / "cache",
      settings["max_seq_length"], settings["doc_stride"], settings["max_query_length"])
  assert len(windows) == len(examples)
  answers, nbest, _ = squad_postprocess.decode(examples, windows, outputs,
                                               max_answer_length=64, null_threshold=0.0)

  score_diff = cls_diff = 0.0
  for k, (example, window) in enumerate(zip(examples, windows)):
    # The Python model's best (start rank i, end rank j): the top candidate of decode.
    best = nbest[example.qas_id][0]
    (i, j), = [(i, j) for i, start in enumerate(outputs["start_top_index"][k])
               for j, end in enumerate(outputs["end_top_index"][k][i])
               if window.p_mask[start] == 0 and window.p_mask[end] == 0
               and window.raw_spans[start][0] == best.start_char
               and window.raw_spans[end][1] == best.end_char and end >= start]
    start, end = outputs["start_top_index"][k][i], outputs["end_top_index"][k][i][j]
    cls_logit = float(outputs["cls_logits"][k])
    assert cls_logit <= 0.0                         # answered at the default threshold
    text = served["answer_text"][k]
    assert text == answers[example.qas_id] == best.text != "", example.question
    # The served span, back to pieces: the piece that begins at its first character and
    # the one that ends at its last.
    begin = served["answer_start_char"][k]
    served_start = [p for p, span in enumerate(window.raw_spans)
                    if span and span[1] > span[0] and span[0] == begin]
    served_end = [p for p, span in enumerate(window.raw_spans)
                  if span and span[1] > span[0] and span[1] == begin + len(text)]
    assert (served_start, served_end) == ([start], [end]), example.question
    score = float(outputs["start_top_log_probs"][k][i] + outputs["end_top_log_probs"][k][i][j])
    score_diff = max(score_diff, abs(served["score"][k] - score))
    p = served["is_impossible"][k]
    cls_diff = max(cls_diff, abs(np.log(p) - np.log1p(-p) - cls_logit))
    print(f"{example.question!r} -> {text!r} (pieces {start}..{end}, score {score:.4f}, "
          f"cls logit {cls_logit:.4f})")
  print(f"served squad: max |start + end log-prob diff| {score_diff:.2e}, "
        f"max |cls logit diff| {cls_diff:.2e}")
  assert score_diff < 1e-5 and cls_diff < 1e-5


def test_python_loaders_read_the_originals_checkpoints(tmp_path):
  """load_released_classifier / load_released_squad accept a checkpoint without mask_emb."""
  heads = {**summary_arrays(CONFIG), **classification_head_arrays(CONFIG, "imdb", 2)}
  arrays = _write(tmp_path / "cls", heads)
  model = build_classifier(CONFIG, 2)
  load_released_classifier(model, os.fspath(tmp_path / "cls" / "xlnet_model.ckpt"), "imdb")
  _assert_encoder_is_the_checkpoints(model.encoder, arrays)
  np.testing.assert_array_equal(model.logit.bias.numpy(),
                                heads["model/classification_imdb/logit/bias"])
  heads = squad_head_arrays(CONFIG)
  _write(tmp_path / "squad", heads)
  model = build_squad_model(CONFIG)
  load_released_squad(model, os.fspath(tmp_path / "squad" / "xlnet_model.ckpt"))
  np.testing.assert_array_equal(model.head.class_dense_1.kernel.numpy(),
                                heads["answer_class/dense_1/kernel"])


# ---- bad or mismatched checkpoints ---------------------------------------------------------

def _classifier_heads(task="imdb", classes=2):
  return {**summary_arrays(CONFIG), **classification_head_arrays(CONFIG, task, classes)}


def _drop(heads, name):
  heads = dict(heads)
  del heads[name]
  return heads


def _replace(heads, name, shape):
  return {**heads, name: np.zeros(shape, np.float32)}


CLS = "model/classification_imdb/logit"
SUMMARY = "model/sequnece_summary/summary"

ERRORS = {
    "logit without bias": (
        lambda: _drop(_classifier_heads(), f"{CLS}/bias"), {},
        f"incomplete classification head {CLS}: it has ['{CLS}/kernel'] but not "
        f"['{CLS}/bias']"),
    "projection without bias": (
        lambda: _drop(_classifier_heads(), f"{SUMMARY}/bias"), {},
        f"incomplete sequence summary projection of the classification head "
        f"model/classification_imdb: it has ['{SUMMARY}/kernel'] but not ['{SUMMARY}/bias']"),
    "summary kernel shape": (
        lambda: _replace(_classifier_heads(), f"{SUMMARY}/kernel", [D, 8]), {},
        f"variable {SUMMARY}/kernel has shape [16, 8], expected [16, 16] ([d_model, d_model], "
        f"d_model 16)"),
    "logit kernel shape": (
        lambda: _replace(_classifier_heads(), f"{CLS}/kernel", [8, 2]), {},
        f"variable {CLS}/kernel has shape [8, 2], expected [16, number of classes] (d_model "
        f"16 from the config)"),
    "bias for other classes": (
        lambda: _replace(_classifier_heads(), f"{CLS}/bias", [3]), {},
        f"variable {CLS}/bias has shape [3], expected [2] ([classes]: the kernel has 2 "
        f"outputs)"),
    "labels for other classes": (
        _classifier_heads, {"labels": ["bad", "so-so", "good"]},
        f"{CLS} has 2 outputs (kernel [16, 2]), but --labels gives 3: ['bad', 'so-so', "
        f"'good']"),
    "original task with other classes": (
        lambda: _classifier_heads("imdb", 3), {},
        f"{CLS} has 3 outputs, but the original's imdb task has 2 labels ['neg', 'pos']; "
        f"pass --labels"),
    "labels for a regression head": (
        lambda: classification_head_arrays(CONFIG, "sts-b", 1, regression=True),
        {"labels": ["a", "b"]},
        "model/regression_sts-b/logit is a regression head (one score, no labels); --labels "
        "['a', 'b'] does not apply"),
    "two classification heads": (
        lambda: {**_classifier_heads("a"), **classification_head_arrays(CONFIG, "b", 2)}, {},
        "the checkpoint has several classification heads ['model/classification_a', "
        "'model/classification_b']; pass --task_name to choose one (the <task> of "
        "model/classification_<task>)"),
    "unknown task name": (
        _classifier_heads, {"task_name": "sst-2"},
        "--task_name 'sst-2': no model/classification_sst-2/logit or "
        "model/regression_sst-2/logit; the checkpoint's classification heads are "
        "['model/classification_imdb']"),
    "heads of two tasks": (
        lambda: {**_classifier_heads(), **squad_head_arrays(CONFIG)}, {},
        f"the checkpoint has the heads of several tasks (classifier: {CLS}/bias, ...; squad: "
        f"answer_class/dense_0/bias, ...); pass --task to choose one of ['classifier', "
        f"'squad'], or --task=pretrained for the encoder alone"),
    "asked for another head": (
        lambda: classification_head_arrays(CONFIG, "imdb", 2), {"task": "squad"},
        f"--task squad: no SQuAD head (start_logits/, end_logits/, answer_class/) in the "
        f"checkpoint; its task-head variables are ['{CLS}/bias', '{CLS}/kernel']"),
    "incomplete squad head": (
        lambda: _drop(squad_head_arrays(CONFIG), "answer_class/dense_1/kernel"), {},
        "but not ['answer_class/dense_1/kernel']"),
    "squad shape": (
        lambda: _replace(squad_head_arrays(CONFIG), "end_logits/dense_0/kernel", [D, D]), {},
        "variable end_logits/dense_0/kernel has shape [16, 16], expected [32, 16] "
        "([2 * d_model, d_model], d_model 16)"),
    "race without projection": (
        lambda: race_head_arrays(CONFIG), {},
        "the RACE head sits on summary_type 'last' without the projection "
        "(model/sequnece_summary/summary/kernel); our RACE model (experiments/run_race.py) "
        "uses summary_type 'last' with the projection, the original's default"),
    "summary without a logit layer": (
        lambda: summary_arrays(CONFIG), {},
        "the checkpoint has sequence-summary variables ['model/sequnece_summary/summary/bias',"
        " 'model/sequnece_summary/summary/kernel'] but no logit layer on them"),
    "unknown head variable": (
        lambda: {**_classifier_heads(), "model/classification_imdb/extra/kernel":
                 np.zeros([2], np.float32)}, {},
        "unknown task-head variable(s) ['model/classification_imdb/extra/kernel']"),
    "attn flag without its variables": (
        _classifier_heads, {"summary_type": "attn"},
        "--summary_type attn, but the checkpoint has no model/sequnece_summary/summary_bias "
        "(summary_type attn's variables)"),
}


# One case of each kind of check in the fast tier (an incomplete head, a shape, labels, two
# tasks' heads, the SQuAD head, the RACE head); the others slow.
FAST_ERRORS = ("logit without bias", "logit kernel shape", "labels for other classes",
               "heads of two tasks", "squad shape", "race without projection")


@pytest.mark.parametrize("case", [
    case if case in FAST_ERRORS else pytest.param(case, marks=pytest.mark.slow)
    for case in sorted(ERRORS)])
def test_bad_heads_are_named(case, tmp_path):
  """A checkpoint whose task head is incomplete, misshapen or ambiguous, or options that do
  not fit it, are refused with a message naming the checkpoint and the variables, and
  nothing is written."""
  make_heads, options, message = ERRORS[case]
  _write(tmp_path / "orig", make_heads())
  with pytest.raises(ValueError) as error:
    convert(os.fspath(tmp_path / "orig"), os.fspath(tmp_path / "out"),
            options=ConvertOptions(**options))
  assert message in str(error.value)
  assert str(error.value).startswith(os.fspath(tmp_path / "orig" / "xlnet_model.ckpt") + ": ")
  assert not [p for p in os.listdir(tmp_path) if "out" in p]


def test_bad_encoders_and_directories_are_named(tmp_path):
  heads = _classifier_heads()
  encoder = original_encoder_arrays(CONFIG)
  del encoder["model/transformer/seg_embed"]
  _write(tmp_path / "missing", heads, encoder=encoder)
  with pytest.raises(ValueError, match=r"missing variable\(s\) \['model/transformer/"
                                       r"seg_embed'\]"):
    convert(os.fspath(tmp_path / "missing"), os.fspath(tmp_path / "out"))

  encoder = original_encoder_arrays(CONFIG)
  encoder["model/transformer/layer_1/ff/layer_1/kernel"] = np.zeros([D, 40], np.float32)
  _write(tmp_path / "shape", heads, encoder=encoder)
  with pytest.raises(ValueError, match=r"variable model/transformer/layer_1/ff/layer_1/kernel "
                                       r"has shape \[16, 40\], the config needs \[16, 32\]"):
    convert(os.fspath(tmp_path / "shape"), os.fspath(tmp_path / "out"))

  _write(tmp_path / "run", heads, model_dir_layout=True)
  with pytest.raises(ValueError, match="a TF1 checkpoint without xlnet_config.json. The "
                                       "model_dir of the original's fine-tuning scripts has "
                                       "none: pass --model_config_path"):
    convert(os.fspath(tmp_path / "run"), os.fspath(tmp_path / "out"))
  _write(tmp_path / "squad", squad_head_arrays(CONFIG))
  with pytest.raises(ValueError, match="--max_seq_length 64 leaves no room for the paragraph "
                                       "after --max_query_length 64 and 3 special tokens"):
    convert(os.fspath(tmp_path / "squad"), os.fspath(tmp_path / "out"),
            options=ConvertOptions(max_seq_length=64))
  with pytest.raises(ValueError, match=r"--labels \['x'\]: expected at least 2 distinct"):
    ConvertOptions(labels=["x"])
  with pytest.raises(ValueError, match="--labels, --max_seq_length: these describe a task "
                                       "head, but the conversion of"):
    convert(os.fspath(tmp_path / "missing"), os.fspath(tmp_path / "out"),
            options=ConvertOptions(task="pretrained", labels=["a", "b"], max_seq_length=64))
  assert not (tmp_path / "out").exists()
