"""The stack's direction: serving and the model directory import no training or task
code (a SavedModel export and a model directory are read without the trainer), and every
contract has one home.

The two checks of what an import loads or defines share one interpreter (`imported`, slow);
the checks of the source are fast."""

import ast
import importlib.util
import json
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _serving_modules():
  """Every module of xlnet_tf/serving (each kind's export among them)."""
  return ["xlnet_tf.serving." + name[:-len(".py")]
          for name in sorted(os.listdir(os.path.join(ROOT, "xlnet_tf", "serving")))
          if name.endswith(".py") and name != "__init__.py"]


@pytest.mark.slow
def test_serving_and_the_model_directory_import_no_training_code(imported):
  """Importing every serving module and the model directory loads no module of
  xlnet_tf.training or xlnet_tf.tasks."""
  modules = _serving_modules()
  assert "xlnet_tf.serving.classifier_export" in modules and len(modules) > 5, modules
  loaded = imported["serving"]
  assert "xlnet_tf.serving.classifier_export" in loaded and "xlnet_tf.model_directory" in loaded
  above = [m for m in loaded if m.startswith(("xlnet_tf.training", "xlnet_tf.tasks"))]
  assert not above, above


def test_serving_and_the_model_directory_import_no_training_code_inside_functions_either():
  """Not at call time either: no import of xlnet_tf.training or xlnet_tf.tasks anywhere in
  their code (an import inside a function would load the trainer when a model directory
  is read or a SavedModel written)."""
  paths = [os.path.join(ROOT, "xlnet_tf", "model_directory.py")] + [
      os.path.join(ROOT, "xlnet_tf", "serving", name)
      for name in sorted(os.listdir(os.path.join(ROOT, "xlnet_tf", "serving")))
      if name.endswith(".py")]
  above = [(os.path.relpath(path, ROOT), name) for path in paths
           for name, _ in _imports(path)
           if name.startswith(("xlnet_tf.training", "xlnet_tf.tasks"))]
  assert len(paths) > 5 and not above, above


def test_every_spec_file_is_named_once():
  """Each spec file's name is spelled once, in its spec class (its FILE, read by every
  other module through the class or the task kinds), and model.ckpt once, in
  model_directory.py."""
  homes = {'"classifier.json"': "xlnet_tf/models/xlnet_classifier.py",
           '"squad.json"': "xlnet_tf/models/xlnet_squad.py",
           '"race.json"': "xlnet_tf/models/xlnet_multiple_choice.py",
           '"tagger.json"': "xlnet_tf/models/xlnet_tagger.py",
           '"qa_simple.json"': "xlnet_tf/models/xlnet_simple_qa.py",
           '"model.ckpt"': "xlnet_tf/model_directory.py"}
  spelled = {}
  for base, _, files in os.walk(os.path.join(ROOT, "xlnet_tf")):
    for name in files:
      if name.endswith(".py"):
        path = os.path.join(base, name)
        text = open(path, encoding="utf-8").read()
        for spec in homes:
          if spec in text:
            spelled.setdefault(spec, []).append(os.path.relpath(path, ROOT))
  assert spelled == {spec: [home] for spec, home in homes.items()}


# ---- the top of the stack: runs, benchmarks, inference (what experiments/ calls) ------------

_TOP = ("xlnet_tf.runs", "xlnet_tf.benchmarks", "xlnet_tf.inference")
RUNS, BENCHMARKS, INFERENCE = _TOP
# What trains a model: the driver's training entries and the training loop.
_TRAINING_CALLS = {("train_lib", "run"), ("train_lib", "train"), ("loop", "train_model"),
                   ("pretraining", "pretrain")}


def _imports(path):
  """[(imported module, at module level)] of a Python file (absolute imports)."""
  tree = ast.parse(open(path, encoding="utf-8").read())
  in_functions = {id(node) for fn in ast.walk(tree)
                  if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
                  for node in ast.walk(fn)}
  found = []
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      names = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom) and node.level == 0:
      names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
    else:
      continue
    found += [(name, id(node) not in in_functions) for name in names]
  return found


def _package_modules():
  for base, _, files in os.walk(os.path.join(ROOT, "xlnet_tf")):
    for name in sorted(files):
      if name.endswith(".py"):
        path = os.path.join(base, name)
        module = os.path.relpath(path, ROOT)[:-len(".py")].replace(os.sep, ".")
        yield module.removesuffix(".__init__"), path


def _in(name, package):
  return name == package or name.startswith(package + ".")


# The package's one entry point: `python -m xlnet_tf.convert` runs experiments/convert.py
# (docs/architecture.md: of the entry points' level).
_ENTRY_POINT_IN_THE_PACKAGE = "xlnet_tf.convert.__main__"


