"""SQuAD v1.1 / v2.0 question answering as a Model Garden task.

  >>> from official.core import exp_factory, task_factory
  >>> import xlnet_tf.tasks.all_tasks                        # registers every task
  >>> params = exp_factory.get_exp_config("xlnet/squad")
  >>> params.override({"task": {"init_checkpoint": "converted/xlnet_large",
  ...                           "train_file": "train-v2.0.json",
  ...                           "predict_file": "dev-v2.0.json"}})
  >>> task = task_factory.get_task(params.task)
  >>> model = task.build_model(); task.initialize(model)     # warm start from init_checkpoint
  >>> dataset = task.build_inputs(params.task.train_data)    # micro-batches of windows
  >>> metrics = task.evaluate(model)                          # official EM / F1 of predict_file
  >>> task.write_predictions(model, "out")                    # predictions.json, ...

The pieces are the existing ones: questions from `data.squad` (train_file for the training
data, predict_file for the validation data), doc-stride windows of
`squad_features.squad_windows` cached as TFRecords by `squad_features.cached_windows` and
streamed by `squad_features.squad_dataset` (never held in memory as arrays), the model of
`models.xlnet_squad` (head dropout = task.model.dropout), the loss
`squad_head.squad_loss_sum` (the answer-class term for SQuAD 2.0 only), the decoding of
`evaluation.squad_postprocess`, the official EM/F1 of `evaluation.squad_metrics` and the
raw-text SavedModel of `serving.squad_export`.

Evaluation (`evaluate`, `predict`, `write_predictions`) reads the predict file's windows in
order from the cache, runs the model on them, re-makes each question's windows in Python
(`squad_windows`: their raw character spans and max-context flags are not cached) and
checks them against the cached ones (window_id in order, cls_index per window) before
decoding. For SQuAD 2.0 the null-score threshold is task.null_score_diff_threshold or, when
that is None and the file has answers, the best-F1 threshold searched on the file itself
(as the released run_squad.py does on dev); it is returned in the metrics
("null_score_diff_threshold") and kept in the model directory's squad.json, which the
export reads. METRIC is "f1" (SQuAD 2.0: at that threshold, i.e. the best F1 when searched).

The fine-tuned model directory (`save_model_dir`) is run_squad's MODEL_DIR/final:
xlnet_config.json, model.ckpt, spiece.model and squad.json (uncased, max_seq_length,
doc_stride, max_query_length, start_n_top, end_n_top, version_2_with_negative and, when
known, null_score_diff_threshold).

Training runs through `tasks.train_lib` (experiments/train.py, experiments/run_squad.py)
with the common `training.trainer.Trainer`, as for every XLNet task.
"""

import dataclasses
import json
import os
from typing import Any, Dict, List, Optional

from absl import logging
import numpy as np
from official.core import config_definitions as cfg
from official.core import exp_factory
from official.core import task_factory
import tensorflow as tf
import tf_keras

from xlnet_tf import paths
from xlnet_tf.data import feature_cache
from xlnet_tf.data import sample_data
from xlnet_tf.data import squad
from xlnet_tf.data import squad_features
from xlnet_tf.data import text_alignment
from xlnet_tf.data import tokenization
from xlnet_tf.evaluation import squad_metrics
from xlnet_tf.evaluation import squad_postprocess
from xlnet_tf.models.xlnet_squad import build_squad_model
from xlnet_tf.serving import squad_export
from xlnet_tf.tasks import base
from xlnet_tf.models.xlnet_squad import SquadSpec
from xlnet_tf.models.xlnet_squad import XLNetForSquad
from xlnet_tf.models.xlnet_simple_qa import SimpleQASpec
from xlnet_tf.models.xlnet_simple_qa import XLNetSimpleQA
from xlnet_tf.models.xlnet_simple_qa import build_simple_qa
from xlnet_tf.convert.heads.squad import SimpleQAConversion
from xlnet_tf.convert.heads.squad import SquadConversion
from xlnet_tf import task_kind
from xlnet_tf.training import model_functions

# The settings squad.json records (how windows are made and the head searches), in order;
# then version_2_with_negative and, when known, null_score_diff_threshold.
SETTING_KEYS = ("uncased", "max_seq_length", "doc_stride", "max_query_length",
                "start_n_top", "end_n_top")
