"""Reading a document of any length segment by segment through the Transformer-XL memory.

A document is a batch of consecutive segments, [B, K, S]: K segments of S pieces each,
the first ones left-padded so that every document ends in the last segment (where the
layout puts `<sep> <cls>`). Segment k attends to itself and to the memory of the segments
before it, as in pretraining: each layer's input of the previous segments, the last
`mem_len` positions kept (relative positions over klen = mem_len + S). The memory has a
fixed size from the start: it begins as `mem_len` padding positions, masked like the
padding of the segments that follow it (`mems_mask`), so a document of one segment reads
exactly as it would without memory, and a batch may hold documents of different lengths
(shorter ones start with whole segments of padding, which cost compute but change nothing).
The cost is linear in K: each segment attends to S + mem_len keys.

Gradients: the segments before the last `bptt_segments` are read in a `tf.while_loop`
with their memory under stop-gradient (Transformer-XL's truncated backpropagation through
time); the last `bptt_segments` are unrolled and the memory between them keeps its
gradient.

  >>> encoder = XLNetEncoder(config.replace(mem_len=128, reuse_len=0))
  >>> read = read_document(encoder, {"input_ids": ids, "segment_ids": seg,
  ...                                "input_mask": pad})           # each [B, K, S]
  >>> read["content"]                                             # [B, S, D], last segment
"""

from typing import Any, Dict, Mapping, Optional

import tensorflow as tf

from xlnet_tf.layers import step_dropout
from xlnet_tf.networks.xlnet_encoder import XLNetEncoder


def read_document(encoder: XLNetEncoder, inputs: Mapping[str, Any], bptt_segments: int = 1,
                  training=None, all_segments: bool = False,
                  layer: Optional[int] = None) -> Dict[str, tf.Tensor]:
  """Reads [B, K, S] segments in order through the memory.

  Args:
    encoder: an `XLNetEncoder` whose config has mem_len > 0 (the memory's size) and
      reuse_len 0 (each segment is cached whole).
    inputs: input_ids int [B, K, S], segment_ids int [B, K, S], input_mask float [B, K, S]
      (1 at padding, the released convention).
    bptt_segments: how many last segments are read with gradient (>= 1).
    training: the encoder's training flag (dropout).
    all_segments: also return every segment's content stream.
    layer: None for the content stream after the last layer (with the encoder's output
      dropout); an index of the encoder's `hidden_states` (0: the word embeddings, k: the
      output of layer k, -1: the last) to return that instead as `content` and
      `all_content`.
  Returns a dict:
    content: [B, S, D], the last segment's content stream.
    input_mask: [B, S], the last segment's padding mask.
    all_content: with `all_segments`, [B, K, S, D] (K as given, at least bptt_segments).
  Raises ValueError for an encoder without memory or with reuse_len, or bptt_segments < 1.
  """
  config = encoder.config
  if config.mem_len <= 0 or config.reuse_len:
    raise ValueError(f"reading a document needs an encoder with memory: mem_len > 0 and "
                     f"reuse_len 0, got mem_len {config.mem_len}, reuse_len "
                     f"{config.reuse_len}")
  if bptt_segments < 1:
    raise ValueError(f"bptt_segments must be >= 1, got {bptt_segments}")
  ids = tf.convert_to_tensor(inputs["input_ids"])                          # [B, K, S]
  segment_ids = tf.convert_to_tensor(inputs.get("segment_ids", tf.zeros_like(ids)))
  padding = tf.cast(inputs["input_mask"], tf.float32)
  # At least bptt_segments segments: whole segments of padding in front, which change
  # nothing (masked everywhere, also in the memory).
  missing = tf.maximum(bptt_segments - tf.shape(ids)[1], 0)
  ids = tf.pad(ids, [[0, 0], [missing, 0], [0, 0]])
  segment_ids = tf.pad(segment_ids, [[0, 0], [missing, 0], [0, 0]])
  padding = tf.pad(padding, [[0, 0], [missing, 0], [0, 0]], constant_values=1.0)
  batch, num_segments = tf.shape(ids)[0], tf.shape(ids)[1]

  def read_segment(k, mems, mems_mask, memory_gradient=False):
    with step_dropout.folded_seed(k):
      outputs = encoder({"input_ids": ids[:, k], "segment_ids": segment_ids[:, k],
                         "input_mask": padding[:, k], "mems": mems, "mems_mask": mems_mask},
                        training=training, memory_gradient=memory_gradient,
                        output_hidden_states=layer is not None)
    content = outputs["content"] if layer is None else outputs["hidden_states"][layer]
    mask = tf.concat([mems_mask, padding[:, k]], axis=1)[:, -config.mem_len:]   # [B, M]
    new_mems = outputs["new_mems"]
    # The last mem_len positions: static M even when S is not (the loop's state keeps
    # its shape).
    for memory in new_mems:
      memory.set_shape([None, config.mem_len, config.d_model])
    mask.set_shape([None, config.mem_len])
    return content, new_mems, mask

  dtype = encoder.compute_dtype
  mems = [tf.zeros([batch, config.mem_len, config.d_model], dtype)
          for _ in range(config.n_layer)]                                   # L x [B, M, D]
  mems_mask = tf.ones([batch, config.mem_len], tf.float32)                   # all padding
  contents = tf.TensorArray(dtype, size=num_segments, element_shape=None,
                            infer_shape=False) if all_segments else None

  # Segments without gradient: a loop whose state has a fixed shape.
  prefix = num_segments - bptt_segments

  def body(k, mems, mems_mask, *contents):
    content, mems, mems_mask = read_segment(k, mems, mems_mask)
    return (k + 1, mems, mems_mask) + tuple(array.write(k, content) for array in contents)

  _, mems, mems_mask, *contents = tf.while_loop(
      lambda k, *_: k < prefix, body,
      (tf.constant(0), mems, mems_mask) + ((contents,) if all_segments else ()))

  # The last bptt_segments segments, with gradient through the memory between them.
  for j in range(bptt_segments):
    k = prefix + j
    content, mems, mems_mask = read_segment(k, mems, mems_mask,
                                            memory_gradient=j < bptt_segments - 1)
    contents = [array.write(k, content) for array in contents]
  outputs = {"content": content, "input_mask": padding[:, -1]}
  if all_segments:
    outputs["all_content"] = tf.transpose(contents[0].stack(), [1, 0, 2, 3])   # [B, K, S, D]
  return outputs
