r"""Command line: continue a text with a pretrained model directory (see `xlnet_tf.generation`).

  xlnet-generate --model_dir converted/xlnet_base --prompt "The ship" --max_new_tokens 50
  xlnet-generate --model_dir DIR --prompt "text" --max_new_tokens 50 \
      --strategy sample --top_k 40 --top_p 0.9 --temperature 0.8 --seed 1

(`python -m xlnet_tf.generate ...` works the same from a checkout.)

--model_dir is a pretrained model directory or a preset's name ("xlnet_base_cased", see
`xlnet_tf.presets`; downloaded and converted on first use). The prompt is normalised as
the directory records (`model_directory.read_text_settings`: lower-cased if uncased,
accents kept if keep_accents; --uncased / --keep_accents force either on) and encoded
with the directory's spiece.model (or --spiece_model), as the data pipeline encodes
text; the continuation (the new tokens up to a stop id, <eop> as a line break) is printed
to stdout. The model is loaded with bi_data=False: bi_data (forward and backward encodings
for the two halves of a pretraining batch) is a pretraining data option, and generation
runs one direction, so the pipeline's own pretrained models (recorded with bi_data=True)
generate as they are. A missing directory, SentencePiece model, a prompt that is not valid
UTF-8, weights holding NaN or an infinity, or an invalid option ends the run with exit
status 1 and one line naming it.
"""

import argparse
import os
import sys
from typing import List, Optional, Sequence

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from xlnet_tf import model_directory  # noqa: E402
from xlnet_tf.data import tokenization  # noqa: E402

PROG = "xlnet_tf.generate"
COMMAND = "xlnet-generate"          # the console command (pyproject.toml's [project.scripts])


def _parser() -> argparse.ArgumentParser:
  started_as = os.path.splitext(os.path.basename(sys.argv[0]))[0]
  prog = COMMAND if started_as == COMMAND else f"python -m {PROG}"
  parser = argparse.ArgumentParser(prog=prog, description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--model_dir", required=True,
                      help="A pretrained model directory (xlnet_config.json, model.ckpt.*) "
                           "or a preset name (xlnet_tf.presets).")
  parser.add_argument("--prompt", required=True, help="The text to continue.")
  parser.add_argument("--max_new_tokens", type=int, default=50)
  parser.add_argument("--strategy", default="greedy", choices=["greedy", "sample"])
  parser.add_argument("--temperature", type=float, default=1.0)
  parser.add_argument("--top_k", type=int, default=0, help="0 = off.")
  parser.add_argument("--top_p", type=float, default=1.0, help="1 = off.")
  parser.add_argument("--seed", type=int, default=None,
                      help="Sampling seed (default: a fresh random one).")
  parser.add_argument("--spiece_model", default=None,
                      help=f"Default: MODEL_DIR/{model_directory.SPIECE_FILE}.")
  parser.add_argument("--uncased", action="store_true", default=None,
                      help="Lower-case the prompt (default: as the model directory "
                           "records, else cased).")
  parser.add_argument("--keep_accents", action="store_true", default=None,
                      help="Keep the prompt's accents (default: as the model directory "
                           "records, else stripped).")
  parser.add_argument("--no_mems", action="store_true",
                      help="Recompute the whole sequence at every step (no memory).")
  parser.add_argument("--mem_len", type=int, default=None,
                      help="Memory rows kept per layer, 0 = all (default: the config's).")
  parser.add_argument("--reuse_len", type=int, default=None,
                      help="Only the first REUSE_LEN fed positions of a step enter the "
                           "memory (HF's cache_mem), 0 = all (default: the config's).")
  return parser


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


def resolve_model_dir(model_dir: str) -> str:
  """`model_dir` itself, or the cached model directory of the preset it names."""
  if os.path.isdir(model_dir):
    return model_dir
  from xlnet_tf import presets  # pylint: disable=g-import-not-at-top
  if model_dir in presets.preset_names():
    return presets.model_dir(model_dir)
  raise FileNotFoundError(f"--model_dir: no such directory and no preset of that name: "
                          f"{model_dir} (the presets are {presets.preset_names()})")


def run(args: argparse.Namespace) -> str:
  """The continuation of `args.prompt`; ValueError / OSError / NonFiniteError for bad
  inputs."""
  try:
    args.prompt.encode("utf-8")
  except UnicodeEncodeError as e:        # undecodable bytes of argv (surrogate escapes)
    raise ValueError(f"--prompt: not valid UTF-8 (character {e.start + 1} of the prompt); "
                     f"give UTF-8 text") from None
  model_dir = resolve_model_dir(args.model_dir)
  spiece = args.spiece_model or os.path.join(model_dir, model_directory.SPIECE_FILE)
  if not os.path.isfile(spiece):
    raise FileNotFoundError(
        f"--spiece_model: SentencePiece model not found: {spiece}"
        + ("" if args.spiece_model else " (the model directory has none; give --spiece_model)"))
  sp = tokenization.load_spiece(spiece)
  text = model_directory.read_text_settings(model_dir)
  lower = text["uncased"] if args.uncased is None else args.uncased
  keep_accents = text["keep_accents"] if args.keep_accents is None else args.keep_accents
  prompt = tokenization.encode_ids(sp, tokenization.normalize_text(
      args.prompt, lower=lower, keep_accents=keep_accents))
  if not prompt:
    raise ValueError(f"--prompt: no tokens in {args.prompt!r}")

  from xlnet_tf import generation  # pylint: disable=g-import-not-at-top
  from xlnet_tf.pretrained import load_pretrained  # pylint: disable=g-import-not-at-top
  model = load_pretrained(model_dir, bi_data=False)   # a pretraining option; see above
  if sp.get_piece_size() != model.encoder.config.n_token:
    raise ValueError(f"--spiece_model: {spiece} has {sp.get_piece_size()} pieces, the model "
                     f"{model.encoder.config.n_token} (n_token)")
  tokens = generation.generate(
      model, prompt, args.max_new_tokens, strategy=args.strategy,
      temperature=args.temperature, top_k=args.top_k, top_p=args.top_p, seed=args.seed,
      use_mems=not args.no_mems, mem_len=args.mem_len, reuse_len=args.reuse_len)
  return decode(sp, tokens, generation.DEFAULT_STOP_IDS)


def main(argv: Optional[List[str]] = None) -> None:
  args = _parser().parse_args(argv)
  try:
    text = run(args)
  except (ValueError, OSError, model_directory.NonFiniteError) as e:
    message = str(e)
    if message.startswith(("max_new_tokens", "temperature", "top_k", "top_p", "seed",
                           "mem_len", "reuse_len")):
      message = "--" + message
    raise SystemExit(f"{PROG}: {message}") from None
  print(text)


if __name__ == "__main__":
  main(sys.argv[1:])
