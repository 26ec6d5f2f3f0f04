"""Packaging: pyproject.toml declares what the code imports and agrees with the pinned
locks (requirements*.txt); the console commands point at functions that exist; the Beam
worker image (Dockerfile.beam, which cannot be built here) is made of the same pins and
files; and (slow) a built wheel installs into a fresh venv whose commands run outside the
checkout, with the bundled sample data."""

import ast
import fnmatch
import glob
import importlib.metadata
import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The packages the wheel ships (pyproject.toml's [tool.setuptools.packages.find]).
PACKAGES = ("xlnet_tf", "data_prep", "experiments")
# Each dependency group of pyproject.toml and its pinned lock.
LOCKS = {None: "requirements.txt", "beam": "requirements-beam.txt",
         "huggingface": "requirements-test.txt", "test": "requirements-test.txt"}
# Extras whose lines are a part of another extra's (the same requirements, spelled out; see
# pyproject.toml): their lock is that part of the other's lock file.
PART_OF = {"huggingface": "test"}
# Import name (top-level module; google.* by its second part) -> distribution.
IMPORT_TO_DIST = {
    "Stemmer": "PyStemmer",
    "absl": "absl-py",
    "apache_beam": "apache-beam",
    "bm25s": "bm25s",
    "google.protobuf": "protobuf",
    "google_crc32c": "google-crc32c",
    "ir_measures": "ir-measures",
    "jax": "jax",
    "matplotlib": "matplotlib",
    "numpy": "numpy",
    "official": "tf-models-official",
    "orbit": "tf-models-official",
    "pytest": "pytest",
    "safetensors": "safetensors",
    "sentencepiece": "sentencepiece",
    "tensorflow": "tensorflow",
    "tensorflow_text": "tensorflow-text",
    "tf_keras": "tf-keras",
    "torch": "torch",
    "transformers": "transformers",
    "yaml": "pyyaml",
}
# Declared distributions that nothing in xlnet_tf/, data_prep/, experiments/ imports, and why
# they are declared.
NOT_IMPORTED = {
    "setuptools": "TensorBoard 2.20 imports pkg_resources, gone from setuptools >= 81",
    "pyarrow": "resolution pin of the [beam] extra (Beam 2.77 needs pyarrow < 26)",
    "pillow": "resolution pin of the [beam] extra (pillow 12 beside Beam 2.77)",
    "python-dateutil": "resolution pin of the [beam] extra (Beam 2.77 needs < 3)",
    "pytest": "the test runner (tests/ imports it)",
    "pytest-xdist": "make test runs the suite in two processes (pytest -n 2)",
    "pytrec-eval-terrier": "ir-measures computes MAP and P@k with it (ranking_metrics)",
    "jaxlib": "jax's XLA client, whose cost analysis profile_step --program reads",
    "ruff": "the linter of make lint (.ci/run): a command, imported by nothing",
}
# Modules that belong to an extra: they may import its distributions at module level (an
# install without the extra never imports them). Any other module imports an extra's
# distribution only inside the function that needs it.
EXTRA_MODULES = {
    "data_prep/beam_pipeline.py": "beam",
    "xlnet_tf/runs/hf_pretraining_steps.py": "huggingface",
    "xlnet_tf/runs/hf_training.py": "huggingface",
}
COMMANDS = {
    "xlnet-train": "experiments.train:run",
    "xlnet-create-pretraining-data": "data_prep.create_pretraining_data:run",
    "xlnet-train-sentencepiece": "data_prep.train_sentencepiece:run",
    "xlnet-convert": "experiments.convert:run",
    "xlnet-export": "experiments.export_saved_model:run",
    "xlnet-classify": "experiments.classify_text:main",
    "xlnet-generate": "experiments.generate:run",
    "xlnet-embed": "experiments.embed:run",
}


def _pyproject():
  with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
    return tomllib.load(f)


def _declared(group):
  """{canonical name: Requirement} of pyproject's dependencies (group None) or an extra."""
  project = _pyproject()["project"]
  lines = project["dependencies"] if group is None else project["optional-dependencies"][group]
  requirements = [Requirement(line) for line in lines]
  return {canonicalize_name(r.name): r for r in requirements}


def _locked(filename):
  """{canonical name: Requirement} of a requirements file."""
  pins = {}
  with open(os.path.join(ROOT, filename), encoding="utf-8") as f:
    for number, line in enumerate(f, 1):
      line = line.split("#", 1)[0].strip()
      if line:
        requirement = Requirement(line)
        name = canonicalize_name(requirement.name)
        assert name not in pins, f"{filename}:{number}: {requirement.name} again"
        pins[name] = requirement
  return pins


def _lock_of(group):
  """(lock file, {canonical name: Requirement}) of a dependency group: its lock file, or
  for a PART_OF extra the lines of its declared names (the rest are the other extra's)."""
  pins = _locked(LOCKS[group])
  if group in PART_OF:
    pins = {name: r for name, r in pins.items() if name in _declared(group)}
  return LOCKS[group], pins


def _exact_version(requirement):
  exact = [s.version for s in requirement.specifier if s.operator == "=="]
  return exact[0] if exact else None


def _import_name(module):
  parts = module.split(".")
  return ".".join(parts[:2]) if parts[0] == "google" else parts[0]


def third_party_imports(path):
  """[(import name, line, at module level?)] of a file's absolute imports that are neither
  the standard library nor this project's packages."""
  with open(path, encoding="utf-8") as f:
    tree = ast.parse(f.read(), path)
  in_functions = set()
  for node in ast.walk(tree):
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
      in_functions.update(id(inner) for inner in ast.walk(node) if inner is not node)
  found = []
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      modules = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom) and node.level == 0:
      modules = [node.module]
    else:
      continue
    for module in modules:
      top = module.split(".")[0]
      if top in sys.stdlib_module_names or top in PACKAGES or top == "__future__":
        continue
      found.append((_import_name(module), node.lineno, id(node) not in in_functions))
  return found


