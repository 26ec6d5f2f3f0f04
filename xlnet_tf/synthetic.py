"""Random inputs in the pretraining layout, for benchmarks and tests (no corpus needed).

  >>> batch = random_pretraining_inputs(np.random.default_rng(0), 2, 16, num_predict=4)
  >>> sorted(batch)
  ['input_ids', 'perm_mask', 'segment_ids', 'target', 'target_mapping', 'target_mask']
"""

import numpy as np

from xlnet_tf import masks


def random_pretraining_inputs(rng: np.random.Generator, batch: int, seqlen: int,
                              num_predict: int, num_targets: int = None, vocab_size: int = 50,
                              segments: bool = True, padding: int = 0):
  """Numpy model inputs like a pretraining row, batch-major.

  Per row: `num_targets` (default num_predict) random targets in a random factorization
  order, every other position pure context (rank -1); target_mapping padded to
  `num_predict` rows with zero rows; segments [A, B, <cls>] (ids 0, 1, 2) if `segments`;
  the first `padding` positions marked as padding in input_mask. Also returns `target`
  [B, P] (the token ids at the targets) and `target_mask` [B, P].
  """
  num_targets = num_predict if num_targets is None else num_targets
  ids = rng.integers(10, vocab_size, [batch, seqlen]).astype(np.int32)
  perm = np.zeros([batch, seqlen, seqlen], np.float32)
  mapping = np.zeros([batch, num_predict, seqlen], np.float32)
  for b in range(batch):
    ranks = masks.ranks_from_order(rng.permutation(seqlen))
    targets = np.sort(rng.choice(seqlen, num_targets, replace=False))
    is_target = np.zeros(seqlen, bool)
    is_target[targets] = True
    ranks[~is_target] = -1
    perm[b] = masks.perm_mask_from_ranks(ranks, is_target).numpy()
    mapping[b, np.arange(num_targets), targets] = 1.0
  inputs = {"input_ids": ids, "perm_mask": perm, "target_mapping": mapping,
            "target": np.einsum("bpt,bt->bp", mapping, ids).astype(np.int32),
            "target_mask": mapping.max(axis=-1)}
  if segments:
    half = seqlen // 2
    row = np.array([0] * half + [1] * (seqlen - half - 1) + [2], np.int32)
    inputs["segment_ids"] = np.tile(row, [batch, 1])
  if padding:
    pad = np.zeros([batch, seqlen], np.float32)
    pad[:, :padding] = 1.0
    inputs["input_mask"] = pad
  return inputs
