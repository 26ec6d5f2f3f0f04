"""Left-to-right text generation with an XLNet language model (query stream + memory).

  >>> model = load_pretrained("converted/xlnet_base")
  >>> generate(model, [[17, 3018, 24, 27]], max_new_tokens=20)                   # greedy
  >>> generate(model, ids, 50, strategy="sample", top_k=40, top_p=0.9, temperature=0.8,
  ...          seed=1)

XLNet predicts a token with its query stream: a position whose own token is hidden (the
`mask_emb` vector stands in for it) attends to the content of every visible position. To
predict the token after `x_1 .. x_S`, a step feeds `x_1 .. x_S` followed by a dummy token
(any id: nothing ever sees its content), a permutation mask hiding the dummy from every
position (`perm_mask[:, :, -1] = 1`; the dummy's own content stream still sees itself) and
a target mapping selecting the dummy; the query stream at the dummy position, through the
tied LM head, gives the logits of x_{S+1}. Among the other positions attention is
bidirectional (attn_type "bi"): the prefix is not causal.

Memory (`use_mems=True`, the default; HuggingFace's default too, since its
`XLNetConfig.use_mems_eval` is True and `generate` runs the model in eval mode). This is
HuggingFace's scheme (`XLNetLMHeadModel.prepare_inputs_for_generation`), reproduced
exactly so that the tokens are the same:
  * step 0 feeds the whole prompt + dummy, with no memory;
  * every later step feeds only the last REFEED = 2 tokens of the sequence + dummy, and
    as memory the cached per-layer states of all earlier tokens;
  * after a step, the memory of each layer is [memory; states of the fed positions],
    cut to its last `mem_len` rows when `mem_len` > 0 (as Transformer-XL caches), and
    the next step drops its last REFEED rows (the dummy and the newest token, which
    are fed again). So every token enters the memory once and its states are frozen
    from then on: a prompt token but the last with the states of step 0 (it saw the
    whole prompt), a later token with those of the step where it was the first of the
    fed tokens (it saw one token after it). With bidirectional attention this differs
    from re-running the whole sequence (with "uni" it does not).
`mem_len` defaults to the model config's, which `xlnet_tf.convert` takes from HF's config
(HF's XLNetConfig default is 512; its null is our 0, unbounded).
`reuse_len` (default: the model config's, which `xlnet_tf.convert` carries from HF's
config; 0 = off, HF's null): when > 0, only the first `reuse_len` fed positions of a step
enter the memory, as HF's `XLNetModel.cache_mem` cuts `curr_out[:reuse_len]` before
appending it to the memory (which `generate` applies, since it runs with memory). So
memory = [memory; first reuse_len fed] cut to its last `mem_len` rows, then without its
last REFEED rows: the tokens after the first `reuse_len` of a step never enter it (and
with reuse_len <= REFEED the memory stops growing). This reproduces HF's tokens exactly;
it is rarely what a released model wants (reuse_len is a pretraining option: pass
reuse_len=0, or load the model with reuse_len=0, for the scheme above without the cut).
With `use_mems=False` every step feeds the whole sequence + dummy without memory (HF with
`use_mems=False`): every token sees the whole current sequence, O(S) work per token.

What is cached. Transformer-XL's memory holds each layer's input states h; a step then
projects [memory; h] to keys and values, and the relative encodings of all K + T distances
to position keys (K keys, T fed positions), O(K * d_model^2) per layer per step, which
grows with the output. Here the memory holds the per-layer keys and values of those
states instead (the projection is row by row, so this is the same computation), and the
position keys of every distance the whole generation needs are projected once before the
first step and sliced per step. The layer math is the encoder's own
(`RelativeMultiHeadAttention.attend`, its LayerNorm, the feed-forward layer), fed the
cached keys. A step then costs O(d_model^2) for its 3 fed positions
and the query, plus O(K * d_model) to score, read and extend the cached keys: flat in
FLOPs as the output grows, up to that cache traffic (see
experiments/benchmark_generation.py).

Batches: every prompt of a batch must have the same length (a ValueError otherwise; no
padding: HF's XLNet generation ignores the attention mask, so padded prompts would not
match it either). Stopping: a row stops after emitting one of `stop_ids` (the stop id is
included in the output, later positions are `pad_id`), generation ends when every row has
stopped or after `max_new_tokens`.

Sampling (`strategy="sample"`): logits / temperature, then top-k (keep the logits >= the
k-th largest; 0 = off), then top-p (keep the smallest set of most probable tokens whose
probability reaches top_p; 1 = off), then one draw per row from
`tf.random.stateless_categorical` with seed (seed, step): the same seed gives the same
tokens, on every run and whatever ran before.

Each step is one call of a `tf.function` with a fixed input signature (unknown lengths,
all options as tensors), traced once per model for every prompt, length, strategy and
option.
"""

