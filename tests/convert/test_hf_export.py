"""Export of our model directories to HuggingFace (`python -m xlnet_tf.convert --to huggingface`).

The reference is HuggingFace's PyTorch XLNet: each exported directory is loaded with
transformers (no missing or unexpected tensor allowed) and its outputs are compared with our
model's on the same inputs: max |ours - HF| <= 1e-5 * max(1, max |HF|). Our models get random
weights everywhere (LayerNorm gains and biases included), so a misplaced or untransposed tensor
cannot hide behind an initializer's ones or zeros. Round trips HF -> ours -> HF must give back
every tensor bit for bit.
"""

import hashlib
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
import torch
import transformers
from safetensors.numpy import load_file

from hf_reference import hf_forward
from hf_reference import make_hf_model
from helpers import max_rel_error
from helpers import pretraining_inputs
from helpers import small_config
from xlnet_tf import model_card
from xlnet_tf import model_directory
from xlnet_tf.models.xlnet_squad import SquadSpec
from xlnet_tf import pretrained
from xlnet_tf.convert.importer import convert
from xlnet_tf.convert import to_huggingface
from xlnet_tf.convert.to_huggingface import export_to_huggingface
from xlnet_tf.models.xlnet_classifier import build_classifier
from xlnet_tf.models.xlnet_multiple_choice import build_multiple_choice
from xlnet_tf.models.xlnet_pretrainer import build_pretrainer
from xlnet_tf.models.xlnet_simple_qa import build_simple_qa
from xlnet_tf.models.xlnet_squad import build_squad_model
from xlnet_tf.models.xlnet_tagger import build_tagger
from xlnet_tf.models.xlnet_classifier import ClassifierSpec
from xlnet_tf.models.xlnet_multiple_choice import RaceSpec
from xlnet_tf.models.xlnet_simple_qa import SimpleQASpec
from xlnet_tf.models.xlnet_tagger import TaggerSpec

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RELEASED_SPIECE = os.path.join(ROOT, "tests", "fixtures", "released_spiece", "spiece.model")
TOLERANCE = 1e-5
SEP, CLS = 4, 3


def _config(**overrides):
  values = dict(d_model=32, n_head=2, d_head=16, d_inner=64, n_token=96)
  values.update(overrides)
  return small_config(**values)


def _randomize(model, seed):
  """Every weight redrawn: gains near 1, embeddings larger, the rest N(0, 0.2^2)."""
  rng = np.random.default_rng(seed)
  for variable in model.variables:
    noise = rng.standard_normal(variable.shape.as_list()).astype(np.float32)
    name = variable.name
    if "gamma" in name:
      value = 1.0 + 0.1 * noise
    elif "word_embedding" in name or "mask_emb" in name:
      value = 0.5 * noise
    else:
      value = 0.2 * noise
    variable.assign(value)
  return model


def _tree(directory):
  """relative path -> sha256 of every file under `directory`."""
  out = {}
  for folder, _, files in os.walk(directory):
    for name in files:
      path = os.path.join(folder, name)
      with open(path, "rb") as f:
        out[os.path.relpath(path, directory)] = hashlib.sha256(f.read()).hexdigest()
  return out


def _hf_load(auto_class, directory):
  """(model in eval mode, its loading info), checking transformers reported nothing."""
  model, info = auto_class.from_pretrained(os.fspath(directory), output_loading_info=True)
  assert {k: v for k, v in info.items() if v} == {}, info
  return model.eval(), info


def _torch(inputs):
  kwargs = {"input_ids": torch.as_tensor(inputs["input_ids"], dtype=torch.long)}
  if "segment_ids" in inputs:
    kwargs["token_type_ids"] = torch.as_tensor(inputs["segment_ids"], dtype=torch.long)
  if "input_mask" in inputs:
    kwargs["input_mask"] = torch.as_tensor(inputs["input_mask"], dtype=torch.float32)
  return kwargs


def _classification_rows(rng, n_token, batch=3, length=10):
  """[A <sep> B <sep> <cls>], left-padded by a different amount per row."""
  ids = rng.integers(10, n_token, [batch, length])
  segments = np.tile([0] * 4 + [1] * 5 + [2], [batch, 1])
  ids[:, 3] = ids[:, 8] = SEP
  ids[:, -1] = CLS
  pad = np.zeros([batch, length], np.float32)
  for row in range(1, batch):
    pad[row, :row + 1] = 1.0
  segments[pad > 0] = 4
  return {"input_ids": ids, "segment_ids": segments, "input_mask": pad}


# ---- the pretraining model -> XLNetLMHeadModel --------------------------------------------------

LM_CONFIGS = {
    "memory_untied": dict(mem_len=6, reuse_len=3),
    "tied_biases_relu_bi_data_clamp": dict(untie_r=False, ff_activation="relu", bi_data=True,
                                           clamp_len=3, mem_len=4),
    "uni_same_length_gelu_exact": dict(attn_type="uni", same_length=True,
                                       ff_activation="gelu_exact", mem_len=5),
}


