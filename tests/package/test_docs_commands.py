"""Every command in README.md and docs/*.md runs as written (at tiny size).

Marker convention: an HTML comment on the line directly before a fenced ```bash block (also
```sh / ```shell) says what the test does with it:

  <!-- doc-test -->                                   run as written;
  <!-- doc-test: replace 'OLD' 'NEW'; replace 'A' 'B' -->
                                                      run after these literal replacements
                                                      (each OLD must occur in the block;
                                                      only to shrink sizes: steps,
                                                      vocabulary, model size, seq_len, batch);
  <!-- doc-test: skip: REASON -->                     not run (a TPU, GCS, Dataflow, docker,
                                                      the network, a download, hours).

A ```python block may carry the first two markers too; it then runs with this venv's Python.
Unmarked python blocks are not run.

The fast tests check that every shell block has a marker, that the markers parse (and their
OLD strings occur) and that every relative link of README.md and docs/*.md resolves to an
existing file (and, for a `#heading` in a Markdown file, to one of its headings). The slow
test runs each page's runnable blocks in order under `bash -euo pipefail`, in one temporary
directory per page: it holds symlinks to the checkout's top-level entries (so
`python -m experiments.X` and `experiments/configs/x.yaml` work as from a checkout) and the
fixtures the page's prose introduces (`FIXTURES`: tiny stand-ins for the released and
converted models, a few Moby-Dick chapters as `corpus/`, ...). State carries from block to
block, as for a reader following the page. docs/design.md ("Testing") describes this too.
"""

import dataclasses
import glob
import json
import os
import re
import shutil
import subprocess
import sys
from typing import Dict, List, Optional, Tuple

import pytest

from xlnet_tf.models.xlnet_classifier import ClassifierSpec

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if not os.path.isdir(os.path.join(ROOT, "docs")):   # e.g. a Bazel runfiles tree without docs/
  pytest.skip("docs/ is not in this tree", allow_module_level=True)

PAGES = ["README.md"] + sorted(os.path.relpath(p, ROOT)
                               for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))
SHELL = ("bash", "sh", "shell")
RELEASED_SPIECE = os.path.join(ROOT, "tests", "fixtures", "released_spiece", "spiece.model")
MOBY_DICK = os.path.join(ROOT, "data_prep", "sample_data", "moby_dick")
BLOCK_TIMEOUT = 900


# ---- parsing ----------------------------------------------------------------------------------

@dataclasses.dataclass
class Marker:
  kind: str                                # "run", "replace" or "skip"
  replacements: List[Tuple[str, str]]
  reason: str = ""


@dataclasses.dataclass
class Block:
  page: str
  line: int                                # 1-based line of the opening fence
  lang: str
  text: str
  marker: Optional[Marker]
  marker_error: str = ""


_MARKER = re.compile(r"^\s*<!--\s*doc-test(.*?)-->\s*$")
_FENCE = re.compile(r"^(\s*)(```+)\s*([\w+-]*)\s*$")
_REPLACE = re.compile(r"\s*replace\s+'([^']*)'\s+'([^']*)'\s*(?:;|$)")


def parse_marker(body: str) -> Marker:
  """The marker of `<!-- doc-test BODY -->` (BODY as written after "doc-test")."""
  body = body.strip()
  if not body:
    return Marker("run", [])
  if not body.startswith(":"):
    raise ValueError(f"expected 'doc-test', 'doc-test: replace ...' or 'doc-test: skip: "
                     f"REASON', got 'doc-test{body}'")
  body = body[1:].strip()
  if body.startswith("skip:"):
    reason = body[len("skip:"):].strip()
    if not reason:
      raise ValueError("'doc-test: skip:' needs a reason")
    return Marker("skip", [], reason)
  replacements, position = [], 0
  while position < len(body):
    match = _REPLACE.match(body, position)
    if not match or match.end() == position:
      raise ValueError(f"cannot parse {body[position:]!r}: expected replace 'OLD' 'NEW' "
                       "(several separated by ';') or skip: REASON")
    if not match.group(1):
      raise ValueError("replace '' ...: OLD is empty")
    replacements.append((match.group(1), match.group(2)))
    position = match.end()
  if not replacements:
    raise ValueError(f"nothing after 'doc-test:' in {body!r}")
  return Marker("replace", replacements)