def _source_files():
  for package in PACKAGES:
    for path in sorted(glob.glob(os.path.join(ROOT, package, "**", "*.py"), recursive=True)):
      yield os.path.relpath(path, ROOT)


def test_every_third_party_import_is_declared():
  runtime = set(_declared(None))
  extras = {group: set(_declared(group)) for group in LOCKS if group is not None}
  problems, extra_imports = [], {}
  for path in _source_files():
    for name, line, module_level in third_party_imports(os.path.join(ROOT, path)):
      where = f"{path}:{line} imports {name}"
      dist = IMPORT_TO_DIST.get(name)
      if dist is None:
        problems.append(f"{where}: which distribution is that? Add it to IMPORT_TO_DIST "
                        f"in tests/package/test_packaging.py and declare it in pyproject.toml")
        continue
      dist = canonicalize_name(dist)
      in_extras = sorted(group for group, names in extras.items() if dist in names)
      if dist in runtime:
        continue
      if not in_extras:
        problems.append(f"{where}: its distribution {dist} is not declared in "
                        f"pyproject.toml (dependencies or an extra)")
      elif module_level and EXTRA_MODULES.get(path) not in in_extras:
        problems.append(f"{where} at module level, but {dist} is only in the extra(s) "
                        f"{in_extras}: an install without them cannot import {path}; "
                        f"import it in the function that needs it, or list the module in "
                        f"EXTRA_MODULES")
      if EXTRA_MODULES.get(path) in in_extras:
        extra_imports.setdefault(path, set()).add(dist)
  # EXTRA_MODULES lists only modules that do import their extra (it cannot go stale).
  stale = sorted(set(EXTRA_MODULES) - set(extra_imports))
  assert not problems, "\n".join(problems)
  assert not stale, f"EXTRA_MODULES lists modules that import nothing of their extra: {stale}"


def test_every_declared_distribution_is_imported_or_explained():
  """A declared distribution nothing imports (crcmod was one) is dropped, or listed in
  NOT_IMPORTED with its reason."""
  imported = set()
  for path in _source_files():
    for name, _, _ in third_party_imports(os.path.join(ROOT, path)):
      if name in IMPORT_TO_DIST:
        imported.add(canonicalize_name(IMPORT_TO_DIST[name]))
  declared = set().union(*(_declared(group) for group in LOCKS))
  unexplained = sorted(declared - imported - set(NOT_IMPORTED))
  assert not unexplained, (
      f"declared in pyproject.toml but imported by nothing in {PACKAGES}: {unexplained}; "
      f"drop them, or say why in NOT_IMPORTED")
  stale = sorted(set(NOT_IMPORTED) & imported)
  assert not stale, f"NOT_IMPORTED lists distributions that are imported: {stale}"
  assert set(NOT_IMPORTED) <= declared, sorted(set(NOT_IMPORTED) - declared)


