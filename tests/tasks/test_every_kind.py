"""What every trained task kind (from the registry: `trained_kind`) must do itself for the
driver's exact resume (tests/tasks/test_driver.py tests the rest once): its training data
from step k is exactly the uninterrupted stream's (`kind_checks.check_stream_from_step`;
the classifier reading whole documents too). A kind added without a demo run in its test
record (tests/kind_tests/<kind>.py) fails here, by name."""

import os

import kind_checks
import kind_tests
from xlnet_tf import task_kind


def test_the_stream_from_step_k_is_the_uninterrupted_stream(trained_kind, kind_fixtures):
  kind_checks.check_stream_from_step(task_kind.get(trained_kind), kind_fixtures)


def test_the_document_stream_from_step_k_is_the_uninterrupted_stream(kind_fixtures):
  """The classifier reading whole documents (classification_long_demo.yaml: bucketed
  batches of documents)."""
  kind_checks.check_stream_from_step(
      task_kind.get("classifier"), kind_fixtures,
      os.path.join(kind_tests.CONFIGS, "classification_long_demo.yaml"),
      kind_fixtures.fine_tuning())

