"""The classifier kind's test record: its demo reads the bundled movie reviews."""

from kind_tests import KindTest
from xlnet_tf.models.xlnet_classifier import ClassifierSpec

RECORD = KindTest(
    example_spec=ClassifierSpec("sst-2", ("negative", "positive"), max_seq_length=16),
    demo_run=lambda f: ("classification_demo.yaml", f.fine_tuning()),
    config_override=lambda f: f.fine_tuning() + ",task.task_name=movie_reviews")
