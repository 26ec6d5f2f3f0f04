"""TFRecord files of `tf.train.Example`s of int64 features, written without TensorFlow.

The bytes are exactly those of `tf.train.Example(...).SerializeToString(deterministic=True)`
written by `tf.io.TFRecordWriter` (tests/test_pretraining_data.py checks both on real
rows), so `tf.data.TFRecordDataset` and `tf.io.parse_example` read them as usual:

  - the messages are built by the protobuf runtime TensorFlow itself uses, from the schema
    of TensorFlow's `tensorflow/core/example/{example,feature}.proto` (the int64 part),
    registered in a private descriptor pool so it never clashes with TensorFlow's own;
  - each record is framed as TFRecord: uint64 length, masked CRC-32C of the length, the
    data, masked CRC-32C of the data (CRC-32C by `google-crc32c`).

  >>> with TFRecordWriter("/tmp/x.tfrecord") as writer:
  ...   writer.write(int64_example({"input_ids": [5, 6, 7], "label": 1}))
"""

import struct
from typing import Any, Mapping

import google_crc32c
from google.protobuf import descriptor_pb2
from google.protobuf import descriptor_pool
from google.protobuf import message_factory
import numpy as np

from xlnet_tf.data import storage

_FIELD = descriptor_pb2.FieldDescriptorProto


def _example_class():
  """`tensorflow.Example` (int64 features only) as a message class of a private pool."""
  schema = descriptor_pb2.FileDescriptorProto(
      name="xlnet_tf/int64_example.proto", package="tensorflow", syntax="proto3")

  def message(name, *fields, nested=()):
    proto = schema.message_type.add(name=name)
    for field_name, number, label, kind, type_name in fields:
      proto.field.add(name=field_name, number=number, label=label, type=kind,
                      type_name=type_name)
    for entry in nested:
      proto.nested_type.add().CopyFrom(entry)
    return proto

  # message Int64List { repeated int64 value = 1 [packed = true]; }
  message("Int64List", ("value", 1, _FIELD.LABEL_REPEATED, _FIELD.TYPE_INT64, None))
  # message Feature { oneof kind { ... Int64List int64_list = 3; } }
  message("Feature", ("int64_list", 3, _FIELD.LABEL_OPTIONAL, _FIELD.TYPE_MESSAGE,
                      ".tensorflow.Int64List"))
  # message Features { map<string, Feature> feature = 1; }
  entry = descriptor_pb2.DescriptorProto(name="FeatureEntry")
  entry.options.map_entry = True
  entry.field.add(name="key", number=1, label=_FIELD.LABEL_OPTIONAL, type=_FIELD.TYPE_STRING)
  entry.field.add(name="value", number=2, label=_FIELD.LABEL_OPTIONAL,
                  type=_FIELD.TYPE_MESSAGE, type_name=".tensorflow.Feature")
  message("Features", ("feature", 1, _FIELD.LABEL_REPEATED, _FIELD.TYPE_MESSAGE,
                       ".tensorflow.Features.FeatureEntry"), nested=[entry])
  # message Example { Features features = 1; }
  message("Example", ("features", 1, _FIELD.LABEL_OPTIONAL, _FIELD.TYPE_MESSAGE,
                      ".tensorflow.Features"))
  pool = descriptor_pool.DescriptorPool()
  pool.Add(schema)
  return message_factory.GetMessageClass(pool.FindMessageTypeByName("tensorflow.Example"))


_Example = _example_class()


def int64_example(features: Mapping[str, Any]) -> bytes:
  """{name: int or int array} as a serialized `tf.train.Example` of int64 lists (the map
  in key order, as `SerializeToString(deterministic=True)` writes it)."""
  example = _Example()
  example.features.SetInParent()             # present even when empty, as TensorFlow's is
  feature_map = example.features.feature
  for name, value in features.items():
    feature_map[name].int64_list.value.extend(np.ravel(value).tolist())
  return example.SerializeToString(deterministic=True)


def _masked_crc(data: bytes) -> bytes:
  crc = google_crc32c.value(data)
  masked = (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF
  return struct.pack("<I", masked)


class TFRecordWriter:
  """Writes TFRecord records to a local file or a URL (through `storage`)."""

  def __init__(self, path: str):
    self._file = storage.open_file(path, "wb")

  def write(self, record: bytes) -> None:
    length = struct.pack("<Q", len(record))
    self._file.write(length + _masked_crc(length) + record + _masked_crc(record))

  def close(self) -> None:
    self._file.close()

  def __enter__(self):
    return self

  def __exit__(self, *exc_info):
    self.close()
