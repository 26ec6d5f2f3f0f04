r"""Command line: continue a text with a pretrained model directory (see `xlnet_tf.generation`).

  xlnet-generate --model_dir converted/xlnet_base --prompt "The ship" --max_new_tokens 50
  xlnet-generate --model_dir DIR --prompt "text" --max_new_tokens 50 \
      --strategy sample --top_k 40 --top_p 0.9 --temperature 0.8 --seed 1

(`python -m experiments.generate ...` works the same from a checkout.)

--model_dir is a pretrained model directory or a preset's name ("xlnet_base_cased", see
`xlnet_tf.presets`; downloaded and converted on first use). The prompt is normalised as
the directory records (`model_directory.read_text_settings`: lower-cased if uncased,
accents kept if keep_accents; --uncased / --keep_accents force either on, --nouncased /
--nokeep_accents off) and encoded with the directory's spiece.model (or --spiece_model),
as the data pipeline encodes text; the continuation (the new tokens up to a stop id, <eop>
as a line break) is printed to stdout. The model is loaded with bi_data=False: bi_data
(forward and backward encodings for the two halves of a pretraining batch) is a
pretraining data option, and generation runs one direction, so the pipeline's own
pretrained models (recorded with bi_data=True) generate as they are. A missing directory,
SentencePiece model, a prompt that is not valid UTF-8, weights holding NaN or an
infinity, or an invalid option ends the run with exit status 1 and one line naming it;
an unknown flag or a missing --model_dir / --prompt ends it as absl does (exit status 1,
the flag named). TensorFlow's start-up lines and INFO logging show only with --verbosity
(`xlnet_tf.console`).
"""

import os
from typing import Sequence

from xlnet_tf import console

console.start()  # before TensorFlow is imported: the log levels of --verbosity

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from xlnet_tf import generation  # noqa: E402
from xlnet_tf import hub  # noqa: E402
from xlnet_tf import model_directory  # noqa: E402
from xlnet_tf import pretrained  # noqa: E402
from xlnet_tf.data import tokenization  # noqa: E402

PROG = "xlnet-generate"


def define_flags(flag_values: flags.FlagValues = flags.FLAGS) -> None:
  """The command's flags, into `flag_values`. `run` defines them (not the import, so that
  a process that imports this module beside other commands' has no clash of names)."""
  flags.DEFINE_string("model_dir", None, "A pretrained model directory (xlnet_config.json, "
                      "model.ckpt.*) or a preset name (xlnet_tf.presets).",
                      flag_values=flag_values)
  flags.DEFINE_string("prompt", None, "The text to continue.", flag_values=flag_values)
  flags.DEFINE_integer("max_new_tokens", 50, "Tokens to generate (fewer when a stop id "
                       "comes first).", flag_values=flag_values)
  flags.DEFINE_enum("strategy", "greedy", ["greedy", "sample"], "greedy: the most likely "
                    "token; sample: drawn (see --temperature, --top_k, --top_p, --seed).",
                    flag_values=flag_values)
  flags.DEFINE_float("temperature", 1.0, "Sampling: the logits are divided by it.",
                     flag_values=flag_values)
  flags.DEFINE_integer("top_k", 0, "Sampling: only the k most likely tokens; 0 = off.",
                       flag_values=flag_values)
  flags.DEFINE_float("top_p", 1.0, "Sampling: only the most likely tokens holding this "
                     "much probability; 1 = off.", flag_values=flag_values)
  flags.DEFINE_integer("seed", None, "Sampling seed (default: a fresh random one).",
                       flag_values=flag_values)
  flags.DEFINE_string("spiece_model", None,
                      f"Default: MODEL_DIR/{model_directory.SPIECE_FILE}.",
                      flag_values=flag_values)
  flags.DEFINE_bool("uncased", None, "Lower-case the prompt (default: as the model "
                    "directory records, else cased).", flag_values=flag_values)
  flags.DEFINE_bool("keep_accents", None, "Keep the prompt's accents (default: as the model "
                    "directory records, else stripped).", flag_values=flag_values)
  flags.DEFINE_bool("no_mems", False, "Recompute the whole sequence at every step (no "
                    "memory).", flag_values=flag_values)
  flags.DEFINE_integer("mem_len", None, "Memory rows kept per layer, 0 = all (default: the "
                       "config's).", flag_values=flag_values)
  flags.DEFINE_integer("reuse_len", None, "Only the first REUSE_LEN fed positions of a step "
                       "enter the memory (HF's cache_mem), 0 = all (default: the config's).",
                       flag_values=flag_values)
  flags.mark_flags_as_required(["model_dir", "prompt"], flag_values=flag_values)


