"""Quiet by default: the commands print no TensorFlow start-up lines, no tf.function
retracing warnings and no Keras serialization warnings; --verbosity (absl's flag, read by
`xlnet_tf.console`) brings the INFO lines back. Evaluations trace their model once;
xlnet-generate takes absl flags; console.py is a leaf that every entry point starts with.

The commands run in processes of their own (slow), without the TF_CPP_MIN_LOG_LEVEL that
conftest.py sets for this one.
"""

import ast
import gc
import logging
import os
import re
import subprocess
import sys
import tomllib

from absl import app
from absl import flags
from official.core import task_factory
import pytest
import tensorflow as tf
import tf_keras

from helpers import small_config
from xlnet_tf import build_pretrainer
from xlnet_tf import console
from experiments import generate as generate_cli
from xlnet_tf import model_directory
from xlnet_tf.models.xlnet_classifier import ClassifierSpec
from xlnet_tf import save_pretrained
from xlnet_tf.models.xlnet_classifier import build_classifier
from xlnet_tf.tasks import classification
from xlnet_tf.tasks import train_lib
from xlnet_tf.training import model_functions

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLASSIFICATION_DEMO = os.path.join(ROOT, "experiments", "configs", "classification_demo.yaml")
# What a quiet command may still print: TensorFlow's C++ errors, in TSL's format
# ("2026-01-01 12:00:00.000000: E path.cc:51] ...") or absl's ("E0101 12:00:00.000000 123
# path.cc:51] ..."), and the line absl's C++ logging puts before the first of them.
CXX_ERROR = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: [EF] |[EF]\d{4} \d\d:\d\d:\d\d"
                       r"|WARNING: All log messages before absl::InitializeLog\(\) is called)")
CXX_INFO = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: I ")
ABSL_INFO = re.compile(r"^I\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ \S+:\d+\] ")
# The modules that start without `console.start()`, and why.
NOT_STARTED = {
    # serving with TensorFlow and tensorflow-text only: sets TF_CPP_MIN_LOG_LEVEL itself
    "experiments/classify_text.py",
    # imports no TensorFlow; `console.run` sets Python's level
    "data_prep/train_sentencepiece.py",
}


def _command(args, cwd, timeout=120):
  """`python ARGS` in a process of its own, TF_CPP_MIN_LOG_LEVEL unset."""
  env = {k: v for k, v in os.environ.items() if k != console.LOG_LEVEL_VARIABLE}
  env["PYTHONPATH"] = ROOT
  return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True,
                        text=True, timeout=timeout, check=False)


def _noise(stderr):
  """The lines of `stderr` a quiet command should not print (all but C++ errors)."""
  return [line for line in stderr.splitlines() if line.strip() and not CXX_ERROR.match(line)]


@pytest.fixture(scope="module")
def classifier_dir(spiece_model, tmp_path_factory):
  """A tiny classifier model directory; its summary ("last") has no attention, so the
  dropout of the attention summary is not made (a layer never built: Keras' "Skipping
  full serialization" warning at export)."""
  directory = os.fspath(tmp_path_factory.mktemp("quiet") / "classifier")
  spec = ClassifierSpec(task_name="movie_reviews",
                        labels=("negative", "positive"), max_seq_length=32)
  model_directory.save(build_classifier(small_config(n_layer=1, n_token=4000), 2,
                                        summary_type="last"),
                       directory, spec, spiece_model)
  return directory


@pytest.fixture(scope="module")
def pretrained_dir(spiece_model, tmp_path_factory):
  directory = os.fspath(tmp_path_factory.mktemp("quiet") / "pretrained")
  save_pretrained(build_pretrainer(small_config(n_layer=1, n_token=4000, d_model=32,
                                                d_head=16)),
                  directory, spiece_model=spiece_model)
  return directory


# ---- the commands' stderr ----------------------------------------------------------------

