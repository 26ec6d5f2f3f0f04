"""The flag names of zihangdai/xlnet's train.py, train_gpu.py, run_classifier.py,
run_squad.py and run_race.py, on our entry points (experiments/pretrain.py,
run_classifier.py, run_squad.py, run_race.py): what each is here, and the translation of
the flags an entry point was given into ours and into its experiment's overrides.

`RELEASED` says for every released flag what it is here. The entry points define the flags
(experiments/released_flags.py `define`s the released names beside an entry point's own,
experiments/common_flags.py the shared ones); everything here reads them from the absl
FlagValues it is given and defines none. A released name is, on an entry point:
  - the entry point's own flag of that name (it defined it: nothing to do);
  - an alias (`flags.DEFINE_alias`) of `ours`, the first of its names the entry point
    defines (iterations -> steps_per_loop, record_info_dir -> train_data, ...);
  - a translation: given, `apply` sets our flag from it (use_bfloat16 -> precision,
    max_save 0 -> keep every checkpoint, use_tpu -> --strategy=tpu, high_only ->
    --levels=high), refusing a contradiction with our flag given as well or with another
    released flag translated to it (high_only with middle_only); or a check (num_hosts,
    num_core_per_host against the devices the strategy flags select);
  - ignored: it changed nothing in the original either (or nothing here);
  - gone: accepted with its released default (harmless: what we do anyway); any other value
    ends the run before any work with one line saying what replaced it and why. A mapping
    whose flag the entry point does not define falls back to this (the message names the
    missing flag).

The shared flags as experiment overrides: `runtime_override` (--strategy, --num_gpus,
--tpu), `optimization_override` and `trainer_override` (the fine-tuning entry points'
task flags); their checks and reports: `check_paths`, `reporting_disk_full`.
"""

import functools
import glob
import os
from typing import Any, Callable, Dict, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

from absl import flags

from xlnet_tf import paths
from xlnet_tf.training import run_directory
from xlnet_tf.training.checkpointing import KEEP_ALL_CHECKPOINTS  # max_save 0: keep all

IGNORED = "ignored"

# The released scripts and the entry points that replace them.
ENTRY_POINTS = {"train.py": "experiments.pretrain", "train_gpu.py": "experiments.pretrain",
                "run_classifier.py": "experiments.run_classifier",
                "run_squad.py": "experiments.run_squad", "run_race.py": "experiments.run_race"}
_CODES = {"T": "train.py", "G": "train_gpu.py", "C": "run_classifier.py",
          "S": "run_squad.py", "R": "run_race.py"}


class Released(NamedTuple):
  """What a released flag is here.

  ours: our flag (or candidates, the first the entry point defines wins) of the same
    meaning; None: gone; IGNORED.
  note: what it is / what replaced it and why (the error message of a gone flag).
  scripts: the released scripts (T train.py, G train_gpu.py, C run_classifier.py, S
    run_squad.py, R run_race.py) that had it; `mapped` of them are those where `ours`
    applies (default: all); in the others it is gone.
  default: its released default (the type of the flag we define; harmless when gone).
  to: a translation (released value, our flag, the FlagValues) -> our flag's value (None:
    nothing to set); may raise ValueError (a check).
  """
  ours: Union[None, str, Tuple[str, ...]]
  note: str
  scripts: str
  default: Any = None
  to: Optional[Callable[[Any, Any, flags.FlagValues], Any]] = None
  mapped: Optional[str] = None


def _bfloat16(value, target, flag_values):
  """use_bfloat16 -> the entry point's bfloat16 precision (bfloat16 or mixed_bfloat16)."""
  del flag_values
  if not value:
    return None
  choices = getattr(target, "enum_values", None) or ["bfloat16"]
  return "bfloat16" if "bfloat16" in choices else "mixed_bfloat16"