def parse_page(page: str) -> Tuple[List[Block], List[str]]:
  """(the fenced blocks of `page`, problems: markers before no block)."""
  with open(os.path.join(ROOT, page), encoding="utf-8") as f:
    lines = f.read().split("\n")
  blocks, problems, i = [], [], 0
  while i < len(lines):
    fence = _FENCE.match(lines[i])
    marker_match = _MARKER.match(lines[i])
    if marker_match and not (i + 1 < len(lines) and _FENCE.match(lines[i + 1])
                             and _FENCE.match(lines[i + 1]).group(3)):
      problems.append(f"{page}:{i + 1}: a doc-test marker not directly before a fenced block")
    if not fence:
      i += 1
      continue
    indent, ticks, lang = fence.group(1), fence.group(2), fence.group(3).lower()
    start, body = i, []
    i += 1
    while i < len(lines) and not (lines[i].strip() == ticks and
                                  lines[i].startswith(indent)):
      body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i])
      i += 1
    i += 1
    marker, error = None, ""
    previous = _MARKER.match(lines[start - 1]) if start > 0 else None
    if previous:
      try:
        marker = parse_marker(previous.group(1))
      except ValueError as e:
        error = str(e)
    blocks.append(Block(page, start + 1, lang, "\n".join(body) + "\n", marker, error))
  return blocks, problems


def prepared_text(block: Block) -> str:
  """The block's text after its replacements; an OLD that does not occur fails the test."""
  text = block.text
  for old, new in block.marker.replacements:
    if old not in block.text:
      pytest.fail(f"{block.page}:{block.line}: the doc-test replacement's OLD {old!r} does "
                  "not occur in the block (the docs changed: update the marker)")
    text = text.replace(old, new)
  return text


def runnable(block: Block) -> bool:
  return block.marker is not None and block.marker.kind in ("run", "replace") and (
      block.lang in SHELL or block.lang == "python")


# ---- fast: markers and links ------------------------------------------------------------------

def test_every_shell_block_has_a_marker_that_parses():
  problems = []
  for page in PAGES:
    blocks, dangling = parse_page(page)
    problems += dangling
    for block in blocks:
      where = f"{block.page}:{block.line}"
      if block.marker_error:
        problems.append(f"{where}: bad doc-test marker: {block.marker_error}")
      elif block.lang in SHELL and block.marker is None:
        problems.append(f"{where}: a ```{block.lang} block without a doc-test marker on the "
                        "line before it (<!-- doc-test -->, <!-- doc-test: replace 'OLD' "
                        "'NEW' -->, or <!-- doc-test: skip: REASON -->)")
      elif block.marker is not None and block.lang not in SHELL + ("python",):
        problems.append(f"{where}: a doc-test marker on a ```{block.lang} block")
      elif block.marker is not None:
        for old, _ in block.marker.replacements:
          if old not in block.text:
            problems.append(f"{where}: the replacement's OLD {old!r} does not occur in the "
                            "block")
  assert not problems, "\n".join(problems)


def test_the_marker_syntax():
  assert parse_marker("") == Marker("run", [])
  assert parse_marker(": replace 'a b' 'c'; replace '--x=1' '--x=2' ") == Marker(
      "replace", [("a b", "c"), ("--x=1", "--x=2")])
  assert parse_marker(": skip: needs a TPU") == Marker("skip", [], "needs a TPU")
  for bad in (": skip:", ": replace 'a'", ": run", "x", ": replace '' 'b'",
              ": replace 'a' 'b' replace 'c' 'd'"):
    with pytest.raises(ValueError):
      parse_marker(bad)


def github_anchor(heading: str) -> str:
  """GitHub's anchor of a Markdown heading: lower case, punctuation dropped, spaces to -."""
  text = re.sub(r"`|\*\*|\[([^\]]*)\]\([^)]*\)", lambda m: m.group(1) or "", heading)
  text = text.strip().lower()
  return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: str) -> set:
  with open(path, encoding="utf-8") as f:
    text = re.sub(r"```.*?```", "", f.read(), flags=re.S)
  seen, out = {}, set()
  for line in text.split("\n"):
    match = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
    if match:
      anchor = github_anchor(match.group(1))
      count = seen.get(anchor, 0)
      seen[anchor] = count + 1
      out.add(anchor if count == 0 else f"{anchor}-{count}")
  return out