def _fast_cases(names, fast):
  """Parameters `names`, those not in `fast` marked slow (one case of each head in the fast
  tier; the other configurations of the same conversion in the slow one)."""
  return [name if name in fast else pytest.param(name, marks=pytest.mark.slow)
          for name in sorted(names)]


@pytest.mark.parametrize("name", _fast_cases(LM_CONFIGS, ("memory_untied",)))
def test_pretrained_model_matches_hf_lm_head(name, tmp_path):
  config = _config(**LM_CONFIGS[name])
  model = _randomize(build_pretrainer(config), seed=len(name))
  pretrained.save_pretrained(model, os.fspath(tmp_path / "ours"))
  before = _tree(tmp_path / "ours")
  report = export_to_huggingface(os.fspath(tmp_path / "ours"), os.fspath(tmp_path / "hf"))
  assert _tree(tmp_path / "ours") == before            # the source is only read

  hf_model, _ = _hf_load(transformers.AutoModelForCausalLM, tmp_path / "hf")
  assert type(hf_model) is transformers.XLNetLMHeadModel
  assert report["architecture"] == "XLNetLMHeadModel"
  # What HF's save_pretrained writes for the tied LM weight: nothing; loading ties it.
  written = load_file(os.fspath(tmp_path / "hf" / "model.safetensors"))
  assert "lm_loss.weight" not in written and "lm_loss.bias" in written
  assert hf_model.lm_loss.weight.data_ptr() == hf_model.transformer.word_embedding.weight.data_ptr()
  # The run options reach HF's config.
  hf_config = hf_model.config
  for key in ("untie_r", "bi_data", "clamp_len", "same_length", "attn_type", "d_head",
              "layer_norm_eps", "mem_len", "reuse_len"):
    expected = getattr(config, key)
    if key in ("mem_len", "reuse_len") and expected == 0:
      expected = None                      # HF's "off"
    assert getattr(hf_config, key) == expected, key
  assert hf_config.ff_activation == {"gelu": "gelu_new", "relu": "relu",
                                     "gelu_exact": "gelu"}[config.ff_activation]

  rng = np.random.default_rng(3)
  if config.attn_type == "uni":
    # HF's XLNet cannot add input_mask or perm_mask to its causal mask (a shape error):
    # segments, memory and target_mapping only.
    batches = [_classification_rows(rng, config.n_token, batch=2) for _ in range(3)]
    for inputs in batches:
      del inputs["input_mask"]
      inputs["segment_ids"] = np.tile([0] * 4 + [1] * 5 + [2], [2, 1])
    mapping = np.zeros([2, 2, 10], np.float32)
    mapping[:, 0, 1] = mapping[:, 1, 9] = 1.0
    batches[-1]["target_mapping"] = mapping
  else:
    batches = [_classification_rows(rng, config.n_token, batch=2),
               pretraining_inputs(rng, 2, 10, num_predict=4, num_targets=3,
                                  vocab=config.n_token),
               pretraining_inputs(rng, 2, 10, num_predict=4, num_targets=4,
                                  vocab=config.n_token, padding=2)]
  errors = {}
  ours_mems = hf_mems = None
  for step, inputs in enumerate(batches):
    reference = hf_forward(hf_model, inputs, hf_mems)
    feed = {k: tf.constant(v) for k, v in inputs.items()}
    if ours_mems is not None:
      feed["mems"] = ours_mems
    outputs = model(feed, training=False)
    for key in ("logits", "content") + (("query",) if "target_mapping" in inputs else ()):
      errors[f"step{step}/{key}"] = max_rel_error(outputs[key], reference[key])
    for i, (ours, ref) in enumerate(zip(outputs["new_mems"], reference["new_mems"])):
      errors[f"step{step}/new_mems[{i}]"] = max_rel_error(ours, ref)
    ours_mems, hf_mems = outputs["new_mems"], reference["new_mems"]
  worst = max(errors, key=errors.get)
  print(f"LM {name}: worst {worst} {errors[worst]:.2e} over {len(errors)} comparisons; "
        f"export-time parity: {report['parity']}")
  assert errors[worst] <= TOLERANCE, errors
  # The card's figure is absolute, on logits of magnitude ~10-100 here.
  assert report["max_abs_diff"] is not None and report["max_abs_diff"] <= 1e-4


# ---- task models -------------------------------------------------------------------------------

def _classifier_case(summary_type, use_proj, regression=False, activation=None):
  def make(config, directory):
    labels = None if regression else ("neg", "neutral", "pos")
    model = build_classifier(config, 1 if regression else 3, summary_type=summary_type,
                             use_proj=use_proj, is_regression=regression,
                             summary_activation=activation)
    spec = ClassifierSpec(
        "stsb" if regression else "sent", labels, is_regression=regression,
        max_seq_length=16, summary_type=summary_type, use_proj=use_proj,
        summary_activation=activation)
    model_directory.save(_randomize(model, 11), directory, spec, None)
    return model
  return make


