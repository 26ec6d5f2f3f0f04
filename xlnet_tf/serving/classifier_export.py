"""SavedModel export of a fine-tuned classifier: raw text in, probabilities out.

Signatures (all batch-major, any batch size):
  serving_default  text_a string [B] (and text_b string [B] for pair tasks)
                   -> probabilities float32 [B, C], label string [B], label_id int32 [B]
                      (regression: score float32 [B])
  serving_ids      input_ids int32 [B, T], segment_ids int32 [B, T], input_mask float32
                   [B, T] (1 = padding, the released layout) -> the same outputs
Whole texts. serving_default reads a text of any length whole (`whole_text=True`, the
default): in the document layout (`text_layouts.document_inputs`: every piece of
text_a, then `<sep> <cls>` or `<sep> text_b <sep> <cls>` with text_b cut to
max_seq_length - 3 pieces; padded on the left to K segments of max_seq_length T) read
segment by segment through the Transformer-XL memory (`networks.document_reader`); the
summary reads the last segment, which ends with <cls>. The memory has the size the model
was fine-tuned with (classifier.json's mem_len), or for a model fine-tuned on truncated
texts (mem_len 0) `serving_mem_len` = T positions by default (`mem_len=` overrides it). A
batch whose texts all fit one segment (K = 1) is read as one segment without memory, as
before: the same layout, the same cost and the same outputs as a truncating export.
`whole_text=False` (`experiments/export_saved_model.py --truncate`) exports the released
behaviour: truncation at T.
Padding. A batch that fits one segment is padded on the left only to its bucket: the
smallest of 16, 24, 32, 48, 64, 96, ..., T that holds the batch's longest row
(`text_layouts.bucket_lengths`), so a batch of short reviews costs what short reviews cost,
not what T does; a longer batch takes segments of T. With left padding and relative
positions the outputs do not depend on the amount of padding (the "last", "mean" and
"attn" summaries read real tokens only), so they equal the fixed-length export's
(tests/serving/test_bucketing.py: within 1e-5 on every held-out movie review).
`bucketed=False` (`experiments/export_saved_model.py --fixed_length`) exports the
fixed-length behaviour, padding every request to T; models whose summary reads padding
("first", "mean_with_padding") are always exported fixed-length. serving_ids takes ids
padded to T, as before (one segment, no memory). The model card says how an export reads
text and which padding it has.
Every signature checks its inputs' shapes first (`text_encoder.check_shapes`): a scalar
string, a 2-D text tensor, ids of another width than the export's max_seq_length or inputs
of different batch sizes fail at once with a message naming the input, its shape and the
shape expected. Normalisation, SentencePiece (the model's bytes are inside the SavedModel),
the released layout and the left padding run in the graph, so serving needs only
TensorFlow and tensorflow-text:

  import tensorflow as tf, tensorflow_text  # registers the SentencePiece ops
  serve = tf.saved_model.load(EXPORT_DIR).signatures["serving_default"]
  serve(text_a=tf.constant(["a gripping, beautifully acted film"]))["probabilities"]
"""

import os
from typing import Dict, Optional

import tensorflow as tf

from xlnet_tf import paths
from xlnet_tf.data import classifier_tasks
from xlnet_tf.layers.sequence_summary import PADDING_INVARIANT_TYPES
from xlnet_tf.models.xlnet_classifier import ClassifierSpec
from xlnet_tf.serving import export_card
from xlnet_tf.serving import text_layouts
from xlnet_tf.serving.export_card import PROBE_LONG_TEXT
from xlnet_tf.serving.export_card import PROBE_TEXTS
from xlnet_tf.serving.model_dir_export import export_model_dir
from xlnet_tf.serving.text_encoder import TEXTS
from xlnet_tf.serving.text_encoder import XLNetTextEncoder
from xlnet_tf.serving.text_encoder import check_shapes

