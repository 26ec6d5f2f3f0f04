"""The simple span-QA kind's test record (HuggingFace's head: imported and served, not
trained here)."""

from kind_tests import KindTest
from kind_tests.squad import QA_REFUSAL
from xlnet_tf.models.xlnet_simple_qa import SimpleQASpec
from xlnet_tf.models.xlnet_simple_qa import build_simple_qa
from xlnet_tf.serving import squad_export


def _export_card(config, spiece_model):
  return squad_export.squad_card(squad_export.SquadServing(
      build_simple_qa(config, start_n_top=2, end_n_top=2), spiece_model,
      max_seq_length=64, max_query_length=16, bucketed=False))


RECORD = KindTest(example_spec=SimpleQASpec(max_seq_length=32, max_query_length=8,
                                            start_n_top=2, end_n_top=2),
                  export_card=_export_card, classify_refusal=QA_REFUSAL)