def relative_links(page: str) -> List[Tuple[int, str]]:
  """(line, target) of every Markdown link in `page` outside code."""
  with open(os.path.join(ROOT, page), encoding="utf-8") as f:
    lines = f.read().split("\n")
  out, in_fence = [], False
  for number, line in enumerate(lines, 1):
    if _FENCE.match(line):
      in_fence = not in_fence
      continue
    if in_fence:
      continue
    line = re.sub(r"`[^`]*`", "", line)
    for target in re.findall(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", line):
      if not re.match(r"^[a-z][a-z0-9+.-]*:", target):   # http:, https:, mailto:
        out.append((number, target))
  return out


def test_relative_links_resolve():
  problems = []
  for page in PAGES:
    for line, target in relative_links(page):
      path, _, anchor = target.partition("#")
      file = os.path.normpath(os.path.join(ROOT, os.path.dirname(page), path)) if path else (
          os.path.join(ROOT, page))
      if not os.path.exists(file):
        problems.append(f"{page}:{line}: {target}: {os.path.relpath(file, ROOT)} does not exist")
      elif anchor and file.endswith(".md") and anchor not in anchors(file):
        problems.append(f"{page}:{line}: {target}: no heading #{anchor} in "
                        f"{os.path.relpath(file, ROOT)}")
  assert not problems, "\n".join(problems)


# ---- fixtures the pages' prose introduces --------------------------------------------------------
# Tiny stand-ins: the page names a released model or a dataset; the test puts a small model
# or a few real sentences of the bundled data at that path.

TINY = dict(n_layer=1, d_model=32, n_head=2, d_head=16, d_inner=64, ff_activation="gelu",
            untie_r=True)


def _corpus(work, chapters=20):
  os.makedirs(os.path.join(work, "corpus"), exist_ok=True)
  for n in range(1, chapters + 1):
    shutil.copy(os.path.join(MOBY_DICK, f"chapter_{n}.txt"), os.path.join(work, "corpus"))


def _demo_spiece(work, spiece_model):
  """`make demo`'s SentencePiece model (vocabulary 4000): the tests' Moby-Dick one."""
  os.makedirs(os.path.join(work, "runs", "demo", "spiece"))
  shutil.copy(spiece_model, os.path.join(work, "runs", "demo", "spiece", "spiece.model"))


def _records(work):
  """corpus/, spiece.model (vocabulary 1000) and records/ as docs/pretraining-data.md makes
  them at tiny size, and xlnet_config.json: a released-format config of a tiny model."""
  from data_prep import pipeline  # pylint: disable=g-import-not-at-top
  from data_prep import train_sentencepiece  # pylint: disable=g-import-not-at-top
  from data_prep.pretraining_rows import RowSettings  # pylint: disable=g-import-not-at-top
  _corpus(work, chapters=8)
  inputs = sorted(glob.glob(os.path.join(work, "corpus", "*.txt")))
  spiece = train_sentencepiece.train(",".join(inputs), os.path.join(work, "spiece"),
                                     vocab_size=1000, input_sentence_size=0, num_threads=2)
  settings = pipeline.DataSettings(
      rows=RowSettings(seq_len=64, reuse_len=32, num_predict=11, bsz_per_host=8,
                       num_core_per_host=2, bi_data=True, perm_size=16),
      input_format="document_per_file", num_passes=2, seed=5)
  pipeline.create(settings, inputs, spiece, os.path.join(work, "records"))
  with open(os.path.join(work, "xlnet_config.json"), "w") as f:
    json.dump(dict(TINY, n_token=1000), f)


def _pretrained(work, name, n_token=32000):
  """A tiny pretrained model directory with the released vocabulary at `name`."""
  from xlnet_tf import pretrained  # pylint: disable=g-import-not-at-top
  from xlnet_tf.configs import XLNetConfig  # pylint: disable=g-import-not-at-top
  from xlnet_tf.models.xlnet_pretrainer import build_pretrainer  # pylint: disable=g-import-not-at-top
  model = build_pretrainer(XLNetConfig(**TINY, n_token=n_token))
  pretrained.save_pretrained(model, os.path.join(work, name), RELEASED_SPIECE)


def _fine_tuned_classifier(work, name):
  """A tiny movie_reviews classifier's model directory (`run_classifier`'s MODEL_DIR/final)."""
  from xlnet_tf import model_directory  # pylint: disable=g-import-not-at-top
  from xlnet_tf.configs import XLNetConfig  # pylint: disable=g-import-not-at-top
  from xlnet_tf.models.xlnet_classifier import build_classifier  # pylint: disable=g-import-not-at-top
  spec = ClassifierSpec(task_name="movie_reviews",
                        labels=("negative", "positive"), max_seq_length=32)
  model = build_classifier(XLNetConfig(**TINY, n_token=32000), 2, dropout_rate=0.0)
  model_directory.save(model, os.path.join(work, name), spec, RELEASED_SPIECE)


def _released_and_fine_tuned_tf1(work):
  """xlnet_cased_L-24_H-1024_A-16/ in the released layout (tiny, released vocabulary) and
  orig_runs/imdb/: the --model_dir of the original's run_classifier.py on IMDB."""
  from released_checkpoint import classification_head_arrays  # pylint: disable=g-import-not-at-top
  from released_checkpoint import original_encoder_arrays  # pylint: disable=g-import-not-at-top
  from released_checkpoint import summary_arrays  # pylint: disable=g-import-not-at-top
  from released_checkpoint import write_released_dir  # pylint: disable=g-import-not-at-top
  import numpy as np  # pylint: disable=g-import-not-at-top
  from xlnet_tf.configs import XLNetConfig  # pylint: disable=g-import-not-at-top
  config = XLNetConfig(**TINY, n_token=32000)
  encoder = original_encoder_arrays(config)
  pretrained_arrays = dict(encoder)
  pretrained_arrays["model/transformer/mask_emb/mask_emb"] = (
      0.1 * np.random.default_rng(0).standard_normal([1, 1, config.d_model])).astype(np.float32)
  pretrained_arrays["model/lm_loss/bias"] = np.zeros([config.n_token], np.float32)
  with open(RELEASED_SPIECE, "rb") as f:
    spiece = f.read()
  write_released_dir(os.path.join(work, "xlnet_cased_L-24_H-1024_A-16"), config,
                     pretrained_arrays, spiece_bytes=spiece)
  heads = {**summary_arrays(config), **classification_head_arrays(config, "imdb", 2)}
  write_released_dir(os.path.join(work, "orig_runs", "imdb"), config, encoder, extra=heads,
                     checkpoint_name="model.ckpt", global_step=1000, write_config=False)


def _hf_directory(work, name, model_class_name):
  """A tiny HuggingFace XLNet directory (save_pretrained) with the released spiece.model."""
  import transformers  # pylint: disable=g-import-not-at-top
  from hf_reference import make_hf_model  # pylint: disable=g-import-not-at-top
  from xlnet_tf.configs import XLNetConfig  # pylint: disable=g-import-not-at-top
  extra = {"num_labels": 2} if model_class_name == "XLNetForSequenceClassification" else {}
  model = make_hf_model(XLNetConfig(**TINY, n_token=32000, dropout=0.0, dropatt=0.0),
                        model_class=getattr(transformers, model_class_name), **extra)
  directory = os.path.join(work, name)
  model.save_pretrained(directory)
  shutil.copy(RELEASED_SPIECE, directory)


def _squad_and_race(work):
  """squad/{train,dev}-v2.0.json: the bundled SQuAD sample (5 real questions); RACE/: the
  tests' RACE-layout sample (real Moby-Dick passages, 7 questions per split)."""
  from helpers import write_race_sample  # pylint: disable=g-import-not-at-top
  os.makedirs(os.path.join(work, "squad"))
  for name in ("train-v2.0.json", "dev-v2.0.json"):
    shutil.copy(os.path.join(ROOT, "data_prep", "sample_data", "qa", "squad.json"),
                os.path.join(work, "squad", name))
  write_race_sample(os.path.join(work, "RACE"), splits=("train", "dev"))


def _fixtures(page: str, work: str, spiece_model: str) -> None:
  if page == "README.md":
    _corpus(work)
    _demo_spiece(work, spiece_model)
  elif page == "docs/training.md":
    _records(work)
  elif page == "docs/fine-tuning.md":
    _demo_spiece(work, spiece_model)
    _pretrained(work, os.path.join("converted", "xlnet_base"))
    _pretrained(work, os.path.join("converted", "xlnet_large"))
    _squad_and_race(work)
  elif page == "docs/serving.md":
    _fine_tuned_classifier(work, os.path.join("runs", "reviews", "final"))
    _pretrained(work, os.path.join("converted", "xlnet_base"))
  elif page == "docs/conversion.md":
    _released_and_fine_tuned_tf1(work)
    _hf_directory(work, os.path.join("hf", "xlnet-base-cased"), "XLNetLMHeadModel")
  elif page == "docs/ranking.md":
    _pretrained(work, os.path.join("runs", "demo", "pretrain", "final"))
  elif page == "docs/huggingface.md":
    _hf_directory(work, os.path.join("hf", "xlnet-sst2"), "XLNetForSequenceClassification")
    _pretrained(work, os.path.join("converted", "xlnet_base"))


# ---- slow: run the pages ----------------------------------------------------------------------

# Top-level entries of the checkout not linked into a page's directory: what the commands
# write (runs/), caches and virtual environments.
_NOT_LINKED = re.compile(r"^(\..*|runs|build|dist|__pycache__|bazel-.*|.*\.egg-info)$")


def _workspace(tmp_path) -> str:
  work = os.path.join(os.fspath(tmp_path), "work")
  os.makedirs(work)
  for name in sorted(os.listdir(ROOT)):
    if not _NOT_LINKED.match(name):
      os.symlink(os.path.join(ROOT, name), os.path.join(work, name))
  return work


def _environment(tmp_path) -> Dict[str, str]:
  env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
  env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
  env["CUDA_VISIBLE_DEVICES"] = ""
  env["TF_CPP_MIN_LOG_LEVEL"] = "2"
  env["XLNET_TF_CACHE"] = os.path.join(os.fspath(tmp_path), "cache")   # no preset download
  return env


def _tail(text, lines: int = 40) -> str:
  if isinstance(text, bytes):      # TimeoutExpired keeps bytes even with text=True
    text = text.decode("utf-8", "replace")
  return "\n".join(text.rstrip().split("\n")[-lines:])


def _pages_with_commands() -> List[str]:
  return [page for page in PAGES if any(runnable(b) for b in parse_page(page)[0])]


@pytest.mark.slow
@pytest.mark.parametrize("page", _pages_with_commands())
def test_the_commands_of_a_page_run(page, tmp_path, spiece_model):
  work = _workspace(tmp_path)
  _fixtures(page, work, spiece_model)
  env = _environment(tmp_path)
  scripts = os.path.join(os.fspath(tmp_path), "blocks")
  os.makedirs(scripts)
  for block in parse_page(page)[0]:
    if not runnable(block):
      continue
    text = prepared_text(block)
    script = os.path.join(scripts, f"line_{block.line}.{'py' if block.lang == 'python' else 'sh'}")
    with open(script, "w", encoding="utf-8") as f:
      f.write(text)
    command = ([sys.executable, script] if block.lang == "python"
               else ["bash", "-euo", "pipefail", script])
    try:
      done = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True,
                            timeout=BLOCK_TIMEOUT, check=False)
    except subprocess.TimeoutExpired as e:
      pytest.fail(f"{page}:{block.line}: the block ran longer than {BLOCK_TIMEOUT} s:\n"
                  f"{text}\n--- stdout ---\n{_tail(e.stdout or '')}\n"
                  f"--- stderr ---\n{_tail(e.stderr or '')}")
    if done.returncode != 0:
      pytest.fail(f"{page}:{block.line}: the block failed with exit status "
                  f"{done.returncode}:\n{text}\n--- stdout (end) ---\n{_tail(done.stdout)}\n"
                  f"--- stderr (end) ---\n{_tail(done.stderr)}")