@pytest.mark.slow
def test_export_prints_nothing_but_its_result(classifier_dir, tmp_path):
  done = _command(["-m", "experiments.export_saved_model", f"--model_dir={classifier_dir}",
                   f"--export_dir={tmp_path / 'export'}"], tmp_path)
  assert done.returncode == 0, done.stderr[-3000:]
  assert done.stdout == f"exported {classifier_dir} to {tmp_path / 'export'}\n"
  assert "Skipping full serialization" not in done.stderr
  assert "retracing" not in done.stderr
  assert not _noise(done.stderr), done.stderr[-3000:]
  assert tf.saved_model.contains_saved_model(os.fspath(tmp_path / "export"))


@pytest.mark.slow
def test_verbosity_0_shows_the_info_lines(classifier_dir, tmp_path):
  done = _command(["-m", "experiments.export_saved_model", f"--model_dir={classifier_dir}",
                   f"--export_dir={tmp_path / 'export'}", "--verbosity=0"], tmp_path)
  assert done.returncode == 0, done.stderr[-3000:]
  lines = done.stderr.splitlines()
  assert any(ABSL_INFO.match(line) for line in lines), done.stderr[-3000:]  # Python's
  assert any(CXX_INFO.match(line) for line in lines), done.stderr[-3000:]   # TensorFlow's


@pytest.mark.slow
def test_generate_takes_absl_flags_and_prints_only_the_text(pretrained_dir, tmp_path):
  argv = ["--model_dir", pretrained_dir, "--prompt=Call me Ishmael.", "--max_new_tokens=5",
          "--strategy", "sample", "--top_k=40", "--seed=3"]
  done = _command(["-m", "experiments.generate", *argv], tmp_path)
  assert done.returncode == 0, done.stderr[-3000:]
  expected = generate_cli.continuation(generate_cli.parse_flags(["xlnet-generate", *argv]))
  assert done.stdout == expected + "\n" and expected.strip()
  assert not _noise(done.stderr), done.stderr[-3000:]

  refused = _command(["-m", "experiments.generate", *argv, "--max_new_token=3"], tmp_path)
  assert refused.returncode == 1, refused.stderr[-3000:]
  assert "Unknown command line flag 'max_new_token'" in refused.stderr
  assert "Traceback" not in refused.stderr and not refused.stdout


@pytest.mark.slow
def test_xlnet_convert_starts_quiet_and_shows_its_help(tmp_path):
  # What pip's console script does: import the target's module, then call it.
  script = ("import sys\n"
            "sys.argv[0] = 'xlnet-convert'\n"
            "from experiments.convert import run\n"
            "print('tensorflow loaded:', 'tensorflow' in sys.modules)\n"
            "run()\n")
  done = _command(["-c", script, "--help"], tmp_path)
  assert done.returncode == 1, done.stderr[-3000:]              # absl's --help
  assert done.stdout.startswith("tensorflow loaded: True\n")
  assert "a HuggingFace task model -> our model directory" in done.stdout   # the docstring
  assert "--source:" in done.stdout and "--saved_model:" in done.stdout     # and flags
  assert not _noise(done.stderr), done.stderr[-3000:]


# ---- console: --verbosity -> the log levels ------------------------------------------------

@pytest.mark.parametrize("argv, level", [
    (["prog"], None),
    (["prog", "--model_dir=x", "positional"], None),
    (["prog", "--verbosity=0"], "0"),
    (["prog", "--model_dir", "x", "--verbosity", "-1"], "1"),
    (["prog", "-v", "-2"], "2"),
    (["prog", "--verbosity=-3"], "3"),
    (["prog", "--verbosity=-9"], "3"),
    (["prog", "--verbosity=1"], "0"),
    (["prog", "--verbosity=loud"], None),        # absl reports it when it parses
])
def test_the_cxx_log_level_of_a_command_line(argv, level):
  assert console.log_level(argv) == level


def test_verbosity_in_a_flagfile(tmp_path):
  flagfile = tmp_path / "run.flags"
  flagfile.write_text("--verbosity=-1\n")
  assert console.log_level(["prog", f"--flagfile={flagfile}"]) == "1"