def devices(flag_values: flags.FlagValues) -> Tuple[Optional[int], Optional[int]]:
  """(hosts, replicas per host) of the strategy flags (experiments/common_flags.py);
  None where only the devices know (a TPU; the GPUs of a multi-worker run)."""
  strategy = flag_values.strategy if "strategy" in flag_values else "default"
  if (flag_values["tpu"].value if "tpu" in flag_values else None) or strategy == "tpu":
    return None, None
  if strategy == "multi_worker":
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    spec = tf.distribute.cluster_resolver.TFConfigClusterResolver().cluster_spec()
    return max(1, sum(spec.num_tasks(job) for job in ("chief", "worker")
                      if job in spec.jobs)), None
  return 1, max(1, flag_values.num_gpus) if strategy == "mirrored" else 1


def _check_hosts(value, target, flag_values):
  del target
  hosts, _ = devices(flag_values)
  if hosts is not None and value != hosts:
    raise ValueError(
        f"--num_hosts={value}, but the strategy flags select {hosts} host(s): several "
        f"hosts are --strategy=multi_worker with TF_CONFIG on each, or --tpu=NAME (a pod's "
        f"hosts come from the TPU)")


def _check_cores(value, target, flag_values):
  del target
  _, per_host = devices(flag_values)
  if per_host is not None and value != per_host:
    raise ValueError(
        f"--num_core_per_host={value}, but the strategy flags select {per_host} "
        f"replica(s) per host: for {value} GPUs give --strategy=mirrored --num_gpus={value} "
        f"(--train_batch_size is then the global batch; the original's GPU runs took it "
        f"per GPU)")


_SAME = "same name and meaning"
_CONVERT = ("python -m xlnet_tf.convert --source RELEASED_DIR --output DIR turns the "
            "released checkpoint into our layout")
