"""docs/architecture.md's file listing (the ```layout block) describes the tree: every path
it names exists, and every module of xlnet_tf lies under a listed path."""

import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ARCHITECTURE = os.path.join(ROOT, "docs", "architecture.md")


def listed_paths(text):
  block = re.search(r"```layout\n(.*?)```", text, re.S)
  assert block, f"{ARCHITECTURE}: no ```layout block"
  return [line.split()[0] for line in block.group(1).splitlines()
          if line.strip() and not line[0].isspace()]      # indented: a description goes on


def unlisted_modules(listed, root):
  """The .py files under root/xlnet_tf that no listed path (a file, or a directory
  ending in "/") covers."""
  unlisted = []
  for base, dirs, files in os.walk(os.path.join(root, "xlnet_tf")):
    dirs[:] = [d for d in dirs if not d.startswith((".", "__"))]
    for name in files:
      if name.endswith(".py"):
        path = os.path.relpath(os.path.join(base, name), root).replace(os.sep, "/")
        if not any(path == p or (p.endswith("/") and path.startswith(p)) for p in listed):
          unlisted.append(path)
  return sorted(unlisted)


def test_every_listed_path_exists():
  listed = listed_paths(open(ARCHITECTURE, encoding="utf-8").read())
  missing = [p for p in listed if not os.path.exists(os.path.join(ROOT, p))]
  assert not missing, f"docs/architecture.md lists paths that do not exist: {missing}"


def test_every_module_of_the_package_is_listed():
  listed = listed_paths(open(ARCHITECTURE, encoding="utf-8").read())
  assert unlisted_modules(listed, ROOT) == []


def test_an_unlisted_module_is_found(tmp_path):
  (tmp_path / "xlnet_tf" / "tasks").mkdir(parents=True)
  for name in ("xlnet_tf/hub.py", "xlnet_tf/tasks/base.py", "xlnet_tf/extra.py"):
    (tmp_path / name).write_text("")
  listed = listed_paths("```layout\nxlnet_tf/hub.py   x\nxlnet_tf/tasks/   y\n```\n")
  assert unlisted_modules(listed, str(tmp_path)) == ["xlnet_tf/extra.py"]
