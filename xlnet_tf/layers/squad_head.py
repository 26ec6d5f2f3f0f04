"""XLNet's SQuAD head: start logits, end logits conditioned on the start, answerability.

Variable names as released: `start_logits/dense` [D, 1]; `end_logits/dense_0` [2D, D],
`end_logits/LayerNorm`, `end_logits/dense_1` [D, 1]; `answer_class/dense_0` [2D, D],
`answer_class/dense_1` [D, 1] without bias.

Training (`start_positions` given) conditions the end on the GOLD start. Inference keeps
the `start_n_top` best starts, and for each the `end_n_top` best ends. The answer class
sees, in training as at inference, the start states averaged with the (masked) start
probabilities, as the released run_squad does; `answer_class_start="gold"` gives it the
gold start's state in training instead (HuggingFace's XLNetForQuestionAnswering). All
scores are LOG-probabilities, laid out start-major:
end_top_log_probs [B, start_n_top, end_n_top] (HF flattens end-major; see docs/fine-tuning.md).

  >>> head = SquadHead(768, start_n_top=5, end_n_top=5)
  >>> out = head(hidden, p_mask=p_mask, cls_index=cls_index)          # inference
  >>> out["end_top_index"][b, i, j]       # j-th best end for the i-th best start
"""

import tensorflow as tf
import tf_keras

from xlnet_tf.layers.initializers import normal_initializer
from xlnet_tf.layers.step_dropout import StepDropout
from xlnet_tf.masks import large_negative

# What the answer class reads as "the start": the hidden states averaged with the start
# probabilities (released run_squad, training and inference), or in training the gold
# start's state (HuggingFace).
ANSWER_CLASS_STARTS = ("expected", "gold")


def _masked(logits, p_mask):
  """logits with p_mask positions (1 = impossible) pushed to a large negative value."""
  p_mask = tf.cast(p_mask, logits.dtype)
  return logits * (1.0 - p_mask) + large_negative(logits.dtype) * p_mask


