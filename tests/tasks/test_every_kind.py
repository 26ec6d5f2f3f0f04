"""What every trained task kind (from the registry: `trained_kind`) must do itself for the
driver's exact resume (tests/tasks/test_driver.py tests the rest once): its training data
from step k is exactly the uninterrupted stream's (`kind_checks.check_stream_from_step`;
the classifier reading whole documents too). A kind added without a demo run in its test
record (tests/kind_tests/<kind>.py) fails here, by name; so does one without its one-step
test (train, evaluate, export: tests/tasks/test_tasks_<name>.py)."""

import ast
import os

import kind_checks
import kind_tests
from xlnet_tf import task_kind

TASKS = os.path.dirname(os.path.abspath(__file__))


def test_the_stream_from_step_k_is_the_uninterrupted_stream(trained_kind, kind_fixtures):
  kind_checks.check_stream_from_step(task_kind.get(trained_kind), kind_fixtures)


def test_the_document_stream_from_step_k_is_the_uninterrupted_stream(kind_fixtures):
  """The classifier reading whole documents (classification_long_demo.yaml: bucketed
  batches of documents)."""
  kind_checks.check_stream_from_step(
      task_kind.get("classifier"), kind_fixtures,
      os.path.join(kind_tests.CONFIGS, "classification_long_demo.yaml"),
      kind_fixtures.fine_tuning())


def test_every_trained_kind_has_its_one_step_test(trained_kind):
  """tests/tasks/test_tasks_<name>.py (the experiment's name) defines
  test_one_step_evaluates_and_exports."""
  name = task_kind.get(trained_kind).experiment.split("/")[-1]
  path = os.path.join(TASKS, f"test_tasks_{name}.py")
  assert os.path.exists(path), f"{trained_kind}: add {os.path.relpath(path, kind_tests.ROOT)}"
  with open(path, encoding="utf-8") as f:
    tree = ast.parse(f.read())
  names = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
  assert "test_one_step_evaluates_and_exports" in names, path