def test_the_library_imports_no_entry_point_and_nothing_above_it():
  """xlnet_tf never imports experiments/ (but for its `python -m` entry point); below the
  top nothing imports the top; the three folders of the top import none of one another
  (what trains, what only measures and what applies a model are separate)."""
  wrong = []
  for module, path in _package_modules():
    if module == _ENTRY_POINT_IN_THE_PACKAGE:
      continue
    for name, _ in _imports(path):
      above = [top for top in _TOP if _in(name, top)]
      if _in(name, "experiments"):
        wrong.append((module, name))
      elif above and not any(_in(module, top) for top in above):
        wrong.append((module, name))
  assert not wrong, wrong


def _training_calls(path):
  """The calls of `path` that train a model (`_TRAINING_CALLS`, by module and function
  name) and of Keras' `fit`."""
  calls = []
  for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
      owner = node.func.value
      owner_name = owner.id if isinstance(owner, ast.Name) else getattr(owner, "attr", None)
      if (owner_name, node.func.attr) in _TRAINING_CALLS or node.func.attr == "fit":
        calls.append(f"{owner_name}.{node.func.attr} (line {node.lineno})")
  return calls


def test_no_training_in_the_benchmarks_and_no_benchmark_outside():
  """The rule of the top (docs/architecture.md): a benchmark only measures, so nothing in
  xlnet_tf/benchmarks trains a model (calls the driver's training, the training loop or
  Keras' fit); what measures is named so (benchmark*, *_latency, *_speed, timing) and lives
  in xlnet_tf/benchmarks, run by experiments/benchmark_*.py, which import no run."""
  trains = {module: calls for module, path in _package_modules()
            if _in(module, BENCHMARKS) for calls in [_training_calls(path)] if calls}
  assert not trains, trains
  measuring = re.compile(r"(benchmark\w*|\w+_latency|\w+_speed|timing)$")
  outside = []
  for module, path in _package_modules():
    if _in(module, BENCHMARKS):
      continue
    if measuring.match(module.rsplit(".", 1)[-1]):
      outside.append(module)
    outside += [f"{module}.{node.name}" for node in ast.parse(open(path).read()).body
                if isinstance(node, ast.FunctionDef) and measuring.match(node.name)]
  assert not outside, outside
  entry_points = os.path.join(ROOT, "experiments")
  wrong = []
  for name in sorted(os.listdir(entry_points)):
    if name.endswith(".py"):
      imported = [n for n, _ in _imports(os.path.join(entry_points, name))]
      runs = any(_in(n, RUNS) for n in imported)
      measures = any(_in(n, BENCHMARKS) for n in imported)
      if name.startswith("benchmark_") and (runs or not measures):
        wrong.append(name)
  assert not wrong, (f"experiments/benchmark_*.py must run xlnet_tf/benchmarks and no run "
                     f"(what trains is not named benchmark_): {wrong}")


def test_the_top_imports_the_library_at_module_level():
  """The modules moved out of experiments/ import xlnet_tf at module level (one place to
  see what each uses)."""
  inside = [(module, name) for module, path in _package_modules() if module.startswith(_TOP)
            for name, module_level in _imports(path)
            if not module_level and name.startswith("xlnet_tf")]
  assert not inside, inside


@pytest.fixture(scope="module")
def imported():
  """One fresh interpreter imports every serving module and the model directory and lists
  the xlnet_tf modules then loaded ("serving"), then imports the top's modules and the flag
  translation and lists the modules defining absl's flags ("definers")."""
  top = [m for m, _ in _package_modules() if m.startswith(_TOP)]
  if importlib.util.find_spec("torch") is None:          # the [huggingface] extra's modules
    top = [m for m in top if not m.startswith("xlnet_tf.benchmarks.hf_")]
  top.append("xlnet_tf.runs.released.flag_translation")
  code = ("import json, sys\nfrom absl import flags\n"
          + "".join(f"import {m}\n" for m in [*_serving_modules(), "xlnet_tf.model_directory"])
          + "serving = sorted(m for m in sys.modules if m.startswith('xlnet_tf'))\n"
          + "".join(f"import {m}\n" for m in top)
          + "F = flags.FLAGS\ndefiners = sorted({F.find_module_defining_flag(n) or '' "
          "for n in F})\nprint(json.dumps({'serving': serving, 'definers': definers}))")
  done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                        text=True, check=True, timeout=600)
  return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_the_top_and_the_flag_translation_define_no_flags(imported):
  """Importing them defines no absl flag (two entry points' modules imported into one
  process, by a test or a library user, cannot clash). (Imported after the serving
  modules, which define none either.)"""
  definers = [m for m in imported["definers"] if m.startswith(("xlnet_tf", "experiments"))]
  assert not definers, definers
