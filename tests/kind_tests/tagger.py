"""The tagger kind's test record: its demo reads the bundled Brown sample."""

from kind_tests import KindTest
from xlnet_tf.models.xlnet_tagger import TaggerSpec
from xlnet_tf.models.xlnet_tagger import build_tagger
from xlnet_tf.serving import tagger_export


def _export_card(config, spiece_model):
  spec = TaggerSpec("tags", ("a", "b"), max_seq_length=16)
  return tagger_export.tagger_card(tagger_export.TaggerServing(
      build_tagger(config, 2), spec, spiece_model, bucketed=False))


RECORD = KindTest(
    example_spec=TaggerSpec("brown", ("nn", "vb", "at"), max_seq_length=16),
    demo_run=lambda f: ("tagging_demo.yaml", f.fine_tuning()),
    export_card=_export_card,
    classify_refusal=("is a tagger export: its serving_default takes text (whitespace-"
                      "separated words) and returns tags; call it from Python "
                      "(docs/serving.md, Token classification)"))