def _race_case(config, directory):
  model = _randomize(build_multiple_choice(config), 12)
  model_directory.save(model, directory, RaceSpec(max_seq_length=16), None)
  return model


def _tagger_case(config, directory):
  model = _randomize(build_tagger(config, 5), 13)
  spec = TaggerSpec("ner", ("O", "B-PER", "I-PER", "B-LOC", "I-LOC"),
                    max_seq_length=16, scheme="bio")
  model_directory.save(model, directory, spec, None)
  return model


def _qa_simple_case(config, directory):
  model = _randomize(build_simple_qa(config, start_n_top=3, end_n_top=2), 15)
  spec = SimpleQASpec(max_seq_length=16, max_query_length=4, doc_stride=8,
                      start_n_top=3, end_n_top=2)
  model_directory.save(model, directory, spec, None)
  return model


def _squad_case(config, directory):
  model = _randomize(build_squad_model(config, start_n_top=3, end_n_top=2), 14)
  settings = {"max_seq_length": 16, "doc_stride": 8, "max_query_length": 4,
              "start_n_top": 3, "end_n_top": 2, "version_2_with_negative": True,
              "uncased": False}
  model_directory.save(model, directory, SquadSpec(settings), None)
  return model


TASK_CASES = {
    "classifier_last_proj": (_classifier_case("last", True),
                             transformers.AutoModelForSequenceClassification),
    "classifier_first_no_proj": (_classifier_case("first", False),
                                 transformers.AutoModelForSequenceClassification),
    "classifier_mean_with_padding": (_classifier_case("mean_with_padding", True),
                                     transformers.AutoModelForSequenceClassification),
    # HF applies summary_activation without the projection too (gelu: HF's gelu_new).
    "classifier_gelu_no_proj": (_classifier_case("last", False, activation="gelu"),
                                transformers.AutoModelForSequenceClassification),
    "regression": (_classifier_case("last", True, regression=True),
                   transformers.AutoModelForSequenceClassification),
    "race": (_race_case, transformers.AutoModelForMultipleChoice),
    "tagger": (_tagger_case, transformers.AutoModelForTokenClassification),
    "qa_simple": (_qa_simple_case, transformers.AutoModelForQuestionAnswering),
}


@pytest.mark.parametrize("name", _fast_cases(TASK_CASES, ("classifier_last_proj", "race",
                                                            "tagger", "qa_simple")))
def test_task_model_matches_hf(name, tmp_path):
  make, auto_class = TASK_CASES[name]
  config = _config()
  model = make(config, os.fspath(tmp_path / "ours"))
  report = export_to_huggingface(os.fspath(tmp_path / "ours"), os.fspath(tmp_path / "hf"))
  hf_model, _ = _hf_load(auto_class, tmp_path / "hf")
  assert type(hf_model).__name__ == report["architecture"]

  inputs = _classification_rows(np.random.default_rng(5), config.n_token)
  if name == "race":                                # [B, C, T]: 2 questions x 3 options
    inputs = {k: np.stack([v, np.roll(v, 1, axis=0), np.roll(v, 2, axis=0)], axis=1)[:2]
              for k, v in inputs.items()}
  with torch.no_grad():
    out = hf_model(**_torch(inputs))
  ours = model({k: tf.constant(v) for k, v in inputs.items()}, training=False)
  if name == "qa_simple":                 # [B, T, 2]: start and end logits
    reference = np.stack([out.start_logits.numpy(), out.end_logits.numpy()], -1)
    ours = tf.stack([ours["start_logits"], ours["end_logits"]], -1)
  else:
    reference, ours = out.logits.numpy(), ours["logits"]
  error = max_rel_error(ours, reference)
  print(f"{name}: max rel |ours - HF| {error:.2e} (logits {list(reference.shape)}); "
        f"export-time parity: {report['parity']}")
  assert error <= TOLERANCE

  hf_config = hf_model.config
  if name == "regression":
    assert hf_config.num_labels == 1 and hf_config.problem_type == "regression"
  elif name.startswith("classifier"):
    assert hf_config.id2label == {0: "neg", 1: "neutral", 2: "pos"}
    assert hf_config.label2id == {"neg": 0, "neutral": 1, "pos": 2}
  elif name == "tagger":
    assert hf_config.id2label == {0: "O", 1: "B-PER", 2: "I-PER", 3: "B-LOC", 4: "I-LOC"}
  if name == "classifier_mean_with_padding":
    assert hf_config.summary_type == "mean"
  if name == "classifier_first_no_proj":
    assert (hf_config.summary_type, hf_config.summary_use_proj,
            hf_config.summary_activation) == ("first", False, "linear")
  if name == "classifier_gelu_no_proj":
    assert (hf_config.summary_use_proj, hf_config.summary_activation) == (False, "gelu_new")
  if name == "qa_simple":
    assert (hf_config.start_n_top, hf_config.end_n_top) == (3, 2)


