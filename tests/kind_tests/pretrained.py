"""The pretrained kind's test record: no spec file; its demo run is pretraining's."""

from kind_tests import KindTest


def _demo_run(fixtures):
  return "pretraining_demo.yaml", (f"task.train_data.input_path={fixtures.records},"
                                   f"task.validation_data.input_path={fixtures.records}")


RECORD = KindTest(demo_run=_demo_run,
                  config_override=lambda f: f"task.train_data.input_path={f.records}")