import numbers
import weakref
from typing import Callable, Optional, Sequence

import numpy as np
import tensorflow as tf

from xlnet_tf import masks
from xlnet_tf.data.tokenization import EOD_ID
from xlnet_tf.data.tokenization import EOS_ID
from xlnet_tf.data.tokenization import MASK_ID
from xlnet_tf.data.tokenization import PAD_ID
from xlnet_tf.layers.positional_encoding import relative_positions
from xlnet_tf.layers.positional_encoding import sinusoid

STRATEGIES = ("greedy", "sample")
DEFAULT_STOP_IDS = (EOD_ID, EOS_ID)
# Tokens fed at every step with memory (HF's `offset`): the newest token (in no state yet)
# and the one before it (recomputed, now that it sees the newest).
REFEED = 2
# The id at the predicted position: its content is hidden from every other position.
DUMMY_ID = MASK_ID


def generate(model, prompt_ids, max_new_tokens: int, *, strategy: str = "greedy",
             temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0,
             seed: Optional[int] = None, stop_ids: Sequence[int] = DEFAULT_STOP_IDS,
             pad_id: int = PAD_ID, use_mems: bool = True, mem_len: Optional[int] = None,
             reuse_len: Optional[int] = None,
             callback: Optional[Callable[[int, np.ndarray], None]] = None,
             return_logits: bool = False):
  """Continues each prompt by up to `max_new_tokens` tokens (see the module docstring).

  Args:
    model: an `XLNetPretrainer` (encoder + tied LM head, objective "plm"), float32 or
      mixed precision; dropout is off.
    prompt_ids: one prompt (a sequence of ids) or a batch of prompts of equal length
      ([B, P] array or list of lists); non-empty, ids in [0, n_token).
    max_new_tokens: >= 1.
    strategy: "greedy" (argmax) or "sample".
    temperature, top_k, top_p: sampling options (ignored by "greedy", still checked):
      temperature > 0, top_k >= 0 (0 = off), 0 < top_p <= 1 (1 = off).
    seed: int of the sampling draws; None draws a fresh random seed.
    stop_ids: ids that end a row (default <eod>, </s>); () never stops early.
    pad_id: fills a row after it stopped (default <pad>).
    use_mems: the memory scheme of the module docstring (HF's default); False recomputes
      the whole sequence at every step (HF's `use_mems=False`).
    mem_len: rows of memory kept per layer, 0 = unbounded; default: the model config's
      `mem_len` (converted from HF's, whose null is our 0).
    reuse_len: > 0: only the first reuse_len fed positions of each step enter the memory
      (HF's `cache_mem`, see the module docstring); 0 = all; default: the model config's
      `reuse_len` (converted from HF's, whose null is our 0). Unused without memory.
    callback: called after each step with (step, new tokens int32 [B]), e.g. to stream.
    return_logits: also return the logits of every step.
  Returns:
    The new tokens, int32 [B, N] (N <= max_new_tokens; [N] for a single prompt given as a
    flat sequence), and with `return_logits` also float32 [B, N, V] ([N, V]): the
    model's logits at each step, before temperature and filtering.
  Raises:
    ValueError: an invalid argument, naming it.
  """
  config = model.encoder.config
  prompts, single = _check_prompts(prompt_ids, config.n_token)
  _check_int("max_new_tokens", max_new_tokens, minimum=1)
  if strategy not in STRATEGIES:
    raise ValueError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")
  if not (isinstance(temperature, numbers.Real) and np.isfinite(temperature)
          and temperature > 0):
    raise ValueError(f"temperature must be a finite number > 0, got {temperature!r}")
  _check_int("top_k", top_k, minimum=0)
  if not (isinstance(top_p, numbers.Real) and 0 < top_p <= 1):
    raise ValueError(f"top_p must be in (0, 1], got {top_p!r}")
  if seed is not None:
    _check_int("seed", seed, minimum=0)
  stop_ids = tuple(stop_ids)
  for value in stop_ids:
    _check_int("stop_ids", value, minimum=0, maximum=config.n_token - 1)
  _check_int("pad_id", pad_id, minimum=0, maximum=config.n_token - 1)
  if not isinstance(use_mems, bool):
    raise ValueError(f"use_mems must be True or False, got {use_mems!r}")
  if mem_len is None:
    mem_len = config.mem_len
  _check_int("mem_len", mem_len, minimum=0)
  if reuse_len is None:
    reuse_len = config.reuse_len or 0
  _check_int("reuse_len", reuse_len, minimum=0)
  if getattr(model, "objective", "plm") != "plm":
    raise ValueError(f"model: generation needs the query stream of a 'plm' model, got "
                     f"objective {model.objective!r}")
  if config.bi_data:
    raise ValueError("model: bi_data (forward and backward encodings for the two halves "
                     "of a batch) is a pretraining option; load the model with "
                     "bi_data=False to generate")
  if seed is None:
    seed = int(np.random.default_rng().integers(2**31 - 1))

  decoder = _decoder(model)
  batch, prompt_len = prompts.shape
  # The largest distance any step sees (key 0 to the dummy of the last step) and the
  # longest fed sequence: the rows of the position-key table.
  max_distance = prompt_len + max_new_tokens
  max_fed = prompt_len + 1 if use_mems else prompt_len + max_new_tokens
  position_keys = decoder.position_keys(tf.constant(max_fed), tf.constant(max_distance))
  empty = decoder.empty_memory(batch)
  memory = empty
  options = (tf.constant(max_distance), tf.constant(mem_len), tf.constant(reuse_len),
             tf.constant(temperature, tf.float32), tf.constant(top_k),
             tf.constant(top_p, tf.float32), tf.constant(strategy == "sample"))
  sequence = prompts
  finished = np.zeros([batch], bool)
  new_tokens, logits = [], []
  stop = np.asarray(stop_ids, np.int32)
  dummy = np.full([batch, 1], DUMMY_ID, np.int32)
  for step in range(max_new_tokens):
    if use_mems and step > 0:
      fed, fed_memory = sequence[:, -REFEED:], memory
    else:
      fed, fed_memory = sequence, empty
    fed = np.concatenate([fed, dummy], axis=1)
    seeds = tf.constant([seed, step], tf.int64)
    token, step_logits, keys, values = decoder.step(
        tf.constant(fed), fed_memory[0], fed_memory[1], position_keys, seeds, *options)
    memory = (keys, values)
    token = np.where(finished, np.int32(pad_id), token.numpy())
    finished |= np.isin(token, stop)
    sequence = np.concatenate([sequence, token[:, None]], axis=1)
    new_tokens.append(token)
    if return_logits:
      logits.append(step_logits.numpy())
    if callback is not None:
      callback(step, token)
    if finished.all():
      break
  tokens = np.stack(new_tokens, axis=1)
  result = (tokens[0] if single else tokens)
  if return_logits:
    stacked = np.stack(logits, axis=1)
    return result, (stacked[0] if single else stacked)
  return result