THRESHOLD_KEY = "null_score_diff_threshold"
# The model's inputs at inference, and the head's outputs `squad_postprocess.decode` reads.
PREDICT_INPUTS = ("input_ids", "segment_ids", "input_mask", "p_mask", "cls_index")
OUTPUT_KEYS = ("start_top_log_probs", "start_top_index", "end_top_log_probs",
               "end_top_index", "cls_logits")
# What `write_predictions` writes (experiments/run_squad.py --do_predict's output).
PREDICTIONS_FILE = "predictions.json"
NBEST_FILE = "nbest_predictions.json"
NULL_ODDS_FILE = "null_odds.json"
RESULTS_FILE = "eval_results.json"

# The head's inference graph of `SquadTask.window_outputs`, traced once per model (and
# input signature).
_WINDOW_OUTPUTS = model_functions.ModelFunctions(
    lambda model, batch: model({k: batch[k] for k in PREDICT_INPUTS}, training=False),
    autograph=False)


@dataclasses.dataclass
class SquadDataConfig(base.TaskDataConfig):
  """The windows of one SQuAD file (see `base.TaskDataConfig`): the training data reads
  task.train_file, the validation data task.predict_file; `split` names the cache file.
  global_batch_size counts windows."""


def _optimization():
  """The released run_squad.py's optimisation (scripts/tpu_squad_large.sh)."""
  return base.FinetuneSettings(learning_rate=3e-5, lr_layer_decay_rate=0.75,
                               warmup_steps=1000, adam_epsilon=1e-6)


@dataclasses.dataclass
class SquadConfig(cfg.TaskConfig):
  """SQuAD v1.1 / v2.0 (the released run_squad.py's settings and defaults).

  init_checkpoint: a pretrained model directory or preset name (xlnet_config.json, model.ckpt,
    spiece.model), e.g. from `xlnet_tf.convert`; "" for a random model.
  train_file, predict_file: SQuAD JSON files (the predict file is the validation data;
    with answers it is scored); "sample_data:qa/squad.json" is the bundled SQuAD v1.1
    sample, found wherever the package is (`sample_data.resolve`), as squad_demo.yaml
    gives it; "" is no file (training refuses).
  max_seq_length, doc_stride, max_query_length: the windows (pieces).
  max_answer_length, n_best_size: the decoding (pieces; candidates kept per question).
  start_n_top, end_n_top: the head's search (best starts, best ends per start).
  version_2_with_negative: SQuAD 2.0 (train the answer class, answer "" above the null
    threshold); None: whether a question of train_file (without one: of predict_file) is
    unanswerable.
  null_score_diff_threshold: SQuAD 2.0's null threshold; None: searched on predict_file
    when it has answers (best F1), else 0.
  `model.summary_type` and `model.use_proj` are the classifier's and not used.
  """
  model: base.XLNetModelConfig = dataclasses.field(default_factory=base.XLNetModelConfig)
  train_file: str = ""
  predict_file: str = ""
  max_seq_length: int = 512
  doc_stride: int = 128
  max_query_length: int = 64
  max_answer_length: int = 64
  n_best_size: int = 5
  start_n_top: int = 5
  end_n_top: int = 5
  uncased: bool = False
  version_2_with_negative: Optional[bool] = None
  null_score_diff_threshold: Optional[float] = None
  train_data: SquadDataConfig = base.data_config("train", True, 48, SquadDataConfig)
  validation_data: SquadDataConfig = base.data_config("dev", False, 32, SquadDataConfig)
  optimization: base.FinetuneSettings = dataclasses.field(default_factory=_optimization)


@dataclasses.dataclass
class SquadPredictions:
  """The decoded predictions of a SQuAD file (`SquadTask.predict`).

  answers: {qas_id: text} (SQuAD 2.0: "" where the null score exceeds the threshold);
  nbest: {qas_id: [squad_postprocess.Candidate]}; null_scores: {qas_id: the smallest
  answer-class logit of its windows}; null_score_diff_threshold: the threshold applied
  (SQuAD 2.0, else None); metrics: the official scores (None when the file has no
  answers); num_windows: the windows decoded.
  """
  answers: Dict[str, str]
  nbest: Dict[str, List[squad_postprocess.Candidate]]
  null_scores: Dict[str, float]
  null_score_diff_threshold: Optional[float]
  metrics: Optional[Dict[str, Any]]
  num_windows: int


# ---- the loss (the trainer's `LossFn`: sum over the micro-batch, count) ----------