def test_squad_model_matches_hf_question_answering(tmp_path):
  config = _config()
  model = _squad_case(config, os.fspath(tmp_path / "ours"))
  export_to_huggingface(os.fspath(tmp_path / "ours"), os.fspath(tmp_path / "hf"))
  # AutoModelForQuestionAnswering maps xlnet to XLNetForQuestionAnsweringSimple (one
  # start/end projection), not the beam head our SQuAD model has: load the class itself.
  hf_model, _ = _hf_load(transformers.XLNetForQuestionAnswering, tmp_path / "hf")
  assert (hf_model.config.start_n_top, hf_model.config.end_n_top) == (3, 2)

  inputs = _classification_rows(np.random.default_rng(6), config.n_token)
  p_mask = inputs["input_mask"].copy()
  p_mask[:, [3, 8]] = 1.0
  batch, length = p_mask.shape
  cls_index = np.full([batch], length - 1)
  start_positions = np.array([4, 5, 6])
  feed = {k: tf.constant(v) for k, v in inputs.items()}
  feed.update(p_mask=tf.constant(p_mask), cls_index=tf.constant(cls_index))
  kwargs = dict(_torch(inputs), p_mask=torch.as_tensor(p_mask),
                cls_index=torch.as_tensor(cls_index))
  with torch.no_grad():
    out = hf_model(**kwargs)
    hidden = hf_model.transformer(**_torch(inputs))[0]
    hf_start = hf_model.start_logits(hidden, p_mask=kwargs["p_mask"]).numpy()
    hf_end = hf_model.end_logits(hidden, start_positions=torch.as_tensor(start_positions),
                                 p_mask=kwargs["p_mask"]).numpy()
  ours = model(feed, training=False)
  gold = model({**feed, "start_positions": tf.constant(start_positions)}, training=False)

  # HF's inference "log probs" are probabilities; its end top-k is [B, K2 * K1], end-major.
  k1, k2 = 3, 2
  hf_end_index = out.end_top_index.numpy().reshape(batch, k2, k1).transpose(0, 2, 1)
  hf_end_probs = out.end_top_log_probs.numpy().reshape(batch, k2, k1).transpose(0, 2, 1)
  np.testing.assert_array_equal(ours["start_top_index"].numpy(), out.start_top_index.numpy())
  np.testing.assert_array_equal(ours["end_top_index"].numpy(), hf_end_index)
  real = p_mask == 0                     # masked positions: both far below any real logit
  errors = {
      "start_top_probs": max_rel_error(np.exp(ours["start_top_log_probs"]),
                                       out.start_top_log_probs.numpy()),
      "end_top_probs": max_rel_error(np.exp(ours["end_top_log_probs"]), hf_end_probs),
      "cls_logits": max_rel_error(ours["cls_logits"], out.cls_logits.numpy()),
      "start_logits": max_rel_error(gold["start_logits"].numpy()[real], hf_start[real]),
      "end_logits_gold_start": max_rel_error(gold["end_logits"].numpy()[real], hf_end[real]),
  }
  assert np.all(gold["start_logits"].numpy()[~real] < -1e20) and np.all(hf_start[~real] < -1e20)
  print(f"squad: {', '.join(f'{k} {v:.2e}' for k, v in errors.items())}")
  assert max(errors.values()) <= TOLERANCE, errors


# ---- round trips HF -> ours -> HF ----------------------------------------------------------

# Keys of config.json that describe the model (architecture, run options, head).
ROUND_TRIP_KEYS = ("architectures", "vocab_size", "d_model", "n_layer", "n_head", "d_head",
                   "d_inner", "ff_activation", "untie_r", "attn_type", "mem_len",
                   "reuse_len", "bi_data", "clamp_len", "same_length", "dropout",
                   "layer_norm_eps", "initializer_range", "summary_type",
                   "summary_use_proj", "summary_activation", "summary_last_dropout",
                   "start_n_top", "end_n_top", "id2label", "label2id")


def _assert_same_hf_dirs(first, second):
  a = load_file(os.fspath(first / "model.safetensors"))
  b = load_file(os.fspath(second / "model.safetensors"))
  assert sorted(a) == sorted(b)
  for key in a:
    assert a[key].dtype == b[key].dtype == np.float32, key
    assert np.array_equal(a[key], b[key]), key
  config_a = json.loads((first / "config.json").read_text())
  config_b = json.loads((second / "config.json").read_text())
  for key in ROUND_TRIP_KEYS:
    assert config_a.get(key) == config_b.get(key), (key, config_a.get(key), config_b.get(key))
  return len(a)


