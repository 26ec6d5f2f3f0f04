"""Pictures of what XLNet does (matplotlib, PNG): python -m experiments.plots.

masks      the permutation objective: for a factorization order (1-based, as the paper's
           [3, 2, 4, 1]), which tokens each position's content stream and query stream
           may attend to, made by the same functions the model uses (xlnet_tf.masks).
attention  a layer x head grid of a pretrained model's content-stream attention on a
           sentence, each head scored for the paper's named patterns (`head_scores`):
  self_exclusion  1 - min(1, T x mean_i p(i -> i)): the token ignores itself
  relative_stride max over offsets d != 0 of mean_i p(i -> i + d): a fixed relative offset
  one_side        |mean_i (left mass - right mass)|: attends to one side only
curves     training curves from TensorBoard event files.
"""

import os
from typing import Dict, List, Sequence, Tuple

import numpy as np
import tensorflow as tf

from xlnet_tf import paths
from xlnet_tf import masks
from xlnet_tf import model_directory
from xlnet_tf import pretrained
from xlnet_tf.data import tokenization
from xlnet_tf.data.tokenization import CLS_ID, SEP_ID

def _pyplot():
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  return plt


# ---- the permutation masks -------------------------------------------------------------------

def parse_order(values: Sequence[str]) -> List[int]:
  """A factorization order given as 1-based positions (strings): ValueError unless it is
  a permutation of 1..T."""
  order = [int(o) for o in values]
  masks.ranks_from_order(np.asarray(order) - 1)
  return order


def permutation_visibility(order: Sequence[int], mem_len: int = 0) -> Tuple[np.ndarray,
                                                                            np.ndarray]:
  """(content, query) bool [T, M + T]: row i may attend to column j (memory first).

  `order` is 1-based (the paper's notation); every position is a target.
  """
  ranks = masks.ranks_from_order(np.asarray(order) - 1)                  # [T]
  length = len(ranks)
  perm_mask = masks.perm_mask_from_ranks(ranks, np.ones(length, bool))    # [T, T]
  query_mask = masks.query_attention_mask(length, mem_len, perm_mask=perm_mask[None])
  content_mask = masks.content_attention_mask(query_mask, length, mem_len)
  return ~content_mask[0].numpy(), ~query_mask[0].numpy()


def plot_masks(order: Sequence[int], path: str, mem_len: int = 0, dpi: int = 100) -> None:
  content, query = permutation_visibility(order, mem_len)
  length = len(order)
  plt = _pyplot()
  fig, axes = plt.subplots(1, 2, figsize=(8, 4.2), dpi=dpi)
  columns = [f"mem{m + 1}" for m in range(mem_len)] + [f"x{t + 1}" for t in range(length)]
  for ax, matrix, title in ((axes[0], content, "content stream h"),
                            (axes[1], query, "query stream g")):
    ax.imshow(matrix, cmap="Reds", vmin=0, vmax=1.4)
    ax.set_xticks(range(len(columns)), columns)
    ax.set_yticks(range(length), [f"x{t + 1}" for t in range(length)])
    ax.set_xlabel("may attend to")
    ax.set_title(title)
    ax.set_xticks(np.arange(-0.5, len(columns)), minor=True)
    ax.set_yticks(np.arange(-0.5, length), minor=True)
    ax.grid(which="minor", color="grey", linewidth=0.5)
    ax.tick_params(which="minor", length=0)
  arrow = " \u2192 ".join(str(o) for o in order)
  fig.suptitle(f"Factorization order {arrow}: filled = visible")
  fig.tight_layout()
  paths.write_figure(path, fig)
  plt.close(fig)


# ---- attention maps of a trained model -------------------------------------------------------

def head_scores(probs: np.ndarray) -> Dict[str, np.ndarray]:
  """The pattern scores of every head: probs [L, N, T, T] -> {pattern: [L, N]}."""
  length = probs.shape[-1]
  diagonal = np.einsum("lnii->lni", probs).mean(-1)                          # [L, N]
  strides = np.stack([np.diagonal(probs, offset=d, axis1=2, axis2=3).sum(-1) / length
                      for d in range(-length + 1, length) if d != 0], -1)    # [L, N, 2T-2]
  left = np.tril(np.ones([length, length]), -1)
  right = left.T
  side = (np.einsum("lnij,ij->lni", probs, left)
          - np.einsum("lnij,ij->lni", probs, right)).mean(-1)                 # [L, N]
  return {"self_exclusion": 1.0 - np.minimum(1.0, length * diagonal),
          "relative_stride": strides.max(-1),
          "one_side": np.abs(side)}