# Where a run directory of run_classifier holds its fine-tuned model
# (`xlnet_tf.tasks.train_lib.FINAL_DIR`, of a level above this one).
RUN_FINAL_DIR = "final"
# The second texts of the probe pairs (`classifier_card`).
PROBE_SECOND_TEXTS = ("The film holds the attention.", "It is short.",
                      "C'est un film.", "Call me Ishmael.")


def serving_mem_len(spec: ClassifierSpec, whole_text: bool = True,
                    mem_len: Optional[int] = None) -> int:
  """The memory the exported classifier reads whole texts through: 0 when truncating;
  else `mem_len`, by default the one it was fine-tuned with (spec.mem_len) or, for a
  model fine-tuned on truncated texts, max_seq_length positions. Raises ValueError for a
  `mem_len` < 1 with whole_text."""
  if not whole_text:
    return 0
  if mem_len is None:
    return spec.mem_len or spec.max_seq_length
  if int(mem_len) < 1:
    raise ValueError(f"mem_len must be >= 1 to read whole texts through the memory, got "
                     f"{mem_len} (export with whole_text=False to truncate instead)")
  return int(mem_len)


def resolve_bucketed(spec: ClassifierSpec, bucketed: Optional[bool]) -> bool:
  """Whether serving_default pads to the batch's bucket: `bucketed`, by default (None) when
  the summary reads real tokens only (`PADDING_INVARIANT_TYPES`). Raises ValueError for
  `bucketed=True` with a summary that reads padding (its outputs would change)."""
  invariant = spec.summary_type in PADDING_INVARIANT_TYPES
  if bucketed is None:
    return invariant
  if bucketed and not invariant:
    raise ValueError(f"summary_type {spec.summary_type!r} reads padding positions, so its "
                     f"outputs depend on the amount of padding: export it fixed-length "
                     f"(bucketed=False); bucketing needs one of {PADDING_INVARIANT_TYPES}")
  return bool(bucketed)