# ---- argument checks --------------------------------------------------------------------

def _check_int(name, value, minimum=None, maximum=None):
  if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
    raise ValueError(f"{name} must be an integer, got {value!r}")
  if minimum is not None and value < minimum:
    raise ValueError(f"{name} must be >= {minimum}, got {value!r}")
  if maximum is not None and value > maximum:
    raise ValueError(f"{name} must be <= {maximum} (n_token - 1), got {value!r}")


def _check_prompts(prompt_ids, n_token):
  """(int32 [B, P], whether one flat prompt was given)."""
  if isinstance(prompt_ids, tf.Tensor):
    prompt_ids = prompt_ids.numpy()
  if isinstance(prompt_ids, np.ndarray):
    rows = prompt_ids
  else:
    try:
      rows = [list(row) for row in prompt_ids] if _is_nested(prompt_ids) else prompt_ids
    except TypeError:
      raise ValueError(f"prompt_ids must be a sequence of ids or of prompts, got "
                       f"{type(prompt_ids).__name__}") from None
    lengths = {len(row) for row in rows} if _is_nested(prompt_ids) else None
    if lengths is not None and len(lengths) > 1:
      raise ValueError(f"prompt_ids: the prompts of a batch must have the same length "
                       f"(no padding), got lengths {sorted(lengths)}")
    rows = np.asarray(rows)
  single = rows.ndim == 1
  if single:
    rows = rows[None]
  if rows.ndim != 2:
    raise ValueError(f"prompt_ids must be one prompt [P] or a batch [B, P], got shape "
                     f"{list(rows.shape)}")
  if rows.size == 0:
    raise ValueError(f"prompt_ids must not be empty, got shape {list(rows.shape)}")
  if not np.issubdtype(rows.dtype, np.integer):
    raise ValueError(f"prompt_ids must be integer ids, got dtype {rows.dtype}")
  if rows.min() < 0 or rows.max() >= n_token:
    raise ValueError(f"prompt_ids must be in [0, {n_token}) (n_token), got ids from "
                     f"{rows.min()} to {rows.max()}")
  return rows.astype(np.int32), single


