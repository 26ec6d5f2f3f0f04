"""The flags the entry points of experiments/ share, each defined once here (as Model
Garden's official/common/flags.py defines its driver's): a command calls the functions
below for the flags it has, giving only its own defaults where they differ from the usual
ones and, where its flag means something narrower, a note that the help text adds in
parentheses.

  common_flags.define_strategy_flags()                    # --strategy, --tpu, --num_gpus
  common_flags.define_network_flags(("n_layer", "d_model"), n_layer=12, d_model=768,
                                    notes={"d_model": "heads of 64"})
  common_flags.define_finetuning_flags(learning_rate=2e-5, lr_layer_decay_rate=1.0,
                                       train_steps=12000, train_batch_size=8)
  common_flags.define_flags(["work_dir", "seeds"], work_dir="runs/ablation",
                            seeds=["0", "1", "2"])

The network flags (`NETWORK_FLAGS`) are `xlnet_tf.configs.XLNetConfig`'s fields: their
types, usual defaults and help texts come from the fields and their metadata (--init_std
is initializer_range); the other flags are `_SHARED`'s. A flag defined here counts as the
calling command's own (this module disclaims the flags it defines, so absl's --help lists
them with the command's).

Flags whose meaning is the command's alone stay in the command: the value sets of
benchmark_model's --precision (Keras policies) and of the presets' --size differ per
command; xlnet-generate defines its flags into a FlagValues of its own, where --strategy,
--mem_len (0: all), --seed (None: fresh) and --uncased / --keep_accents (None: as the
model directory records) mean what generation means by them; embed's --saved_model is
read and xlnet-convert's written; a --task_name is the task to fine-tune or the released
head to convert; --output, --input and --no_mems name a different thing in each command.
data_prep's commands sit below experiments/ in the stack (docs/architecture.md) and
define their own.
"""

import dataclasses
from typing import Any, Callable, Dict, Mapping, NamedTuple, Optional, Sequence

from absl import flags

from xlnet_tf import configs
from xlnet_tf.benchmarks import step_speed
from xlnet_tf.layers import sequence_summary
from xlnet_tf.runs.released import flag_translation
from xlnet_tf.training import loop
from xlnet_tf.training import optimization

flags.disclaim_key_flags()   # the flags defined below are the calling command's


class _Flag(NamedTuple):
  """A shared flag: its absl definer, usual default (`_GIVEN`: each command gives its
  own), help text (without the final period; a command's note goes in parentheses before
  it) and, for an enum, its values."""
  define: Callable[..., Any]
  default: Any
  help: str
  choices: Optional[Sequence[str]] = None


_GIVEN = object()   # no usual default: each command gives its own
_DEFINERS = {int: flags.DEFINE_integer, float: flags.DEFINE_float, bool: flags.DEFINE_bool,
             str: flags.DEFINE_string}


def _config_flags() -> Dict[str, _Flag]:
  """{flag name: _Flag} of the `XLNetConfig` fields whose metadata has a help text."""
  found = {}
  for field in dataclasses.fields(configs.XLNetConfig):
    if not field.metadata["help"]:
      continue
    choices = field.metadata.get("choices")
    found[field.metadata.get("flag", field.name)] = _Flag(
        flags.DEFINE_enum if choices else _DEFINERS[field.type],
        _GIVEN if field.default is dataclasses.MISSING else field.default,
        field.metadata["help"], choices)
  return found


_CONFIG_FLAGS = _config_flags()
_NAMES = {field.name: field.metadata.get("flag", field.name)
          for field in dataclasses.fields(configs.XLNetConfig)}
# The network's sizes (the released keys) and run options: the flags of a model's config.
NETWORK_FLAGS = tuple(_NAMES[key] for key in configs.keys_of(
    configs.RELEASED, configs.RUN, configs.MEMORY, configs.INITIALIZER))

_string, _integer, _float, _bool, _list, _enum = (
    flags.DEFINE_string, flags.DEFINE_integer, flags.DEFINE_float, flags.DEFINE_bool,
    flags.DEFINE_list, flags.DEFINE_enum)
