"""Text generation (`xlnet_tf.generation`, `python -m experiments.generate`).

Greedy tokens and every step's logits are compared with HuggingFace's
`XLNetLMHeadModel.generate` (the reference) on the same weights (HF random weights,
saved with HF's `save_pretrained`, converted with `xlnet_tf.convert`).
"""

import os

import numpy as np
import pytest
import tensorflow as tf
import torch

from hf_reference import make_hf_model
from helpers import max_rel_error
from helpers import small_config
from xlnet_tf import build_pretrainer
from experiments import generate as cli
from xlnet_tf import load_pretrained
from xlnet_tf import save_pretrained
from xlnet_tf.convert.importer import convert
from xlnet_tf.data import tokenization
from xlnet_tf.generation import DEFAULT_STOP_IDS
from xlnet_tf.generation import _decoder
from xlnet_tf.generation import generate

NEW_TOKENS = 20
TOLERANCE = 1e-5
PAD = tokenization.PAD_ID


def _tiny(**overrides):
  values = dict(n_token=60, d_model=32, d_head=16, d_inner=64)
  values.update(overrides)
  return small_config(**values)


def _hf_and_ours(tmp_path, config, seed=0):
  hf_model = make_hf_model(config, seed=seed)
  hf_model.save_pretrained(os.fspath(tmp_path / "hf"))
  convert(os.fspath(tmp_path / "hf"), os.fspath(tmp_path / "ours"))
  return hf_model, load_pretrained(os.fspath(tmp_path / "ours"))


def _hf_generate(hf_model, prompts, max_new_tokens=NEW_TOKENS, stop_ids=None, **kwargs):
  """(new tokens [B, N], logits [B, N, V]) of HF's greedy `generate`.

  With attn_type "uni" HF's generation fails for a batch of more than one row (its causal
  mask is broadcast in place), so it then runs row by row (rows are independent)."""
  if hf_model.config.attn_type == "uni" and len(prompts) > 1:
    rows = [_hf_generate(hf_model, [row], max_new_tokens, stop_ids, **kwargs)
            for row in prompts]
    assert len({r[0].shape for r in rows}) == 1, "rows of different lengths"
    return tuple(np.concatenate(parts) for parts in zip(*rows))
  out = hf_model.generate(torch.as_tensor(np.asarray(prompts), dtype=torch.long),
                          max_new_tokens=max_new_tokens, do_sample=False,
                          eos_token_id=list(stop_ids) if stop_ids else None, pad_token_id=PAD,
                          output_scores=True, return_dict_in_generate=True, **kwargs)
  new = out.sequences[:, np.asarray(prompts).shape[1]:].numpy()
  return new, torch.stack(out.scores, dim=1).numpy()


PROMPTS = {
    "batch_of_two": [[11, 12, 13, 14, 15], [20, 30, 40, 50, 21]],
    "one_token": [[33]],
    "longer": [[10 + (7 * i) % 45 for i in range(9)]],
}

SCENARIOS = {
    "unbounded_memory": {},
    "mem_len_6": dict(mem_len=6),
    "attn_type_uni": dict(attn_type="uni"),
    "clamp_len_3": dict(clamp_len=3),
    "tied_biases": dict(untie_r=False),
    # HF's cache_mem keeps only the first reuse_len fed positions of a step in memory.
    "reuse_len_4": dict(reuse_len=4),
    "reuse_len_2_mem_len_6": dict(reuse_len=2, mem_len=6),
}


# Two scenarios in the fast tier (a memory, and a memory cut at reuse_len); the others slow.
FAST_SCENARIOS = ("mem_len_6", "reuse_len_2_mem_len_6")


@pytest.mark.parametrize("scenario", [
    name if name in FAST_SCENARIOS else pytest.param(name, marks=pytest.mark.slow)
    for name in sorted(SCENARIOS)])
