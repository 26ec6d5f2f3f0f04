"""The model card of a SavedModel export: README.md beside saved_model.pb.

Each kind's export module builds its card (`ExportCard`: what the card says, and how the
parity is measured), and `model_dir_export.save` writes it with the SavedModel through
`write` (`model_card.write`):

  source   the model directory it was exported from
  licence  the licence line of that directory's own README.md (a conversion writes one;
           a preset's is the released licence), else "unknown: see the source"
  config   the architecture; task and labels: what the signatures return
  parity   the max |difference| of the float outputs between the SavedModel, reloaded in
           this process, and the Python model (the same serving module's Python function,
           run eagerly on the Keras model before saving) on fixed probe inputs

Beside it, `export.json` (`write_description`) says what the export is for the tools that
are given one (the card's task, and `about`: what it takes and what serves it; read by
`experiments/classify_text.py` without this package).

  >>> card = tagger_card(module)                    # tagger_export, after saving
  >>> write(export_dir, model_dir, model, card)
"""

import dataclasses
import os
from typing import Any, Callable, Dict, Mapping, Optional, Sequence

import numpy as np
import tensorflow as tf

from xlnet_tf import model_card
from xlnet_tf import paths
from xlnet_tf.serving.text_layouts import bucket_lengths

UNKNOWN_LICENCE = "unknown: see the source"
# What an export is, for tools (`write_description`; experiments/classify_text.py spells
# the name too: it imports nothing of this package).
DESCRIPTION_FILE = "export.json"

# Fixed probe inputs: plain text, punctuation and digits, accents and symbols outside the
# vocabulary, an empty string.
PROBE_TEXTS = ("A gripping, beautifully acted film.",
               "Dull and far too long: 2,500 minutes of nothing!",
               "Amélie était très drôle — naïve café, 電影 😀",
               "")
# A text of several segments (about 1000 pieces), for the exports that read whole texts.
PROBE_LONG_TEXT = " ".join(PROBE_TEXTS[:3] * 40)
# Questions and passages (the question-answering exports; the ranker's query and documents).
PROBE_QUESTIONS = ("Who hunted the whale?", "Where did the ship sail from?", "Why?")
PROBE_CONTEXTS = ("Ahab hunted the white whale across the seas for many years.",
                  "The Pequod sailed from Nantucket on a cold Christmas day in 1840.",
                  "")


@dataclasses.dataclass
class ExportCard:
  """What the card of one export says, and how its parity is measured.

  Attributes:
    task: the model card's task ("classification", "regression", "squad",
      "multiple_choice", "token_classification", "ranking", "pretrained").
    title: the card's first line.
    about: what the export is, what its serving_default takes and what serves it, one
      phrase ("a tagger export: its serving_default takes text ..."): `export.json`'s, for
      the messages of a tool given another kind of export.
    python_fn: the serving module's Python function behind `signature` (called eagerly
      with the probe inputs as tensors).
    inputs: the probe inputs, name -> list (one batch).
    keys: the float outputs compared.
    labels: the label names in id order (None: none).
    signature: the SavedModel signature called.
    details: further card lines.
  """
  task: str
  title: str
  about: str
  python_fn: Callable[..., Mapping[str, tf.Tensor]]
  inputs: Dict[str, Any]
  keys: Sequence[str]
  labels: Optional[Sequence[str]] = None
  signature: str = "serving_default"
  details: Dict[str, Any] = dataclasses.field(default_factory=dict)


def _max_abs_diff(a, b, key: str) -> float:
  a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
  if a.shape != b.shape:
    raise ValueError(f"export parity: output {key} has shape {list(a.shape)} in the "
                     f"SavedModel and {list(b.shape)} in the Python model")
  if a.size == 0:
    return 0.0
  same = (a == b) | (np.isnan(a) & np.isnan(b))          # equal infinities included
  with np.errstate(invalid="ignore"):
    return float(np.max(np.where(same, 0.0, np.abs(a - b))))


def measure_parity(export_dir: str, card: ExportCard) -> str:
  """The card's parity line: the SavedModel in `export_dir`, reloaded here, against
  `card.python_fn` on `card.inputs`."""
  served = tf.saved_model.load(export_dir).signatures[card.signature](
      **{name: tf.constant(value) for name, value in card.inputs.items()})
  direct = card.python_fn(**{name: tf.constant(value) for name, value in card.inputs.items()})
  worst = max(_max_abs_diff(served[key], direct[key], key) for key in card.keys)
  count = len(next(iter(card.inputs.values())))
  return (f"max |diff| {worst:.1e} of {', '.join(card.keys)} between the SavedModel "
          f"(reloaded) and the Python model on {count} fixed probe inputs, measured at "
          f"export")


def source_licence(model_dir: str) -> str:
  """The licence line of `model_dir`'s own card, else "unknown: see the source"."""
  return model_card.read_licence(model_dir) or UNKNOWN_LICENCE


def write(export_dir: str, model_dir: str, model, card: ExportCard) -> str:
  """Measures the parity and writes README.md into `export_dir`; returns its path."""
  parity = measure_parity(export_dir, card)
  source = model_dir if "://" in model_dir else os.path.abspath(model_dir)
  details = {"Format": f"TensorFlow SavedModel; serve with tensorflow + tensorflow-text "
                       f"(signature {card.signature})", **card.details}
  return model_card.write(export_dir, title=card.title, source=source,
                          licence=source_licence(model_dir), config=model.config.to_dict(),
                          task=card.task, labels=card.labels, parity=parity,
                          details=details)


def write_description(export_dir: str, card: ExportCard) -> str:
  """Writes `export.json` into `export_dir`: {"task": the card's task, "about": what the
  export is and what serves it}; returns its path."""
  path = os.path.join(export_dir, DESCRIPTION_FILE)
  paths.write_json(path, {"task": card.task, "about": card.about})
  return path


# ---- card lines that several kinds' cards have ----------------------------------------------

def padding_detail(max_seq_length: int, bucketed: bool, side: str = "left",
                   whole_text: bool = False) -> str:
  """The card's "Padding" line: to each batch's bucket (listed) or to max_seq_length;
  `whole_text`: of a batch that fits one segment (longer ones take segments of
  max_seq_length)."""
  if whole_text:
    longer = f"; a longer batch in segments of max_seq_length {max_seq_length}"
    if bucketed:
      ladder = ", ".join(str(n) for n in bucket_lengths(max_seq_length))
      return (f"on the {side}, a batch that fits one segment to its bucket, the smallest of "
              f"{ladder} that holds its longest row{longer}")
    return f"on the {side}, every row to max_seq_length {max_seq_length} (fixed length){longer}"
  if bucketed:
    ladder = ", ".join(str(n) for n in bucket_lengths(max_seq_length))
    return (f"on the {side}, each batch to its bucket, the smallest of {ladder} that holds "
            f"its longest row (truncation at max_seq_length {max_seq_length})")
  return f"on the {side}, every row to max_seq_length {max_seq_length} (fixed length)"
