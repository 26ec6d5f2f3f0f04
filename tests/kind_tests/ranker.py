"""The ranker kind's test record: its demo ranks the first 6 chapters' passages of the
bundled collection (in the TREC formats) with a tiny pretrained model."""

import helpers
from kind_tests import KindTest
from xlnet_tf.models.xlnet_ranker import RankerSpec


def _collection(fixtures):
  files = helpers.write_ranking_sample(fixtures.tmp_path / "collection", chapters=range(1, 7))
  model_dir = helpers.write_pretrained_dir(fixtures.tmp_path / "pretrained",
                                           fixtures.spiece_model)
  data = f"queries={files['queries']},qrels={files['qrels']}"
  split = lambda name: ",".join(f"task.{name}.{kv}" for kv in data.split(","))
  return (f"task.init_checkpoint={model_dir},task.documents={files['documents']},"
          f"task.max_seq_length=32,task.mem_len=32,task.folds=3,{split('train_data')},"
          f"{split('validation_data')},task.train_data.global_batch_size=8")


RECORD = KindTest(
    example_spec=RankerSpec(embedding_layer=-1, max_seq_length=16, mem_len=16,
                            max_document_pieces=64),
    demo_run=lambda f: ("ranking_demo.yaml", _collection(f)), config_override=_collection)