def test_greedy_matches_huggingface(scenario, tmp_path):
  """HF's default (`use_mems` unset: its config's use_mems_eval, True) against ours with
  memory (our default), and HF's `use_mems=False` against ours without memory: the same
  tokens and logits at every step, for three prompts (a batch, one token, 9 tokens)."""
  config = _tiny(**SCENARIOS[scenario])
  hf_model, model = _hf_and_ours(tmp_path, config, seed=len(scenario))
  assert hf_model.config.use_mems_eval is True
  assert hf_model.config.reuse_len == (config.reuse_len or None)
  differs = cut_matters = False
  for name, prompts in PROMPTS.items():
    ref_mems, ref_mems_logits = _hf_generate(hf_model, prompts)
    ref_full, ref_full_logits = _hf_generate(hf_model, prompts, use_mems=False)
    ours, logits = generate(model, prompts, NEW_TOKENS, stop_ids=(), return_logits=True)
    np.testing.assert_array_equal(ours, ref_mems, err_msg=f"{name}, use_mems=True")
    assert max_rel_error(logits, ref_mems_logits) <= TOLERANCE, name
    ours, logits = generate(model, prompts, NEW_TOKENS, stop_ids=(), use_mems=False,
                            return_logits=True)
    np.testing.assert_array_equal(ours, ref_full, err_msg=f"{name}, use_mems=False")
    assert max_rel_error(logits, ref_full_logits) <= TOLERANCE, name
    differs |= max_rel_error(ref_mems_logits, ref_full_logits) > 1e-3
    if config.reuse_len:     # HF's generate does cut the memory: without the cut, others
      _, uncut = generate(model, prompts, NEW_TOKENS, stop_ids=(), reuse_len=0,
                          return_logits=True)
      cut_matters |= max_rel_error(uncut, ref_mems_logits) > 1e-3
  assert cut_matters == bool(config.reuse_len)
  # With bidirectional attention the two schemes compute different things (a token in
  # memory keeps the states it had before later tokens existed), so the comparison tells
  # them apart; with causal attention ("uni") later tokens change nothing: they agree.
  assert differs == (config.attn_type == "bi")


def test_a_stop_id_ends_each_row_as_huggingface(tmp_path):
  hf_model, model = _hf_and_ours(tmp_path, _tiny())
  prompts = PROMPTS["batch_of_two"]
  free, _ = _hf_generate(hf_model, prompts)
  stop = int(free[0, 3])                         # row 0 emits it at step 3 (or earlier)
  ref, _ = _hf_generate(hf_model, prompts, stop_ids=[stop])
  ours = generate(model, prompts, NEW_TOKENS, stop_ids=(stop,))
  np.testing.assert_array_equal(ours, ref)
  first = int(np.argmax(free[0] == stop))
  assert ours[0, first] == stop and (ours[0, first + 1:] == PAD).all()
  if (free[1] == stop).any():
    assert ours.shape[1] < NEW_TOKENS


def test_default_stop_ids_are_eod_and_eos():
  model = build_pretrainer(_tiny(n_token=40))
  prompts = [[11, 12, 13], [14, 15, 16]]
  bias = model.lm_head.bias
  for stop in (tokenization.EOD_ID, tokenization.EOS_ID):
    bias.assign(tf.one_hot(stop, 40) * 100.0)                # every row emits `stop` first
    np.testing.assert_array_equal(generate(model, prompts, 10), [[stop], [stop]])
    assert generate(model, prompts, 10, stop_ids=()).shape == (2, 10)
  assert set(DEFAULT_STOP_IDS) == {tokenization.EOD_ID, tokenization.EOS_ID}


@pytest.fixture(scope="module")
def random_model():
  return build_pretrainer(_tiny(n_token=50))


def test_sampling_is_reproducible_from_the_seed(random_model):
  prompts = [[11, 12, 13, 14], [15, 16, 17, 18]]
  options = dict(strategy="sample", temperature=2.0, stop_ids=())
  first = generate(random_model, prompts, NEW_TOKENS, seed=7, **options)
  again = generate(random_model, prompts, NEW_TOKENS, seed=7, **options)
  other = generate(random_model, prompts, NEW_TOKENS, seed=8, **options)
  greedy = generate(random_model, prompts, NEW_TOKENS, stop_ids=())
  np.testing.assert_array_equal(first, again)
  assert (first != other).any()
  assert (first != greedy).any()