def test_start_sets_the_level_before_tensorflow_would_read_it(monkeypatch):
  monkeypatch.delenv(console.LOG_LEVEL_VARIABLE, raising=False)
  console.start(["prog"])
  assert os.environ[console.LOG_LEVEL_VARIABLE] == "2"              # quiet by default
  monkeypatch.setenv(console.LOG_LEVEL_VARIABLE, "1")
  console.start(["prog"])
  assert os.environ[console.LOG_LEVEL_VARIABLE] == "1"              # the environment's
  console.start(["prog", "--verbosity=0"])
  assert os.environ[console.LOG_LEVEL_VARIABLE] == "0"              # the flag's


def test_start_keeps_keras_3_unloaded_unless_the_environment_says_otherwise(monkeypatch):
  monkeypatch.delenv(console.KERAS_VARIABLE, raising=False)
  console.start(["prog"])
  assert os.environ[console.KERAS_VARIABLE] == "1"
  monkeypatch.setenv(console.KERAS_VARIABLE, "0")
  console.start(["prog"])
  assert os.environ[console.KERAS_VARIABLE] == "0"                  # the environment's


def _imports_before_start(path):
  """(the modules `path` imports before `console.start()`, whether it calls it)."""
  with open(os.path.join(ROOT, path), encoding="utf-8") as f:
    tree = ast.parse(f.read(), path)
  imported = []
  for node in tree.body:
    if (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
        and ast.unparse(node.value.func) == "console.start"):
      return imported, True
    if isinstance(node, ast.Import):
      imported += [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom):
      imported += [f"{node.module}.{alias.name}" for alias in node.names]
  return imported, False


def _entry_modules():
  """The modules run as commands: pyproject's console scripts and every module with a
  `__main__` block in experiments/, data_prep/ and xlnet_tf/."""
  with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
    scripts = tomllib.load(f)["project"]["scripts"]
  paths = {os.path.join(*target.split(":")[0].split(".")) + ".py"
           for target in scripts.values()}
  for package in ("experiments", "data_prep", "xlnet_tf"):
    for base, _, files in os.walk(os.path.join(ROOT, package)):
      for name in files:
        path = os.path.relpath(os.path.join(base, name), ROOT)
        if name.endswith(".py"):
          with open(os.path.join(ROOT, path), encoding="utf-8") as f:
            if 'if __name__ == "__main__":' in f.read():
              paths.add(path)
  return sorted(paths)


def test_every_entry_point_starts_with_the_console():
  entries = _entry_modules()
  assert {"experiments/train.py", "experiments/demo.py", "experiments/generate.py",
          "experiments/convert.py", "xlnet_tf/convert/__main__.py",
          "data_prep/create_pretraining_data.py"} <= set(entries)
  problems = []
  for path in entries:
    if path in NOT_STARTED:
      continue
    imported, started = _imports_before_start(path)
    early = [m for m in imported if m.split(".")[0] not in sys.stdlib_module_names
             and m != "xlnet_tf.console"]
    if not started or early:
      problems.append(f"{path}: " + (f"imports {early} before console.start()" if started
                                     else "no console.start()"))
  assert not problems, problems


def test_console_is_a_leaf():
  """console.py imports no TensorFlow and nothing of xlnet_tf (so no module that imports
  it), and no importlib: what it imports is what a reader of its imports sees."""
  with open(os.path.join(ROOT, "xlnet_tf", "console.py"), encoding="utf-8") as f:
    tree = ast.parse(f.read())
  imported = set()
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      imported |= {alias.name for alias in node.names}
    elif isinstance(node, ast.ImportFrom):
      imported.add(node.module)
  assert imported <= {"os", "sys", "typing", "absl"}, imported


# ---- evaluations trace once -----------------------------------------------------------------