def _is_nested(values) -> bool:
  return len(values) > 0 and all(isinstance(v, (Sequence, np.ndarray)) for v in values)


# ---- the decoder: one traced step per model ---------------------------------------------

_DECODERS = weakref.WeakKeyDictionary()


def _decoder(model) -> "_Decoder":
  decoder = _DECODERS.get(model)
  if decoder is None:
    decoder = _DECODERS[model] = _Decoder(model)
  return decoder


class _Decoder:
  """The traced functions of one model: the position-key table and one decoding step.

  Holds the model weakly (the cache above is keyed by it). Shapes: L layers, N heads,
  H head size, B batch, T fed positions (the last one the dummy), M memory rows,
  K = M + T keys, R table rows.
  """

  def __init__(self, model):
    self._model = weakref.ref(model)
    c = model.encoder.config
    self.num_layers = c.n_layer
    self.dtype = tf.as_dtype(model.encoder.compute_dtype)
    cache_spec = tuple(tf.TensorSpec([c.n_head, None, None, c.d_head], self.dtype)
                       for _ in range(c.n_layer))
    self.empty_shape = (c.n_head, 0, c.d_head)
    self.position_keys = tf.function(self._position_keys, input_signature=[
        tf.TensorSpec([], tf.int32), tf.TensorSpec([], tf.int32)])
    self.step = tf.function(self._step, input_signature=[
        tf.TensorSpec([None, None], tf.int32),                    # fed ids [B, T]
        cache_spec, cache_spec,                                   # memory keys, values
        tuple(tf.TensorSpec([c.n_head, 1, None, c.d_head], self.dtype)
              for _ in range(c.n_layer)),                         # position-key table
        tf.TensorSpec([2], tf.int64),                             # seed, step
        tf.TensorSpec([], tf.int32),                              # max_distance
        tf.TensorSpec([], tf.int32),                              # mem_len (0: all)
        tf.TensorSpec([], tf.int32),                              # reuse_len (0: all)
        tf.TensorSpec([], tf.float32),                            # temperature
        tf.TensorSpec([], tf.int32),                              # top_k
        tf.TensorSpec([], tf.float32),                            # top_p
        tf.TensorSpec([], tf.bool)])                              # sample

  def empty_memory(self, batch):
    n, _, h = self.empty_shape
    empty = tuple(tf.zeros([n, batch, 0, h], self.dtype) for _ in range(self.num_layers))
    return empty, empty

  def _position_keys(self, max_fed, max_distance):
    """Per layer, [N, 1, R, H]: the position keys of distances max_distance down to
    -(max_fed - 1) ("bi") or 0 ("uni"), clamped as the encoder clamps them."""
    model = self._model()
    c = model.encoder.config
    distances = relative_positions(max_fed, max_distance, c.attn_type,
                                   clamp_len=c.clamp_len)
    encoding = tf.cast(sinusoid(distances, c.d_model), self.dtype)[None]     # [1, R, D]
    return tuple(tf.einsum("xrd,dnh->nxrh", encoding,
                           tf.cast(block.attention.r_kernel, self.dtype))
                 for block in model.encoder.blocks)

  def _step(self, fed, memory_keys, memory_values, position_keys, seed, max_distance,
            mem_len, reuse_len, temperature, top_k, top_p, sample):
    """One forward pass at the dummy (the last fed position) and the next token.

    Returns (token int32 [B], logits float32 [B, V], keys, values): the memory of the
    next step, per layer [N, B, M', H] ([memory; fed, only its first reuse_len positions
    when reuse_len > 0] cut to its last mem_len rows when mem_len > 0, without its last
    REFEED rows).
    """
    model = self._model()
    encoder, c = model.encoder, model.encoder.config
    dtype = self.dtype
    batch, fed_len = tf.shape(fed)[0], tf.shape(fed)[1]
    mem = tf.shape(memory_keys[0])[2]
    klen = mem + fed_len
    # The keys that enter the next memory: the memory and the first reuse_len fed.
    cached = mem + tf.where(reuse_len > 0, tf.minimum(reuse_len, fed_len), fed_len)

    # Nothing sees the dummy (last column); its own content stream sees itself.
    hide_dummy = tf.broadcast_to(tf.equal(tf.range(fed_len), fed_len - 1)[None, None],
                                 [batch, fed_len, fed_len])
    query_mask = masks.query_attention_mask(fed_len, mem, perm_mask=hide_dummy,
                                            causal=c.attn_type == "uni",
                                            same_length=c.same_length)     # [B, T, K]
    content_mask = masks.content_attention_mask(query_mask, fed_len, mem)
    dummy_mask = query_mask[:, -1:]                                        # [B, 1, K]
    dummy_position = tf.fill([batch, 1], fed_len - 1)
    rows = klen + fed_len if c.attn_type == "bi" else klen + 1
    start = max_distance - klen                      # the table row of distance klen

    content = tf.gather(tf.cast(encoder.word_embedding, dtype), fed)          # [B, T, D]
    query = tf.tile(tf.cast(encoder.mask_emb, dtype), [batch, 1, 1])          # [B, 1, D]
    new_keys, new_values = [], []
    for i, block in enumerate(encoder.blocks):
      attention = block.attention
      def bias(name, i=i):
        value = tf.cast(getattr(encoder, name), dtype)
        return (value[i] if c.untie_r else value)[:, None, None]              # [N,1,1,H]
      biases = (bias("r_w_bias"), bias("r_r_bias"), None, None)
      kernel = lambda name, a=attention: tf.cast(getattr(a, f"{name}_kernel"), dtype)
      keys = tf.concat([memory_keys[i],
                        tf.einsum("btd,dnh->nbth", content, kernel("k"))], axis=2)
      values = tf.concat([memory_values[i],
                          tf.einsum("btd,dnh->nbth", content, kernel("v"))], axis=2)
      new_keys.append(self._next_memory(keys[:, :, :cached], mem_len))
      new_values.append(self._next_memory(values[:, :, :cached], mem_len))
      table = position_keys[i][:, :, start:start + rows]                      # [N,1,R,H]

      attended, _ = attention.attend(
          tf.einsum("btd,dnh->nbth", content, kernel("q")), keys, values, table, biases,
          None, content_mask, False)
      content_out = attention.layer_norm(
          tf.einsum("nbih,dnh->bid", attended, kernel("o")) + content)
      attended, _ = attention.attend(
          tf.einsum("bpd,dnh->nbph", query, kernel("q")), keys, values, table, biases,
          None, dummy_mask, False, positions=dummy_position, qlen=fed_len)
      query_out = attention.layer_norm(
          tf.einsum("nbih,dnh->bid", attended, kernel("o")) + query)
      content = block.feed_forward(content_out, training=False)
      query = block.feed_forward(query_out, training=False)

    logits = model.lm_head(query, encoder.word_embedding)[:, 0]               # [B, V]
    token = tf.cond(sample,
                    lambda: _draw(logits, seed, temperature, top_k, top_p),
                    lambda: tf.argmax(logits, axis=-1, output_type=tf.int32))
    return token, logits, tuple(new_keys), tuple(new_values)

  @staticmethod
  def _next_memory(full, mem_len):
    """[N, B, K, H] -> the next step's memory: the last mem_len rows (all if 0), then
    all but the last REFEED."""
    klen = tf.shape(full)[2]
    first = tf.where(mem_len > 0, tf.maximum(klen - mem_len, 0), 0)
    size = tf.maximum(klen - REFEED - first, 0)
    return tf.slice(full, [0, 0, first, 0], [-1, -1, size, -1])