def test_each_step_and_row_draws_afresh():
  """With a zero word embedding (tied to the LM head) and a zero bias every logit is 0:
  each draw is uniform over the 50 tokens. Draws seeded by the seed alone (not the step)
  would repeat one token per row."""
  model = build_pretrainer(_tiny(n_token=50))
  model.encoder.word_embedding.assign(tf.zeros_like(model.encoder.word_embedding))
  tokens, logits = generate(model, [[11, 12], [11, 12]], 40, strategy="sample", seed=5,
                            stop_ids=(), return_logits=True)
  assert np.all(logits == 0)
  assert all(len(set(row)) >= 20 for row in tokens.tolist())
  assert (tokens[0] != tokens[1]).any()


def test_top_k_1_and_a_tiny_top_p_are_greedy(random_model):
  prompts = [[21, 22, 23], [24, 25, 26]]
  greedy = generate(random_model, prompts, NEW_TOKENS, stop_ids=())
  for options in (dict(top_k=1), dict(top_p=1e-6), dict(top_k=1, top_p=0.5)):
    sampled = generate(random_model, prompts, NEW_TOKENS, strategy="sample",
                       temperature=3.0, seed=3, stop_ids=(), **options)
    np.testing.assert_array_equal(sampled, greedy, err_msg=str(options))


@pytest.mark.parametrize("top_k, top_p", [(3, 1.0), (0, 0.6), (5, 0.5)])
def test_samples_stay_in_the_top_k_and_the_nucleus(random_model, top_k, top_p):
  """Every draw is among the k most probable tokens and in the smallest set of most
  probable tokens whose probability reaches top_p (after temperature), computed here with
  numpy from the returned logits."""
  temperature = 1.5
  tokens, logits = generate(random_model, [[30 + i, 31, 32 + i] for i in range(4)], 30,
                            strategy="sample", temperature=temperature, top_k=top_k,
                            top_p=top_p, seed=11, stop_ids=(), return_logits=True)
  allowed_sizes = []
  for row_tokens, row_logits in zip(tokens, logits):
    for token, step_logits in zip(row_tokens, row_logits):
      scaled = step_logits / temperature
      order = np.argsort(-scaled, kind="stable")
      allowed = order[:top_k] if top_k else order
      probs = np.exp(scaled[allowed] - scaled[allowed].max())
      probs /= probs.sum()
      before = np.cumsum(probs) - probs
      allowed = allowed[before < top_p]
      assert token in allowed
      allowed_sizes.append(len(allowed))
  assert max(allowed_sizes) > 1                  # the draws were not all forced


INVALID = [
    (dict(prompt_ids=[]), "prompt_ids"),
    (dict(prompt_ids=[[1, 2], [3]]), "prompt_ids"),
    (dict(prompt_ids=[[1, 50]]), "prompt_ids"),
    (dict(prompt_ids=[[-1, 2]]), "prompt_ids"),
    (dict(max_new_tokens=0), "max_new_tokens"),
    (dict(strategy="beam"), "strategy"),
    (dict(temperature=0.0), "temperature"),
    (dict(temperature=-1.0), "temperature"),
    (dict(top_k=-1), "top_k"),
    (dict(top_p=0.0), "top_p"),
    (dict(top_p=1.5), "top_p"),
    (dict(seed=-3), "seed"),
    (dict(seed=1.5), "seed"),
    (dict(stop_ids=(50,)), "stop_ids"),
    (dict(pad_id=99), "pad_id"),
    (dict(mem_len=-1), "mem_len"),
    (dict(reuse_len=-1), "reuse_len"),
    (dict(reuse_len=True), "reuse_len"),
]


@pytest.mark.parametrize("overrides, name", INVALID, ids=[f"{n}{i}" for i, (_, n) in
                                                          enumerate(INVALID)])
