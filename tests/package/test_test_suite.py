"""The test suite's tiers: every test that starts another process is marked slow.

`make test-fast` (pytest -m "not slow") must stay within minutes: a command line, a fresh
serving process or a probe of an entry point imports TensorFlow again (seconds before any
work), so a test that starts one belongs to the slow tier. Read from the source (the AST
of every module under tests/), without importing or collecting anything:

* a process is started by a call of `subprocess.run/Popen/call/check_call/check_output`,
  `os.system/popen/spawn*/exec*`, or of a function of tests/ that (transitively) makes
  one: `helpers.run_fresh`, `helpers.serve_fresh`, `helpers.run_killed_at_step`,
  `probe.probe`, and any function of a test module calling those;
* a test starts one if its body does, or a fixture it uses (by argument, `usefixtures` or
  autouse; the test module's fixtures and the conftest.py files' above it) does, or a
  fixture that fixture uses;
* it is marked slow by `@pytest.mark.slow`, by its module's `pytestmark`, or when every
  case of one of its parametrizations carries `marks=pytest.mark.slow`.

ALLOWED lists the few processes that are no command line of this project and start fast
(a lock holder, a page-fault probe, mount(8)): the fast tests using them stay fast.
"""

import ast
import functools
import os
from typing import Dict, List, Optional, Set, Tuple

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SUBPROCESS_CALLS = {"run", "Popen", "call", "check_call", "check_output"}
OS_CALLS = {"system", "popen", "spawnl", "spawnle", "spawnlp", "spawnlpe", "spawnv",
            "spawnve", "spawnvp", "spawnvpe", "execl", "execle", "execlp", "execlpe", "execv",
            "execve", "execvp", "execvpe", "posix_spawn", "posix_spawnp"}

# "path under tests/::function" (a test, a fixture or a helper) -> why its process may run
# in the fast tier.
ALLOWED = {
    "package/test_careless_disk.py::disk":
        "mount(8) and umount(8) of a 1 MiB tmpfs: no command of this project",
    "package/test_presets.py::test_a_second_process_waits_for_the_entry_lock":
        "a lock holder: a Python process holding the preset's entry lock for 3 s",
    "tasks/test_driver.py::test_the_model_directory_is_locked":
        "a lock holder: a Python process holding a DirectoryLock until it is killed",
    "training/test_reliability_training.py::"
    "test_directory_lock_is_exclusive_reentrant_and_released":
        "a second process trying to take a DirectoryLock (xlnet_tf.paths only)",
    "training/test_host_memory.py::_faults":
        "a process counting its own page faults (numpy and host_memory)",
}


def _modules() -> Dict[str, str]:
  """Import name -> path of every Python module under tests/ (tests/ and its packages are
  on sys.path as pytest runs them: "helpers", "kind_tests.classifier", "test_convert")."""
  modules = {}
  for base, dirs, files in os.walk(TESTS):
    dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__")) and d != "fixtures")
    for name in sorted(files):
      if name.endswith(".py"):
        path = os.path.join(base, name)
        parts = os.path.relpath(path, TESTS)[:-len(".py")].split(os.sep)
        if os.path.exists(os.path.join(base, "__init__.py")):
          modules[".".join(p for p in parts if p != "__init__")] = path
        else:
          modules[parts[-1]] = path
  return modules


def _relative(path: str) -> str:
  return os.path.relpath(path, TESTS).replace(os.sep, "/")


def _dotted(node: ast.AST) -> Optional[str]:
  """"a.b.c" of a Name/Attribute chain, else None."""
  parts = []
  while isinstance(node, ast.Attribute):
    parts.append(node.attr)
    node = node.value
  if isinstance(node, ast.Name):
    return ".".join([node.id] + parts[::-1])
  return None


def _is_slow_mark(node: ast.AST, aliases=frozenset()) -> bool:
  """`pytest.mark.slow` (or `mark.slow`, `pytest.mark.slow(...)`), or a module-level name
  bound to it (`aliases`)."""
  if isinstance(node, ast.Call):
    node = node.func
  name = _dotted(node) or ""
  return name.endswith("mark.slow") or name in aliases


def _marks_slow(node: ast.AST, aliases=frozenset()) -> bool:
  """A `marks=` value or a `pytestmark` value that holds the slow mark."""
  if isinstance(node, (ast.List, ast.Tuple)):
    return any(_is_slow_mark(e, aliases) for e in node.elts)
  return _is_slow_mark(node, aliases)