@pytest.mark.parametrize("untie_r", [True, False])
def test_round_trip_pretrained_is_bit_exact(untie_r, tmp_path):
  config = _config(untie_r=untie_r, mem_len=5, reuse_len=2, clamp_len=7)
  hf_model = make_hf_model(config, seed=21)
  hf_model.save_pretrained(os.fspath(tmp_path / "hf1"))
  convert(os.fspath(tmp_path / "hf1"), os.fspath(tmp_path / "ours"))
  export_to_huggingface(os.fspath(tmp_path / "ours"), os.fspath(tmp_path / "hf2"))
  count = _assert_same_hf_dirs(tmp_path / "hf1", tmp_path / "hf2")
  print(f"round trip (untie_r {untie_r}): {count} tensors bit-exact")


def _hf_task_model(model_class, config, **values):
  return make_hf_model(config, seed=22, model_class=model_class, **values)


ROUND_TRIP_TASKS = {
    "sequence_classification": (transformers.XLNetForSequenceClassification,
                                dict(id2label={0: "neg", 1: "neutral", 2: "pos"},
                                     label2id={"neg": 0, "neutral": 1, "pos": 2})),
    "regression": (transformers.XLNetForSequenceClassification,
                   dict(num_labels=1, problem_type="regression")),
    "question_answering": (transformers.XLNetForQuestionAnswering,
                           dict(start_n_top=3, end_n_top=2)),
    "question_answering_simple": (transformers.XLNetForQuestionAnsweringSimple,
                                  dict(start_n_top=3, end_n_top=2)),
    "multiple_choice_no_proj_relu": (transformers.XLNetForMultipleChoice,
                                     dict(summary_use_proj=False, summary_activation="relu",
                                          summary_type="first")),
    "multiple_choice": (transformers.XLNetForMultipleChoice, {}),
    "token_classification": (transformers.XLNetForTokenClassification,
                             dict(id2label={0: "O", 1: "B-PER", 2: "I-PER"},
                                  label2id={"O": 0, "B-PER": 1, "I-PER": 2})),
}


@pytest.mark.parametrize("name", _fast_cases(ROUND_TRIP_TASKS, (
    "sequence_classification", "question_answering", "multiple_choice")))
def test_round_trip_task_model_is_bit_exact(name, tmp_path):
  model_class, values = ROUND_TRIP_TASKS[name]
  # Fine-tuning's run options (dropout 0.1, no memory), which an import may impose.
  config = _config(dropout=0.1, dropatt=0.1)
  _hf_task_model(model_class, config, **values).save_pretrained(os.fspath(tmp_path / "hf1"))
  report = convert(os.fspath(tmp_path / "hf1"), os.fspath(tmp_path / "ours"))
  assert report["output_kind"] != "pretrained"          # the import kept the head
  export_to_huggingface(os.fspath(tmp_path / "ours"), os.fspath(tmp_path / "hf2"))
  count = _assert_same_hf_dirs(tmp_path / "hf1", tmp_path / "hf2")
  print(f"round trip {name}: {count} tensors bit-exact")


# ---- tokenizer files, model card, CLI -------------------------------------------------------

@pytest.mark.slow
def test_cli_exports_classifier_with_tokenizer_and_card(tmp_path):
  """One run of the command line; the tokenizer is checked against SentencePiece itself."""
  import sentencepiece as spm  # pylint: disable=g-import-not-at-top
  config = _config(n_token=32000)
  model = _randomize(build_classifier(config, 2), 31)
  spec = ClassifierSpec("imdb", ("neg", "pos"), max_seq_length=64,
                        uncased=True)
  source = tmp_path / "ours"
  model_directory.save(model, os.fspath(source), spec, RELEASED_SPIECE)
  (source / model_card.CARD_FILE).write_text(model_card.render(
      title="t", source="s", licence=model_card.RELEASED_LICENCE, config={}, task="x"))
  done = subprocess.run(
      [sys.executable, "-m", "xlnet_tf.convert", "--to", "huggingface",
       f"--source={source}", f"--output={tmp_path / 'hf'}"],
      cwd=ROOT, capture_output=True, text=True, check=False)
  assert done.returncode == 0, done.stderr[-3000:]
  assert "HuggingFace XLNetForSequenceClassification" in done.stdout, done.stdout
  out = tmp_path / "hf"
  assert sorted(os.listdir(out)) == sorted([
      "config.json", "model.safetensors", "spiece.model", "tokenizer_config.json",
      "special_tokens_map.json", "README.md", "conversion.json"])
  assert not [p for p in os.listdir(tmp_path) if ".partial-" in p]

  tokenizer = transformers.AutoTokenizer.from_pretrained(os.fspath(out))
  assert type(tokenizer).__name__ == "XLNetTokenizer"
  assert tokenizer.do_lower_case is True and tokenizer.padding_side == "left"
  assert (tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id,
          tokenizer.mask_token_id) == (3, 4, 5, 6)
  sp = spm.SentencePieceProcessor(model_file=RELEASED_SPIECE)
  text = "Hello World, the Whale"
  assert tokenizer(text)["input_ids"] == sp.encode(text.lower()) + [SEP, CLS]

  card = (out / "README.md").read_text()
  assert card.startswith("---\nlicense: apache-2.0\nlibrary_name: transformers\n"
                         "tags: [xlnet]\n---\n# XLNet ")
  assert "- **Labels** (id: name): 0: neg, 1: pos" in card
  report = json.loads((out / "conversion.json").read_text())
  assert report["parity"] in card and report["max_abs_diff"] <= TOLERANCE
  hf_model, _ = _hf_load(transformers.AutoModelForSequenceClassification, out)
  inputs = _classification_rows(np.random.default_rng(7), config.n_token)
  with torch.no_grad():
    reference = hf_model(**_torch(inputs)).logits.numpy()
  error = max_rel_error(model({k: tf.constant(v) for k, v in inputs.items()})["logits"],
                        reference)
  print(f"CLI classifier: max rel |ours - HF| {error:.2e}; card parity: {report['parity']}")
  assert error <= TOLERANCE