def parse_flags(argv: Sequence[str]) -> flags.FlagValues:
  """The command's flags parsed from `argv` (argv[0] the program) into a `FlagValues` of
  their own (absl's global FLAGS untouched): for calling `main` from Python. absl's errors
  (flags.Error) for an unknown flag, a bad value or a missing --model_dir / --prompt."""
  values = flags.FlagValues()
  define_flags(values)
  values(list(argv))
  return values


def decode(sp, ids: Sequence[int], stop_ids: Sequence[int]) -> str:
  """Text of `ids` up to the first stop id; <eop> (end of paragraph) becomes a line break."""
  ids = [int(i) for i in ids]
  for index, value in enumerate(ids):
    if value in stop_ids:
      ids = ids[:index]
      break
  paragraphs, current = [], []
  for value in ids:
    if value == tokenization.EOP_ID:
      paragraphs.append(current)
      current = []
    else:
      current.append(value)
  paragraphs.append(current)
  return "\n".join(sp.decode_ids(p) for p in paragraphs)


def continuation(values: flags.FlagValues) -> str:
  """The continuation of --prompt, by the command's flags `values`; ValueError / OSError /
  NonFiniteError for bad inputs."""
  try:
    values.prompt.encode("utf-8")
  except UnicodeEncodeError as e:        # undecodable bytes of argv (surrogate escapes)
    raise ValueError(f"--prompt: not valid UTF-8 (character {e.start + 1} of the prompt); "
                     f"give UTF-8 text") from None
  try:
    model_dir = hub.model_dir(values.model_dir)
  except FileNotFoundError as e:
    raise FileNotFoundError(f"--model_dir: {e}") from None
  spiece = values.spiece_model or os.path.join(model_dir, model_directory.SPIECE_FILE)
  if not os.path.isfile(spiece):
    raise FileNotFoundError(
        f"--spiece_model: SentencePiece model not found: {spiece}"
        + ("" if values.spiece_model
           else " (the model directory has none; give --spiece_model)"))
  sp = tokenization.load_spiece(spiece)
  text = model_directory.read_text_settings(model_dir)
  lower = text["uncased"] if values.uncased is None else values.uncased
  keep_accents = (text["keep_accents"] if values.keep_accents is None
                  else values.keep_accents)
  prompt = tokenization.encode_ids(sp, tokenization.normalize_text(
      values.prompt, lower=lower, keep_accents=keep_accents))
  if not prompt:
    raise ValueError(f"--prompt: no tokens in {values.prompt!r}")

  model = pretrained.load_directory(model_dir, bi_data=False)   # a pretraining option; see above
  if sp.get_piece_size() != model.encoder.config.n_token:
    raise ValueError(f"--spiece_model: {spiece} has {sp.get_piece_size()} pieces, the model "
                     f"{model.encoder.config.n_token} (n_token)")
  tokens = generation.generate(
      model, prompt, values.max_new_tokens, strategy=values.strategy,
      temperature=values.temperature, top_k=values.top_k, top_p=values.top_p,
      seed=values.seed, use_mems=not values.no_mems, mem_len=values.mem_len,
      reuse_len=values.reuse_len)
  return decode(sp, tokens, generation.DEFAULT_STOP_IDS)


def main(argv: Sequence[str], flag_values: flags.FlagValues = flags.FLAGS) -> None:
  """absl's main: prints the continuation; a bad input ends the run (exit status 1) with
  one line naming it. `flag_values`: the parsed flags (`parse_flags`; absl's FLAGS when
  started as a command)."""
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  try:
    text = continuation(flag_values)
  except (ValueError, OSError, model_directory.NonFiniteError) as e:
    message = str(e)
    if message.startswith(("max_new_tokens", "temperature", "top_k", "top_p", "seed",
                           "mem_len", "reuse_len")):
      message = "--" + message
    raise SystemExit(f"{PROG}: {message}") from None
  print(text)


def run() -> None:
  """`xlnet-generate` (pyproject.toml's [project.scripts]) and `python -m
  experiments.generate`."""
  define_flags()
  console.run(main, __name__)


if __name__ == "__main__":
  run()