def squad_loss(outputs, start_positions, end_positions, is_impossible=None):
  """The released loss: mean of the start and end cross-entropies, plus half the binary
  cross-entropy of the answer class when `is_impossible` is given (v2.0). Scalar."""
  start = tf.nn.sparse_softmax_cross_entropy_with_logits(start_positions,
                                                         outputs["start_logits"])
  end = tf.nn.sparse_softmax_cross_entropy_with_logits(end_positions, outputs["end_logits"])
  loss = tf.reduce_mean(start + end) / 2.0
  if is_impossible is not None:
    answer = tf.nn.sigmoid_cross_entropy_with_logits(tf.cast(is_impossible, tf.float32),
                                                     outputs["cls_logits"])
    loss += 0.5 * tf.reduce_mean(answer)
  return loss


def squad_loss_sum(outputs, batch, answer_class: bool = True):
  """`squad_loss` as the common trainer's `LossFn`: (the loss summed over the batch, the
  number of windows), from the batch's start_positions, end_positions and, when
  `answer_class` (the released run_squad.py: always, v1.1 included), is_impossible."""
  count = tf.cast(tf.shape(batch["start_positions"])[0], tf.float32)
  mean = squad_loss(outputs, batch["start_positions"], batch["end_positions"],
                    batch["is_impossible"] if answer_class else None)
  return mean * count, count


KIND = task_kind.register(task_kind.TaskKind(
    name="squad", description="SQuAD head (start_logits/, end_logits/, answer_class/)",
    model_class=XLNetForSquad, build_model=build_squad_model, spec_class=SquadSpec,
    card_task="squad", export=squad_export.export_squad_dir, conversion=SquadConversion(),
    max_seq_length=512, experiment="xlnet/squad"))


@exp_factory.register_config_factory(KIND.experiment)
def squad_experiment() -> cfg.ExperimentConfig:
  """run_squad.py's defaults: lr 3e-5, layer decay 0.75, batch 48, 8000 steps,
  max_seq_length 512; 1000 warmup steps as its TPU script (tpu_squad_large.sh; the script's
  flag default is 0) (give init_checkpoint, train_file, predict_file)."""
  return base.experiment_config(SquadConfig(), train_steps=8000, steps_per_loop=1000,
                                checkpoint_interval=1000, validation_interval=2000,
                                max_to_keep=5)

# HuggingFace's simple span head: imported, converted back and served with the SQuAD
# export's signature (v1.1); not trained here (the SQuAD task trains the released head).
task_kind.register(task_kind.TaskKind(
    name="qa_simple", description="simple span QA head (HuggingFace's "
                                  "XLNetForQuestionAnsweringSimple; the original has none)",
    model_class=XLNetSimpleQA, build_model=build_simple_qa, spec_class=SimpleQASpec,
    card_task="squad", export=squad_export.export_qa_simple,
    conversion=SimpleQAConversion(), max_seq_length=512))