def sentence_attentions(model_dir: str, sentence: str) -> Tuple[List[str], np.ndarray]:
  """(pieces, content-stream attention probabilities [L, N, T, T]) for `sentence` laid out
  as in classification: pieces <sep> <cls>, no memory, bidirectional."""
  spiece = os.path.join(model_dir, model_directory.SPIECE_FILE)
  if not os.path.exists(spiece):
    raise FileNotFoundError(f"--model_dir {model_dir}: no {model_directory.SPIECE_FILE}; "
                            f"expected a pretrained model directory (pretraining's export)")
  sp = tokenization.load_spiece(spiece)
  ids = tokenization.encode_ids(sp, tokenization.normalize_text(sentence)) + [SEP_ID, CLS_ID]
  model = pretrained.load_directory(model_dir, mem_len=0, bi_data=False, attn_type="bi",
                                    dropout=0.0, dropatt=0.0)
  segment_ids = [0] * (len(ids) - 1) + [2]
  outputs = model.encoder({"input_ids": tf.constant([ids]),
                           "segment_ids": tf.constant([segment_ids])},
                          output_attentions=True)
  probs = np.stack([a[0].numpy() for a in outputs["attentions"]])          # [L, N, T, T]
  return [sp.id_to_piece(i) for i in ids], probs


def plot_attention(pieces: Sequence[str], probs: np.ndarray, path: str,
                   dpi: int = 100) -> Dict[str, np.ndarray]:
  """A layer x head grid of attention maps, each titled with its best pattern score."""
  layers, heads = probs.shape[:2]
  scores = head_scores(probs)
  plt = _pyplot()
  fig, axes = plt.subplots(layers, heads, figsize=(2.6 * heads, 2.6 * layers + 0.6),
                           dpi=dpi, squeeze=False)
  labels = [p.replace("\u2581", "_") for p in pieces]
  for layer in range(layers):
    for head in range(heads):
      ax = axes[layer][head]
      ax.imshow(probs[layer, head], cmap="viridis", vmin=0, vmax=1)
      best = max(scores, key=lambda name: scores[name][layer, head])
      ax.set_title(f"L{layer + 1} H{head + 1}: {best} {scores[best][layer, head]:.2f}",
                   fontsize=7)
      small = len(labels) <= 24
      ax.set_xticks(range(len(labels)) if small else [],
                    labels if small else [], rotation=90, fontsize=5)
      ax.set_yticks(range(len(labels)) if small else [], labels if small else [],
                    fontsize=5)
  fig.suptitle("Content-stream attention (rows attend to columns)")
  fig.tight_layout()
  paths.write_figure(path, fig)
  plt.close(fig)
  return scores


def best_heads(scores: Dict[str, np.ndarray]) -> List[str]:
  """One line per pattern of `head_scores`: its highest-scoring head."""
  lines = []
  for name, values in scores.items():
    layer, head = np.unravel_index(np.argmax(values), values.shape)
    lines.append(f"{name:>16}: best head L{layer + 1} H{head + 1} ({values[layer, head]:.2f})")
  return lines


# ---- training curves -------------------------------------------------------------------------

def read_scalars(event_dir: str) -> Dict[str, List[Tuple[int, float]]]:
  """{tag: [(step, value)]} from the TensorBoard event files in `event_dir`."""
  files = sorted(tf.io.gfile.glob(os.path.join(event_dir, "events.out.tfevents.*")))
  if not files:
    raise FileNotFoundError(f"--event_dir {event_dir}: no events.out.tfevents.* files "
                            f"(pretraining writes them to MODEL_DIR/train)")
  scalars: Dict[str, List[Tuple[int, float]]] = {}
  for path in files:
    for event in tf.compat.v1.train.summary_iterator(path):
      for value in event.summary.value:
        if value.HasField("tensor"):
          number = float(tf.make_ndarray(value.tensor))
        elif value.HasField("simple_value"):
          number = value.simple_value
        else:
          continue
        scalars.setdefault(value.tag, []).append((event.step, number))
  return {tag: sorted(points) for tag, points in scalars.items()}


def plot_curves(scalars: Dict[str, List[Tuple[int, float]]], path: str,
                tags: Sequence[str] = ("loss", "learning_rate", "tokens_per_sec"),
                dpi: int = 100) -> None:
  present = [tag for tag in tags if tag in scalars]
  if not present:
    raise ValueError(f"none of the tags {list(tags)} is in the events (found "
                     f"{sorted(scalars)})")
  plt = _pyplot()
  fig, axes = plt.subplots(1, len(present), figsize=(4 * len(present), 3.2), dpi=dpi,
                           squeeze=False)
  for ax, tag in zip(axes[0], present):
    steps, values = zip(*scalars[tag])
    ax.plot(steps, values, marker="o", markersize=3)
    ax.set_title(tag)
    ax.set_xlabel("step")
    ax.grid(alpha=0.3)
  fig.tight_layout()
  paths.write_figure(path, fig)
  plt.close(fig)