def test_the_scan_sees_module_level_and_function_level_imports(tmp_path):
  path = tmp_path / "m.py"
  path.write_text("import os\nimport numpy as np\nfrom google.protobuf import message\n"
                  "from . import sibling\nfrom xlnet_tf import paths\n"
                  "def f():\n  import torch\n  return torch\n")
  assert third_party_imports(str(path)) == [
      ("numpy", 2, True), ("google.protobuf", 3, True), ("torch", 7, False)]


def test_the_import_names_map_to_the_installed_distributions():
  """IMPORT_TO_DIST agrees with the metadata of what is installed here (Beam, e.g., is
  not in the main venv: its entries are checked where it is)."""
  provided = importlib.metadata.packages_distributions()
  wrong, checked = [], 0
  for name, dist in IMPORT_TO_DIST.items():
    top = name.split(".")[0]
    if importlib.util.find_spec(top) is None:
      continue
    if name.startswith("google.") and importlib.util.find_spec(name) is None:
      continue
    checked += 1
    owners = {canonicalize_name(d) for d in provided.get(top, ())}
    if canonicalize_name(dist) not in owners:
      wrong.append(f"{name}: IMPORT_TO_DIST says {dist}, installed by {sorted(owners)}")
  assert not wrong, wrong
  assert checked >= 10, checked


@pytest.mark.parametrize("group", list(LOCKS), ids=lambda g: g or "runtime")
def test_pyproject_and_the_lock_agree(group):
  lock, pinned = _lock_of(group)
  where = "dependencies" if group is None else f"optional-dependencies.{group}"
  declared = _declared(group)
  assert not set(declared) - set(pinned), (
      f"pyproject.toml's {where} has {sorted(set(declared) - set(pinned))}, {lock} not")
  assert not set(pinned) - set(declared), (
      f"{lock} has {sorted(set(pinned) - set(declared))}, pyproject.toml's {where} not")
  for name, requirement in declared.items():
    version = _exact_version(pinned[name])
    if version is None:   # a range in the lock (protobuf, setuptools): the same range
      assert pinned[name].specifier == requirement.specifier, (
          f"{name}: {lock} says {pinned[name].specifier}, pyproject.toml's {where} "
          f"{requirement.specifier}")
    else:
      assert requirement.specifier.contains(version, prereleases=True), (
          f"{name}: {lock} pins {version}, outside pyproject.toml's {where} "
          f"{requirement.specifier}")


def test_pyproject_has_no_extra_without_a_lock():
  extras = set(_pyproject()["project"]["optional-dependencies"])
  assert extras == {g for g in LOCKS if g is not None}, extras


def test_the_test_extra_is_the_huggingface_extra_and_pytest():
  """[test] spells out [huggingface]'s lines (no self-reference, see pyproject.toml), the
  same requirements, plus pytest and pytest-xdist (make test's two processes), jax /
  jaxlib (XLA's cost analysis, tested) and ruff (make lint); a PART_OF extra's lines are all
  in the other extra."""
  for part, whole in PART_OF.items():
    part_lines, whole_lines = _declared(part), _declared(whole)
    differ = {name: (str(r), str(whole_lines.get(name))) for name, r in part_lines.items()
              if str(whole_lines.get(name)) != str(r)}
    assert not differ, f"[{part}]'s lines differ in [{whole}]: {differ}"
  assert set(_declared("test")) == set(_declared("huggingface")) | {
      "pytest", "pytest-xdist", "jax", "jaxlib", "ruff"}
  assert set(_declared("huggingface")) == {"torch", "transformers"}


