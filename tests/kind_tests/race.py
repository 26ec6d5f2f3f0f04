"""The RACE kind's test record: its demo reads a constructed RACE-layout sample."""

import helpers
from kind_tests import KindTest
from xlnet_tf.models.xlnet_multiple_choice import RaceSpec


def _data(fixtures):
  data_dir = fixtures.tmp_path / "race"
  if not data_dir.exists():
    helpers.write_race_sample(data_dir, splits=("train", "dev"))
  return f"task.data_dir={data_dir}," + fixtures.fine_tuning()


RECORD = KindTest(example_spec=RaceSpec(max_seq_length=32, max_qa_length=8),
                  demo_run=lambda f: ("race_demo.yaml", _data(f)), config_override=_data)
