"""The model card: a short README.md beside the weights of every model we write for others.

Every conversion (`python -m xlnet_tf.convert`, to our layout or to HuggingFace's) and every
fine-tuned export writes one, so a directory that travels on its own still says what it is:
where the weights came from, under which licence, the architecture, the task and its labels,
and the parity figure measured when it was made.

  >>> write(out_dir, title="XLNet-Base, cased (SST-2 classifier)",
  ...       source="HuggingFace directory hf/xlnet-sst2", licence="Apache-2.0",
  ...       config=config.to_dict(), task="classification", labels=["neg", "pos"],
  ...       parity="max |logit diff| vs HuggingFace 2.4e-07 on 4 probe rows")
"""

import os
from typing import Any, Mapping, Optional, Sequence

import tensorflow as tf

from xlnet_tf import paths

CARD_FILE = "README.md"
# The licence of the released XLNet code and models (github.com/zihangdai/xlnet, LICENSE).
RELEASED_LICENCE = "Apache-2.0 (the released XLNet models, github.com/zihangdai/xlnet)"
# The architecture keys shown in the card, in this order (the rest is in the config file).
_LICENCE_LINE = "- **Licence**: "   # `render` writes it, `read_licence` reads it back
_SHOWN_KEYS = ("n_layer", "d_model", "n_head", "d_head", "d_inner", "ff_activation",
               "untie_r", "n_token")


def render(*, title: str, source: str, licence: str, config: Mapping[str, Any], task: str,
           labels: Optional[Sequence[str]] = None, parity: Optional[str] = None,
           details: Optional[Mapping[str, Any]] = None) -> str:
  """The card's Markdown text.

  Args:
    title: one line naming the model.
    source: where the weights came from (a path, URL or training run).
    licence: the licence of the weights ("unknown: see the source" when the source says
      none).
    config: the architecture (our xlnet_config.json or HuggingFace's config.json keys).
    task: "pretrained" (encoder + LM head), "classification", "regression", "squad",
      "multiple_choice", "token_classification" or "generation".
    labels: the label names in id order, when the task has them.
    parity: the figure measured when the directory was written (None: "not measured").
    details: further "key: value" lines (e.g. the tokenizer options, the files written).
  """
  lines = [f"# {title}", "", f"- **Source**: {source}", f"{_LICENCE_LINE}{licence}",
           f"- **Task**: {task}"]
  if labels is not None:
    shown = ", ".join(f"{i}: {label}" for i, label in enumerate(labels))
    lines.append(f"- **Labels** (id: name): {shown}")
  lines.append(f"- **Parity**: {parity if parity else 'not measured'}")
  for key, value in (details or {}).items():
    lines.append(f"- **{key}**: {value}")
  arch = ", ".join(f"{key} {config[key]}" for key in _SHOWN_KEYS if key in config)
  if arch:
    lines += ["", f"Architecture: {arch}."]
  lines += ["", "Written by xlnet_tf (XLNet for TensorFlow 2; Yang et al., \"XLNet: "
            "Generalized Autoregressive Pretraining for Language Understanding\", NeurIPS "
            "2019).", ""]
  return "\n".join(lines)


def write(directory: str, **card) -> str:
  """Writes `render(**card)` to `directory`/README.md (whole: `paths.write_text`).
  Returns the path."""
  path = os.path.join(directory, CARD_FILE)
  paths.write_text(path, render(**card))
  return path


def read_hf_licence(directory: str) -> Optional[str]:
  """The `license:` of a HuggingFace model directory's README.md front matter, if any."""
  path = os.path.join(directory, CARD_FILE)
  if not os.path.isfile(path):
    return None
  with open(path, encoding="utf-8", errors="replace") as f:
    text = f.read(20000)
  if not text.startswith("---"):
    return None
  for line in text.split("\n")[1:]:
    if line.strip() == "---":
      return None
    key, _, value = line.partition(":")
    if key.strip() == "license" and value.strip():
      return value.strip().strip("\"'")
  return None


def read_licence(directory: str) -> Optional[str]:
  """The licence a model directory's README.md gives: our card's `Licence` line (`write`),
  else a HuggingFace card's front-matter `license:`; None without either."""
  path = os.path.join(directory, CARD_FILE)
  if not tf.io.gfile.exists(path):
    return None
  with tf.io.gfile.GFile(path, "r") as f:
    text = f.read()[:20000]
  for line in text.split("\n"):
    if line.startswith(_LICENCE_LINE) and line[len(_LICENCE_LINE):].strip():
      return line[len(_LICENCE_LINE):].strip()
  return read_hf_licence(directory)