class _Module:
  """What one module defines: its functions, fixtures, names bound to other modules'
  functions, and whether the module is marked slow."""

  def __init__(self, name: str, path: str):
    self.name, self.path = name, path
    with open(path, encoding="utf-8") as f:
      self.tree = ast.parse(f.read(), path)
    self.functions: Dict[str, ast.FunctionDef] = {}
    self.fixtures: Dict[str, ast.FunctionDef] = {}      # fixture name -> its function
    self.autouse: Set[str] = set()
    self.imported_modules: Dict[str, str] = {}          # local name -> module
    self.imported_names: Dict[str, Tuple[str, str]] = {}   # local name -> (module, name)
    self.slow_module = False
    self.slow_aliases: Set[str] = set()                 # SLOW = pytest.mark.slow
    for node in self.tree.body:
      if isinstance(node, ast.Import):
        for alias in node.names:
          self.imported_modules[alias.asname or alias.name.split(".")[0]] = (
              alias.name if alias.asname else alias.name.split(".")[0])
      elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
        for alias in node.names:
          self.imported_names[alias.asname or alias.name] = (node.module, alias.name)
      elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        self.functions[node.name] = node
        fixture = self._fixture(node)
        if fixture is not None:
          name, autouse = fixture
          self.fixtures[name] = node
          if autouse:
            self.autouse.add(name)
      elif isinstance(node, ast.Assign):
        names = [t.id for t in node.targets if isinstance(t, ast.Name)]
        if "pytestmark" in names:
          self.slow_module = _marks_slow(node.value)
        elif _is_slow_mark(node.value) and not isinstance(node.value, ast.Call):
          self.slow_aliases.update(names)

  @staticmethod
  def _fixture(node) -> Optional[Tuple[str, bool]]:
    """(fixture name, autouse) of a function decorated with pytest.fixture, else None."""
    for decorator in node.decorator_list:
      call = decorator if isinstance(decorator, ast.Call) else None
      if (_dotted(call.func if call else decorator) or "").split(".")[-1] != "fixture":
        continue
      keywords = {k.arg: k.value for k in call.keywords} if call else {}
      name = keywords.get("name")
      autouse = keywords.get("autouse")
      return (name.value if isinstance(name, ast.Constant) else node.name,
              isinstance(autouse, ast.Constant) and autouse.value is True)
    return None


class _Suite:
  """Which functions of tests/ start a process, and why."""

  def __init__(self):
    self.modules = {name: _Module(name, path) for name, path in _modules().items()}
    # (module, function) -> how it starts a process (a call, or the function it calls).
    self.starts: Dict[Tuple[str, str], str] = {}
    self._fixed_point()

  def allowed(self, module: _Module, function: str) -> bool:
    return f"{_relative(module.path)}::{function}" in ALLOWED

  def call_starts(self, module: _Module, call: ast.Call) -> Optional[str]:
    """How `call`, in `module`, starts a process (None: it does not)."""
    name = _dotted(call.func)
    if name is None:
      return None
    head, _, rest = name.partition(".")
    if head in module.imported_modules and rest:
      target = module.imported_modules[head]
      if target == "subprocess" and rest in SUBPROCESS_CALLS:
        return f"subprocess.{rest}"
      if target == "os" and rest in OS_CALLS:
        return f"os.{rest}"
      if target in self.modules and (target, rest) in self.starts:
        return f"{target}.{rest}"
      return None
    if rest:
      return None
    if head in module.imported_names:
      source, original = module.imported_names[head]
      if source == "subprocess" and original in SUBPROCESS_CALLS:
        return f"subprocess.{original}"
      if source == "os" and original in OS_CALLS:
        return f"os.{original}"
      if (source, original) in self.starts:
        return f"{source}.{original}"
      return None
    if (module.name, head) in self.starts:
      return f"{head}() -> {self.starts[(module.name, head)]}"
    return None

  def body_starts(self, module: _Module, function: ast.FunctionDef) -> Optional[str]:
    """The first call in `function` (its nested functions and lambdas included) that
    starts a process, as "line N: how"; None if none does or the function is ALLOWED."""
    if self.allowed(module, function.name):
      return None
    for node in ast.walk(function):
      if isinstance(node, ast.Call):
        how = self.call_starts(module, node)
        if how is not None:
          return f"line {node.lineno}: {how}"
    return None

  def _fixed_point(self):
    changed = True
    while changed:
      changed = False
      for module in self.modules.values():
        for name, function in module.functions.items():
          if (module.name, name) not in self.starts:
            how = self.body_starts(module, function)
            if how is not None:
              self.starts[(module.name, name)] = how
              changed = True

  def conftests(self, module: _Module) -> List[_Module]:
    """The conftest.py modules whose fixtures `module`'s tests see (nearest last)."""
    found = []
    directory = os.path.dirname(module.path)
    while True:
      path = os.path.join(directory, "conftest.py")
      found += [m for m in self.modules.values() if m.path == path]
      if directory == TESTS:
        return found[::-1]
      directory = os.path.dirname(directory)

  def fixture_starts(self, module: _Module, name: str, seen: Set[str]) -> Optional[str]:
    """How the fixture `name`, as `module`'s tests see it, starts a process."""
    if name in seen:
      return None
    seen.add(name)
    for owner in [module] + self.conftests(module)[::-1]:
      if name in owner.fixtures:
        function = owner.fixtures[name]
        how = self.body_starts(owner, function)
        if how is not None:
          return f"fixture {name} ({_relative(owner.path)}, {how})"
        for argument in _arguments(function):
          how = self.fixture_starts(owner, argument, seen)
          if how is not None:
            return f"fixture {name} <- {how}"
        return None
    return None

  def offenders(self) -> List[str]:
    """"path::test: how it starts a process" for each test that starts one and is not
    marked slow."""
    found = []
    for module in self.modules.values():
      if not os.path.basename(module.path).startswith("test_"):
        continue
      visible_autouse = set(module.autouse).union(
          *[m.autouse for m in self.conftests(module)])
      for name, function in module.functions.items():
        if not name.startswith("test") or name in module.fixtures:
          continue
        if (module.slow_module or _slow(function, module.slow_aliases)
            or self.allowed(module, name)):
          continue
        how = self.body_starts(module, function)
        if how is None:
          parametrized = _parametrized_names(function)
          for argument in [*_arguments(function), *_used_fixtures(function),
                           *sorted(visible_autouse)]:
            if argument not in parametrized:
              how = how or self.fixture_starts(module, argument, set())
        if how is not None:
          found.append(f"{_relative(module.path)}::{name}: {how}")
    return sorted(found)