def test_an_invalid_argument_is_named(random_model, overrides, name):
  arguments = dict(prompt_ids=[[11, 12]], max_new_tokens=3)
  arguments.update(overrides)
  with pytest.raises(ValueError, match=rf"^{name}"):
    generate(random_model, **arguments)


def test_one_trace_for_every_step_length_and_option():
  model = build_pretrainer(_tiny(n_token=50))
  generate(model, [[11, 12, 13]], 12, stop_ids=())
  step = _decoder(model).step
  assert step.experimental_get_tracing_count() == 1
  generate(model, [[11] * 7, [12] * 7], 9, strategy="sample", top_k=4, top_p=0.8, seed=1,
           temperature=0.7, stop_ids=())
  generate(model, [[11, 12]], 5, use_mems=False, mem_len=3, stop_ids=())
  generate(model, [[11, 12, 13, 14]], 5, reuse_len=2, stop_ids=())
  assert step.experimental_get_tracing_count() == 1
  assert _decoder(model).position_keys.experimental_get_tracing_count() == 1


def test_mixed_bfloat16_model_generates_close_to_float32(random_model):
  import tf_keras  # pylint: disable=g-import-not-at-top
  prompts = [[11, 12, 13], [14, 15, 16]]
  _, reference = generate(random_model, prompts, 6, stop_ids=(), return_logits=True)
  tf_keras.mixed_precision.set_global_policy("mixed_bfloat16")
  model = build_pretrainer(random_model.encoder.config)
  model.set_weights(random_model.get_weights())
  _, logits = generate(model, prompts, 6, stop_ids=(), return_logits=True)
  assert logits.dtype == np.float32
  # Same tokens fed for the first step; bfloat16 keeps ~3 significant digits.
  assert max_rel_error(logits[:, 0], reference[:, 0]) < 0.05


def test_a_single_prompt_gives_a_flat_result(random_model):
  flat = generate(random_model, [11, 12, 13], 4, stop_ids=())
  batch = generate(random_model, np.array([[11, 12, 13]]), 4, stop_ids=())
  assert flat.shape == (4,) and batch.shape == (1, 4)
  np.testing.assert_array_equal(flat, batch[0])


# ---- command line -------------------------------------------------------------------------

def _cli(argv):
  """`xlnet-generate ARGV` in this process: the command's absl flags parsed from `argv` (into
  a FlagValues of their own), then its main."""
  cli.main(["xlnet-generate"], cli.parse_flags(["xlnet-generate", *argv]))


@pytest.fixture(scope="module")
def model_dir(spiece_model, tmp_path_factory):
  directory = os.fspath(tmp_path_factory.mktemp("generation") / "model")
  save_pretrained(build_pretrainer(_tiny(n_token=4000)), directory, spiece_model=spiece_model)
  return directory


def test_cli_prints_the_decoded_continuation(model_dir, spiece_model, capsys):
  prompt = "Call me Ishmael. Some years ago"
  _cli(["--model_dir", model_dir, "--prompt", prompt, "--max_new_tokens", "6",
        "--strategy", "sample", "--top_k", "40", "--top_p", "0.9", "--temperature",
        "0.8", "--seed", "1"])
  printed = capsys.readouterr().out
  sp = tokenization.load_spiece(spiece_model)
  ids = tokenization.encode_ids(sp, tokenization.normalize_text(prompt))
  tokens = generate(load_pretrained(model_dir), ids, 6, strategy="sample", top_k=40,
                    top_p=0.9, temperature=0.8, seed=1)
  assert printed == cli.decode(sp, tokens, DEFAULT_STOP_IDS) + "\n"
  assert printed.strip()


def test_cli_decode_stops_and_breaks_paragraphs(spiece_model):
  sp = tokenization.load_spiece(spiece_model)
  a, b = (tokenization.encode_ids(sp, t) for t in ("the whale", "the sea"))
  ids = a + [tokenization.EOP_ID] + b + [tokenization.EOD_ID] + a
  assert cli.decode(sp, ids, DEFAULT_STOP_IDS) == "the whale\nthe sea"