RELEASED: Dict[str, Released] = {
    # ---- where the run goes and where it starts from ---------------------------------
    "model_dir": Released("model_dir", _SAME, "TGCSR"),
    "init_checkpoint": Released(
        "init_checkpoint", "a directory in our layout (xlnet_config.json, model.ckpt, "
        "spiece.model); " + _CONVERT, "TGCSR"),
    "record_info_dir": Released(
        "train_data", "our record directory (manifest.json) from "
        "data_prep.create_pretraining_data", "TG"),
    "output_dir": Released("output_dir", "feature caches and results", "CSR"),
    "predict_dir": Released(("predict_dir", "output_dir"), "where the predictions go",
                            "CS"),
    "data_dir": Released("data_dir", _SAME, "CR"),
    "spiece_model_file": Released("spiece_model_file", "default: the init_checkpoint's",
                                  "CSR"),
    "model_config_path": Released("model_config_path", "default: the init_checkpoint's",
                                  "CSR"),
    "train_file": Released("train_file", _SAME, "S"),
    "predict_file": Released("predict_file", _SAME, "S"),
    "overwrite_data": Released(
        IGNORED, "feature caches are keyed by everything that makes them (input files, "
        "SentencePiece model, settings): a stale cache is never read", "CSR", False),
    # ---- devices --------------------------------------------------------------------
    "use_tpu": Released(
        "strategy", "true is --strategy=tpu (with --tpu=NAME)", "TGCSR", False,
        to=lambda value, *_: "tpu" if value else None),
    "use_colab_tpu": Released(
        "strategy", "true is --strategy=tpu (with --tpu=ADDRESS)", "S", False,
        to=lambda value, *_: "tpu" if value else None),
    "tpu": Released("tpu", "a Cloud TPU name or grpc:// address", "TCSR"),
    "tpu_address": Released("tpu", "--tpu takes the address", "S"),
    "master": Released(None, "the TF1 session master is gone: the strategy connects "
                       "itself (--tpu=NAME; TF_CONFIG with --strategy=multi_worker)",
                       "TCSR"),
    "tpu_job_name": Released(None, "TPUStrategy finds the TPU workers from --tpu",
                             "CSR"),
    "gcp_project": Released(None, "the TPU resolver takes the project from the VM's "
                            "metadata; give --tpu=NAME", "TCSR"),
    "tpu_zone": Released(None, "the TPU resolver takes the zone from the VM's metadata; "
                         "give --tpu=NAME", "TCSR"),
    "num_hosts": Released(
        "strategy", "checked against the hosts of the strategy flags (pretrain: of the "
        "strategy and the records' batch)", "TGCSR", 1, to=_check_hosts),
    "num_core_per_host": Released(
        "strategy", "checked against the replicas per host of the strategy flags "
        "(pretrain: must equal the records' num_core_per_host)", "TGCSR", 8,
        to=_check_cores),
    "task": Released(None, "several workers are --strategy=multi_worker, each with its "
                     "TF_CONFIG (task index)", "TG", 0),
    "use_bfloat16": Released("precision", "true is --precision=bfloat16 (bfloat16 "
                             "compute, float32 weights)", "TGCSR", False, to=_bfloat16),
    # ---- optimisation ----------------------------------------------------------------
    "learning_rate": Released("learning_rate", "defaults: ours follow the paper for "
                              "pretraining (4e-4), the released scripts for fine-tuning",
                              "TGCSR"),
    "clip": Released("clip", _SAME, "TGCSR"),
    "min_lr_ratio": Released("min_lr_ratio", _SAME, "TGCSR"),
    "warmup_steps": Released("warmup_steps", _SAME, "TGCSR"),
    "adam_epsilon": Released("adam_epsilon", _SAME, "TGCSR"),
    "weight_decay": Released("weight_decay", _SAME, "TGCSR"),
    "lr_layer_decay_rate": Released(
        "lr_layer_decay_rate", "a real learning-rate multiplier; "
        "--lr_layer_decay_mode=released_gradient_scaling is the original's", "CSR"),
    "decay_method": Released(None, "linear (poly) decay only: cosine is not implemented",
                             "TGCSR", "poly"),
    "train_batch_size": Released(
        "train_batch_size", "the global batch (pretrain: must equal the records' "
        "bsz_per_host x hosts)", "TGCSR"),
    "train_steps": Released("train_steps", _SAME, "TGCSR"),
    "iterations": Released(("steps_per_loop", "iterations"), "steps per loop (host call)",
                           "TGCSR"),
    "save_steps": Released("save_steps", "a checkpoint at every multiple and at the end",
                           "TGCSR"),
    "max_save": Released(
        "max_checkpoints", "checkpoints kept; 0 keeps them all", "TCSR", 0,
        to=lambda value, *_: value if value > 0 else KEEP_ALL_CHECKPOINTS),
    "shuffle_buffer": Released(
        "shuffle_buffer_size", "training examples in the shuffle buffer (run_squad: "
        "windows; run_race: questions)", "CSR", 2048),
    "num_passes": Released(
        "num_passes", "pretrain: must equal the records' num_passes; fine-tuning input "
        "repeats reshuffled without end, there is nothing to copy num_passes times",
        "TGC", 1, mapped="TG"),
    "pass_id": Released(None, "one record directory holds every pass (manifest.json): "
                        "give it with --train_data", "TG", 0),
    # ---- the records (pretrain: checked against manifest.json) -----------------------
    **{name: Released(name, "must equal the records' (manifest.json)", "TG")
       for name in ("seq_len", "reuse_len", "bi_data", "num_predict", "perm_size",
                    "mask_alpha", "mask_beta")},
    "uncased": Released("uncased", "pretrain: must equal the records'; fine-tuning: "
                        "lower-case the text (default false, as released)", "TGCSR"),
    # ---- the model -------------------------------------------------------------------
    **{name: Released(name, "default: the base model (the released train.py's was a toy "
                      "size)", "TG")
       for name in ("n_layer", "d_model", "n_head", "d_head", "d_inner", "ff_activation",
                    "untie_r", "mem_len")},
    "n_token": Released("n_token", "default: the records' vocabulary (the original always "
                        "took 32000)", "TG"),
    "same_length": Released("same_length", _SAME, "TG"),
    "clamp_len": Released(
        "clamp_len", "fine-tuning takes the pretrained xlnet_config.json's (-1)", "TGCSR",
        -1, mapped="TG"),
    "dropout": Released("dropout", _SAME, "TGCSR"),
    "dropatt": Released("dropatt", _SAME, "TGCSR"),
    "d_embed": Released(IGNORED, "the original never read it: embeddings have d_model",
                        "TG", 32),
    "init": Released(None, "normal initialisation (--init_std) only: uniform is not "
                     "implemented", "TGCSR", "normal"),
    "init_std": Released(
        "init_std", "task heads use the model config's initializer_range (0.02)", "TGCSR",
        0.02, mapped="TG"),
    "init_range": Released(IGNORED, "read only with --init=uniform", "TGCSR", 0.1),
    "init_global_vars": Released(
        None, "--init_checkpoint warm-starts the encoder; a rerun resumes from "
        "MODEL_DIR's own checkpoints", "S", False),
    "track_mean": Released(IGNORED, "each loop's log line and TensorBoard show its mean "
                           "loss", "T", False),
    "summary_type": Released(
        "summary_type", "pretraining and SQuAD have no sequence summary", "TGCSR",
        "last", mapped="CR"),
    "use_summ_proj": Released("use_summ_proj", _SAME, "CR", True),
    "cls_scope": Released(None, "the head's variable names are fixed (xlnet_tf.convert "
                          "finds the original's by name)", "C"),
    # ---- fine-tuning: what runs, data, evaluation, prediction --------------------------
    "do_train": Released("do_train", "default false (run_squad.py's was true)", "CSR"),
    "do_eval": Released("do_eval", _SAME, "CR"),
    "do_predict": Released("do_predict", _SAME, "CS"),
    "task_name": Released("task_name", "also mnli (-> matched dev), imdb, movie_reviews, "
                          "generic", "C"),
    "is_regression": Released("is_regression", _SAME, "C"),
    "max_seq_length": Released("max_seq_length", _SAME, "CSR"),
    "eval_split": Released("eval_split", _SAME, "CR"),
    "eval_batch_size": Released("eval_batch_size", _SAME, "CR"),
    "predict_batch_size": Released(("predict_batch_size", "eval_batch_size"),
                                   "inference batch", "CS"),
    "predict_threshold": Released(
        None, "predictions are the most likely label; the SavedModel returns the "
        "probabilities to threshold", "C", 0.0),
    "eval_all_ckpt": Released(
        None, "--do_eval evaluates the newest checkpoint; python -m experiments.train "
        "--mode=train_and_eval evaluates during training and keeps the best model",
        "C", False),
    "predict_ckpt": Released(None, "--do_predict predicts with MODEL_DIR/final", "C"),
    "max_query_length": Released("max_query_length", _SAME, "S"),
    "doc_stride": Released("doc_stride", _SAME, "S"),
    "max_answer_length": Released("max_answer_length", _SAME, "S"),
    "n_best_size": Released("n_best_size", _SAME, "S"),
    "start_n_top": Released("start_n_top", _SAME, "S"),
    "end_n_top": Released("end_n_top", _SAME, "S"),
    "target_eval_key": Released(None, "the SQuAD 2.0 null threshold maximises F1 over all "
                                "questions (best_f1)", "S", "best_f1"),
    "do_prepro": Released(None, "features are built and cached by the run that needs "
                          "them (--do_train, --do_predict)", "S", False),
    "num_proc": Released(None, "features are built in the training process", "S", 1),
    "proc_id": Released(None, "features are built in the training process", "S", 0),
    "max_qa_length": Released("max_qa_length", _SAME, "R"),
    "high_only": Released("levels", "true is --levels=high", "R", False,
                          to=lambda value, *_: ["high"] if value else None),
    "middle_only": Released("levels", "true is --levels=middle", "R", False,
                            to=lambda value, *_: ["middle"] if value else None),
}