def test_licence_from_the_source_readme(tmp_path):
  assert to_huggingface.source_licence(os.fspath(tmp_path)) == "unknown"
  (tmp_path / "README.md").write_text("---\nlicense: mit\ntags: [x]\n---\n# A model\n")
  assert to_huggingface.source_licence(os.fspath(tmp_path)) == "mit"
  (tmp_path / "README.md").write_text(model_card.render(
      title="t", source="s", licence=model_card.RELEASED_LICENCE, config={}, task="x"))
  assert to_huggingface.source_licence(os.fspath(tmp_path)) == "apache-2.0"
  (tmp_path / "README.md").write_text("# notes without a licence\n")
  assert to_huggingface.source_licence(os.fspath(tmp_path)) == "unknown"


# ---- refusals: exact messages, nothing written -------------------------------------------------

def _nothing_written(tmp_path, output):
  assert not os.path.exists(output)
  assert not [p for p in os.listdir(tmp_path) if ".partial-" in p or ".replaced-" in p]


@pytest.fixture(name="pretrained_dir")
def _pretrained_dir(tmp_path):
  model = _randomize(build_pretrainer(_config()), 41)
  pretrained.save_pretrained(model, os.fspath(tmp_path / "ours"))
  return tmp_path / "ours"


@pytest.mark.parametrize("summary_type", ["mean", "attn"])
def test_summary_type_without_hf_equivalent_refuses(summary_type, tmp_path):
  config = _config()
  model = build_classifier(config, 2, summary_type=summary_type)
  spec = ClassifierSpec("sent", ("a", "b"), summary_type=summary_type)
  source = os.fspath(tmp_path / "ours")
  model_directory.save(model, source, spec, None)
  before = _tree(source)
  with pytest.raises(ValueError) as raised:
    export_to_huggingface(source, os.fspath(tmp_path / "hf"))
  assert str(raised.value) == (
      f"{os.path.join(source, 'classifier.json')}: summary_type {summary_type!r} has no "
      f"HuggingFace equivalent. HuggingFace's XLNetSequenceSummary offers 'last', 'first' "
      f"and 'mean' (the mean over every position, padding included: our "
      f"'mean_with_padding'); our 'mean' averages over the real tokens only and 'attn' "
      f"pools with attention weights of its own. Only models with summary_type 'last', "
      f"'first' or 'mean_with_padding' can be exported")
  _nothing_written(tmp_path, tmp_path / "hf")
  assert _tree(source) == before


def test_race_summary_type_refusal_names_race_json(tmp_path):
  model = build_multiple_choice(_config(), summary_type="mean")
  source = os.fspath(tmp_path / "ours")
  model_directory.save(model, source, RaceSpec(summary_type="mean"), None)
  with pytest.raises(ValueError, match=r"race\.json: summary_type 'mean' has no HuggingFace"):
    export_to_huggingface(source, os.fspath(tmp_path / "hf"))
  _nothing_written(tmp_path, tmp_path / "hf")


def test_existing_output_refuses(pretrained_dir, tmp_path):
  output = tmp_path / "hf"
  output.mkdir()
  (output / "notes.txt").write_text("mine")
  with pytest.raises(FileExistsError) as raised:
    export_to_huggingface(os.fspath(pretrained_dir), os.fspath(output))
  assert str(raised.value) == (
      f"--output {output} exists and is not empty (it holds ['notes.txt']); give a new or "
      f"empty directory, or pass --overwrite to replace a previous export")
  # --overwrite replaces only a previous export, never someone's directory.
  with pytest.raises(FileExistsError) as raised:
    export_to_huggingface(os.fspath(pretrained_dir), os.fspath(output), overwrite=True)
  assert str(raised.value) == (
      f"--output {output} is not the output of a previous export (it holds ['notes.txt'], "
      f"no conversion.json); --overwrite replaces only such an output. Choose a new "
      f"--output, or remove {output} yourself")
  assert os.listdir(output) == ["notes.txt"]
  assert not [p for p in os.listdir(tmp_path) if ".partial-" in p]