_SHARED = {
    **_CONFIG_FLAGS,
    # ---- what a command reads and writes
    "model_dir": _Flag(_string, None, "The model directory"),
    "init_checkpoint": _Flag(_string, None, "Start from these pretrained weights"),
    "output_dir": _Flag(_string, None, "The output directory"),
    "work_dir": _Flag(_string, _GIVEN, "Where the runs go"),
    "export_dir": _Flag(_string, None, "Where the SavedModel goes"),
    "train_data": _Flag(_string, None, "The pretraining records' directory"),
    "data_dir": _Flag(_string, None, "The task's data directory"),
    "predict_dir": _Flag(_string, None, "Where --do_predict writes"),
    "spiece_model": _Flag(_string, None, "SentencePiece model"),
    "spiece_model_file": _Flag(_string, None, "SentencePiece model"),
    "model_config_path": _Flag(_string, None, "xlnet_config.json"),
    "uncased": _Flag(_bool, False, "Lower-case the text"),
    "overwrite": _Flag(_bool, False, "Replace an existing --output"),
    # ---- the data of pretraining rows
    "seq_len": _Flag(_integer, _GIVEN, "Tokens per row"),
    "num_predict": _Flag(_integer, _GIVEN, "Targets per row"),
    # ---- a run
    "seed": _Flag(_integer, 0, "Random seed"),
    "seeds": _Flag(_list, _GIVEN, "Seeds"),
    "precision": _Flag(_enum, "float32", "Numerics", sorted(loop.PRECISIONS)),
    "jit_compile": _Flag(_bool, False, "XLA-compile the forward and backward pass"),
    "threads": _Flag(_integer, 0, "CPU threads of TensorFlow's ops (intra-op) and of "
                     "PyTorch, 0: their defaults (one per core)"),
    # ---- optimisation
    "learning_rate": _Flag(_float, _GIVEN, "Peak learning rate"),
    "train_steps": _Flag(_integer, _GIVEN, "Updates: the length of the learning-rate "
                         "schedule"),
    "warmup_steps": _Flag(_integer, 0, "Linear warmup updates"),
    "min_lr_ratio": _Flag(_float, 0.0, "Final learning rate / peak, after the linear "
                          "decay"),
    "weight_decay": _Flag(_float, 0.0, "Decoupled weight decay"),
    "adam_epsilon": _Flag(_float, 1e-6, "Adam epsilon"),
    "adam_bias_correction": _Flag(
        _enum, "released", "released: none with weight decay (the released "
        "AdamWeightDecayOptimizer), Adam's without (tf.train.AdamOptimizer); always: "
        "Adam's; never", list(optimization.ADAM_BIAS_CORRECTIONS)),
    "clip": _Flag(_float, 1.0, "Gradient clipping by global norm"),
    "lr_layer_decay_rate": _Flag(_float, _GIVEN, "Layer m of L learns at lr * "
                                 "rate^(L-1-m); the embeddings at lr * rate^L (see "
                                 "--lr_layer_decay_mode)"),
    "lr_layer_decay_mode": _Flag(
        _enum, "multiplier", "multiplier: a real per-variable learning-rate multiplier. "
        "released_gradient_scaling: as the released code, multiply the clipped gradients "
        "of layer m by rate^(L-1-m) and nothing else (Adam mostly cancels it); to rerun a "
        "published recipe as it was", list(optimization.LR_LAYER_DECAY_MODES)),
    "train_batch_size": _Flag(_integer, _GIVEN, "Examples per update, over all replicas "
                              "and accumulated micro-batches; the original's multi-GPU "
                              "runs took it per GPU"),
    "grad_accum_steps": _Flag(_integer, 1, "Micro-batches per update"),
    # ---- the training loop
    "steps": _Flag(_integer, _GIVEN, "Steps"),
    "iterations": _Flag(_integer, _GIVEN, "Steps per loop: one tf.function call, after "
                        "which the loss is logged"),
    "steps_per_loop": _Flag(_integer, _GIVEN, "Steps per tf.function call, after which "
                            "the loss is logged"),
    "save_steps": _Flag(_integer, _GIVEN, "Steps between checkpoints"),
    "max_checkpoints": _Flag(_integer, _GIVEN, "Checkpoints kept (0: every one)"),
    "stop_at_step": _Flag(_integer, None, "Stop (and checkpoint) at this step; a rerun "
                          "continues"),
    "pretrain_steps": _Flag(_integer, _GIVEN, "Pretraining steps"),
    "finetune_steps": _Flag(_integer, _GIVEN, "Fine-tuning steps"),
    # ---- fine-tuning a task
    "do_train": _Flag(_bool, False, "Fine-tune"),
    "do_eval": _Flag(_bool, False, "Evaluate on --eval_split"),
    "do_predict": _Flag(_bool, False, "Predict"),
    "do_export": _Flag(_bool, False, "Export a SavedModel to --export_dir"),
    "eval_split": _Flag(_string, "dev", "Split to evaluate"),
    "max_seq_length": _Flag(_integer, _GIVEN, "Pieces per row"),
    "eval_batch_size": _Flag(_integer, _GIVEN, "Examples per evaluation batch"),
    "shuffle_buffer_size": _Flag(_integer, _GIVEN, "Training examples in the shuffle "
                                 "buffer"),
    "summary_type": _Flag(_enum, "last", "How the sequence is summarised: last (<cls>), "
                          "first, mean (over real tokens), mean_with_padding (the "
                          "original's mean), attn", list(sequence_summary.SUMMARY_TYPES)),
    "use_summ_proj": _Flag(_bool, True, "Dense + tanh on the summary"),
    "labels": _Flag(_list, None, "The label names in id order"),
    # ---- SQuAD's windows and decoding
    "max_query_length": _Flag(_integer, 64, "Question pieces kept"),
    "doc_stride": _Flag(_integer, 128, "Pieces between window starts"),
    "start_n_top": _Flag(_integer, 5, "Best starts searched"),
    "end_n_top": _Flag(_integer, 5, "Best ends searched per start"),
    "null_score_diff_threshold": _Flag(_float, None, "v2.0: answer '' when the null score "
                                       "exceeds this"),
    # ---- distribution
    "strategy": _Flag(_enum, "default", "Distribution strategy: one device (default), "
                      "mirrored (GPUs), multi_worker (TF_CONFIG), tpu",
                      list(flag_translation.STRATEGIES)),
    "tpu": _Flag(_string, None, "Cloud TPU name or address (implies --strategy=tpu)"),
    "num_gpus": _Flag(_integer, 0, "GPUs for --strategy=mirrored/one_device"),
    # ---- benchmarks
    "configs": _Flag(_list, _GIVEN, f"Of {sorted(step_speed.CONFIGS)}"),
    "modes": _Flag(_list, ["fp32", "xla"], f"Of {step_speed.MODES}"),
    "precisions": _Flag(_list, _GIVEN, "fp32 (float32) and/or bf16 (the mixed_bfloat16 "
                        "policy)"),
    "batch_size": _Flag(_integer, _GIVEN, "Batch size"),
    "calls": _Flag(_integer, _GIVEN, "Timed calls"),
    "folds": _Flag(_integer, _GIVEN, "Folds of the data (>= 2)"),
    "rankers": _Flag(_list, _GIVEN, "K-NRM rankers"),
}