@task_factory.register_task_cls(SquadConfig)
class SquadTask(base.XLNetTask):
  """XLNet SQuAD: model, windows, loss, decoding, evaluation, model directory, export."""

  KIND = KIND
  # In training the model reads the gold start too (the end is conditioned on it).
  INPUT_KEYS = PREDICT_INPUTS + ("start_positions",)
  METRIC = "f1"
  METRIC_HIGHER_IS_BETTER = True

  def loss_fn(self):
    return squad_loss_sum

  def __init__(self, params: SquadConfig, logging_dir: Optional[str] = None,
               name: Optional[str] = None):
    super().__init__(params, logging_dir=logging_dir, name=name)
    for key in ("max_seq_length", "doc_stride", "max_query_length", "max_answer_length",
                "n_best_size", "start_n_top", "end_n_top"):
      if getattr(params, key) < 1:
        raise ValueError(f"task.{key} must be >= 1, got {getattr(params, key)}")
    if params.max_seq_length < params.max_query_length + 4:
      raise ValueError(f"task.max_seq_length ({params.max_seq_length}) leaves no room for "
                       f"a paragraph after max_query_length ({params.max_query_length}) "
                       f"and 3 special tokens")
    self._examples: Dict[str, List[squad.SquadExample]] = {}
    self._version_2: Optional[bool] = None

  # ---- what the task is ----------------------------------------------------------------

  def data_file(self, data: SquadDataConfig) -> str:
    """The SQuAD JSON file of `data`: train_file for training data, else predict_file
    (a "sample_data:..." name resolved to the bundled file)."""
    name = "train_file" if data.is_training else "predict_file"
    path = getattr(self.task_config, name)
    if not path:
      raise ValueError(f"task.{name} is empty (give a SQuAD JSON file)")
    try:
      return sample_data.resolve(path)
    except ValueError as e:
      raise ValueError(f"task.{name}: {e}") from None

  def examples(self, data: Optional[SquadDataConfig] = None) -> List[squad.SquadExample]:
    """The questions of `data`'s file (default: the validation data's), read once."""
    path = self.data_file(data or self.task_config.validation_data)
    if path not in self._examples:
      examples, report = squad.read_squad(path)
      if not examples:
        raise ValueError(f"{path}: no questions")
      logging.info("%s: %d questions (%d answers skipped: answer_start mismatch)", path,
                   len(examples), report["skipped_answers"])
      self._examples[path] = examples
    return self._examples[path]

  @property
  def version_2(self) -> bool:
    """SQuAD 2.0: task.version_2_with_negative, or (None) whether a question of train_file
    (without one: of predict_file) is unanswerable."""
    params = self.task_config
    if params.version_2_with_negative is not None:
      return bool(params.version_2_with_negative)
    if self._version_2 is None:
      data = params.train_data if params.train_file else params.validation_data
      self._version_2 = any(e.is_impossible for e in self.examples(data))
    return self._version_2

  def spec_values(self) -> Dict[str, Any]:
    """squad.json's settings (without the null threshold)."""
    values = {key: getattr(self.task_config, key) for key in SETTING_KEYS}
    values["version_2_with_negative"] = self.version_2
    return values

  def check(self, training: bool = True, evaluating: bool = False) -> None:
    """For training an existing train_file; then `XLNetTask.check`."""
    if training:
      path = self.data_file(self.task_config.train_data)
      if not tf.io.gfile.exists(path):
        raise ValueError(f"task.train_file {path}: no such file")
    super().check(training, evaluating)

  # ---- the model directory and the export ------------------------------------------------

  def model_spec(self, metrics=None) -> SquadSpec:
    """run_squad's squad.json: the window settings; the SQuAD 2.0 null threshold of
    `metrics` (else task.null_score_diff_threshold) when there is one."""
    values = self.spec_values()
    threshold = (metrics or {}).get(THRESHOLD_KEY, self.task_config.null_score_diff_threshold)
    if self.version_2 and threshold is not None:
      values[THRESHOLD_KEY] = float(threshold)
    return SquadSpec(values)

  def load_options(self) -> Dict[str, Any]:
    """A model read from disk searches task.start_n_top x task.end_n_top candidates."""
    return {"start_n_top": self.task_config.start_n_top,
            "end_n_top": self.task_config.end_n_top}

  def export_options(self) -> Dict[str, Any]:
    """`squad_export.export_squad_dir`: the window settings and the null threshold from
    model_dir/squad.json (the threshold overridden by task.null_score_diff_threshold when
    set)."""
    return {**self.load_options(),
            "null_score_diff_threshold": self.task_config.null_score_diff_threshold,
            "max_answer_length": self.task_config.max_answer_length}

  # ---- Model Garden's Task interface ---------------------------------------------------

  def build_model(self) -> tf_keras.Model:
    params = self.task_config
    return build_squad_model(self.xlnet_config(), params.start_n_top, params.end_n_top,
                             dropout_rate=params.model.dropout)

  def features_path(self, data: SquadDataConfig) -> str:
    """The cached windows of `data`'s file (built on first use): training windows carry
    the gold span (cls_index when it is outside the window)."""
    params = self.task_config
    path = self.data_file(data)
    return squad_features.cached_windows(
        self.examples(data), self.spiece_model(data), params.max_seq_length,
        params.doc_stride, params.max_query_length, is_training=data.is_training,
        uncased=params.uncased, split=data.split, input_files=[path],
        cache_dir=self.cache_dir(data))

  def build_inputs(self, params: SquadDataConfig,
                   input_context: Optional[tf.distribute.InputContext] = None,
                   path: Optional[str] = None) -> tf.data.Dataset:
    """Batches of windows streamed from the cache. For training: per-replica
    MICRO-batches (global_batch_size / replicas / grad_accum_steps), shuffled with the
    data seed and repeated; otherwise one pass in order (with window_id)."""
    return squad_features.squad_dataset(
        path or self.features_path(params), self.replica_batch_size(params, input_context),
        is_training=params.is_training, seed=params.seed,
        max_seq_length=self.task_config.max_seq_length, input_context=input_context,
        shuffle_buffer_size=params.shuffle_buffer_size,
        drop_remainder=params.drop_remainder if params.is_training else False)

  # ---- prediction, decoding and evaluation ---------------------------------------------

  def window_outputs(self, model: tf_keras.Model, params: SquadDataConfig,
                     path: str) -> Dict[str, np.ndarray]:
    """The head's inference outputs (OUTPUT_KEYS) of every cached window of `path`, in
    order, with their window_id and cls_index; the ids checked to be 0, 1, ..."""
    dataset = self.build_inputs(params, path=path)
    step = _WINDOW_OUTPUTS.get(model, dataset.element_spec)
    collected: Dict[str, List[np.ndarray]] = {
        k: [] for k in OUTPUT_KEYS + ("window_id", "cls_index")}
    for batch in dataset:
      outputs = step(batch)
      for key in OUTPUT_KEYS:
        collected[key].append(outputs[key].numpy())
      for key in ("window_id", "cls_index"):
        collected[key].append(batch[key].numpy())
    if not collected["window_id"]:
      raise ValueError(f"{path}: no windows")
    arrays = {k: np.concatenate(v, axis=0) for k, v in collected.items()}
    count = len(arrays["window_id"])
    if not np.array_equal(arrays["window_id"], np.arange(count)):
      raise ValueError(f"{path}: the windows were not read in order (window_id)")
    info = feature_cache.read_cache_info(path)
    if info and info.get("num_examples") not in (None, count):
      raise ValueError(f"{path}: {count} windows read, the cache holds "
                       f"{info['num_examples']}")
    return arrays

  def decode(self, examples: List[squad.SquadExample], outputs: Dict[str, np.ndarray],
             params: Optional[SquadDataConfig] = None):
    """(answers, nbest, null scores) of `squad_postprocess.decode` (no threshold), the
    windows of each question re-made (`squad_windows`) in the cache's order and checked
    against the cached ones (window_id, cls_index)."""
    params = params or self.task_config.validation_data
    config = self.task_config
    sp = tokenization.load_spiece(self.spiece_model(params))
    continuation = text_alignment.continuation_processor(sp)
    count = len(outputs["window_id"])
    answers, nbest, null_scores = {}, {}, {}
    row = 0
    for example in examples:
      windows = squad_features.squad_windows(
          sp, example, config.max_seq_length, config.doc_stride, config.max_query_length,
          is_training=False, uncased=config.uncased, continuation=continuation)
      rows = np.arange(row, row + len(windows))
      if rows[-1] >= count or not np.array_equal(
          outputs["window_id"][rows], rows) or any(
              w.cls_index != outputs["cls_index"][r] for w, r in zip(windows, rows)):
        raise ValueError(f"question {example.qas_id}: its windows differ from the cached "
                         f"ones (windows {row}..{row + len(windows) - 1} of {count}); the "
                         f"cache does not match {self.data_file(params)} and the settings")
      one = {key: outputs[key][row:row + len(windows)] for key in OUTPUT_KEYS}
      answer, best, null = squad_postprocess.decode(
          [example], windows, one, n_best=config.n_best_size,
          max_answer_length=config.max_answer_length)
      answers.update(answer)
      nbest.update(best)
      null_scores.update(null)
      row += len(windows)
    if row != count:
      raise ValueError(f"{self.data_file(params)}: {row} windows made, {count} cached")
    return answers, nbest, null_scores

  def score(self, examples: List[squad.SquadExample], answers: Dict[str, str],
            null_scores: Dict[str, float]):
    """(answers with the null threshold applied, threshold or None, metrics or None).

    SQuAD 2.0: the threshold is task.null_score_diff_threshold, or (None) the best-F1
    threshold on these questions when they have answers, else 0; the metrics are the
    official v2.0 ones at that threshold, with best_* and null_score_diff_threshold.
    v1.1: the official v1.1 metrics. No metrics when no question has a gold answer."""
    gold = squad.gold_answers(examples)
    has_gold = any(e.answers or e.is_impossible for e in examples)
    if not self.version_2:
      metrics = (squad_metrics.evaluate(gold, answers, version="1.1") if has_gold
                 else None)
      return dict(answers), None, metrics
    threshold = self.task_config.null_score_diff_threshold
    if threshold is None and has_gold:
      threshold = squad_metrics.evaluate(gold, answers, null_scores,
                                         version="2.0")["best_f1_thresh"]
    threshold = 0.0 if threshold is None else float(threshold)
    metrics = None
    if has_gold:
      metrics = squad_metrics.evaluate(gold, answers, null_scores, na_threshold=threshold,
                                       version="2.0")
      metrics[THRESHOLD_KEY] = threshold
    final = {q: ("" if null_scores[q] > threshold else a) for q, a in answers.items()}
    return final, threshold, metrics

  def predict(self, model: tf_keras.Model,
              params: Optional[SquadDataConfig] = None) -> SquadPredictions:
    """The decoded (and, with answers, scored) predictions of every question of the
    validation data's file (predict_file)."""
    params = params or self.task_config.validation_data
    examples = self.examples(params)
    outputs = self.window_outputs(model, params, self.features_path(params))
    answers, nbest, null_scores = self.decode(examples, outputs, params)
    answers, threshold, metrics = self.score(examples, answers, null_scores)
    if metrics is not None:
      metrics.update(num_examples=len(examples), num_windows=len(outputs["window_id"]))
    return SquadPredictions(answers, nbest, null_scores, threshold, metrics,
                            len(outputs["window_id"]))

  def evaluate(self, model: tf_keras.Model, params: Optional[SquadDataConfig] = None,
               num_steps: int = -1) -> Dict[str, Any]:
    """The official EM/F1 (exact, f1, total; v2.0 also HasAns_/NoAns_*, best_* and
    null_score_diff_threshold), num_examples and num_windows of predict_file
    (`num_steps` is ignored: answers are decoded over all windows of a question)."""
    del num_steps
    params = params or self.task_config.validation_data
    predictions = self.predict(model, params)
    if predictions.metrics is None:
      raise ValueError(f"{self.data_file(params)}: no question has a gold answer; "
                       f"nothing to score (write_predictions writes the answers)")
    return predictions.metrics

  def write_predictions(self, model: tf_keras.Model, output_dir: str,
                        params: Optional[SquadDataConfig] = None) -> Dict[str, Any]:
    """Writes OUTPUT_DIR/predictions.json ({id: answer}, the official format),
    nbest_predictions.json, null_odds.json and, when predict_file has answers,
    eval_results.json; returns the metrics ({} without answers; SQuAD 2.0 always with
    null_score_diff_threshold)."""
    predictions = self.predict(model, params)
    tf.io.gfile.makedirs(output_dir)

    def write(name, values):
      with tf.io.gfile.GFile(os.path.join(output_dir, name), "w") as f:
        f.write(json.dumps(values, indent=2, ensure_ascii=False) + "\n")
    results = dict(predictions.metrics or {})
    if predictions.null_score_diff_threshold is not None:
      results = {THRESHOLD_KEY: predictions.null_score_diff_threshold, **results}
    if predictions.metrics is not None:
      write(RESULTS_FILE, results)
    write(PREDICTIONS_FILE, predictions.answers)
    write(NULL_ODDS_FILE, predictions.null_scores)
    write(NBEST_FILE, {q: [{"text": c.text, "score": c.score, "start_char": c.start_char}
                           for c in candidates]
                       for q, candidates in predictions.nbest.items()})
    return results


def record_threshold(model_dir: str, threshold: float) -> None:
  """Keeps a SQuAD 2.0 null threshold in model_dir/squad.json, for the export (a model
  directory without squad.json, or of a v1.1 model, is left alone)."""
  path = os.path.join(model_dir, SquadSpec.FILE)
  if not tf.io.gfile.exists(path):
    return
  with tf.io.gfile.GFile(path) as f:
    settings = json.load(f)
  if not settings.get("version_2_with_negative"):
    return
  settings[THRESHOLD_KEY] = float(threshold)
  paths.write_json(path, settings)


def read_settings(model_dir: str) -> Dict[str, Any]:
  """model_dir/squad.json ({} when missing)."""
  path = os.path.join(model_dir, SquadSpec.FILE)
  if not tf.io.gfile.exists(path):
    return {}
  with tf.io.gfile.GFile(path) as f:
    return json.load(f)