@tf_keras.utils.register_keras_serializable(package="xlnet_tf")
class SquadHead(tf_keras.layers.Layer):
  """hidden [B, T, D] -> start/end logits (training) or top-k log-probabilities.

  Call args: hidden [B, T, D]; p_mask [B, T] (1 = cannot be an answer boundary);
  cls_index [B] int; start_positions [B] int (training: the gold starts).
  `answer_class_start`: "expected" (released) or "gold" (HuggingFace, training only).
  Returns (training): start_logits [B, T], end_logits [B, T], cls_logits [B] (float32).
  Returns (inference): start_top_log_probs, start_top_index [B, K1]; end_top_log_probs,
  end_top_index [B, K1, K2]; cls_logits [B].
  """

  def __init__(self, hidden_size: int, start_n_top: int = 5, end_n_top: int = 5,
               layer_norm_epsilon: float = 1e-12, initializer_range: float = 0.02,
               dropout_rate: float = 0.1, answer_class_start: str = "expected", **kwargs):
    super().__init__(**kwargs)
    if answer_class_start not in ANSWER_CLASS_STARTS:
      raise ValueError(f"answer_class_start must be one of {ANSWER_CLASS_STARTS}, "
                       f"got {answer_class_start!r}")
    self.answer_class_start = answer_class_start
    self.hidden_size = hidden_size
    self.start_n_top = start_n_top
    self.end_n_top = end_n_top
    self.layer_norm_epsilon = layer_norm_epsilon
    self.initializer_range = initializer_range
    self.dropout_rate = dropout_rate

    def dense(units, name, use_bias=True, activation=None):
      return tf_keras.layers.Dense(units, activation=activation, use_bias=use_bias,
                                   kernel_initializer=normal_initializer(initializer_range),
                                   name=name)

    self.start_dense = dense(1, "start_logits/dense")
    self.end_dense_0 = dense(hidden_size, "end_logits/dense_0", activation="tanh")
    self.end_layer_norm = tf_keras.layers.LayerNormalization(
        epsilon=layer_norm_epsilon, name="end_logits/LayerNorm")
    self.end_dense_1 = dense(1, "end_logits/dense_1")
    self.class_dense_0 = dense(hidden_size, "answer_class/dense_0", activation="tanh")
    self.class_dense_1 = dense(1, "answer_class/dense_1", use_bias=False)
    self.dropout = StepDropout(dropout_rate)

  def build(self, input_shape=None):
    d = self.hidden_size
    for layer, width in ((self.start_dense, d), (self.end_dense_0, 2 * d),
                         (self.end_layer_norm, d), (self.end_dense_1, d),
                         (self.class_dense_0, 2 * d), (self.class_dense_1, d)):
      with tf.name_scope(layer.name):
        layer.build(tf.TensorShape([None, width]))
    super().build(input_shape)

  def start_logits(self, hidden, p_mask):
    return _masked(tf.squeeze(self.start_dense(hidden), -1), p_mask)           # [B, T]

  def end_logits(self, hidden, start_states, p_mask):
    """hidden and start_states [..., D] of equal shape; p_mask broadcastable."""
    shape = tf.shape(hidden)[:-1]
    x = tf.reshape(tf.concat([hidden, start_states], axis=-1), [-1, 2 * self.hidden_size])
    x = self.end_layer_norm(self.end_dense_0(x))                      # [N, D], N = prod(...)
    return _masked(tf.reshape(self.end_dense_1(x), shape), p_mask)

  def answer_class(self, start_states, cls_states, training=None):
    """[B, D] and [B, D] -> [B]: the logit that the question has NO answer."""
    x = self.class_dense_0(tf.concat([start_states, cls_states], axis=-1))
    x = self.dropout(x, training=training)
    return tf.squeeze(self.class_dense_1(x), -1)

  @staticmethod
  def expected_start(hidden, start_logits):
    """hidden [B, T, D], masked start_logits [B, T] -> [B, D]: the start states averaged
    with softmax(start_logits)."""
    start_probs = tf.nn.softmax(tf.cast(start_logits, tf.float32), axis=-1)     # [B, T]
    return tf.einsum("bt,btd->bd", tf.cast(start_probs, hidden.dtype), hidden)

  def call(self, hidden, p_mask, cls_index, start_positions=None, training=None):
    hidden = tf.cast(hidden, self.compute_dtype)
    cls_states = tf.gather(hidden, cls_index, batch_dims=1)                     # [B, D]
    start_logits = self.start_logits(hidden, p_mask)
    if start_positions is not None:
      start_states = tf.gather(hidden, start_positions, batch_dims=1)           # [B, D]
      tiled = tf.broadcast_to(start_states[:, None], tf.shape(hidden))           # [B, T, D]
      end_logits = self.end_logits(hidden, tiled, p_mask)
      if self.answer_class_start == "expected":
        start_states = self.expected_start(hidden, start_logits)
      cls_logits = self.answer_class(start_states, cls_states, training=training)
      return {"start_logits": tf.cast(start_logits, tf.float32),
              "end_logits": tf.cast(end_logits, tf.float32),
              "cls_logits": tf.cast(cls_logits, tf.float32)}

    start_log_probs = tf.nn.log_softmax(tf.cast(start_logits, tf.float32), axis=-1)
    start_top_log_probs, start_top_index = tf.math.top_k(start_log_probs,
                                                         k=self.start_n_top)    # [B, K1]
    start_states = tf.gather(hidden, start_top_index, batch_dims=1)             # [B, K1, D]
    length = tf.shape(hidden)[1]
    hidden_k = tf.broadcast_to(hidden[:, None], [tf.shape(hidden)[0], self.start_n_top,
                                                 length, self.hidden_size])    # [B,K1,T,D]
    start_k = tf.broadcast_to(start_states[:, :, None], tf.shape(hidden_k))
    end_logits = self.end_logits(hidden_k, start_k, p_mask[:, None])           # [B, K1, T]
    end_log_probs = tf.nn.log_softmax(tf.cast(end_logits, tf.float32), axis=-1)
    end_top_log_probs, end_top_index = tf.math.top_k(end_log_probs,
                                                     k=self.end_n_top)          # [B,K1,K2]
    cls_logits = self.answer_class(self.expected_start(hidden, start_logits), cls_states,
                                   training=training)
    return {"start_top_log_probs": start_top_log_probs, "start_top_index": start_top_index,
            "end_top_log_probs": end_top_log_probs, "end_top_index": end_top_index,
            "cls_logits": tf.cast(cls_logits, tf.float32),
            "start_logits": tf.cast(start_logits, tf.float32)}

  def get_config(self):
    config = super().get_config()
    config.update(hidden_size=self.hidden_size, start_n_top=self.start_n_top,
                  end_n_top=self.end_n_top, layer_norm_epsilon=self.layer_norm_epsilon,
                  initializer_range=self.initializer_range, dropout_rate=self.dropout_rate,
                  answer_class_start=self.answer_class_start)
    return config
