"""Helpers shared by the tests (small configs, the parity criterion, input builders)."""

import functools
import json
import os
import struct
import subprocess
import sys
from typing import Any, Dict

import numpy as np
import tensorflow as tf
import tf_keras

from data_prep import pipeline
from data_prep.pretraining_rows import RowSettings
from xlnet_tf import synthetic
from xlnet_tf.data import pretrain_reader
from xlnet_tf.data import sample_data
from xlnet_tf.configs import XLNetConfig


def small_config(**overrides) -> XLNetConfig:
  """A 2-layer model small enough for many forward passes on a CPU."""
  values = dict(n_layer=2, d_model=16, n_head=2, d_head=8, d_inner=32, n_token=50,
                dropout=0.0, dropatt=0.0)
  values.update(overrides)
  return XLNetConfig(**values)


# Training parity with HuggingFace: max |loss difference| / max(1, |loss|), any step.
LOSS_TOLERANCE = 2e-5


def png_size(path):
  """(width, height) from the PNG header (IHDR), after checking the signature."""
  with open(path, "rb") as f:
    header = f.read(24)
  assert header[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
  return struct.unpack(">II", header[16:24])


def max_rel_error(actual, reference) -> float:
  """max |actual - reference| / max(1, max |reference|): the parity criterion."""
  actual, reference = np.asarray(actual), np.asarray(reference)
  assert actual.shape == reference.shape, (actual.shape, reference.shape)
  return float(np.max(np.abs(actual - reference)) / max(1.0, np.max(np.abs(reference))))



# ---- a fresh process: serving with TensorFlow and tensorflow-text only -----------------------

# Before the script of `run_fresh`: our packages made unimportable (the checkout's venv has
# them installed, editable), every attempt to import one recorded, then the imports a server
# has and the request.
_FRESH_START = r"""
import json, sys
attempted = []
class _NotOurs:
  def find_spec(self, name, path=None, target=None):
    if name.split(".")[0] in ("xlnet_tf", "data_prep", "experiments"):
      attempted.append(name)
      raise ImportError(f"{name}: a server has none of xlnet_tf's code")
    return None
sys.meta_path.insert(0, _NotOurs())
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the SentencePiece ops)
request = json.loads(sys.stdin.read())
"""
_FRESH_END = r"""
print(json.dumps({"attempted_imports": attempted, "result": result}))
"""

# Calls signatures of a SavedModel (request "calls": signature -> its inputs); result:
# signature -> its outputs as lists, strings decoded.
_SERVE = r"""
def plain(value):
  if isinstance(value, bytes):
    return value.decode()
  if isinstance(value, list):
    return [plain(v) for v in value]
  return value
signatures = tf.saved_model.load(request["export_dir"]).signatures
result = {}
for name, inputs in request["calls"].items():
  out = signatures[name](**{k: tf.constant(v) for k, v in inputs.items()})
  result[name] = {k: plain(v.numpy().tolist()) for k, v in out.items()}
"""


def run_fresh(script: str, request: Any, cwd) -> Any:
  """Runs `script` in a fresh interpreter started in `cwd` (an empty directory) with no
  PYTHONPATH and xlnet_tf, data_prep and experiments blocked: only TensorFlow,
  tensorflow-text and the like can be imported, and the script may not even try to import
  ours (checked). The script sees `json`, `tf` and `request` (sent as JSON) and sets
  `result`, which is returned (through JSON)."""
  env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
  done = subprocess.run([sys.executable, "-c", _FRESH_START + script + _FRESH_END],
                        cwd=os.fspath(cwd), env=env, input=json.dumps(request),
                        capture_output=True, text=True, check=False)
  assert done.returncode == 0, done.stderr[-3000:]
  reply = json.loads(done.stdout.strip().splitlines()[-1])
  assert reply["attempted_imports"] == [], reply["attempted_imports"]
  return reply["result"]


def serve_fresh_signatures(export_dir, calls: Dict[str, Dict[str, Any]],
                           cwd) -> Dict[str, Dict[str, Any]]:
  """The outputs of several signatures of a SavedModel in one fresh process (`run_fresh`):
  `calls` maps a signature to its inputs (name -> list); the result maps it to its outputs
  (name -> nested lists, strings decoded)."""
  return run_fresh(_SERVE, {"export_dir": os.fspath(export_dir), "calls": calls}, cwd)


def serve_fresh(export_dir, inputs: Dict[str, Any], cwd,
                signature: str = "serving_default") -> Dict[str, Any]:
  """The outputs of a SavedModel's `signature` called on `inputs` (name -> list) in a fresh
  process (`run_fresh`): name -> nested lists, strings decoded."""
  return serve_fresh_signatures(export_dir, {signature: inputs}, cwd)[signature]


def run_in_process(script: str, request: Any) -> Any:
  """`run_fresh`'s result computed in this process: the same script run here (with
  tensorflow-text's ops registered), `request` and `result` passed through JSON as there.
  What the fast tests compare; the slow ones run the script in a fresh process."""
  import tensorflow_text  # noqa: F401  pylint: disable=g-import-not-at-top,unused-import
  namespace = {"json": json, "tf": tf, "request": json.loads(json.dumps(request))}
  exec(script, namespace)  # pylint: disable=exec-used
  return json.loads(json.dumps(namespace["result"]))


def serve_in_process(export_dir, inputs: Dict[str, Any],
                     signature: str = "serving_default") -> Dict[str, Any]:
  """`serve_fresh`'s outputs, computed in this process (`run_in_process`)."""
  return run_in_process(_SERVE, {"export_dir": os.fspath(export_dir),
                                 "calls": {signature: inputs}})[signature]


def pretraining_inputs(rng, batch, seqlen, num_predict, num_targets, vocab=50,
                       segments=True, padding=0):
  """Model inputs like a pretraining row (see xlnet_tf.synthetic), without the labels."""
  inputs = synthetic.random_pretraining_inputs(rng, batch, seqlen, num_predict, num_targets,
                                               vocab, segments, padding)
  del inputs["target"], inputs["target_mask"]
  return inputs


# The bundled corpus: Moby-Dick, one chapter per file, one paragraph per line.
CORPUS_GLOB = sample_data.path("moby_dick", "*.txt")

# Pretraining records of the tests: small rows, bi_data over 2 cores, 2 passes, and a
# chunk size that cuts the first 24 chapters (173 kB) into 2 chunks (so 4 shards).
PRETRAIN_SETTINGS = pipeline.DataSettings(
    rows=RowSettings(seq_len=64, reuse_len=32, num_predict=11, bsz_per_host=8,
                     num_core_per_host=2, bi_data=True, perm_size=16),
    input_format="document_per_file", num_passes=2, seed=5, chunk_bytes=90_000)


def pretrain_data_flags(inputs, spiece_model, out):
  """The create_pretraining_data command-line flags of PRETRAIN_SETTINGS."""
  s = PRETRAIN_SETTINGS.rows
  return [f"--input_glob={','.join(inputs)}", f"--spiece_model={spiece_model}",
          f"--output_dir={out}", "--input_format=document_per_file",
          f"--seq_len={s.seq_len}", f"--reuse_len={s.reuse_len}",
          f"--bsz_per_host={s.bsz_per_host}", f"--num_core_per_host={s.num_core_per_host}",
          f"--num_predict={s.num_predict}", f"--perm_size={s.perm_size}",
          f"--num_passes={PRETRAIN_SETTINGS.num_passes}",
          f"--chunk_bytes={PRETRAIN_SETTINGS.chunk_bytes}", f"--seed={PRETRAIN_SETTINGS.seed}"]


# ---- fine-tuning runs through the one driver (`loop.train_model`) --------------------------

def steps_from(dataset_fn, grad_accum_steps: int = 1):
  """`dataset_fn(input_context, start_step)` of `loop.train_model` from a
  `dataset_fn(input_context)` of the whole stream: the micro-batches of the steps already
  taken skipped (a step takes `grad_accum_steps` micro-batches for each replica an input
  pipeline feeds)."""
  def from_step(ctx, start_step):
    return dataset_fn(ctx).skip(start_step * grad_accum_steps *
                                (ctx.num_replicas_in_sync // ctx.num_input_pipelines))
  return from_step


def warm_start(init_checkpoint):
  """`initialize` of `loop.train_model`: the encoder's weights from `init_checkpoint` (a
  pretrained model directory or prefix), or None without one."""
  if not init_checkpoint:
    return None
  from xlnet_tf import pretrained  # pylint: disable=g-import-not-at-top
  return lambda model: pretrained.restore_encoder(model.encoder, init_checkpoint)


def build_for_training(strategy, config, spec, options, dropout: float = 0.1):
  """(model of `spec`, optimizer) of a fine-tuning run, not warm-started (`train_classifier`
  and `train_tagger` warm-start from options.init_checkpoint when there is no checkpoint)."""
  from xlnet_tf.training import loop  # pylint: disable=g-import-not-at-top
  return loop.build_model_and_optimizer(
      strategy, options, lambda: spec.build_model(config, dropout_rate=dropout))


def train_classifier(strategy, model, optimizer, dataset_fn, options, run_settings=None,
                     **kwargs):
  """`loop.train_model` with the classifier's loss; `dataset_fn(input_context)` the whole
  stream of micro-batches (`steps_from`), the warm start options.init_checkpoint's."""
  from xlnet_tf.tasks import classification  # pylint: disable=g-import-not-at-top
  from xlnet_tf.training import loop  # pylint: disable=g-import-not-at-top
  return loop.train_model(
      strategy, model, optimizer, steps_from(dataset_fn, options.grad_accum_steps), options,
      loss_fn=functools.partial(classification.classifier_loss,
                                is_regression=model.is_regression),
      input_keys=classification.MODEL_INPUTS, purpose="fine-tuning",
      run_settings=run_settings, initialize=warm_start(options.init_checkpoint), **kwargs)


def train_tagger(strategy, model, optimizer, dataset_fn, options, run_settings=None):
  """`loop.train_model` with the tagger's loss and the run settings the tagger's runs
  recorded ({"task": "tagging", ...}); `dataset_fn` as for `train_classifier`."""
  from xlnet_tf.data import tagging_features  # pylint: disable=g-import-not-at-top
  from xlnet_tf.tasks import tagging  # pylint: disable=g-import-not-at-top
  from xlnet_tf.training import loop  # pylint: disable=g-import-not-at-top
  return loop.train_model(
      strategy, model, optimizer, steps_from(dataset_fn, options.grad_accum_steps), options,
      loss_fn=tagging.tagging_loss, input_keys=tagging_features.MODEL_INPUTS,
      purpose="fine-tuning", run_settings={"task": "tagging", **(run_settings or {})},
      initialize=warm_start(options.init_checkpoint))


# The loop defaults the pretraining runs of these tests were written with (PretrainOptions'
# before issue 29); the optimizer's are the pretraining task's
# (`runs.pretraining.pretrain_options`).
PRETRAIN_LOOP_DEFAULTS = dict(steps_per_loop=1000, save_steps=10000, max_checkpoints=5)


def pretrain_options(model_dir, train_steps, **options):
  """`loop.RunOptions` of a pretraining run: the pretraining task's optimizer defaults (the
  paper's and the released train.py's), PRETRAIN_LOOP_DEFAULTS, then `options`."""
  from xlnet_tf.runs import pretraining  # pylint: disable=g-import-not-at-top
  return pretraining.pretrain_options(model_dir, train_steps,
                                      **{**PRETRAIN_LOOP_DEFAULTS, **options})


def run_pretraining(strategy, config, records_dir, options, validation_records=""):
  """A pretraining run through the driver (`runs.pretraining.pretrain`): its summary
  ("step", "losses", "start_step", "final_dir")."""
  from xlnet_tf.runs import pretraining  # pylint: disable=g-import-not-at-top
  return pretraining.pretrain(config, records_dir, options, strategy=strategy,
                              validation_records=validation_records)


def pretrain_config(records_dir, **changes) -> XLNetConfig:
  """A small pretraining config that fits the records in `records_dir` (dropout off)."""
  from xlnet_tf.data import pretrain_records  # pylint: disable=g-import-not-at-top
  manifest = pretrain_records.load_manifest(records_dir)
  values = dict(n_layer=2, d_model=32, n_head=2, d_head=16, d_inner=64,
                n_token=manifest["spiece"]["vocab_size"], dropout=0.0, dropatt=0.0,
                mem_len=16, reuse_len=manifest["settings"]["reuse_len"],
                bi_data=manifest["settings"]["bi_data"])
  values.update(changes)
  return XLNetConfig(**values)


@functools.lru_cache(maxsize=16)
def read_records(path):
  """Every record of a shard as a dict of numpy arrays, in file order (cached: read-only)."""
  spec = pretrain_reader.feature_spec(PRETRAIN_SETTINGS.rows.seq_len,
                                      PRETRAIN_SETTINGS.rows.num_predict)
  parsed = next(iter(tf.data.TFRecordDataset(path).batch(1 << 20).map(
      lambda r: tf.io.parse_example(r, spec))))
  parsed = {k: v.numpy() for k, v in parsed.items()}
  return tuple({k: v[i] for k, v in parsed.items()} for i in range(len(parsed["input_ids"])))


def with_extra_pieces(model_path, pieces, out_path):
  """A copy of the model with `pieces` added as the most likely pieces (score 0).

  SentencePiece 0.2 never learns a piece that joins digits and ",", but the released
  vocabulary has many ("▁2000,"); this builds a model that has some.
  """
  # Imported here: the Beam venv's protobuf 6 refuses this generated module (see
  # requirements-beam.txt), and the Beam test needs the rest of this file.
  from sentencepiece import sentencepiece_model_pb2  # pylint: disable=g-import-not-at-top
  proto = sentencepiece_model_pb2.ModelProto()
  with open(model_path, "rb") as f:
    proto.ParseFromString(f.read())
  existing = {p.piece for p in proto.pieces}
  for piece in pieces:
    assert piece not in existing, piece
    new = proto.pieces.add()
    new.piece, new.score = piece, 0.0
    new.type = sentencepiece_model_pb2.ModelProto.SentencePiece.NORMAL
  with open(out_path, "wb") as f:
    f.write(proto.SerializeToString())
  return str(out_path)


# ---- a RACE-layout sample (no RACE data is bundled) ------------------------------------------

def race_paragraph(chapter: int, index: int) -> str:
  """Paragraph `index` (non-empty lines) of Moby-Dick chapter `chapter` (bundled corpus)."""
  path = CORPUS_GLOB.replace("*", f"chapter_{chapter}")
  with open(path, encoding="utf-8") as f:
    return [line.strip() for line in f if line.strip()][index]


# (level, file, chapter, paragraph, questions, options, answers): real passages, questions
# about them written for the tests.
RACE_SAMPLE = (
    ("middle", "m1.txt", 1, 1,
     ["What does the narrator ask to be called?", "He went to sea when he had little _ ."],
     [["Ahab", "Ishmael", "Queequeg", "Starbuck"], ["money", "time", "food", "hope"]],
     ["B", "A"]),
    ("middle", "m2.txt", 2, 0,
     ["Where did the narrator arrive?", "It was a Saturday night in _ ."],
     [["Nantucket", "Boston", "New Bedford", "Cape Horn"],
      ["May", "July", "October", "December"]],
     ["C", "D"]),
    ("high", "h1.txt", 3, 0,
     ["What hung on one side of the entry?"],
     [["a harpoon", "an oilpainting", "a map", "a lantern"]], ["B"]),
    ("high", "h2.txt", 1, 2,
     ["Which city is belted round by wharves?", "The streets take you _ ."],
     [["the Manhattoes", "London", "Nantucket", "Salem"],
      ["inland", "uphill", "waterward", "homeward"]],
     ["A", "C"]),
)


def write_race_sample(root, splits=("dev",)) -> list:
  """Writes RACE_SAMPLE as DATA_DIR/<split>/{middle,high}/*.txt for every split (7
  questions each; the h1.txt article cut to 12 words, so its rows are padded); returns the
  files, sorted."""
  files = []
  for split in splits:
    for level, name, chapter, paragraph, questions, options, answers in RACE_SAMPLE:
      folder = os.path.join(os.fspath(root), split, level)
      os.makedirs(folder, exist_ok=True)
      article = race_paragraph(chapter, paragraph)
      if name == "h1.txt":
        article = " ".join(article.split()[:12])
      path = os.path.join(folder, name)
      with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps({"id": f"{level}{name}", "article": article,
                            "questions": questions, "options": options,
                            "answers": answers}))
      files.append(path)
  return sorted(files)


# ---- SQuAD: a model's outputs on cached windows ----------------------------------------------

# The head's inference outputs `squad_postprocess.decode` reads.
SQUAD_OUTPUTS = ("start_top_log_probs", "start_top_index", "end_top_log_probs",
                 "end_top_index", "cls_logits")


def squad_window_outputs(model, examples, spiece_model, cache_dir, max_seq_length,
                         doc_stride, max_query_length, batch_size=7, is_training=False):
  """(windows, outputs): the Python windows of `examples` (`squad_features.squad_windows`,
  made as the cache makes them; `is_training`: the training windows, cut at the gold
  answer) and `model`'s inference outputs on each, in order. The model reads the windows
  streamed in order from their TFRecord cache (`squad_features.cached_windows` in
  `cache_dir`, read by `squad_dataset` in batches of `batch_size`), whose inputs are
  checked to be the Python windows'."""
  from xlnet_tf.data import squad_features  # pylint: disable=g-import-not-at-top
  from xlnet_tf.data import text_alignment  # pylint: disable=g-import-not-at-top
  from xlnet_tf.data import tokenization  # pylint: disable=g-import-not-at-top
  sp = tokenization.load_spiece(spiece_model)
  continuation = text_alignment.continuation_processor(sp)
  windows = [w for e in examples for w in squad_features.squad_windows(
      sp, e, max_seq_length, doc_stride, max_query_length, is_training=is_training,
      continuation=continuation)]
  path = squad_features.cached_windows(examples, spiece_model, max_seq_length, doc_stride,
                                       max_query_length, is_training=is_training,
                                       cache_dir=os.fspath(cache_dir), sp=sp)
  keys = ("input_ids", "segment_ids", "input_mask", "p_mask", "cls_index")
  step = tf.function(lambda batch: model(batch, training=False))
  read = {k: [] for k in keys + ("window_id",)}
  outputs = {k: [] for k in SQUAD_OUTPUTS}
  for batch in squad_features.squad_dataset(path, batch_size, is_training=False):
    for key, value in step({k: batch[k] for k in keys}).items():
      if key in outputs:
        outputs[key].append(value.numpy())
    for key in read:
      read[key].append(batch[key].numpy())
  read = {k: np.concatenate(v) for k, v in read.items()}
  np.testing.assert_array_equal(read["window_id"], np.arange(len(windows)))
  for key in keys:
    np.testing.assert_array_equal(
        read[key], np.array([getattr(w, key) for w in windows], read[key].dtype), key)
  return windows, {k: np.concatenate(v) for k, v in outputs.items()}


def tensorboard_losses(model_dir) -> list:
  """The "loss" scalars of MODEL_DIR/train's TensorBoard events, one per step in step
  order (a step written twice, by a killed run and its rerun, counts once: the last)."""
  import glob as glob_lib  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  by_step = {}
  for path in sorted(glob_lib.glob(os.path.join(os.fspath(model_dir), "train", "events*"))):
    for event in tf.compat.v1.train.summary_iterator(path):
      for value in event.summary.value:
        if value.tag == "loss":
          by_step[event.step] = float(tf.make_ndarray(value.tensor))
  return [by_step[s] for s in sorted(by_step)]


_KILLED_AT_STEP = r"""
import os, runpy, signal, sys
from xlnet_tf.training import checkpointing
die_at, module = int(sys.argv[1]), sys.argv[2]
save = checkpointing.GuardedCheckpointManager.save
def save_or_die(self, *args, **kwargs):
  if int(self._step_counter.numpy()) >= die_at:
    os.kill(os.getpid(), signal.SIGKILL)
  return save(self, *args, **kwargs)
checkpointing.GuardedCheckpointManager.save = save_or_die
sys.argv = [module] + sys.argv[3:]
runpy.run_module(module, run_name="__main__", alter_sys=True)
"""


def run_killed_at_step(module: str, args, step: int, cwd,
                       env=None) -> subprocess.CompletedProcess:
  """Runs `python -m MODULE ARGS` (in the environment `env`, default this one's) and
  SIGKILLs it when its training loop reaches STEP, before that step's checkpoint is written
  (the loop's losses up to STEP are computed, the checkpoints are those of the steps
  before). The moment is fixed, so a test of kill and rerun cannot race a fast run: a poll
  for a checkpoint file missed one that lived 80 ms."""
  done = subprocess.run([sys.executable, "-c", _KILLED_AT_STEP, str(step), module] + list(args),
                        cwd=cwd, env=env, capture_output=True, text=True, check=False)
  assert done.returncode == -9, (
      f"{module} was to be killed at step {step}; it ended with {done.returncode}:\n"
      f"{done.stderr[-3000:]}")
  return done


# ---- a tiny pretrained model directory ------------------------------------------------------

def write_pretrained_dir(directory, spiece_model, **config) -> str:
  """A randomly initialised pretrained model directory (1 layer, d_model 16) with
  `spiece_model` (what the ranking tests rank with)."""
  from xlnet_tf import pretrained  # pylint: disable=g-import-not-at-top
  from xlnet_tf.models.xlnet_pretrainer import build_pretrainer  # pylint: disable=g-import-not-at-top
  tf_keras.utils.set_random_seed(config.pop("seed", 0))
  values = dict(n_layer=1, d_model=16, n_head=2, d_head=8, d_inner=32, n_token=4000)
  values.update(config)
  pretrained.save_pretrained(build_pretrainer(XLNetConfig(**values)), os.fspath(directory),
                             spiece_model)
  return os.fspath(directory)