def script_flags(script: str):
  """The released flag names of `script` ("train.py", "run_classifier.py", ...)."""
  code = next(c for c, s in _CODES.items() if s == script)
  return sorted(n for n, entry in RELEASED.items() if code in entry.scripts)


def maps_to(name: str, script: str) -> Tuple[str, ...]:
  """Our flag names the released `name` of `script` maps to (empty: gone or ignored)."""
  entry = RELEASED[name]
  code = next(c for c, s in _CODES.items() if s == script)
  if entry.ours in (None, IGNORED) or code not in (entry.mapped or entry.scripts):
    return ()
  return (entry.ours,) if isinstance(entry.ours, str) else tuple(entry.ours)


def ours_text(entry: Released) -> str:
  """--ours (or --a or --b): what a released flag means here."""
  ours = (entry.ours,) if isinstance(entry.ours, str) else entry.ours
  return " or ".join(f"--{name}" for name in ours)


def apply(tool: str, kinds: Mapping[str, str], flag_values: flags.FlagValues) -> None:
  """Before any work: ends the run (one line) for a gone flag given with another value
  than its released default, or a translation contradicting our flag; sets our flags from
  the translated ones; refuses a released checkpoint given as --init_checkpoint. `kinds`:
  released name -> what the entry point defined it as ("alias", "translate", "ignored",
  "gone", "unmapped"; experiments/released_flags.py `define`)."""
  try:
    translated = {}                     # our flag -> (released name, value) set from it
    for name, kind in sorted(kinds.items()):
      flag, entry = flag_values[name], RELEASED[name]
      if not flag.present or kind in ("alias", IGNORED):
        continue
      if kind in ("gone", "unmapped"):
        if flag.value != entry.default and not (entry.default is None and not flag.value):
          why = (entry.note if kind == "gone" else f"it means {ours_text(entry)}, "
                 f"which {tool} does not have ({entry.note})")
          raise ValueError(f"--{name}={flag.value} (zihangdai/xlnet) is not taken here: "
                           f"{why}")
        continue
      target = entry.ours
      value = entry.to(flag.value, flag_values[target], flag_values)
      if value is None:
        continue
      if flag_values[target].present and flag_values[target].value != value:
        raise ValueError(f"--{name}={flag.value} means --{target}={_text(value)}, but "
                         f"--{target}={_text(flag_values[target].value)} is given too")
      other, before = translated.get(target, (None, value))
      if before != value:
        raise ValueError(f"--{name}={flag.value} means --{target}={_text(value)}, but "
                         f"--{other}={flag_values[other].value} means "
                         f"--{target}={_text(before)}")
      translated[target] = (name, value)
      flag_values[target].value = value
    if "init_checkpoint" in flag_values:
      check_init_checkpoint(flag_values.init_checkpoint)
  except ValueError as e:
    raise SystemExit(f"{tool}: {e}") from None


