"""The RACE kind's test record: its demo reads a constructed RACE-layout sample."""

import helpers
from kind_tests import KindTest
from xlnet_tf.models.xlnet_multiple_choice import RaceSpec
from xlnet_tf.serving import race_export


def _data(fixtures):
  data_dir = fixtures.tmp_path / "race"
  if not data_dir.exists():
    helpers.write_race_sample(data_dir, splits=("train", "dev"))
  return f"task.data_dir={data_dir}," + fixtures.fine_tuning()


def _export_card(config, spiece_model):
  spec = RaceSpec(max_seq_length=32, max_qa_length=8)
  return race_export.race_card(race_export.RaceServing(
      spec.build_model(config), spiece_model, spec.max_seq_length, spec.max_qa_length))


RECORD = KindTest(
    example_spec=RaceSpec(max_seq_length=32, max_qa_length=8),
    demo_run=lambda f: ("race_demo.yaml", _data(f)), config_override=_data,
    export_card=_export_card,
    classify_refusal=("is a RACE (multiple choice) export: its serving_default takes "
                      "article, question and options; call it from Python "
                      "(docs/serving.md)"))
