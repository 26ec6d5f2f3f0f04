"""TFRecord files of `tf.train.Example`s of int64 features, written without TensorFlow.

The bytes are exactly those of `tf.train.Example(...).SerializeToString(deterministic=True)`
written by `tf.io.TFRecordWriter` (tests/data_prep/test_pretraining_data.py checks both on real
rows), so `tf.data.TFRecordDataset` and `tf.io.parse_example` read them as usual:

  - the messages are built by the protobuf runtime TensorFlow itself uses, from the schema
    of TensorFlow's `tensorflow/core/example/{example,feature}.proto` (the int64 part),
    registered in a private descriptor pool so it never clashes with TensorFlow's own;
  - each record is framed as TFRecord: uint64 length, masked CRC-32C of the length, the
    data, masked CRC-32C of the data (CRC-32C by `google-crc32c`).

  >>> with TFRecordWriter("/tmp/x.tfrecord") as writer:
  ...   writer.write(int64_example({"input_ids": [5, 6, 7], "label": 1}))

`scan_tfrecord` reads the framing back (the size and CRC-32C of the whole file and the
byte offset of the first bad or truncated record), for `data_prep.verify_records` and the
trainer's message when tf.data reports lost data.
"""

import struct
from typing import Any, Mapping, NamedTuple, Optional, Tuple

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


def masked_crc(data: bytes) -> bytes:
  """The TFRecord checksum of `data`: its CRC-32C, rotated and offset ("masked"), as 4
  little-endian bytes."""
  crc = google_crc32c.value(data)
  masked = (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF
  return struct.pack("<I", masked)


class TFRecordWriter:
  """Writes TFRecord records to a local file or a URL (through `storage`).

  `size` and `crc32c` are the length and the CRC-32C of the bytes written so far (of the
  whole file once it is closed), for the shard's checksum in its stats and the manifest.
  """

  def __init__(self, path: str):
    self._file = storage.open_file(path, "wb")
    self.size = 0
    self.crc32c = 0

  def write(self, record: bytes) -> None:
    length = struct.pack("<Q", len(record))
    framed = length + masked_crc(length) + record + masked_crc(record)
    self._file.write(framed)
    self.size += len(framed)
    self.crc32c = google_crc32c.extend(self.crc32c, framed)

  def close(self) -> None:
    self._file.close()

  def __enter__(self):
    return self

  def __exit__(self, *exc_info):
    self.close()


# ---- reading the framing back ------------------------------------------------------------

_HEADER_BYTES = 12                  # uint64 length + masked CRC-32C of the length
_FOOTER_BYTES = 4                   # masked CRC-32C of the data
_BLOCK_BYTES = 4 << 20


class TFRecordScan(NamedTuple):
  """What `scan_tfrecord` found: the file's size and CRC-32C (hex, of every byte), the
  number of well-framed records before the first bad one, and the byte offset of the first
  bad or truncated record with what is wrong with it (None, None if every record is
  sound)."""
  size: int
  crc32c: str
  records: int
  bad_offset: Optional[int]
  problem: Optional[str]


class _CountingReader:
  """Reads a file in large blocks, keeping the size and the CRC-32C of every byte read."""

  def __init__(self, file):
    self._file = file
    self._buffer = b""
    self._position = 0
    self.size = 0
    self.crc = 0

  def _next_block(self) -> bool:
    block = self._file.read(_BLOCK_BYTES)
    if not block:
      return False
    self.size += len(block)
    self.crc = google_crc32c.extend(self.crc, block)
    self._buffer = self._buffer[self._position:] + block
    self._position = 0
    return True

  def read(self, n: int) -> bytes:
    """Up to `n` bytes (fewer only at the end of the file)."""
    while len(self._buffer) - self._position < n and self._next_block():
      pass
    data = self._buffer[self._position:self._position + n]
    self._position += len(data)
    return data

  def drain(self) -> None:
    """Reads the rest of the file (for its size and checksum)."""
    self._buffer, self._position = b"", 0
    while self._next_block():
      self._buffer, self._position = b"", 0


def scan_tfrecord(path: str) -> TFRecordScan:
  """Walks the TFRecord framing of the file at `path` (local or a URL) in one pass: each
  record's 8-byte length, the masked CRC-32C of the length, the data and the masked CRC-32C
  of the data. Also computes the CRC-32C of the whole file. Raises OSError if the file
  cannot be read."""
  records, offset, bad = 0, 0, None
  with storage.open_file(path, "rb") as f:
    reader = _CountingReader(f)
    while bad is None:
      header = reader.read(_HEADER_BYTES)
      if not header:
        break
      if len(header) < _HEADER_BYTES:
        bad = f"truncated record header ({len(header)} of {_HEADER_BYTES} bytes)"
        break
      if masked_crc(header[:8]) != header[8:]:
        bad = "corrupt record header (the checksum of its length does not match)"
        break
      length = struct.unpack("<Q", header[:8])[0]
      data = reader.read(length)
      if len(data) < length:
        bad = f"truncated record ({len(data)} of its {length} data bytes)"
        break
      footer = reader.read(_FOOTER_BYTES)
      if len(footer) < _FOOTER_BYTES:
        bad = "truncated record (its data checksum is cut off)"
        break
      if masked_crc(data) != footer:
        bad = "corrupt record (the checksum of its data does not match)"
        break
      records += 1
      offset += _HEADER_BYTES + length + _FOOTER_BYTES
    reader.drain()
  return TFRecordScan(size=reader.size, crc32c=crc32c_hex(reader.crc), records=records,
                      bad_offset=None if bad is None else offset, problem=bad)


def crc32c_hex(crc: int) -> str:
  """A CRC-32C as the 8 hex digits recorded in stats and manifests."""
  return f"{crc:08x}"


def file_crc32c(path: str) -> Tuple[int, str]:
  """(size in bytes, CRC-32C in hex) of the whole file at `path`."""
  with storage.open_file(path, "rb") as f:
    reader = _CountingReader(f)
    reader.drain()
  return reader.size, crc32c_hex(reader.crc)
