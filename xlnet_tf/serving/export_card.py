"""The model card of a SavedModel export: README.md beside saved_model.pb.

Every export (`export.export_classifier`, `tagger_export.export_tagger`,
`squad_export.export_squad`, `race_export.export_race`, `encoder_export.export_encoder`,
and through them the driver's --mode=export) writes one with `model_card.write`:

  source   the model directory it was exported from
  licence  the licence line of that directory's own README.md (a conversion writes one;
           a preset's is the released licence), else "unknown: see the source"
  config   the architecture; task and labels: what the signatures return
  parity   the max |difference| of the float outputs between the SavedModel, reloaded in
           this process, and the Python model (the same serving module's Python function,
           run eagerly on the Keras model before saving) on fixed probe inputs

  >>> card = classifier_card(module)                # in export_classifier, after saving
  >>> write(export_dir, model_dir, model, card)
"""

import dataclasses
import os
from typing import Any, Callable, Dict, Mapping, Optional, Sequence

import numpy as np
import tensorflow as tf

from xlnet_tf import model_card
from xlnet_tf import paths
from xlnet_tf.data.race import ANSWERS
from xlnet_tf.serving.text_layouts import bucket_lengths

UNKNOWN_LICENCE = "unknown: see the source"

# Fixed probe inputs: plain text, punctuation and digits, accents and symbols outside the
# vocabulary, an empty string.
PROBE_TEXTS = ("A gripping, beautifully acted film.",
               "Dull and far too long: 2,500 minutes of nothing!",
               "Amélie était très drôle — naïve café, 電影 😀",
               "")
# A text of several segments (about 1000 pieces), for the exports that read whole texts.
PROBE_LONG_TEXT = " ".join(PROBE_TEXTS[:3] * 40)
PROBE_SECOND_TEXTS = ("The film holds the attention.", "It is short.",
                      "C'est un film.", "Call me Ishmael.")
PROBE_QUESTIONS = ("Who hunted the whale?", "Where did the ship sail from?", "Why?")
PROBE_CONTEXTS = ("Ahab hunted the white whale across the seas for many years.",
                  "The Pequod sailed from Nantucket on a cold Christmas day in 1840.",
                  "")
PROBE_ARTICLES = ("Call me Ishmael. Some years ago I went to sea to see the watery part "
                  "of the world.", "")
PROBE_RACE_QUESTIONS = ("What did the narrator do?", "The answer is _ .")
PROBE_OPTIONS = (("He went to sea.", "He stayed home.", "He sold a ship.", "He slept."),
                 ("yes", "no", "maybe", ""))


