"""The stack's direction, read statically: every `import` of every module of xlnet_tf,
data_prep and experiments (inside functions too, and the package `__init__` each import
runs first) goes down or sideways the stack that docs/architecture.md documents, and no
import circle exists."""

import ast
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGES = ("xlnet_tf", "data_prep", "experiments")
ARCHITECTURE = os.path.join(ROOT, "docs", "architecture.md")


def _modules():
  """Module name -> path of every .py file of PACKAGES."""
  found = {}
  for package in PACKAGES:
    for base, dirs, files in os.walk(os.path.join(ROOT, package)):
      dirs[:] = [d for d in dirs if not d.startswith((".", "__"))]
      for name in files:
        if name.endswith(".py"):
          path = os.path.join(base, name)
          module = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
          found[module[:-len(".__init__")] if module.endswith(".__init__") else module] = path
  return found


def _imports(module, path, modules):
  """The modules of `modules` that `module` imports (at any depth of its code), each with
  the line; `from package import name` counts as importing package.name when that is a
  module, else the package."""
  tree = ast.parse(open(path, encoding="utf-8").read(), path)
  is_package = path.endswith("__init__.py")
  found = []
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      targets = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom):
      if node.level:
        base = module if is_package else module.rpartition(".")[0]
        for _ in range(node.level - 1):
          base = base.rpartition(".")[0]
        source = f"{base}.{node.module}" if node.module else base
      else:
        source = node.module
      targets = [f"{source}.{alias.name}" if f"{source}.{alias.name}" in modules else source
                 for alias in node.names]
    else:
      continue
    for target in targets:
      while target and target not in modules:
        target = target.rpartition(".")[0]
      if target and target != module:
        found.append((target, node.lineno))
  return found


def _graph():
  """Module -> {imported module: line}, with the implicit import of each module's parent
  packages (Python runs a package's __init__ before any of its modules)."""
  modules = _modules()
  graph = {}
  for module, path in modules.items():
    edges = dict(_imports(module, path, modules))
    parent = module.rpartition(".")[0]
    while parent:
      if parent in modules:
        edges.setdefault(parent, 0)
      parent = parent.rpartition(".")[0]
    graph[module] = edges
  return graph


def documented_stack():
  """[(level, [module prefixes])] of docs/architecture.md's ```stack block, bottom first."""
  text = open(ARCHITECTURE, encoding="utf-8").read()
  block = re.search(r"```stack\n(.*?)```", text, re.S)
  assert block, f"{ARCHITECTURE}: no ```stack block"
  levels = []
  for line in block.group(1).splitlines():
    if line.strip() and not line.lstrip().startswith("#"):
      level, _, prefixes = line.partition("|")
      levels.append((int(level.split()[0]), prefixes.split()))
  return levels


def level_of(module, stack):
  """The level of the longest documented prefix of `module` ("=name": that module only)."""
  best = None
  for level, prefixes in stack:
    for prefix in prefixes:
      if prefix.startswith("="):
        if module == prefix[1:]:
          return level
      elif module == prefix or module.startswith(prefix + "."):
        if best is None or len(prefix) > len(best[1]):
          best = (level, prefix)
  return best[0] if best else None


def test_every_module_has_a_documented_level():
  stack = documented_stack()
  missing = sorted(m for m in _modules() if level_of(m, stack) is None)
  assert not missing, f"modules in no level of docs/architecture.md's stack: {missing}"


def test_no_import_goes_up_the_stack():
  stack = documented_stack()
  graph = _graph()
  upward = []
  for module, edges in graph.items():
    for target, line in edges.items():
      if level_of(target, stack) > level_of(module, stack):
        upward.append(f"{module}:{line} imports {target} "
                      f"(level {level_of(module, stack)} -> {level_of(target, stack)})")
  assert not upward, "\n".join(sorted(upward))


def _circles(graph):
  """The strongly connected components of more than one module (Tarjan)."""
  index, low, on_stack, stack, found = {}, {}, set(), [], []

  def visit(node):
    index[node] = low[node] = len(index)
    stack.append(node)
    on_stack.add(node)
    for target in graph.get(node, {}):
      if target not in index:
        visit(target)
        low[node] = min(low[node], low[target])
      elif target in on_stack:
        low[node] = min(low[node], index[target])
    if low[node] == index[node]:
      component = []
      while True:
        member = stack.pop()
        on_stack.discard(member)
        component.append(member)
        if member == node:
          break
      if len(component) > 1:
        found.append(sorted(component))

  for node in sorted(graph):
    if node not in index:
      visit(node)
  return found


def test_no_import_circle():
  assert _circles(_graph()) == []


def test_the_circle_finder_finds_a_circle():
  graph = {"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}, "d": {"a": 1}}
  assert _circles(graph) == [["a", "b", "c"]]


@pytest.mark.parametrize("source,expected", [
    ("from xlnet_tf.models import xlnet_classifier\n", "xlnet_tf.models.xlnet_classifier"),
    ("def f():\n  import xlnet_tf.hub\n", "xlnet_tf.hub"),
    ("from xlnet_tf.models.xlnet_classifier import ClassifierSpec\n",
     "xlnet_tf.models.xlnet_classifier"),
])
def test_the_reader_sees_every_kind_of_import(tmp_path, source, expected):
  path = tmp_path / "probe.py"
  path.write_text(source)
  found = [target for target, _ in _imports("xlnet_tf.probe", str(path), _modules())]
  assert found == [expected]