class ClassifierServing(tf.Module):
  """The exported module: the classifier, the text encoder and the label names.

  `bucketed`: serving_default pads each batch to its bucket (see the module docstring);
  None: `resolve_bucketed`'s default. `whole_text`: serving_default reads texts of any
  length whole through the memory (the model's encoder needs mem_len > 0, reuse_len 0:
  `spec.build_model(config, mem_len=serving_mem_len(spec))`); False: truncates at
  max_seq_length; None: whole when the model has a memory (mem_len > 0, reuse_len 0).
  """

  def __init__(self, model, spec: ClassifierSpec, spiece_model: str,
               pair: bool = False, bucketed: Optional[bool] = None,
               whole_text: Optional[bool] = None):
    super().__init__(name="xlnet_classifier_serving")
    config = model.encoder.config
    if whole_text is None:
      whole_text = config.mem_len > 0 and not config.reuse_len
    if whole_text and (config.mem_len <= 0 or config.reuse_len):
      raise ValueError(f"reading whole texts needs a model with memory (mem_len > 0, "
                       f"reuse_len 0), got mem_len {config.mem_len}, reuse_len "
                       f"{config.reuse_len}: build it with mem_len=serving_mem_len(spec), "
                       f"or serve with whole_text=False (truncation at max_seq_length)")
    self.model = model
    self.spec = spec
    self.pair = pair
    self.whole_text = bool(whole_text)
    self.bucketed = resolve_bucketed(spec, bucketed)
    self.text_encoder = XLNetTextEncoder(spiece_model, lower=spec.uncased,
                                         keep_accents=spec.keep_accents)
    self.label_names = tf.constant(list(spec.labels) if spec.labels else [""])

  def outputs(self, features: Dict[str, tf.Tensor]) -> Dict[str, tf.Tensor]:
    result = self.model(features, training=False)
    if self.spec.is_regression:
      return {"score": result["score"]}
    probabilities = tf.nn.softmax(result["logits"], axis=-1)
    label_id = tf.argmax(probabilities, axis=-1, output_type=tf.int32)
    return {"probabilities": probabilities, "label_id": label_id,
            "label": tf.gather(self.label_names, label_id)}

  def from_text(self, text_a, text_b=None):
    if not self.whole_text:
      features = text_layouts.classifier_inputs(                    # [B, L] or [B, T]
          self.text_encoder, text_a, text_b, self.spec.max_seq_length,
          bucketed=self.bucketed)
      return self.outputs(features)
    features = text_layouts.document_inputs(                        # each [B, K, S]
        self.text_encoder, text_a, text_b, self.spec.max_seq_length,
        bucketed=self.bucketed)
    # K = 1: one segment [B, S] without memory, as a truncating export reads it (and at
    # its cost); K > 1: the segments (of S = T) in order through the memory.
    return tf.cond(tf.equal(tf.shape(features["input_ids"])[1], 1),
                   lambda: self.outputs({k: v[:, 0] for k, v in features.items()}),
                   lambda: self.outputs(features))

  def serve_text(self, text_a, text_b=None) -> Dict[str, tf.Tensor]:
    """serving_default: the shapes checked, then `from_text`."""
    inputs = {"text_a": (text_a, [None], TEXTS)}
    if text_b is not None:
      inputs["text_b"] = (text_b, [None], TEXTS)
    checked = check_shapes("serving_default", inputs)
    return self.from_text(checked["text_a"], checked.get("text_b"))

  def serve_ids(self, input_ids, segment_ids, input_mask) -> Dict[str, tf.Tensor]:
    """serving_ids: the shapes checked, then `outputs`."""
    length = self.spec.max_seq_length
    note = f"max_seq_length of this export: {length}; the released layout, padded on the left"
    return self.outputs(check_shapes("serving_ids", {
        "input_ids": (input_ids, [None, length], f"int32 token ids, {note}"),
        "segment_ids": (segment_ids, [None, length], f"int32 segment ids, {note}"),
        "input_mask": (input_mask, [None, length], f"float32, 1 at padding, {note}")}))

  def signatures(self) -> Dict[str, tf.types.experimental.ConcreteFunction]:
    strings = tf.TensorSpec([None], tf.string)
    length = self.spec.max_seq_length
    if self.pair:
      text_fn = tf.function(lambda text_a, text_b: self.serve_text(text_a, text_b))
      text = text_fn.get_concrete_function(text_a=strings, text_b=strings)
    else:
      text_fn = tf.function(lambda text_a: self.serve_text(text_a))
      text = text_fn.get_concrete_function(text_a=strings)
    ids_fn = tf.function(self.serve_ids)
    ids = ids_fn.get_concrete_function(
        input_ids=tf.TensorSpec([None, length], tf.int32),
        segment_ids=tf.TensorSpec([None, length], tf.int32),
        input_mask=tf.TensorSpec([None, length], tf.float32))
    return {"serving_default": text, "serving_ids": ids}


def export_classifier(model_dir: str, export_dir: str, pair: Optional[bool] = None,
                      spiece_model: Optional[str] = None,
                      bucketed: Optional[bool] = None, whole_text: bool = True,
                      mem_len: Optional[int] = None) -> str:
  """Exports the fine-tuned model in `model_dir` (a classifier model directory, `model_directory`).

  Args:
    pair: whether serving_default takes text_b; default: whether classifier.json's task
      is a sentence-pair task of the registry (`classifier_tasks.is_pair_task`).
    spiece_model: default `model_dir/spiece.model`.
    bucketed: serving_default pads each batch to its bucket (True) or to max_seq_length
      (False); default: bucketed unless the summary reads padding (`resolve_bucketed`:
      True with such a summary raises ValueError, once classifier.json is read).
    whole_text: serving_default reads texts of any length whole through the memory
      (default); False: truncates them at max_seq_length, as released.
    mem_len: the memory of whole-text serving (`serving_mem_len`: by default
      classifier.json's mem_len, else max_seq_length).
  Returns: export_dir.
  Raises:
    NotADirectoryError / PermissionError: `export_dir` is a file, lies under a file or
      cannot be written (checked before the model is loaded).
  """
  def serving(model, spec: ClassifierSpec, spiece: str) -> ClassifierServing:
    return ClassifierServing(
        model, spec, spiece,
        pair=classifier_tasks.is_pair_task(spec.task_name) if pair is None else pair,
        bucketed=bucketed, whole_text=whole_text)
  return export_model_dir(
      model_dir, export_dir, ClassifierSpec, serving, spiece_model,
      spiece_hint="--spiece_model_file", card=classifier_card,
      build_options=lambda spec: {"mem_len": serving_mem_len(spec, whole_text, mem_len)})