def _text(value) -> str:
  """A flag value as written on a command line (a list flag: comma-separated)."""
  return ",".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)


def check_init_checkpoint(path: Optional[str]) -> None:
  """A released (TF1) checkpoint given as --init_checkpoint: ValueError saying how to
  convert it (ours are directories written by save_pretrained / xlnet_tf.convert)."""
  if not path:
    return
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  directory = path if tf.io.gfile.isdir(path) else os.path.dirname(path)
  ours = os.path.join(directory, "model.ckpt.index")
  released = tf.io.gfile.glob(os.path.join(directory, "xlnet_model.ckpt*.index"))
  if released and not tf.io.gfile.exists(ours):
    raise ValueError(f"--init_checkpoint {path} is a released TF1 checkpoint; "
                     f"python -m xlnet_tf.convert --source {directory} --output DIR "
                     f"converts it once, then give --init_checkpoint=DIR")


def original_records(path: Optional[str]) -> Optional[str]:
  """A one-line explanation if `path` holds the original's pretraining records
  (record_info-*.json, no manifest.json), else None."""
  if not path or not os.path.isdir(path) or os.path.exists(os.path.join(path,
                                                                        "manifest.json")):
    return None
  if not glob.glob(os.path.join(path, "record_info-*.json")):
    return None
  return (f"{path} holds the original's records (record_info-*.json); ours are made by "
          f"python -m data_prep.create_pretraining_data (the same data flags) and "
          f"described by manifest.json")