def test_model_functions_trace_once_per_model_and_free_it():
  traced = []
  functions = model_functions.ModelFunctions(
      lambda model, x: traced.append(1) or model(x))
  models = [tf_keras.Sequential([tf_keras.layers.Dense(2)]) for _ in range(2)]
  for model in models:
    model(tf.ones([1, 3]))                           # built (variables made) eagerly
  spec = tf.TensorSpec([None, 3], tf.float32)
  for model in models:
    for rows in (4, 1, 7):                           # the last batch is smaller
      functions.get(model, spec)(tf.ones([rows, 3]))
  assert len(traced) == 2                            # once per model
  assert functions.get(models[0], spec) is functions.get(models[0], spec)
  assert functions.get(models[0], spec) is not functions.get(models[1], spec)
  del models, model
  gc.collect()
  assert not list(functions._functions)              # the models are not kept alive


class _Records(logging.Handler):
  """Keeps the messages of the records it handles."""

  def __init__(self):
    super().__init__()
    self.messages = []

  def emit(self, record):
    self.messages.append(record.getMessage())


def test_classification_evaluates_with_one_trace(spiece_model, tmp_path, monkeypatch):
  """Three evaluations (dev, test, dev; two batches each, the second smaller) trace the
  model once, set off no retracing warning, and give the same numbers for the same split."""
  params = train_lib.parse_params(
      classification.KIND.experiment, [CLASSIFICATION_DEMO],
      f"task.train_data.spiece_model={spiece_model},"
      f"task.validation_data.spiece_model={spiece_model},"
      f"task.train_data.cache_dir={tmp_path},task.validation_data.cache_dir={tmp_path},"
      f"task.validation_data.global_batch_size=512")
  task = task_factory.get_task(params.task)
  model = task.build_model()
  traced = []
  validation_step = task.validation_step
  monkeypatch.setattr(task, "validation_step",
                      lambda *args, **kwargs: traced.append(1) or validation_step(*args, **kwargs))
  records = _Records()
  logger = logging.getLogger("tensorflow")
  logger.addHandler(records)
  try:
    results = [task.evaluate(model, params.task.validation_data.replace(split=split))
               for split in ("dev", "test", "dev")]
  finally:
    logger.removeHandler(records)
  assert len(traced) == 1
  assert not [m for m in records.messages if "retracing" in m], records.messages
  assert results[0] == results[2] and results[0]["num_examples"] > 512
  assert results[1]["num_examples"] > 512


# ---- xlnet-generate's flags ---------------------------------------------------------------

def test_generate_flags_parse_as_absl_flags():
  values = generate_cli.parse_flags(
      ["xlnet-generate", "--model_dir", "m", "--prompt=the whale", "--nouncased",
       "--keep_accents", "--no_mems", "--strategy=sample", "--top_p", "0.9"])
  assert (values.model_dir, values.prompt, values.strategy, values.top_p) == (
      "m", "the whale", "sample", 0.9)
  assert (values.uncased, values.keep_accents, values.no_mems) == (False, True, True)
  assert (values.max_new_tokens, values.seed, values.mem_len, values.top_k) == (
      50, None, None, 0)
  defaults = generate_cli.parse_flags(["xlnet-generate", "--model_dir=m", "--prompt=x"])
  assert defaults.uncased is None and defaults.keep_accents is None   # as the directory says
  with pytest.raises(flags.Error, match="prompt"):
    generate_cli.parse_flags(["xlnet-generate", "--model_dir=m"])
  with pytest.raises(flags.Error, match="strategy"):
    generate_cli.parse_flags(["xlnet-generate", "--model_dir=m", "--prompt=x",
                              "--strategy=beam"])
  with pytest.raises(flags.Error, match="tokens"):
    generate_cli.parse_flags(["xlnet-generate", "--model_dir=m", "--prompt=x", "--tokens=3"])
  with pytest.raises(app.UsageError, match="unexpected arguments"):
    generate_cli.main(["xlnet-generate", "extra"], defaults)
  # defined by `run`, not on import: no clash with the other commands' --model_dir here
  assert "max_new_tokens" not in flags.FLAGS and "prompt" not in flags.FLAGS