@dataclasses.dataclass
class ExportCard:
  """What the card of one export says, and how its parity is measured.

  Attributes:
    task: the model card's task ("classification", "regression", "squad",
      "multiple_choice", "token_classification", "pretrained").
    title: the card's first line.
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


def check_export_dir(export_dir: str, flag: str = "--export_dir") -> None:
  """Before any work: `export_dir` is a usable location (`paths.check_output_dir`) that
  does not exist or is empty; an export never overwrites one (FileExistsError)."""
  paths.check_output_dir(export_dir, flag)
  if tf.io.gfile.exists(export_dir) and tf.io.gfile.listdir(export_dir):
    raise FileExistsError(f"{flag} {export_dir} is not empty; an export never overwrites: "
                          f"give a new directory")


def save(module: tf.Module, export_dir: str, model_dir: str, model,
         card: Optional[ExportCard] = None) -> str:
  """The export, whole or not at all: `module` with its `signatures()` and, with `card`,
  its README.md are written to `<export_dir>.partial-<pid>@<host>` (`paths.partial_path`;
  those of dead processes are removed first, `paths.remove_stale_partials`), which is then
  renamed to `export_dir` (checked empty by `check_export_dir` first). Whatever fails on the way
  (saving, the parity, the card, the rename) removes the partial directory and leaves
  `export_dir` as it was. An existing `export_dir` is never removed with its contents: a
  local one is removed with `os.rmdir`, which refuses a directory someone has filled since
  the check (FileExistsError); on a URL (no such call) it is checked empty again, then
  removed. Returns `export_dir`."""
  export_dir = export_dir.rstrip("/")
  paths.remove_stale_partials(export_dir)        # left by a killed export
  partial = paths.partial_path(export_dir)
  if tf.io.gfile.exists(partial):                # a leftover of this process's name
    tf.io.gfile.rmtree(partial)
  try:
    tf.saved_model.save(module, partial, signatures=module.signatures())
    if card is not None:
      write(partial, model_dir, model, card)
    rename_over_empty(partial, export_dir)
  except BaseException:
    try:
      if tf.io.gfile.exists(partial):
        tf.io.gfile.rmtree(partial)
    except (OSError, tf.errors.OpError):         # the first error is the one to report
      pass
    raise
  return export_dir


def rename_over_empty(partial: str, export_dir: str) -> None:
  """Renames the complete export `partial` to `export_dir`, which must not exist or be an
  empty directory: a local one is removed with `os.rmdir` (FileExistsError if it is not
  empty by now); on a URL it is checked empty again and removed."""
  if paths.is_url(export_dir):
    if tf.io.gfile.exists(export_dir):
      check_export_dir(export_dir)               # still empty: nothing of anyone's is lost
      tf.io.gfile.rmtree(export_dir)
    tf.io.gfile.rename(partial, export_dir)
    return
  if os.path.lexists(export_dir):
    try:
      os.rmdir(export_dir)                       # only ever an empty directory
    except OSError as e:
      raise FileExistsError(f"--export_dir {export_dir} is not empty (any more) or not a "
                            f"directory ({e.strerror}); an export never overwrites: give "
                            f"a new directory") from None
  os.rename(partial, export_dir)


# ---- the cards of the exports ---------------------------------------------------------------

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


def reading_detail(max_seq_length: int, mem_len: int, fine_tuned_mem_len: int) -> str:
  """The card's "Reading" line of a classifier: whole texts through a memory of `mem_len`
  positions (0: truncated at max_seq_length)."""
  if not mem_len:
    return f"texts truncated at max_seq_length {max_seq_length} pieces, as released"
  origin = ("the memory it was fine-tuned with" if fine_tuned_mem_len == mem_len and
            fine_tuned_mem_len else
            f"fine-tuned with mem_len {fine_tuned_mem_len}" if fine_tuned_mem_len else
            "fine-tuned on texts truncated at max_seq_length")
  return (f"whole texts of any length, in segments of max_seq_length {max_seq_length} "
          f"pieces read in order through a memory of {mem_len} positions ({origin}); a "
          f"batch that fits one segment is read as one segment")


def classifier_card(module) -> ExportCard:
  """`export.ClassifierServing`: probabilities (score for regression)."""
  spec = module.spec
  whole_text = getattr(module, "whole_text", False)
  long_text = (PROBE_LONG_TEXT,) if whole_text else ()
  inputs = {"text_a": list(PROBE_TEXTS + long_text)}
  if module.pair:
    inputs["text_b"] = list(PROBE_SECOND_TEXTS + PROBE_SECOND_TEXTS[:len(long_text)])
  kind = "regression" if spec.is_regression else "classification"
  mem_len = module.model.encoder.config.mem_len if whole_text else 0
  return ExportCard(
      task=kind, title=f"XLNet {kind} ({spec.task_name}), SavedModel",
      python_fn=module.serve_text, inputs=inputs,
      keys=("score",) if spec.is_regression else ("probabilities",),
      labels=None if spec.is_regression else list(spec.labels),
      details={"max_seq_length": spec.max_seq_length, "uncased": spec.uncased,
               "keep_accents": getattr(spec, "keep_accents", False),
               "Inputs": "text_a, text_b" if module.pair else "text_a",
               "Reading": reading_detail(spec.max_seq_length, mem_len,
                                         getattr(spec, "mem_len", 0)),
               "Padding": padding_detail(spec.max_seq_length, module.bucketed,
                                         whole_text=whole_text)
                          + "; serving_ids: ids padded to max_seq_length"})


def tagger_card(module) -> ExportCard:
  """`tagger_export.TaggerServing`: per-word tag probabilities."""
  spec = module.spec
  return ExportCard(
      task="token_classification", title=f"XLNet tagger ({spec.task_name}), SavedModel",
      python_fn=module.serve_text, inputs={"text": list(PROBE_TEXTS)},
      keys=("probabilities",), labels=list(spec.labels),
      details={"max_seq_length": spec.max_seq_length, "uncased": spec.uncased,
               "keep_accents": getattr(spec, "keep_accents", False),
               "Tag scheme": spec.scheme,
               "Padding": padding_detail(spec.max_seq_length, module.bucketed)})


def squad_card(module) -> ExportCard:
  """`squad_export.SquadServing`: the best span's score (and is_impossible for v2.0, the
  models with a null threshold)."""
  version_2 = module.null_threshold is not None
  return ExportCard(
      task="squad", title=f"XLNet SQuAD {'2.0' if version_2 else '1.1'} reader, SavedModel",
      python_fn=module.answer,
      inputs={"question": list(PROBE_QUESTIONS), "context": list(PROBE_CONTEXTS)},
      keys=("score", "is_impossible") if version_2 else ("score",),
      details={"max_seq_length": module.max_seq_length,
               "max_query_length": module.max_query_length,
               "max_answer_length": module.max_answer_length,
               "null_score_diff_threshold": (module.null_threshold if version_2 else
                                             "none (v1.1: always answers)"),
               "Padding": padding_detail(module.max_seq_length, module.bucketed, "right")})


def race_card(module) -> ExportCard:
  """`race_export.RaceServing`: the options' logits and probabilities."""
  return ExportCard(
      task="multiple_choice", title="XLNet multiple choice (RACE), SavedModel",
      python_fn=module.serve_text,
      inputs={"article": list(PROBE_ARTICLES), "question": list(PROBE_RACE_QUESTIONS),
              "options": [list(options) for options in PROBE_OPTIONS]},
      keys=("logits", "probabilities"), labels=list(ANSWERS),
      details={"max_seq_length": module.max_seq_length,
               "max_qa_length": module.max_qa_length})


