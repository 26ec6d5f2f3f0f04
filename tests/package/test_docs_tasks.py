"""docs/architecture.md's statements about the task kinds are the code's: its table of the
record's fields is `TaskKind`'s fields (in order), its table of kinds is the registry, and
its "How to add a task" file list is the pieces tests/tasks/test_a_new_kind.py needs (the
files of a new task and the one line that registers it)."""

import ast
import dataclasses
import os
import re

import pytest

from xlnet_tf import task_kind

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ARCHITECTURE = os.path.join(ROOT, "docs", "architecture.md")
NEW_KIND_TEST = os.path.join(ROOT, "tests", "tasks", "test_a_new_kind.py")


def block(name, text=None):
  """The first words of the lines of the ```name block (an indented line continues the
  one above)."""
  text = text if text is not None else open(ARCHITECTURE, encoding="utf-8").read()
  found = re.search(rf"```{re.escape(name)}\n(.*?)```", text, re.S)
  assert found, f"{ARCHITECTURE}: no ```{name} block"
  return [line.split()[0] for line in found.group(1).splitlines()
          if line.strip() and not line[0].isspace()]


def test_the_fields_table_is_the_records_fields():
  assert block("kind-fields") == [f.name for f in dataclasses.fields(task_kind.TaskKind)]


def test_the_kinds_table_is_the_registry():
  assert block("kinds") == task_kind.names()


def _constants(path):
  """The literal top-level assignments of a Python file, read without running it."""
  tree = ast.parse(open(path, encoding="utf-8").read())
  return {node.targets[0].id: ast.literal_eval(node.value) for node in tree.body
          if isinstance(node, ast.Assign) and len(node.targets) == 1
          and isinstance(node.targets[0], ast.Name) and node.targets[0].id.isupper()
          and isinstance(node.value, (ast.Constant, ast.Tuple))}


def test_how_to_add_a_task_lists_what_a_new_kind_needs():
  new_kind = _constants(NEW_KIND_TEST)
  assert block("new-task") == list(new_kind["NEW_TASK_FILES"])
  assert block("new-task-registration") == [new_kind["REGISTRATION"]]


def test_a_stale_table_is_found():
  text = "```kinds\npretrained  x\nclassifier  y\n```\n"
  assert block("kinds", text) == ["pretrained", "classifier"] != task_kind.names()
  with pytest.raises(AssertionError, match="no ```kinds block"):
    block("kinds", "no table here")
