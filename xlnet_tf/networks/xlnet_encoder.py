"""The XLNet encoder: embeddings, masks, relative encodings, memories and the blocks."""

from typing import Any, Dict, Mapping, Union

import tensorflow as tf
import tf_keras
from tensorflow.python.eager import record

from xlnet_tf import masks
from xlnet_tf.configs import XLNetConfig
from xlnet_tf.layers.initializers import normal_initializer
from xlnet_tf.layers.positional_encoding import RelativePositionalEncoding
from xlnet_tf.layers.two_stream_block import TwoStreamBlock
from xlnet_tf.layers.scoped_build import build_in_scope
from xlnet_tf.layers import step_dropout
from xlnet_tf.layers.step_dropout import StepDropout


def check_hidden_state(layer: int, n_layer: int, name: str = "layer") -> None:
  """Raises ValueError, naming `name`, unless `layer` indexes the n_layer + 1 hidden
  states (`output_hidden_states`): 0 the word embeddings, k the output of layer k, -1 the
  last."""
  if not -n_layer - 1 <= layer <= n_layer:
    raise ValueError(f"{name} must index the encoder's {n_layer + 1} hidden states (0: the "
                     f"word embeddings, 1..{n_layer}: the layers' outputs, -1: the last), "
                     f"got {layer}")


def is_word_embedding_state(layer: int, n_layer: int) -> bool:
  """Whether hidden state `layer` is the word-embedding table's rows (context-free)."""
  return layer in (0, -n_layer - 1)