def test_empty_output_is_used_and_a_previous_export_replaced(pretrained_dir, tmp_path):
  output = tmp_path / "hf"
  output.mkdir()
  export_to_huggingface(os.fspath(pretrained_dir), os.fspath(output))
  first = (output / "model.safetensors").read_bytes()
  with pytest.raises(FileExistsError, match="exists and is not empty"):
    export_to_huggingface(os.fspath(pretrained_dir), os.fspath(output))
  export_to_huggingface(os.fspath(pretrained_dir), os.fspath(output), overwrite=True)
  assert (output / "model.safetensors").read_bytes() == first
  assert not [p for p in os.listdir(tmp_path) if ".partial-" in p or ".replaced-" in p]


def test_output_inside_source_refuses(pretrained_dir, tmp_path):
  before = _tree(pretrained_dir)
  output = pretrained_dir / "hf"
  with pytest.raises(ValueError, match=r"lies inside --source"):
    export_to_huggingface(os.fspath(pretrained_dir), os.fspath(output))
  assert _tree(pretrained_dir) == before


def test_source_that_is_not_a_model_directory_refuses(tmp_path):
  hf_dir = tmp_path / "hf_in"
  make_hf_model(_config(), seed=1).save_pretrained(os.fspath(hf_dir))
  found = sorted(os.listdir(hf_dir))
  with pytest.raises(ValueError) as raised:
    export_to_huggingface(os.fspath(hf_dir), os.fspath(tmp_path / "out"))
  assert str(raised.value) == (
      f"--source {hf_dir}: not an xlnet_tf model directory: it has no xlnet_config.json. "
      f"Expected xlnet_config.json and model.ckpt.index (written by training, "
      f"xlnet_tf.convert or save_pretrained), plus one of classifier.json, qa_simple.json, "
      f"race.json, squad.json, tagger.json for a fine-tuned model; found {found} (a "
      f"HuggingFace directory is imported with --to xlnet_tf, not exported)")
  _nothing_written(tmp_path, tmp_path / "out")
  with pytest.raises(FileNotFoundError) as raised:
    export_to_huggingface(os.fspath(tmp_path / "missing"), os.fspath(tmp_path / "out"))
  assert str(raised.value) == f"--source {tmp_path / 'missing'}: not a directory"
  _nothing_written(tmp_path, tmp_path / "out")


def test_non_finite_weight_refuses(tmp_path):
  config = _config()
  model = build_pretrainer(config)
  embedding = model.encoder.word_embedding.numpy()
  embedding[3, 1] = np.nan
  model.encoder.word_embedding.assign(embedding)
  source = tmp_path / "ours"                  # written by hand: our writers refuse NaN too
  source.mkdir()
  config.to_json_file(os.fspath(source / "xlnet_config.json"))
  tf.train.Checkpoint(model=model).write(os.fspath(source / "model.ckpt"))
  with pytest.raises(model_directory.NonFiniteError) as raised:
    export_to_huggingface(os.fspath(source), os.fspath(tmp_path / "hf"))
  assert str(raised.value) == (
      f"--source {source}: 1 weight(s) hold NaN or infinite values (e.g. "
      f"transformer.word_embedding.weight, by their HuggingFace names); nothing was written")
  _nothing_written(tmp_path, tmp_path / "hf")


def test_spiece_larger_than_the_vocabulary_refuses(tmp_path):
  model = build_pretrainer(_config())
  pretrained.save_pretrained(model, os.fspath(tmp_path / "ours"), RELEASED_SPIECE)
  spiece = os.path.join(tmp_path / "ours", "spiece.model")
  with pytest.raises(ValueError) as raised:
    export_to_huggingface(os.fspath(tmp_path / "ours"), os.fspath(tmp_path / "hf"))
  assert str(raised.value) == (
      f"{spiece}: 32000 pieces, but n_token (xlnet_config.json) is 96: the tokenizer would "
      f"produce ids the model has no embedding for")
  _nothing_written(tmp_path, tmp_path / "hf")


def test_head_size_hf_cannot_express_refuses(tmp_path):
  model = build_pretrainer(_config(d_head=8))          # 2 heads x 8 != d_model 32
  pretrained.save_pretrained(model, os.fspath(tmp_path / "ours"))
  with pytest.raises(ValueError) as raised:
    export_to_huggingface(os.fspath(tmp_path / "ours"), os.fspath(tmp_path / "hf"))
  assert str(raised.value) == (
      f"{tmp_path / 'ours' / 'xlnet_config.json'}: HuggingFace XLNet needs d_head * n_head "
      f"== d_model, got 8 * 2 != 32")
  _nothing_written(tmp_path, tmp_path / "hf")


