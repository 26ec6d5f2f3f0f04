"""The SQuAD kind's test record: its demo reads the bundled SQuAD sample."""

import os

from kind_tests import ROOT
from kind_tests import KindTest
from xlnet_tf.models.xlnet_squad import SquadSpec

SAMPLE = os.path.join(ROOT, "data_prep", "sample_data", "qa", "squad.json")

RECORD = KindTest(
    example_spec=SquadSpec({"max_seq_length": 32, "max_query_length": 8, "doc_stride": 8,
                            "start_n_top": 2, "end_n_top": 2}),
    demo_run=lambda f: ("squad_demo.yaml", f.fine_tuning()),
    config_override=lambda f: (f.fine_tuning() +
                               f",task.train_file={SAMPLE},task.predict_file={SAMPLE}"))