@pytest.mark.parametrize("flags, message", [
    (["--model_dir", "/nonexistent/model"],
     "--model_dir: /nonexistent/model: neither a model directory (no such directory)"),
    (["--spiece_model", "/nonexistent/spiece.model"], "--spiece_model: SentencePiece model"),
    (["--max_new_tokens", "0"], "--max_new_tokens must be >= 1"),
    (["--top_p", "2"], "--top_p must be in"),
])
def test_cli_errors_are_one_line(model_dir, flags, message):
  argv = ["--model_dir", model_dir, "--prompt", "the whale"] + flags
  with pytest.raises(SystemExit) as raised:
    _cli(argv)
  text = str(raised.value)
  assert text.startswith("xlnet-generate: ") and message in text and "\n" not in text


def test_cli_without_spiece_in_the_model_dir(tmp_path):
  directory = os.fspath(tmp_path / "model")
  save_pretrained(build_pretrainer(_tiny()), directory)
  with pytest.raises(SystemExit, match="spiece.model"):
    _cli(["--model_dir", directory, "--prompt", "x"])


def _prompt_fed_by_the_cli(monkeypatch, argv):
  """The prompt ids `python -m experiments.generate argv` passes to `generate` (not run)."""
  from xlnet_tf import generation  # pylint: disable=g-import-not-at-top
  fed = []

  def fake_generate(model, prompt, *args, **kwargs):
    del model, args, kwargs
    fed.append(list(prompt))
    return [tokenization.EOD_ID]
  monkeypatch.setattr(generation, "generate", fake_generate)
  _cli(argv)
  return fed[0]


@pytest.mark.parametrize("text, flags, lower, keep_accents", [
    (None, [], False, False),                                      # nothing recorded
    ({"uncased": True, "keep_accents": False}, [], True, False),   # text.json
    ({"uncased": False, "keep_accents": True}, [], False, True),
    (None, ["--uncased", "--keep_accents"], True, True),           # the flags force them
])
def test_cli_normalises_the_prompt_as_the_model_directory_records(
    spiece_model, tmp_path, monkeypatch, text, flags, lower, keep_accents):
  directory = os.fspath(tmp_path / "model")
  save_pretrained(build_pretrainer(_tiny(n_token=4000)), directory,
                  spiece_model=spiece_model, text=text)
  assert os.path.exists(os.path.join(directory, "text.json")) == (text is not None)
  prompt = "CALL me Ishmaël, café"
  fed = _prompt_fed_by_the_cli(
      monkeypatch, ["--model_dir", directory, "--prompt", prompt] + flags)
  sp = tokenization.load_spiece(spiece_model)
  expected = tokenization.encode_ids(sp, tokenization.normalize_text(
      prompt, lower=lower, keep_accents=keep_accents))
  assert fed == expected
  assert len({tuple(tokenization.encode_ids(sp, tokenization.normalize_text(
      prompt, lower=a, keep_accents=b))) for a in (False, True) for b in (False, True)}) == 4


def test_cli_accepts_a_preset_name(model_dir, monkeypatch):
  from xlnet_tf import hub  # pylint: disable=g-import-not-at-top
  asked = []
  monkeypatch.setattr(hub, "preset_names", lambda: ["tiny_generation_preset"])
  monkeypatch.setattr(hub, "resolve",
                      lambda name, *args, **kwargs: asked.append(name) or model_dir)
  fed = _prompt_fed_by_the_cli(
      monkeypatch, ["--model_dir", "tiny_generation_preset", "--prompt", "the whale"])
  assert asked == ["tiny_generation_preset"] and fed
  with pytest.raises(SystemExit, match="--model_dir: no_such_preset: neither a model "
                     r"directory \(no such directory\) nor a preset; the known presets are "
                     r"\['tiny_generation_preset'\]"):
    _cli(["--model_dir", "no_such_preset", "--prompt", "x"])
  assert asked == ["tiny_generation_preset"]
