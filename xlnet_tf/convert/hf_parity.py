"""The parity at conversion: a HuggingFace directory's model (transformers, torch) and the
converted one on a fixed probe batch, compared output by output.

The probe and how each side's outputs are read are the kind's (its record's `conversion`:
`probe`, `hf_inputs`, `hf_outputs`, `our_outputs`, `reference_class`). Without torch and
transformers (pyproject.toml's [huggingface] extra) the parity is `NOT_MEASURED`.
"""

from typing import Any, Dict, Optional

from absl import logging
import numpy as np
import tensorflow as tf

from xlnet_tf import task_kind
from xlnet_tf.configs import XLNetConfig
from xlnet_tf.convert.hf_weights import INSTALL_HUGGINGFACE
from xlnet_tf.data import layouts
from xlnet_tf.data import tokenization

NOT_MEASURED = f"not measured (transformers/torch not installed: {INSTALL_HUGGINGFACE})"


def probe_batch(config: XLNetConfig, conversion, length: int = 12) -> Dict[str, np.ndarray]:
  """A fixed small batch in the released classification layout (`layouts`; input_mask 1 at
  padding): 2 rows of `length` pieces `A <sep> B <sep> <cls>`, the second with 3 positions
  of left padding (<pad>, the classifier's padding segment), as the kind's `conversion`
  makes it its own (`probe`: e.g. [2, 2, length], two choices, for RACE; p_mask and
  cls_index for the QA heads). The text pieces are ids above the special pieces
  (`tokenization.SPECIAL_PIECES`)."""
  batch, pad = 2, 3
  first = max(tokenization.SPECIAL_PIECES.values()) + 1         # the first ordinary piece
  span = max(1, config.n_token - first)
  ids = (first + (np.arange(batch * length) * 7919) % span).reshape(batch, length)
  sep = length // 2
  ids[:, sep] = ids[:, -2] = tokenization.SEP_ID
  ids[:, -1] = tokenization.CLS_ID
  segments = np.where(np.arange(length) <= sep, layouts.SEGMENT_A,
                      layouts.SEGMENT_B)[None].repeat(batch, 0)
  segments[:, -1] = layouts.SEGMENT_CLS
  mask = np.zeros([batch, length], np.float32)
  ids[1, :pad], segments[1, :pad] = tokenization.PAD_ID, layouts.CLASSIFIER_SEGMENT_PAD
  mask[1, :pad] = 1.0
  feed = {"input_ids": ids.astype(np.int32), "segment_ids": segments.astype(np.int32),
          "input_mask": mask}
  return conversion.probe(feed)


def _hf_outputs(source: str, reference_class: str, conversion, feed) -> Dict[str, np.ndarray]:
  """The outputs of `source` loaded as transformers' `reference_class` on `feed`, in our
  layout (`conversion.hf_outputs`)."""
  import torch  # pylint: disable=g-import-not-at-top
  import transformers  # pylint: disable=g-import-not-at-top
  cls = getattr(transformers, reference_class)
  verbosity = transformers.logging.get_verbosity()
  transformers.logging.set_verbosity_error()
  try:
    model = cls.from_pretrained(source).float().eval()
  finally:
    transformers.logging.set_verbosity(verbosity)
  tensor = lambda key, dtype: torch.as_tensor(np.asarray(feed[key]), dtype=dtype)
  kwargs = dict(input_ids=tensor("input_ids", torch.long),
                token_type_ids=tensor("segment_ids", torch.long),
                input_mask=tensor("input_mask", torch.float32), use_mems=False)
  kwargs.update(conversion.hf_inputs(feed, tensor))
  with torch.no_grad():
    out = model(**kwargs, return_dict=True)
  return conversion.hf_outputs(out, model)


def _our_outputs(model, conversion, feed) -> Dict[str, np.ndarray]:
  return conversion.our_outputs(model, {k: tf.constant(v) for k, v in feed.items()})


# A parity figure above this (or differing top-k indices) is a warning, logged and noted
# in conversion.json (the conversion is not refused: the report says what was measured).
PARITY_TOLERANCE = 1e-4


def measure_parity(source: str, architecture: Optional[str], kind: str, model,
                   config: XLNetConfig, top_k: int = 0) -> Dict[str, Any]:
  """Runs HF's model of `source` (its `architecture`, or the class the conversion of `kind`
  compares with: XLNetModel for the pretrained layout) and `model` on `probe_batch` (long
  enough for `top_k` answer candidates); returns
  {"measured", "max_abs_diff", "indices_equal", "outputs", "reference", "probe", "text"},
  plus "warning" when the difference exceeds `PARITY_TOLERANCE` or the top-k indices
  differ (logged). "measured" False, and why, without torch/transformers or when either
  model does not run on the probe (logged as a warning, with the reason)."""
  try:
    import torch  # pylint: disable=g-import-not-at-top
    import transformers  # pylint: disable=g-import-not-at-top
  except ImportError:
    return {"measured": False, "text": NOT_MEASURED}
  conversion = task_kind.get(kind).conversion
  feed = probe_batch(config, conversion, length=max(12, 2 * top_k + 6))
  reference_class = conversion.reference_class(architecture)
  reference = (f"transformers.{reference_class} {transformers.__version__} (torch "
               f"{torch.__version__})")
  try:
    theirs = _hf_outputs(source, reference_class, conversion, feed)
  except Exception as e:  # pylint: disable=broad-except  (HF raises many kinds)
    detail = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    logging.warning("%s: parity not measured: %s did not run on the probe batch: %s (%s)",
                    source, reference, detail, type(e).__name__)
    return {"measured": False, "reference": reference,
            "text": f"not measured ({reference} did not run: {detail})"}
  try:
    ours = _our_outputs(model, conversion, feed)
  except (tf.errors.OpError, ValueError) as e:
    detail = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    logging.warning("%s: parity not measured: the converted model did not run on the probe "
                    "batch: %s", source, detail)
    return {"measured": False, "reference": reference,
            "text": f"not measured (the converted model did not run on the probe: {detail})"}
  diffs = {k: float(np.max(np.abs(ours[k].astype(np.float64) - theirs[k])))
           for k in theirs if not k.endswith("_index")}
  indices_equal = all(np.array_equal(ours[k], theirs[k]) for k in theirs
                      if k.endswith("_index"))
  worst = max(diffs.values())
  shape = "x".join(str(n) for n in feed["input_ids"].shape)
  probe = f"a fixed probe batch of input_ids [{shape}] with left padding"
  what = ", ".join(sorted(diffs))
  text = f"max |diff| {worst:.2e} vs {reference} ({what}) on {probe}"
  if not indices_equal:
    text += "; the top-k indices DIFFER"
  result = {"measured": True, "max_abs_diff": worst, "indices_equal": indices_equal,
            "outputs": diffs, "reference": reference, "probe": probe, "text": text}
  if worst > PARITY_TOLERANCE or not indices_equal:
    result["warning"] = (f"parity: the converted model differs from {reference} beyond "
                         f"{PARITY_TOLERANCE:g} on the probe batch ({text}); check the "
                         f"outputs before relying on it")
    logging.warning("%s: %s", source, result["warning"])
  return result