# ---- the card -------------------------------------------------------------------------------

def export_fine_tuned(model_dir: str, export_dir: str, pair: Optional[bool] = None,
                      spiece_model: Optional[str] = None,
                      bucketed: Optional[bool] = None, whole_text: bool = True,
                      mem_len: Optional[int] = None) -> str:
  """What `xlnet-export` does: `export_classifier` (the same arguments) of a classifier
  model directory, or of the one a run directory of run_classifier (its --model_dir) holds
  in final/, after checking the paths before the model is loaded (OSError naming
  --model_dir, --spiece_model_file or --export_dir); a full disk is one line naming the
  mount.

  Returns:
    The model directory exported.
  """
  paths.check_input_path(model_dir, "--model_dir", "directory written by run_classifier")
  paths.check_input_path(spiece_model, "--spiece_model_file", "SentencePiece model file")
  paths.check_output_dir(export_dir, "--export_dir")
  if not tf.io.gfile.exists(os.path.join(model_dir, ClassifierSpec.FILE)):
    model_dir = os.path.join(model_dir, RUN_FINAL_DIR)
  with paths.reporting_disk_full(export_dir):
    export_classifier(model_dir, export_dir, pair=pair, spiece_model=spiece_model,
                      bucketed=bucketed, whole_text=whole_text, mem_len=mem_len)
  return model_dir


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


def classifier_card(module: ClassifierServing) -> export_card.ExportCard:
  """`ClassifierServing`: probabilities (score for regression)."""
  spec = module.spec
  whole_text = getattr(module, "whole_text", False)
  long_text = (PROBE_LONG_TEXT,) if whole_text else ()
  inputs = {"text_a": list(PROBE_TEXTS + long_text)}
  if module.pair:
    inputs["text_b"] = list(PROBE_SECOND_TEXTS + PROBE_SECOND_TEXTS[:len(long_text)])
  kind = "regression" if spec.is_regression else "classification"
  mem_len = module.model.encoder.config.mem_len if whole_text else 0
  return export_card.ExportCard(
      task=kind, title=f"XLNet {kind} ({spec.task_name}), SavedModel",
      about=(f"a {kind} export: its serving_default takes "
             f"{'text_a and text_b' if module.pair else 'text_a'}; serve it with "
             f"xlnet-classify (docs/serving.md, A classifier)"),
      python_fn=module.serve_text, inputs=inputs,
      keys=("score",) if spec.is_regression else ("probabilities",),
      labels=None if spec.is_regression else list(spec.labels),
      details={"max_seq_length": spec.max_seq_length, "uncased": spec.uncased,
               "keep_accents": getattr(spec, "keep_accents", False),
               "Inputs": "text_a, text_b" if module.pair else "text_a",
               "Reading": reading_detail(spec.max_seq_length, mem_len,
                                         getattr(spec, "mem_len", 0)),
               "Padding": export_card.padding_detail(spec.max_seq_length, module.bucketed,
                                                     whole_text=whole_text)
               + "; serving_ids: ids padded to max_seq_length"})