def _draw(logits, seed, temperature, top_k, top_p):
  """One token per row from logits [B, V]: temperature, top-k, top-p, stateless draw."""
  scaled = logits / temperature
  vocab = tf.shape(scaled)[1]
  def keep_top_k():
    kth = tf.math.top_k(scaled, k=tf.minimum(top_k, vocab)).values[:, -1:]
    return tf.where(scaled >= kth, scaled, -np.inf)
  scaled = tf.cond(top_k > 0, keep_top_k, lambda: scaled)
  def keep_top_p():
    ordered = tf.sort(scaled, axis=-1, direction="DESCENDING")
    before = tf.cumsum(tf.nn.softmax(ordered, axis=-1), axis=-1, exclusive=True)
    # A token is kept while the more probable ones have not reached top_p (>= 1 kept).
    kept = tf.reduce_sum(tf.cast(before < top_p, tf.int32), axis=-1, keepdims=True)
    threshold = tf.gather(ordered, tf.maximum(kept, 1) - 1, batch_dims=1)
    return tf.where(scaled >= threshold, scaled, -np.inf)
  scaled = tf.cond(top_p < 1.0, keep_top_p, lambda: scaled)
  drawn = tf.random.stateless_categorical(scaled, 1, seed=seed, dtype=tf.int32)
  return drawn[:, 0]