def test_requires_python_fits_the_pins_and_the_makefile():
  """Every Python that pyproject.toml admits is admitted by each pinned distribution that is
  installed here at its pinned version (numpy 2.4.6 needs 3.11), and the Makefile checks
  the same range."""
  requires = SpecifierSet(_pyproject()["project"]["requires-python"])
  admitted = [f"3.{minor}" for minor in range(8, 20) if requires.contains(f"3.{minor}.0")]
  assert f"{sys.version_info[0]}.{sys.version_info[1]}" in admitted, admitted
  refused, checked = [], 0
  for lock in sorted(set(LOCKS.values())):
    for name, requirement in _locked(lock).items():
      version = _exact_version(requirement)
      try:
        metadata = importlib.metadata.metadata(name)
      except importlib.metadata.PackageNotFoundError:
        continue
      if version is None or metadata["Version"].split("+")[0] != version:
        continue
      checked += 1
      theirs = SpecifierSet(metadata.get("Requires-Python") or "")
      for python in admitted:
        if not theirs.contains(f"{python}.0"):
          refused.append(f"{name} {version} requires Python {theirs}, not {python}")
  assert not refused, refused
  assert checked >= 10, checked
  with open(os.path.join(ROOT, "Makefile"), encoding="utf-8") as f:
    makefile = f.read()
  low, high = admitted[0].replace(".", ", "), admitted[-1].replace(".", ", ")
  check = f"({low}) <= sys.version_info[:2] <= ({high})"
  assert check in makefile, f"the Makefile's Python check is not {check!r} ({admitted})"


def test_the_console_commands_point_at_functions():
  scripts = _pyproject()["project"]["scripts"]
  assert scripts == COMMANDS
  missing = []
  for command, target in scripts.items():
    module, function = target.split(":")
    path = os.path.join(ROOT, *module.split(".")) + ".py"
    with open(path, encoding="utf-8") as f:
      tree = ast.parse(f.read(), path)
    defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    if function not in defined:
      missing.append(f"{command}: {target}: no function {function} in {path}")
  assert not missing, missing


# ---- Dockerfile.beam: the Beam workers' image (no docker daemon here: what can be read) ---

DOCKERFILE = "Dockerfile.beam"
# The Beam Python SDK image: apache/beam_python3.11_sdk:2.77.0.
_SDK_IMAGE = re.compile(r"apache/beam_python3\.(\d+)_sdk:(\S+)")


def _instructions(filename=DOCKERFILE):
  """[(INSTRUCTION, arguments)] of a Dockerfile: comments dropped, continuations joined."""
  with open(os.path.join(ROOT, filename), encoding="utf-8") as f:
    lines = [line.rstrip("\n") for line in f if not line.lstrip().startswith("#")]
  text = re.sub(r"\\\n\s*", " ", "\n".join(lines))
  found = []
  for line in text.splitlines():
    if line.strip():
      keyword, _, arguments = line.strip().partition(" ")
      found.append((keyword.upper(), arguments.strip()))
  return found


def _pip_installs(instructions):
  """[(the pip command's arguments after `install`)] of the RUN instructions, in order."""
  installs = []
  for keyword, arguments in instructions:
    if keyword != "RUN":
      continue
    for command in re.split(r"&&|;", arguments):
      words = shlex.split(command)
      if "pip" in [os.path.basename(w) for w in words[:3]] and "install" in words:
        installs.append(words[words.index("install") + 1:])
  return installs


def _copies(instructions):
  """[(sources, destination)] of the COPY / ADD instructions (flags such as --chown
  dropped)."""
  copies = []
  for keyword, arguments in instructions:
    if keyword in ("COPY", "ADD"):
      words = [w for w in shlex.split(arguments) if not w.startswith("--")]
      copies.append((words[:-1], words[-1]))
  return copies


def _dockerignored(path):
  """Whether .dockerignore keeps `path` (relative to the root) out of the build context
  (its patterns as Docker reads them, with fnmatch; no `!` exceptions are used)."""
  with open(os.path.join(ROOT, ".dockerignore"), encoding="utf-8") as f:
    patterns = [line.strip() for line in f if line.strip() and not line.startswith("#")]
  assert not any(p.startswith("!") for p in patterns), patterns
  parts = path.strip("/").split("/")
  prefixes = ["/".join(parts[:n]) for n in range(1, len(parts) + 1)]
  for pattern in patterns:
    pattern = pattern.strip("/")
    options = [pattern] + ([pattern[3:]] if pattern.startswith("**/") else [])
    if any(fnmatch.fnmatchcase(prefix, option) for prefix in prefixes for option in options):
      return True
    if pattern.startswith("**/") and any(fnmatch.fnmatchcase(part, pattern[3:])
                                         for part in parts):
      return True
  return False