def test_without_transformers_the_parity_is_not_measured(pretrained_dir, tmp_path,
                                                         monkeypatch):
  monkeypatch.setitem(sys.modules, "transformers", None)      # import raises ImportError
  report = export_to_huggingface(os.fspath(pretrained_dir), os.fspath(tmp_path / "hf"))
  assert report["parity"] == ("not measured (transformers/torch not installed: install "
                              "xlnet_tf[huggingface])")
  assert report["max_abs_diff"] is None
  card = (tmp_path / "hf" / "README.md").read_text()
  assert f"- **Parity**: {report['parity']}" in card


def test_round_trip_keeps_the_tokenizer_settings(tmp_path):
  config = _config(n_token=32000, dropout=0.1, dropatt=0.1)
  hf1 = tmp_path / "hf1"
  _hf_task_model(transformers.XLNetForSequenceClassification, config,
                 id2label={0: "neg", 1: "pos"}, label2id={"neg": 0, "pos": 1}
                 ).save_pretrained(os.fspath(hf1))
  with open(RELEASED_SPIECE, "rb") as f:
    (hf1 / "spiece.model").write_bytes(f.read())
  (hf1 / "tokenizer_config.json").write_text(json.dumps(
      {"tokenizer_class": "XLNetTokenizer", "do_lower_case": True, "keep_accents": True,
       "remove_space": True}))
  convert(os.fspath(hf1), os.fspath(tmp_path / "ours"))
  export_to_huggingface(os.fspath(tmp_path / "ours"), os.fspath(tmp_path / "hf2"))
  _assert_same_hf_dirs(hf1, tmp_path / "hf2")
  written = json.loads((tmp_path / "hf2" / "tokenizer_config.json").read_text())
  assert (written["do_lower_case"], written["keep_accents"]) == (True, True)
  assert (tmp_path / "hf2" / "spiece.model").read_bytes() == (hf1 / "spiece.model").read_bytes()
  tokenizer = transformers.AutoTokenizer.from_pretrained(os.fspath(tmp_path / "hf2"))
  assert tokenizer.do_lower_case is True and tokenizer.keep_accents is True


def test_round_trip_of_an_lm_keeps_the_tokenizer_settings(tmp_path):
  """An uncased, accent-keeping HF LM: the pretrained model directory records both
  (text.json), and the export writes them back into tokenizer_config.json."""
  config = _config(n_token=32000, mem_len=5, reuse_len=2)
  hf1 = tmp_path / "hf1"
  make_hf_model(config, seed=23).save_pretrained(os.fspath(hf1))
  with open(RELEASED_SPIECE, "rb") as f:
    (hf1 / "spiece.model").write_bytes(f.read())
  (hf1 / "tokenizer_config.json").write_text(json.dumps(
      {"tokenizer_class": "XLNetTokenizer", "do_lower_case": True, "keep_accents": True,
       "remove_space": True}))
  ours = os.fspath(tmp_path / "ours")
  convert(os.fspath(hf1), ours)
  assert model_directory.read_text_settings(ours) == {"uncased": True, "keep_accents": True}
  assert json.loads((tmp_path / "ours" / model_directory.TEXT_FILE).read_text()) == {
      "uncased": True, "keep_accents": True}
  convert(os.fspath(hf1), ours, overwrite=True)           # text.json is a conversion's file
  report = export_to_huggingface(ours, os.fspath(tmp_path / "hf2"))
  _assert_same_hf_dirs(hf1, tmp_path / "hf2")
  written = json.loads((tmp_path / "hf2" / "tokenizer_config.json").read_text())
  assert (written["do_lower_case"], written["keep_accents"]) == (True, True)
  assert report["tokenizer"] == {"do_lower_case": True, "keep_accents": True}
  assert not any("do_lower_case false" in note for note in report["notes"])
  tokenizer = transformers.AutoTokenizer.from_pretrained(os.fspath(tmp_path / "hf2"))
  assert tokenizer.do_lower_case is True and tokenizer.keep_accents is True

  # The default (cased, accents stripped) writes no text.json and exports false, false.
  (hf1 / "tokenizer_config.json").unlink()
  convert(os.fspath(hf1), ours, overwrite=True)
  assert not (tmp_path / "ours" / model_directory.TEXT_FILE).exists()
  export_to_huggingface(ours, os.fspath(tmp_path / "hf2"), overwrite=True)
  written = json.loads((tmp_path / "hf2" / "tokenizer_config.json").read_text())
  assert (written["do_lower_case"], written["keep_accents"]) == (False, False)