# The distribution strategy (`flag_translation.runtime_override` makes the experiment's
# runtime of them).
STRATEGY_FLAGS = ("strategy", "tpu", "num_gpus")
# The optimizer and its schedule (`flag_translation.optimization_override`).
OPTIMIZATION_FLAGS = ("learning_rate", "train_steps", "warmup_steps", "min_lr_ratio",
                      "weight_decay", "adam_epsilon", "adam_bias_correction", "clip")
# What the released fine-tuning scripts share: the run's files, the optimisation
# (with the layer-wise learning rates), the dropout and the seed.
FINETUNING_FLAGS = ("model_dir", "output_dir", "init_checkpoint", "spiece_model_file",
                    "model_config_path", "uncased", "train_batch_size",
                    "lr_layer_decay_rate", "lr_layer_decay_mode", *OPTIMIZATION_FLAGS,
                    "dropout", "dropatt", "seed")
_FINETUNING_NOTES = {
    "model_dir": "written: checkpoints, TensorBoard summaries, params.yaml; the fine-tuned "
                 "model in MODEL_DIR/final",
    "init_checkpoint": "a directory in our layout, with xlnet_config.json and spiece.model",
    "spiece_model_file": "default: the init_checkpoint's spiece.model",
    "model_config_path": "default: the init_checkpoint's"}
