"""The SQuAD kind's test record: its demo reads the bundled SQuAD sample."""

import os

from kind_tests import ROOT
from kind_tests import KindTest
from xlnet_tf.models.xlnet_squad import SquadSpec
from xlnet_tf.models.xlnet_squad import build_squad_model
from xlnet_tf.serving import squad_export

SAMPLE = os.path.join(ROOT, "data_prep", "sample_data", "qa", "squad.json")

# What xlnet-classify says of a question-answering export (this kind's and qa_simple's).
QA_REFUSAL = ("is a question-answering (SQuAD) export: its serving_default takes question "
              "and context; call it from Python (docs/serving.md, Question answering)")


def _export_card(config, spiece_model):
  return squad_export.squad_card(squad_export.SquadServing(
      build_squad_model(config, start_n_top=2, end_n_top=2), spiece_model,
      max_seq_length=64, max_query_length=16, bucketed=False))


RECORD = KindTest(
    example_spec=SquadSpec({"max_seq_length": 32, "max_query_length": 8, "doc_stride": 8,
                            "start_n_top": 2, "end_n_top": 2}),
    demo_run=lambda f: ("squad_demo.yaml", f.fine_tuning()),
    config_override=lambda f: (f.fine_tuning() +
                               f",task.train_file={SAMPLE},task.predict_file={SAMPLE}"),
    export_card=_export_card, classify_refusal=QA_REFUSAL)
