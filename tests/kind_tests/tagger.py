"""The tagger kind's test record: its demo reads the bundled Brown sample."""

from kind_tests import KindTest
from xlnet_tf.models.xlnet_tagger import TaggerSpec

RECORD = KindTest(example_spec=TaggerSpec("brown", ("nn", "vb", "at"), max_seq_length=16),
                  demo_run=lambda f: ("tagging_demo.yaml", f.fine_tuning()))