# The benchmarked pretraining step (xlnet_tf.benchmarks.step_speed).
STEP_FLAGS = ("configs", "seq_len", "num_predict", "n_token")


def define_flags(names: Sequence[str], *, notes: Optional[Mapping[str, str]] = None,
                 lower_bounds: Optional[Mapping[str, int]] = None, **defaults: Any) -> None:
  """Defines the shared flags `names` into absl's FLAGS, for the calling command.

  Args:
    names: flag names of `_SHARED` (the network flags among them).
    notes: {name: what the flag is in this command}, added in parentheses to its help.
    lower_bounds: {name: the least value} of integer flags absl checks when parsing.
    **defaults: {name: the command's default}, where it is not the usual one (a flag with
      no usual default needs one).

  Raises:
    ValueError: a note, bound or default of a flag not in `names`, or no default for a
      flag that has no usual one.
  """
  notes, lower_bounds = dict(notes or {}), dict(lower_bounds or {})
  strays = sorted((set(notes) | set(lower_bounds) | set(defaults)) - set(names))
  if strays:
    raise ValueError(f"notes, bounds or defaults of flags not defined here: {strays}")
  for name in names:
    flag = _SHARED[name]
    default = defaults.get(name, flag.default)
    if default is _GIVEN:
      raise ValueError(f"--{name} has no usual default: give the command's")
    text = flag.help + (f" ({notes[name]})" if name in notes else "") + "."
    if flag.choices is not None:
      flag.define(name, default, list(flag.choices), text)
    elif name in lower_bounds:
      flag.define(name, default, text, lower_bound=lower_bounds[name])
    else:
      flag.define(name, default, text)


def define_network_flags(names: Sequence[str] = NETWORK_FLAGS, **kwargs: Any) -> None:
  """The network's flags (`NETWORK_FLAGS`, or those of `names`): `XLNetConfig`'s fields,
  with their defaults unless `kwargs` give the command's (and notes, bounds: as
  `define_flags`)."""
  others = sorted(set(names) - set(NETWORK_FLAGS))
  if others:
    raise ValueError(f"not network flags: {others}")
  define_flags(names, **kwargs)


def define_strategy_flags() -> None:
  """--strategy, --tpu, --num_gpus: the experiment's runtime
  (`flag_translation.runtime_override`; the strategy itself, and the check of the devices,
  is `xlnet_tf.tasks.train_lib.strategy_of`'s)."""
  define_flags(STRATEGY_FLAGS)


def define_optimization_flags(names: Sequence[str] = OPTIMIZATION_FLAGS,
                              **kwargs: Any) -> None:
  """The optimizer's flags and its schedule's (`OPTIMIZATION_FLAGS`, or those of
  `names`); --learning_rate and --train_steps need the command's defaults (notes, bounds,
  other defaults: as `define_flags`)."""
  others = sorted(set(names) - set(OPTIMIZATION_FLAGS))
  if others:
    raise ValueError(f"not optimization flags: {others}")
  define_flags(names, **kwargs)


def define_finetuning_flags(learning_rate: float, lr_layer_decay_rate: float,
                            train_steps: int, train_batch_size: int,
                            adam_epsilon: float = 1e-6,
                            notes: Optional[Mapping[str, str]] = None) -> None:
  """The flags of the released fine-tuning scripts' runs (`FINETUNING_FLAGS`), with the
  command's defaults where they differ and `notes` beside the group's (e.g. what
  --output_dir holds)."""
  define_flags(FINETUNING_FLAGS, notes={**_FINETUNING_NOTES, **(notes or {})},
               learning_rate=learning_rate, lr_layer_decay_rate=lr_layer_decay_rate,
               train_steps=train_steps, train_batch_size=train_batch_size,
               adam_epsilon=adam_epsilon)


def define_step_flags(config_names: Sequence[str], modes: bool = True) -> None:
  """The benchmarked pretraining step's flags (`STEP_FLAGS`: --configs with the default
  `config_names`, --seq_len 512, --num_predict 85, --n_token 32000) and, with `modes`,
  --modes (fp32 and xla)."""
  define_flags(STEP_FLAGS + (("modes",) if modes else ()), configs=list(config_names),
               seq_len=512, num_predict=85)
