"""Fine-tuning a tagger (token classification): the run, prediction, evaluation and the
fine-tuned model's folder.

The run is the classifier's (`finetuning.build_model_and_optimizer`,
`finetuning.train_model`): the same `FinetuneOptions` (learning rate, warmup, clipping,
layer-wise decay, gradient accumulation, precision, checkpoints), the same model-directory
lock and run settings (`finetuning.open_run`), the same guarded checkpoints, and the
common step (`trainer.Trainer`) with the tagger's loss, `tagging_loss`: the
cross-entropy of each word's first piece, averaged over the labelled words of the global
batch (`losses.token_cross_entropy`).

  >>> spec = TaggerSpec("brown", labels=brown.tag_list(sentences), max_seq_length=128)
  >>> model, optimizer = build_for_training(strategy, finetuning.finetune_config(config),
  ...                                       spec, options)
  >>> path = tagging_features.cached_features(train, "spiece.model", 128,
  ...                                          label_list=spec.labels, cache_dir="cache")
  >>> train_tagger(strategy, model, optimizer, lambda ctx: tagging_features.tagging_dataset(
  ...     path, 32, is_training=True, seed=0, input_context=ctx), options)
  >>> model_directory.save(model, "tagger_dir", spec, "spiece.model")
  >>> predict_tags(model, sp, [["The", "jury", "said"]], spec)
  [['at', 'nn', 'vbd']]

The fine-tuned tagger is a model directory with `tagger.json` (`model_directory.TaggerSpec`:
task, labels, max_seq_length, casing, scheme): what `serving.tagger_export` reads.
"""

from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np
import sentencepiece as spm
import tensorflow as tf

from xlnet_tf.configs import XLNetConfig
from xlnet_tf.data import tagging_features
from xlnet_tf.evaluation import tagging_metrics
from xlnet_tf.model_directory import TaggerSpec
from xlnet_tf.models import losses
from xlnet_tf.models.xlnet_tagger import XLNetTagger
from xlnet_tf.models.xlnet_tagger import build_tagger
from xlnet_tf.training import model_functions
from xlnet_tf.training.finetuning import FinetuneOptions
from xlnet_tf.training.finetuning import build_model_and_optimizer
from xlnet_tf.training.finetuning import train_model

def tagging_loss(outputs: Dict[str, tf.Tensor], batch: Dict[str, tf.Tensor]):
  """The `Trainer` loss of a tagger: (cross-entropy summed over the micro-batch's labelled
  words, their number); `batch["label_ids"]` int [B, T] (negative = not labelled)."""
  return losses.token_cross_entropy(outputs["logits"], batch["label_ids"])


def build_for_training(strategy: tf.distribute.Strategy, config: XLNetConfig,
                       spec: TaggerSpec, options: FinetuneOptions,
                       head_dropout: float = 0.0):
  """(tagger, optimizer), in the strategy's scope, warm-started from `init_checkpoint`
  (`finetuning.build_model_and_optimizer`).

  `config` carries the run's dropout (see `finetuning.finetune_config`); `head_dropout` is
  the tagger's extra dropout before its logit layer (0: HuggingFace's model)."""
  return build_model_and_optimizer(
      strategy, options,
      lambda: build_tagger(config, spec.num_labels, dropout_rate=head_dropout))


def train_tagger(strategy: tf.distribute.Strategy, model: XLNetTagger, optimizer,
                 dataset_fn: Callable, options: FinetuneOptions,
                 run_settings: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
  """Trains to `train_steps` (resuming from `model_dir`); returns {"step", "losses" (one
  per loop of `steps_per_loop` steps), "start_step"}.

  `dataset_fn(input_context)` returns per-replica MICRO-batches of `tagging_dataset`
  (the batch of one step divided by replicas and by `grad_accum_steps`), the same sequence
  in every run (a fixed shuffling seed): a resumed run skips the micro-batches of the steps
  already taken. `run_settings` (task, data, batch size) join the config and the options
  as what defines the run in `model_dir` (see `finetuning.open_run`). The run is
  `finetuning.train_model` with `tagging_loss`.
  """
  return train_model(strategy, model, optimizer, dataset_fn, options, loss_fn=tagging_loss,
                     input_keys=tagging_features.MODEL_INPUTS,
                     run_settings={"task": "tagging", **(run_settings or {})})


# ---- prediction and evaluation -------------------------------------------------------------

# The logits of `predict_tags`, traced once per model and input signature (any batch size).
_PREDICT_LOGITS = model_functions.ModelFunctions(
    lambda model, inputs: model(inputs, training=False)["logits"])


def predict_tags(model: XLNetTagger, sp: spm.SentencePieceProcessor,
                 sentences: Sequence[Sequence[str]], spec: TaggerSpec,
                 batch_size: int = 32) -> List[List[Optional[str]]]:
  """One predicted tag per word of each sentence (a list of words; a raw text is
  `text.split()`), the argmax at the word's first piece; None for words cut away by
  `spec.max_seq_length`. The inputs are `tagging_features`' (what serving computes in the
  graph)."""
  if isinstance(sentences, str) or any(isinstance(s, str) for s in sentences):
    raise TypeError("predict_tags expects lists of words (split a text with text.split())")
  labels = list(spec.labels)
  encoded = list(tagging_features.encode_sentences(
      sp, [tagging_features.TaggedSentence(str(k), tuple(words))
           for k, words in enumerate(sentences)], spec.max_seq_length, uncased=spec.uncased))
  result = []
  for start in range(0, len(encoded), batch_size):
    chunk = encoded[start:start + batch_size]
    inputs = {key: tf.constant(np.stack([f[key] for f in chunk]))
              for key in tagging_features.MODEL_INPUTS}
    signature = {key: tf.TensorSpec([None, *value.shape[1:]], value.dtype)
                 for key, value in inputs.items()}                      # any batch size
    run = _PREDICT_LOGITS.get(model, signature)
    ids = np.argmax(run(inputs).numpy(), axis=-1)                       # [b, T]
    for row, features in zip(ids, chunk):
      tags = [labels[i] for i in row[features["word_positions"]]]
      result.append(tags + [None] * (features["num_words"] - len(tags)))
  return result


def evaluate_tagger(model: XLNetTagger, sp: spm.SentencePieceProcessor,
                    sentences: Sequence[tagging_features.TaggedSentence], spec: TaggerSpec,
                    batch_size: int = 32) -> Dict[str, float]:
  """`tagging_metrics.tagging_metrics` of the model's predictions on tagged sentences
  (words cut away by max_seq_length count as wrong, and as "untagged")."""
  predicted = predict_tags(model, sp, [s.words for s in sentences], spec, batch_size)
  return tagging_metrics.tagging_metrics([list(s.tags) for s in sentences], predicted,
                                         scheme=spec.scheme)
