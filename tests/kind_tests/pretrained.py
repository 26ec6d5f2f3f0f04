"""The pretrained kind's test record: no spec file; its demo run is pretraining's."""

import dataclasses

from kind_tests import KindTest
from xlnet_tf.networks.xlnet_encoder import XLNetEncoder
from xlnet_tf.serving import encoder_export


def _demo_run(fixtures):
  return "pretraining_demo.yaml", (f"task.train_data.input_path={fixtures.records},"
                                   f"task.validation_data.input_path={fixtures.records}")


def _export_card(config, spiece_model):
  encoder = XLNetEncoder(dataclasses.replace(config, mem_len=16, reuse_len=0))
  return encoder_export.encoder_card(encoder_export.EncoderServing(encoder, spiece_model, 16))


RECORD = KindTest(
    demo_run=_demo_run,
    config_override=lambda f: f"task.train_data.input_path={f.records}",
    export_card=_export_card,
    classify_refusal=("is an encoder export: its serving_default takes text and returns "
                      "hidden states; call it from Python (docs/serving.md)"))