@tf_keras.utils.register_keras_serializable(package="xlnet_tf")
class XLNetEncoder(tf_keras.layers.Layer):
  """Transformer-XL with two-stream attention, batch-major.

  Weights as released: word_embedding [V, D], mask_emb [1, 1, D], r_w_bias / r_r_bias /
  r_s_bias [L, N, H] (untie_r) or [N, H], seg_embed [L, 2, N, H], and the blocks.

  Call with a dict:
    input_ids: int [B, T].
    segment_ids: int [B, T] (optional; without it there is no segment term).
    input_mask: float [B, T], 1 at padding (optional).
    perm_mask: float [B, T, T], 1 where position i may not attend to j (optional).
    target_mapping: float [B, P, T], row k one-hot at the k-th target, all-zero for a
      padding row (optional; the query stream is computed only with it, only at targets).
    mems: list of n_layer tensors [B, M, D], the inputs of each layer for the previous
      segment (optional).
    mems_mask: float [B, M], 1 where a memory position is padding (optional; without it
      the whole memory is visible, as released).
  Returns a dict:
    content: [B, T, D] content stream after the last layer.
    query: [B, P, D] query stream at the targets (only with target_mapping).
    new_mems: list of n_layer [B, M', D]: each layer's input, the first reuse_len tokens
      (all if reuse_len is 0) appended to mems, the last mem_len kept, no gradient
      (with `memory_gradient=True`: with gradient, for backpropagation through
      segments). Empty when mem_len is 0.
    attentions: with `output_attentions=True`, per layer the content stream's attention
      probabilities [B, N, T, K] (K = M + T, memory first), before attention dropout;
      with target_mapping also `query_attentions`, the query stream's [B, N, P, K].
    hidden_states: with `output_hidden_states=True`, n_layer + 1 tensors [B, T, D]: the
      word embeddings (after input dropout), then each layer's content stream (the last
      before the output dropout), as HuggingFace's `hidden_states`.

  With `config.recompute == "layer"` and `training`, every block runs under
  `_guarded_recompute_grad` (`_recomputed_block`): the backward pass keeps only each block's
  inputs and computes the block again, with the same dropout masks, so losses and
  gradients are those of "none". With `output_attentions` the blocks run plainly (the
  attention maps are kept anyway). Outside `step_dropout.training_seed` (Keras `fit`)
  with dropout, the call's masks are keyed on one seed it draws from TF's global
  generator, since Keras' stateful dropout cannot be drawn again in the backward pass.

  Example:
    >>> cfg = XLNetConfig(n_layer=2, d_model=16, n_head=2, d_head=8, d_inner=32, n_token=100)
    >>> out = XLNetEncoder(cfg)({"input_ids": tf.constant([[5, 6, 7]])})
    >>> out["content"].shape
    TensorShape([1, 3, 16])
  """

  def __init__(self, config: Union[XLNetConfig, Mapping[str, Any]], **kwargs):
    super().__init__(**kwargs)
    if not isinstance(config, XLNetConfig):
      config = XLNetConfig.from_dict(config)
    self.config = config
    c = config
    self.positional_encoding = RelativePositionalEncoding(
        c.d_model, attn_type=c.attn_type, bi_data=c.bi_data, clamp_len=c.clamp_len,
        dtype=self.dtype_policy, name="positional_encoding")
    self.blocks = [
        TwoStreamBlock(c.n_head, c.d_head, c.d_inner, activation=c.ff_activation,
                       dropout_rate=c.dropout, attention_dropout_rate=c.dropatt,
                       layer_norm_epsilon=c.layer_norm_eps,
                       initializer_range=c.initializer_range, dtype=self.dtype_policy,
                       name=f"layer_{i}")
        for i in range(c.n_layer)]
    self.dropout = StepDropout(c.dropout)

  def build(self, input_shape=None):
    c = self.config
    bias_shape = [c.n_layer, c.n_head, c.d_head] if c.untie_r else [c.n_head, c.d_head]
    self.word_embedding = self.add_weight("word_embedding/lookup_table",
                                          shape=[c.n_token, c.d_model],
                                          initializer=self._init())
    # As released: mask_emb has no initializer of its own, so TF1's default for
    # get_variable applied (Glorot uniform, fans 1 and D for its shape [1, 1, D]).
    self.mask_emb = self.add_weight("mask_emb/mask_emb", shape=[1, 1, c.d_model],
                                    initializer=tf_keras.initializers.GlorotUniform())
    self.r_w_bias = self.add_weight("r_w_bias", shape=bias_shape, initializer=self._init())
    self.r_r_bias = self.add_weight("r_r_bias", shape=bias_shape, initializer=self._init())
    self.r_s_bias = self.add_weight("r_s_bias", shape=bias_shape, initializer=self._init())
    self.seg_embed = self.add_weight("seg_embed", shape=[c.n_layer, 2, c.n_head, c.d_head],
                                     initializer=self._init())
    for block in self.blocks:
      build_in_scope(block, tf.TensorShape([None, None, c.d_model]))
    super().build(input_shape)

  def _init(self):
    return normal_initializer(self.config.initializer_range)

  def call(self, inputs: Mapping[str, Any], training=None,
           output_attentions: bool = False, memory_gradient: bool = False,
           output_hidden_states: bool = False) -> Dict[str, Any]:
    c = self.config
    if (c.recompute == "layer" and training is True and not output_attentions
        and (c.dropout > 0 or c.dropatt > 0) and not step_dropout.has_seed()):
      # Recomputation must draw the forward pass's dropout masks again, which Keras'
      # stateful dropout cannot (Keras `fit`, a loop without `training_seed`): the masks
      # of this call are keyed on one seed drawn here from TF's global generator instead.
      seed = tf.random.uniform([2], minval=tf.int64.min, maxval=tf.int64.max,
                               dtype=tf.int64)
      with step_dropout.training_seed(seed):
        return self._forward(inputs, training, output_attentions, memory_gradient,
                             output_hidden_states)
    return self._forward(inputs, training, output_attentions, memory_gradient,
                         output_hidden_states)

  def _forward(self, inputs, training, output_attentions, memory_gradient,
               output_hidden_states):
    c = self.config
    input_ids = inputs["input_ids"]                                    # [B, T]
    segment_ids = inputs.get("segment_ids")
    target_mapping = inputs.get("target_mapping")
    mems = inputs.get("mems") or None
    if mems is not None and len(mems) != c.n_layer:
      raise ValueError(f"mems must have one tensor per layer ({c.n_layer}), got {len(mems)}")
    batch, qlen = tf.shape(input_ids)[0], tf.shape(input_ids)[1]
    mlen = tf.shape(mems[0])[1] if mems is not None else 0
    klen = mlen + qlen
    if c.bi_data:
      _check_even_batch(input_ids)

    # Masks: True = may not attend. The content stream always sees itself.
    query_mask = masks.query_attention_mask(                   # broadcastable to [B, T, K]
        qlen, mlen, inputs.get("input_mask"), inputs.get("perm_mask"),
        causal=c.attn_type == "uni", same_length=c.same_length,
        memory_mask=inputs.get("mems_mask") if mems is not None else None)
    content_mask = masks.content_attention_mask(query_mask, qlen, mlen)
    segments = (masks.segment_mismatch(segment_ids, mlen)              # [B, T, K]
                if segment_ids is not None else None)

    position_encoding = self.positional_encoding(qlen, klen)              # [X, R, D]
    if training and c.dropout > 0:
      # As released: the encodings are tiled over the batch before dropout, so every
      # example has its own dropout mask. Without dropout, [X, R, D] is shared (cheaper).
      position_encoding = tf.repeat(position_encoding,                    # [B, R, D]
                                    batch // tf.shape(position_encoding)[0], axis=0)
      position_encoding = self.dropout(position_encoding, training=training)
    content = self.dropout(tf.gather(self.word_embedding, input_ids),      # [B, T, D]
                           training=training)

    # Query stream: mask_emb at each target; its masks and segments are the rows of the
    # content-position masks at the target positions.
    query = None
    query_inputs = {}
    if target_mapping is not None:
      target_mapping = tf.convert_to_tensor(target_mapping)
      num_predict = tf.shape(target_mapping)[1]
      positions = tf.argmax(target_mapping, axis=-1, output_type=tf.int32)  # [B, P]
      query_inputs["query_positions"] = positions
      query_inputs["query_valid"] = tf.reduce_max(target_mapping, axis=-1)  # [B, P]
      if query_mask is not None:
        full_mask = tf.broadcast_to(query_mask, [batch, qlen, klen])
        query_inputs["query_mask"] = tf.gather(full_mask, positions, batch_dims=1)
      if segments is not None:
        query_inputs["query_segments"] = tf.gather(segments, positions, batch_dims=1)
      query = self.dropout(tf.tile(self.mask_emb, [batch, num_predict, 1]),  # [B, P, D]
                           training=training)

    # Only training=True: StepDropout draws replayable masks only then.
    recompute = c.recompute == "layer" and training is True and not output_attentions
    new_mems = []
    attentions, query_attentions = [], []
    hidden_states = [content]                   # the content stream into each layer, [B, T, D]
    for i, block in enumerate(self.blocks):
      memory = tf.cast(mems[i], content.dtype) if mems is not None else None
      if c.mem_len > 0:
        new_mems.append(self._cache(content, memory, memory_gradient))
      biases = dict(r_w_bias=self.r_w_bias[i] if c.untie_r else self.r_w_bias,
                    r_r_bias=self.r_r_bias[i] if c.untie_r else self.r_r_bias)
      if segments is not None:
        biases.update(r_s_bias=self.r_s_bias[i] if c.untie_r else self.r_s_bias,
                      seg_embed=self.seg_embed[i])
      if recompute:
        content, query = _recomputed_block(
            block, content, query, memory, position_encoding, biases,
            dict(content_mask=content_mask, content_segments=segments, training=training,
                 **query_inputs))
        maps = []
      else:
        content, query, *maps = block(
            content, query, memory=memory, position_encoding=position_encoding,
            content_mask=content_mask, content_segments=segments, training=training,
            return_attention=bool(output_attentions), **biases, **query_inputs)
      hidden_states.append(content)
      if output_attentions:
        content_probs, query_probs = maps[0]
        attentions.append(content_probs)
        query_attentions.append(query_probs)

    outputs = {"content": self.dropout(content, training=training), "new_mems": new_mems}
    if query is not None:
      outputs["query"] = self.dropout(query, training=training)
    if output_hidden_states:
      outputs["hidden_states"] = hidden_states    # n_layer + 1 x [B, T, D]
    if output_attentions:
      outputs["attentions"] = attentions          # per layer: content stream [B, N, T, K]
      if query is not None:
        outputs["query_attentions"] = query_attentions               # [B, N, P, K]
    return outputs

  def _cache(self, layer_input, memory, memory_gradient=False):
    """The memory for the next segment: [B, M', D], no gradient unless `memory_gradient`."""
    c = self.config
    current = layer_input[:, :c.reuse_len] if c.reuse_len > 0 else layer_input
    if memory is not None:
      current = tf.concat([memory, current], axis=1)
    current = current[:, -c.mem_len:]
    return current if memory_gradient else tf.stop_gradient(current)

  def get_config(self):
    config = super().get_config()
    config.update(config=self.config.to_dict())
    return config


def _guarded_recompute_grad(fn):
  """`fn` (positional tensors in and out) with its activations recomputed in the backward
  pass instead of kept: `tf.recompute_grad`, with a guard every XLA version keeps.

  The recomputation must wait for the incoming gradient (or it runs early, and its
  activations live as long as the forward pass's would), and XLA must not merge it with
  the forward pass (the same computation of the same inputs). Both take inputs that
  depend on the incoming gradients: x + d, d = where(isnan(g), g, 0) for g the sum of
  the first elements of the incoming gradients (d is 0 unless g is NaN, which would make
  the gradients NaN anyway). `tf.recompute_grad` builds d from a bool comparison that newer
  XLA versions fold to 0, and loses both guards (jaxlib 0.7's XLA then kept a 4-layer
  step's activations: 73 MiB of temporaries against 59 without recomputation; 34 here).
  """

  @tf.custom_gradient
  def wrapped(*args):
    with record.stop_recording():            # no tape keeps the forward's activations
      outputs = fn(*args)

    def grad_fn(*output_grads, variables=None):
      # From every output's gradient: one may be a zero constant (the last layer's
      # content stream, which a two-stream loss does not read), and d would fold to 0.
      probe = tf.reduce_sum(tf.add_n([tf.cast(tf.reshape(g, [-1])[:1], tf.float32)
                                      for g in output_grads]))
      after_gradient = tf.where(tf.math.is_nan(probe), probe, tf.zeros_like(probe))
      inputs = [x + tf.cast(after_gradient, x.dtype) for x in args]
      watched = list(variables or [])
      with tf.GradientTape() as tape:
        tape.watch(inputs)
        tape.watch(watched)
        recomputed = fn(*inputs)
      grads = tape.gradient(recomputed, inputs + watched, output_gradients=output_grads,
                            unconnected_gradients=tf.UnconnectedGradients.ZERO)
      return grads[:len(inputs)], grads[len(inputs):]

    return outputs, grad_fn

  return wrapped


def _recomputed_block(block, content, query, memory, position_encoding, biases, closed):
  """`block(content, query, ...)` under `_guarded_recompute_grad`: its activations are not kept
  for the backward pass but computed again there, from the inputs kept here.

  Graph-mode `tf.custom_gradient` (under `_guarded_recompute_grad`) takes positional tensors only
  and gives gradients only to them and to the variables read inside (the block's
  kernels), not to tensors closed over. So every float input with a gradient is
  positional: content [B, T, D], query [B, P, D] and memory [B, M, D] where present,
  position_encoding [X, R, D] ([B, R, D] after dropout) and the layer's biases
  (r_w_bias, r_r_bias [N, H]; with segments r_s_bias [N, H] and seg_embed [2, N, H]);
  the masks, segments, query positions and query_valid (no gradient) and `training` are
  `closed` over. Dropout draws the forward pass's masks again
  (`step_dropout.replaying`). Returns (content, query or None).
  """
  names = ["content"] + (["query"] if query is not None else []) + (
      ["memory"] if memory is not None else []) + ["position_encoding"] + sorted(biases)
  values = {"content": content, "query": query, "memory": memory,
            "position_encoding": position_encoding, **biases}
  tensors = [tf.convert_to_tensor(values[name]) for name in names]

  def run(*args):
    given = dict(zip(names, args))
    outputs = block(given.pop("content"), given.pop("query", None), **given, **closed)
    return outputs[0] if query is None else outputs[:2]

  outputs = _guarded_recompute_grad(step_dropout.replaying(run))(*tensors)
  if query is None:
    return outputs, None
  content, query = outputs
  return content, query


def _check_even_batch(input_ids):
  """bi_data splits the batch into forward and backward halves: the batch must be even."""
  static = input_ids.shape[0]
  if static is not None:
    if static % 2:
      raise ValueError(f"bi_data needs an even batch size (forward and backward halves), "
                       f"got {static}")
  else:
    tf.debugging.assert_equal(tf.shape(input_ids)[0] % 2, 0,
                              message="bi_data needs an even batch size")