def ranker_card(module) -> ExportCard:
  """`ranker_export.RankerServing`: the scores and kernel features of probe documents
  (the long probe text among them, read through the memory) for one query."""
  spec = module.spec
  layer = ("the word-embedding table (context-free)" if module.model.static_embeddings
           else f"hidden state {spec.embedding_layer} of the frozen encoder")
  return ExportCard(
      task="ranking", title="XLNet K-NRM ranker, SavedModel", python_fn=module.rank,
      inputs={"documents": list(PROBE_CONTEXTS) + [PROBE_LONG_TEXT],
              "query": PROBE_QUESTIONS[0]},
      keys=("scores", "features"),
      details={"Token embeddings": layer,
               "Reading": f"segments of {spec.max_seq_length} pieces through a memory of "
                          f"{spec.mem_len} positions; documents cut to "
                          + (f"{spec.max_document_pieces} pieces" if spec.max_document_pieces
                             else "nothing (read whole)"),
               "Kernels": f"{spec.n_kernels} (sigma {spec.sigma}, exact-match sigma "
                          f"{spec.exact_sigma})",
               "uncased": spec.uncased, "keep_accents": spec.keep_accents})


def encoder_card(module) -> ExportCard:
  """`encoder_export.EncoderServing`: hidden states and the <cls> summary (the parity of
  serving_default; serving_document is described)."""
  return ExportCard(
      task="pretrained", title="XLNet encoder (feature extraction), SavedModel",
      python_fn=module.serve_text, inputs={"text": list(PROBE_TEXTS)},
      keys=("hidden_states", "summary"),
      details={"max_seq_length": module.max_seq_length,
               "uncased": module.text_encoder.lower,
               "keep_accents": module.text_encoder.keep_accents,
               "serving_default": f"one segment: the text truncated to max_seq_length "
                                  f"{module.max_seq_length} - 2 pieces",
               "serving_document": f"whole texts of any length -> embedding (at the final "
                                   f"<cls>), token_embeddings, token_mask, token_ids; read "
                                   f"in segments of {module.max_seq_length} pieces through "
                                   f"a memory of {module.document_mem_len} positions"})