@functools.lru_cache(maxsize=None)
def _suite() -> _Suite:
  return _Suite()


def _arguments(function: ast.FunctionDef) -> List[str]:
  return [a.arg for a in function.args.args + function.args.kwonlyargs]


def _decorator_calls(function: ast.FunctionDef, mark: str) -> List[ast.Call]:
  return [d for d in function.decorator_list if isinstance(d, ast.Call)
          and (_dotted(d.func) or "").endswith(f"mark.{mark}")]


def _used_fixtures(function: ast.FunctionDef) -> List[str]:
  return [a.value for call in _decorator_calls(function, "usefixtures") for a in call.args
          if isinstance(a, ast.Constant) and isinstance(a.value, str)]


def _parametrized_names(function: ast.FunctionDef) -> Set[str]:
  names = set()
  for call in _decorator_calls(function, "parametrize"):
    if call.args and isinstance(call.args[0], ast.Constant):
      names.update(n.strip() for n in call.args[0].value.split(","))
    elif call.args and isinstance(call.args[0], (ast.List, ast.Tuple)):
      names.update(e.value for e in call.args[0].elts if isinstance(e, ast.Constant))
  return names


def _slow(function: ast.FunctionDef, aliases: Set[str]) -> bool:
  """Marked slow itself, or every case of one of its parametrizations is."""
  if any(_is_slow_mark(d, aliases) for d in function.decorator_list):
    return True
  for call in _decorator_calls(function, "parametrize"):
    cases = call.args[1] if len(call.args) > 1 else None
    if isinstance(cases, (ast.List, ast.Tuple)) and cases.elts and all(
        isinstance(case, ast.Call) and (_dotted(case.func) or "").endswith("param")
        and any(k.arg == "marks" and _marks_slow(k.value, aliases) for k in case.keywords)
        for case in cases.elts):
      return True
  return False


def test_every_test_that_starts_a_process_is_marked_slow():
  """No test outside the slow tier starts a process (see the module docstring); the
  analysis finds the helpers that start one, so an empty list means something."""
  suite = _suite()
  for helper in (("helpers", "run_fresh"), ("helpers", "serve_fresh"),
                 ("helpers", "run_killed_at_step"), ("probe", "probe")):
    assert helper in suite.starts, f"the analysis misses {helper}: {sorted(suite.starts)}"
  offenders = suite.offenders()
  assert not offenders, (
      "these tests start a process but are not marked @pytest.mark.slow (mark them, or "
      "make the check in-process; ALLOWED is for processes that are no command line):\n  "
      + "\n  ".join(offenders))


def test_every_allowed_process_is_still_there():
  """Each entry of ALLOWED names a function of tests/ that starts a process (an entry whose
  function was removed or no longer starts one goes too)."""
  suite = _suite()
  stale = []
  for entry in ALLOWED:
    path, function = entry.split("::")
    module = next((m for m in suite.modules.values() if _relative(m.path) == path), None)
    node = module.functions.get(function) if module else None
    if node is None or not any(isinstance(n, ast.Call) and suite.call_starts(module, n)
                               for n in ast.walk(node)):
      stale.append(entry)
  assert not stale, stale


def test_the_longest_files_exist():
  import conftest  # pylint: disable=g-import-not-at-top
  missing = [path for path in conftest.LONGEST_FILES
             if not os.path.isfile(os.path.join(TESTS, path))]
  assert not missing, f"conftest.LONGEST_FILES names files that are gone: {missing}"
