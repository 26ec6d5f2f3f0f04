"""The simple span-QA kind's test record (HuggingFace's head: imported and served, not
trained here)."""

from kind_tests import KindTest
from xlnet_tf.models.xlnet_simple_qa import SimpleQASpec

RECORD = KindTest(example_spec=SimpleQASpec(max_seq_length=32, max_query_length=8,
                                            start_n_top=2, end_n_top=2))
