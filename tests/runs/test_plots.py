"""Pictures: the mask matrices are the model's masks; each command writes a PNG (slow:
command lines)."""

import os
import subprocess
import sys

import numpy as np
import pytest

import helpers
import tensorflow as tf

from xlnet_tf.runs import plots
from helpers import small_config
from xlnet_tf import masks
from xlnet_tf.models.xlnet_pretrainer import build_pretrainer
from xlnet_tf.pretrained import save_pretrained

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _run_plots(*args):
  result = subprocess.run([sys.executable, "-m", "experiments.plots", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
  assert result.returncode == 0, result.stderr[-3000:]
  return result.stdout


def test_paper_order_visibility_by_hand():
  # Order 3 -> 2 -> 4 -> 1 (the paper's Figure): x3 first, then x2, x4, x1.
  # Content stream: x_i sees x_j iff j comes no later than i in the order.
  content, query = plots.permutation_visibility([3, 2, 4, 1])
  expected_content = np.array([[1, 1, 1, 1],      # x1 is last: sees everything
                               [0, 1, 1, 0],      # x2 (2nd): x3 and itself
                               [0, 0, 1, 0],      # x3 (1st): itself only
                               [0, 1, 1, 1]],     # x4 (3rd): x3, x2, itself
                              bool)
  np.testing.assert_array_equal(content, expected_content)
  np.testing.assert_array_equal(query, expected_content & ~np.eye(4, dtype=bool))
  content, query = plots.permutation_visibility([3, 2, 4, 1], mem_len=2)
  assert content.shape == (4, 6) and content[:, :2].all() and query[:, :2].all()


@pytest.mark.parametrize("order", [[3, 2, 4, 1], [1, 2, 3, 4, 5], [5, 1, 4, 2, 3]])
def test_mask_picture_is_what_the_model_attends_with(order):
  """The pictured matrices against the model's own attention: a visible key gets
  probability > 0, a hidden one exactly 0, in both streams, every layer and head."""
  content, query = plots.permutation_visibility(order)
  length = len(order)
  perm_mask = masks.perm_mask_from_ranks(masks.ranks_from_order(np.array(order) - 1),
                                         np.ones(length, bool))
  model = build_pretrainer(small_config())
  outputs = model.encoder({"input_ids": tf.constant([[11 + t for t in range(length)]]),
                           "perm_mask": tf.cast(perm_mask, tf.float32)[None],
                           "target_mapping": tf.eye(length)[None]},
                          output_attentions=True)
  for probs in outputs["attentions"]:                          # [1, N, T, T]
    np.testing.assert_array_equal(probs.numpy()[0] > 0, np.broadcast_to(content,
                                                                        probs.shape[1:]))
  for probs in outputs["query_attentions"]:                    # [1, N, P=T, T]
    visible = probs.numpy()[0] > 0
    rows = query.any(-1)          # the first-predicted token sees nothing: uniform garbage
    np.testing.assert_array_equal(visible[:, rows], np.broadcast_to(query[rows],
                                                                    visible[:, rows].shape))


def test_head_scores_on_textbook_patterns():
  length = 6
  stride = np.eye(length, k=-1)                # every token attends to its left neighbour
  stride[0, 0] = 1.0
  uniform_others = (1 - np.eye(length)) / (length - 1)
  left_only = np.tril(np.ones([length, length]), -1)
  left_only[0, 0] = 1.0
  left_only /= left_only.sum(-1, keepdims=True)
  scores = plots.head_scores(np.stack([stride, uniform_others, left_only])[None])
  # stride: 5 of 6 rows put all mass at offset -1 -> 5/6.
  np.testing.assert_allclose(scores["relative_stride"][0, 0], 5 / 6)
  np.testing.assert_allclose(scores["self_exclusion"][0, 1], 1.0)        # zero diagonal
  # left_only: rows 1..5 are all left (+1), row 0 attends to itself (0) -> 5/6.
  np.testing.assert_allclose(scores["one_side"][0, 2], 5 / 6)
  np.testing.assert_allclose(scores["one_side"][0, 1], 0.0, atol=1e-12)  # symmetric


@pytest.mark.slow
def test_masks_command_writes_the_png(tmp_path):
  out = tmp_path / "masks.png"
  _run_plots("masks", "--order=3,2,4,1", f"--out={out}")
  assert helpers.png_size(out) == (800, 420)


@pytest.mark.slow
def test_attention_command_writes_the_grid(spiece_model, tmp_path):
  model = build_pretrainer(small_config(n_token=4000, n_head=2, n_layer=2))
  save_pretrained(model, str(tmp_path / "model"), spiece_model)
  out = tmp_path / "attention.png"
  stdout = _run_plots("attention", f"--model_dir={tmp_path / 'model'}",
                      "--sentence=Call me Ishmael.", f"--out={out}")
  assert helpers.png_size(out) == (2 * 260, 2 * 260 + 60)             # 2 layers x 2 heads
  for pattern in ("self_exclusion", "relative_stride", "one_side"):
    assert f"{pattern}: best head L" in stdout


@pytest.mark.slow
def test_curves_command_reads_event_files(tmp_path):
  writer = tf.summary.create_file_writer(str(tmp_path / "train"))
  with writer.as_default():
    for step in (10, 20, 30):
      tf.summary.scalar("loss", 8.0 - step / 10, step=step)
      tf.summary.scalar("learning_rate", step * 1e-4, step=step)
      tf.summary.scalar("tokens_per_sec", 1000.0 + step, step=step)
  writer.close()
  scalars = plots.read_scalars(str(tmp_path / "train"))
  assert scalars["loss"] == [(10, 7.0), (20, 6.0), (30, 5.0)]
  out = tmp_path / "curves.png"
  _run_plots("curves", f"--event_dir={tmp_path / 'train'}", f"--out={out}")
  assert helpers.png_size(out) == (1200, 320)


@pytest.mark.slow
def test_plot_errors_name_the_flag(tmp_path):
  result = subprocess.run([sys.executable, "-m", "experiments.plots", "curves",
                           f"--event_dir={tmp_path}", f"--out={tmp_path / 'x.png'}"],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
  assert result.returncode != 0
  assert f"--event_dir {tmp_path}: no events.out.tfevents.* files" in result.stderr
  result = subprocess.run([sys.executable, "-m", "experiments.plots", "masks",
                           "--order=1,1,2", f"--out={tmp_path / 'x.png'}"],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
  assert result.returncode != 0
  assert "--order: a factorization order must be a permutation" in result.stderr