# --strategy -> the `official.common.distribute_utils` name.
STRATEGIES = ("default", "one_device", "mirrored", "multi_worker", "tpu")
_STRATEGY_NAMES = {"default": "off", "one_device": "one_device", "mirrored": "mirrored",
                   "multi_worker": "multi_worker_mirrored", "tpu": "tpu"}


def distribution_strategy(flag_values: flags.FlagValues) -> str:
  """The `official.common.distribute_utils` name of the strategy the flags ask for (an
  experiment's runtime.distribution_strategy): "tpu" with --tpu, else --strategy's
  ("off" for default: TensorFlow's default strategy, one device)."""
  return "tpu" if flag_values.tpu else _STRATEGY_NAMES[flag_values.strategy]


def runtime_override(flag_values: flags.FlagValues) -> Dict[str, Any]:
  """--strategy / --num_gpus / --tpu (experiments/common_flags.py STRATEGY_FLAGS) as the
  experiment's `runtime` (what `train_lib.strategy_of` builds)."""
  return {"distribution_strategy": distribution_strategy(flag_values),
          "num_gpus": flag_values.num_gpus, "tpu": flag_values.tpu or ""}


def optimization_override(flag_values: flags.FlagValues, **extra) -> Dict[str, object]:
  """task.optimization of the fine-tuning flags (experiments/common_flags.py
  FINETUNING_FLAGS, --precision; plus `extra`, e.g. grad_accum_steps)."""
  values = flag_values
  return {"learning_rate": values.learning_rate, "warmup_steps": values.warmup_steps,
          "weight_decay": values.weight_decay, "adam_epsilon": values.adam_epsilon,
          "clip_norm": values.clip, "min_lr_ratio": values.min_lr_ratio,
          "lr_layer_decay_rate": values.lr_layer_decay_rate,
          "lr_layer_decay_mode": values.lr_layer_decay_mode,
          "adam_bias_correction": values.adam_bias_correction,
          "precision": values.precision, "seed": values.seed, **extra}


def trainer_override(flag_values: flags.FlagValues) -> Dict[str, object]:
  """The trainer section of the entry point's flags (each defines iterations, save_steps,
  max_checkpoints)."""
  values = flag_values
  return {"train_steps": values.train_steps, "steps_per_loop": values.iterations,
          "checkpoint_interval": values.save_steps, "max_to_keep": values.max_checkpoints}


def check_paths(tool: str, inputs: Dict[str, str], outputs: Sequence[str],
                flag_values: flags.FlagValues) -> None:
  """Before any work: every given input path flag (name -> what it should be) exists and
  every output flag is a usable directory; otherwise exits with the flag and the path."""
  try:
    for name, kind in inputs.items():
      paths.check_input_path(flag_values[name].value, f"--{name}", kind)
    for name in outputs:
      paths.check_output_dir(flag_values[name].value, f"--{name}")
  except OSError as e:
    raise SystemExit(f"{tool}: {e}") from None


def reporting_disk_full(tool: str) -> Callable[[Callable], Callable]:
  """Decorates a wrapper's `run(flag_values)`: a full disk ends the run with one line,
  "TOOL: no space left on MOUNT while writing FILE" (`paths.reporting_disk_full`), after
  removing the temporaries of --model_dir (the run holds its lock)."""
  def decorate(main: Callable) -> Callable:
    @functools.wraps(main)
    def main_reporting_disk_full(flag_values: flags.FlagValues):
      model_dir = flag_values.model_dir
      temporaries = run_directory.temporaries(model_dir) if model_dir else ()
      try:
        with paths.reporting_disk_full(model_dir or flag_values.output_dir or ".",
                                       temporaries):
          main(flag_values)
      except paths.DiskFullError as e:
        raise SystemExit(f"{tool}: {e}") from None
    return main_reporting_disk_full
  return decorate