def test_the_beam_image_is_the_pinned_beam_on_a_supported_python():
  froms = [arguments for keyword, arguments in _instructions() if keyword == "FROM"]
  assert len(froms) == 1, froms
  match = _SDK_IMAGE.fullmatch(froms[0])
  assert match, f"{DOCKERFILE}: FROM {froms[0]}, expected apache/beam_python3.N_sdk:VERSION"
  minor, version = int(match.group(1)), match.group(2)
  beam = _exact_version(_locked("requirements-beam.txt")["apache-beam"])
  assert version == beam, (
      f"{DOCKERFILE}: the SDK image is Beam {version}, requirements-beam.txt pins {beam}: the "
      f"workers' Beam must be the launcher's")
  requires = SpecifierSet(_pyproject()["project"]["requires-python"])
  assert requires.contains(f"3.{minor}.0"), (
      f"{DOCKERFILE}: Python 3.{minor}, outside pyproject.toml's requires-python {requires}")


def test_the_beam_image_installs_the_pins_in_one_call_then_the_package():
  instructions = _instructions()
  installs = _pip_installs(instructions)
  assert len(installs) == 2, (
      f"{DOCKERFILE}: pip installs {installs}; expected two: requirements.txt and "
      f"requirements-beam.txt in one call (they resolve together), then the package")
  pins, package = installs
  files = [os.path.basename(pins[i + 1]) for i, w in enumerate(pins) if w == "-r"]
  assert sorted(files) == ["requirements-beam.txt", "requirements.txt"], pins
  assert "--no-deps" not in pins and "--no-cache-dir" in pins, pins
  # The package: --no-deps, from the directory pyproject.toml was copied into.
  assert "--no-deps" in package, package
  targets = [w for w in package if not w.startswith("-")]
  [pyproject_destination] = [destination for sources, destination in _copies(instructions)
                             if "pyproject.toml" in sources]
  assert [t.rstrip("/") for t in targets] == [pyproject_destination.rstrip("/")], (
      package, pyproject_destination)
  # No PYTHONPATH: the workers import the installed package.
  assert not any("PYTHONPATH" in arguments for _, arguments in instructions), (
      f"{DOCKERFILE} sets PYTHONPATH: the package is installed, the workers import that")


def test_the_beam_image_copies_what_the_build_needs_and_it_exists():
  copies = _copies(_instructions())
  sources = [source for sources, _ in copies for source in sources]
  project = _pyproject()["project"]
  needed = {"requirements.txt", "requirements-beam.txt", "pyproject.toml", project["readme"],
            project["license"]["file"], *PACKAGES}
  assert set(sources) == needed, (
      f"{DOCKERFILE} copies {sorted(sources)}; the install needs {sorted(needed)}")
  for source in sources:
    assert os.path.exists(os.path.join(ROOT, source)), f"{DOCKERFILE}: COPY {source}: missing"
    assert not _dockerignored(source), f"{DOCKERFILE}: COPY {source}, which .dockerignore drops"
  # A package directory's destination is named as the package (pip builds from it).
  for sources, destination in copies:
    if len(sources) == 1 and sources[0] in PACKAGES:
      assert os.path.basename(destination.rstrip("/")) == sources[0], (sources, destination)


def test_dockerignore_keeps_the_venvs_and_the_repository_out():
  for path in (".venv", ".venv-beam", ".venv/lib/python3.11", ".git", ".git/objects",
               "runs", "runs/demo", "bazel-bin", "build", "dist", "xlnet_tf.egg-info",
               "xlnet_tf/__pycache__", ".pytest_cache"):
    assert _dockerignored(path), f".dockerignore does not exclude {path}"
  for path in ("xlnet_tf/convert/__main__.py", "data_prep/sample_data/qa/squad.json",
               "experiments/configs/squad_demo.yaml"):
    assert not _dockerignored(path), path


def test_the_dockerignore_matcher():
  assert not _dockerignored("xlnet_tf")
  assert _dockerignored("data_prep/__pycache__/x.pyc")


def test_only_the_locator_spells_where_the_sample_data_is():
  """The bundled data is found through xlnet_tf.data.sample_data (importlib.resources),
  never by a path built from a module's own location."""
  spelled = []
  for path in _source_files():
    if path == os.path.join("xlnet_tf", "data", "sample_data.py"):
      continue
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
      text = f.read()
    if re.search(r"""["']sample_data["']""", text):
      spelled.append(path)
  assert not spelled, spelled


def _clean_env(venv):
  env = {k: v for k, v in os.environ.items()
         if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")}
  env["PATH"] = os.path.join(venv, "bin") + os.pathsep + env.get("PATH", "")
  env["TF_CPP_MIN_LOG_LEVEL"] = "2"
  return env


def _run(command, **kwargs):
  done = subprocess.run(command, capture_output=True, text=True, timeout=600, **kwargs)
  assert done.returncode == 0, (
      f"{command} exited with {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
  return done


_CHECK_INSTALLED = """
import glob, json, os, sys
import xlnet_tf, data_prep, experiments
from xlnet_tf.data import brown, sample_data
from xlnet_tf.data.classifier_readers import movie_reviews
print(json.dumps({
    "files": [m.__file__ for m in (xlnet_tf, data_prep, experiments, sample_data)],
    "prefix": sys.prefix,
    "sys_path": sys.path,
    "movie_reviews": os.path.isfile(os.path.join(movie_reviews.MOVIE_REVIEWS_DIR,
                                                 movie_reviews.MOVIE_REVIEWS_FILE)),
    "brown": len(brown.document_names(brown.BROWN_DIR)),
    "moby_dick": len(glob.glob(sample_data.path("moby_dick", "chapter_*.txt"))),
    "sotu": len(glob.glob(sample_data.path("sotu", "*.txt"))),
    # squad_demo.yaml's train_file / predict_file
    "squad": sample_data.resolve("sample_data:qa/squad.json"),
    "configs": sorted(os.listdir(os.path.join(os.path.dirname(experiments.__file__),
                                              "configs"))),
}))
"""


@pytest.mark.slow
def test_the_wheel_installs_and_its_commands_run_outside_the_checkout(tmp_path):
  # The build reads a copy of what the wheel is made of, so that the checkout gets no
  # build/ or *.egg-info.
  source = tmp_path / "source"
  source.mkdir()
  for name in ("pyproject.toml", "README.md", "LICENSE"):
    shutil.copy(os.path.join(ROOT, name), source / name)
  for package in PACKAGES:
    shutil.copytree(os.path.join(ROOT, package), source / package,
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
  wheels = tmp_path / "wheels"
  _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
        "--no-index", "--disable-pip-version-check", "-w", str(wheels), str(source)])
  [wheel] = glob.glob(str(wheels / "xlnet_tf-*.whl"))
  with zipfile.ZipFile(wheel) as archive:
    names = set(archive.namelist())
    entry_points = next(archive.read(n).decode() for n in names
                        if n.endswith(".dist-info/entry_points.txt"))
  for expected in ("xlnet_tf/data/sample_data.py", "data_prep/create_pretraining_data.py",
                   "experiments/train.py", "experiments/classify_text.py",
                   "data_prep/sample_data/sentiment/movieReviewSnippets_GroundTruth.txt",
                   "data_prep/sample_data/brown/cats.txt",
                   "data_prep/sample_data/moby_dick/chapter_1.txt",
                   "data_prep/sample_data/sotu/2021_joseph_r_biden_d.txt",
                   "data_prep/sample_data/sotu/LICENSE",
                   "experiments/configs/classification_demo.yaml"):
    assert expected in names, expected
  assert not any(n.startswith("tests/") for n in names)
  for command, target in COMMANDS.items():
    assert f"{command} = {target}" in entry_points, entry_points

  # A fresh venv (no pip: the running pip installs into it); the wheel goes in before the
  # dependencies are made visible, so that nothing installed elsewhere is touched.
  venv = tmp_path / "venv"
  _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
  python = str(venv / "bin" / "python")
  _run([sys.executable, "-m", "pip", "--python", python, "install", "--no-deps",
        "--no-index", "--disable-pip-version-check", wheel])
  # The dependencies (TensorFlow, ...) from this interpreter's site-packages, appended to
  # the venv's path by a .pth file, rather than installed again (gigabytes).
  [site_packages] = glob.glob(str(venv / "lib" / "python3.*" / "site-packages"))
  outer = [p for p in dict.fromkeys([sysconfig.get_paths()["purelib"],
                                     sysconfig.get_paths()["platlib"]])]
  assert ROOT not in outer, outer
  with open(os.path.join(site_packages, "zz_dependencies.pth"), "w") as f:
    f.write("\n".join(outer) + "\n")

  work = tmp_path / "work"        # the commands' cwd: outside the checkout
  work.mkdir()
  env = _clean_env(str(venv))
  installed = json.loads(_run([python, "-c", _CHECK_INSTALLED], cwd=work, env=env).stdout)
  for path in installed["files"]:
    assert path.startswith(site_packages + os.sep), (path, site_packages)
  assert not any(p in (ROOT, os.path.join(ROOT, "tests")) for p in installed["sys_path"])
  assert installed["movie_reviews"] and installed["brown"] == 30
  assert installed["moby_dick"] == 135, installed["moby_dick"]
  assert installed["sotu"] == 123, installed["sotu"]
  assert installed["squad"].startswith(site_packages + os.sep), installed["squad"]
  assert os.path.isfile(installed["squad"]), installed["squad"]
  assert {"classification_demo.yaml", "squad_demo.yaml"} <= set(installed["configs"])

  bin_dir = venv / "bin"
  # Every command answers --help (started at once: each imports TensorFlow or absl).
  helps = {command: subprocess.Popen([str(bin_dir / command), "--help"], cwd=work, env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
           for command in COMMANDS}
  try:
    # A tiny SentencePiece model and pretraining records from the installed sample data.
    chapters = [os.path.join(site_packages, "data_prep", "sample_data", "moby_dick",
                             f"chapter_{i}.txt") for i in (1, 2, 3)]
    _run([str(bin_dir / "xlnet-train-sentencepiece"), f"--input={','.join(chapters)}",
          "--model_prefix=spiece", "--vocab_size=300", "--num_threads=1"], cwd=work, env=env)
    records = _run([str(bin_dir / "xlnet-create-pretraining-data"),
                    f"--input_glob={','.join(chapters)}", "--spiece_model=spiece.model",
                    "--output_dir=records", "--input_format=document_per_file",
                    "--seq_len=64", "--reuse_len=32", "--bsz_per_host=4",
                    "--num_core_per_host=1", "--num_predict=11", "--perm_size=16"],
                   cwd=work, env=env)
    assert "examples" in records.stdout and (work / "records" / "manifest.json").exists()
    assert glob.glob(str(work / "records" / "pretrain-*.tfrecord"))
    # (absl's --help exits with 1, argparse's with 0.) The absl commands show their own
    # module's docstring and flags (xlnet_tf.console): "--flag:" is absl's flag listing,
    # which shows only --helpfull's "Try" line for a console command's bare __main__.
    expected_help = {
        "xlnet-train": (1, "--experiment:", "--stop_at_step:", "Model Garden driver"),
        "xlnet-create-pretraining-data": (1, "--spiece_model:", "pretraining TFRecords"),
        "xlnet-train-sentencepiece": (1, "--model_prefix:", "SentencePiece"),
        "xlnet-convert": (1, "--source:", "--saved_model:", "HuggingFace task model"),
        "xlnet-export": (1, "--export_dir:", "--model_dir:", "serves raw text"),
        "xlnet-classify": (0, "--saved_model", "usage: xlnet-classify"),
        "xlnet-generate": (1, "--max_new_tokens:", "--model_dir:", "continue a text"),
        "xlnet-embed": (1, "--saved_model:", "--pooling:", "Embeds texts of any length")}
    for command, process in helps.items():
      out, err = process.communicate(timeout=300)
      status, *texts = expected_help[command]
      assert process.returncode == status and all(t in out for t in texts), (
          command, process.returncode, out[-3000:], err[-3000:])
  finally:
    for process in helps.values():
      if process.poll() is None:
        process.kill()
        process.wait()
