r"""What a pretraining run has learned, checkpoint by checkpoint (issue 28; python -m
experiments.pretraining_diagnostics, which calls `diagnose` and prints `tables`).

The method, the settings and what the figures mean are the command's
(`experiments/pretraining_diagnostics.py`, its --help); this module holds the code it
runs.
"""

import json
import os
import re
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf

from xlnet_tf import masks
from xlnet_tf import paths
from xlnet_tf.configs import XLNetConfig
from xlnet_tf.data import pretrain_records
from xlnet_tf.data.pretrain_reader import pretrain_dataset
from xlnet_tf.data.tokenization import CLS_ID, SEP_ID
from xlnet_tf.models.xlnet_pretrainer import build_pretrainer
from xlnet_tf.tasks.pretraining import layout_differences, row_memories
from xlnet_tf.training import run_directory
from xlnet_tf.tasks.pretraining import MODEL_INPUTS
from xlnet_tf.tasks.pretraining import pretraining_loss
from xlnet_tf.data.pretrain_records import check_vocabulary

STREAMS = ("content", "query")
ATTENTION_MEASURES = ("entropy", "entropy_ratio", "sep", "cls", "self", "neighbours")
_LAYER_PART = re.compile(r"transformer/layer_(\d+)/(rel_attn|ff)/(LayerNorm/)?")
_LAYER_PART_GROUPS = {("rel_attn", False): "attention", ("rel_attn", True): "attention_layer_norm",
                      ("ff", False): "feed_forward", ("ff", True): "feed_forward_layer_norm"}
_BIASES = ("r_w_bias", "r_r_bias", "r_s_bias", "seg_embed")


# ---- inputs, checked before any work -------------------------------------------------------

def read_run(model_dir: str, steps: Sequence[str] = ()) -> Tuple[Dict[str, Any], XLNetConfig,
                                                                 List[Tuple[int, str]]]:
  """(run settings, model config, [(step, checkpoint prefix)] in step order) of a
  pretraining model directory; ValueError/FileNotFoundError naming --model_dir otherwise."""
  where = f"--model_dir {model_dir}"
  if not model_dir or not os.path.isdir(model_dir):
    raise FileNotFoundError(f"{where}: no such directory (expected the model directory of "
                            f"a pretraining run of experiments.train)")
  settings_path = os.path.join(model_dir, run_directory.SETTINGS_FILE)
  if not os.path.exists(settings_path):
    raise FileNotFoundError(f"{where}: no {run_directory.SETTINGS_FILE}; expected the model "
                            f"directory of a pretraining run of experiments.train")
  try:
    with open(settings_path, encoding="utf-8") as f:
      settings = json.load(f)
  except ValueError as e:
    raise ValueError(f"{where}: {settings_path} is not JSON ({e})") from None
  if not isinstance(settings, dict) or not {"config", "data", "options"} <= settings.keys():
    raise ValueError(f"{where}: {settings_path} is not a pretraining run's (it lacks "
                     f"config, data or options)")
  if settings["options"].get("objective", "plm") != "plm":
    raise ValueError(f"{where}: a run of objective {settings['options']['objective']!r}; "
                     f"these measures need the permutation LM (objective plm)")
  found = {}
  for name in os.listdir(model_dir):
    match = re.fullmatch(r"ckpt-(\d+)\.index", name)
    if match:
      found[int(match.group(1))] = os.path.join(model_dir, name[:-len(".index")])
  if not found:
    raise FileNotFoundError(f"{where}: no ckpt-<step> checkpoint")
  try:
    wanted = sorted({int(step) for step in steps}) or sorted(found)
  except ValueError:
    raise ValueError(f"--checkpoints must be steps (integers), got {list(steps)}") from None
  missing = [step for step in wanted if step not in found]
  if missing:
    raise FileNotFoundError(f"--checkpoints: no ckpt-{missing[0]} in {model_dir} (it holds "
                            f"steps {sorted(found)})")
  return settings, XLNetConfig.from_dict(settings["config"]), [(s, found[s]) for s in wanted]


def check_records(path: str, flag: str, run: Dict[str, Any], config: XLNetConfig,
                  model_dir: str) -> Dict[str, Any]:
  """The manifest of `path` after checking its shards are whole and that it has the run's
  layout and SentencePiece model (run_settings.json's data) and fits n_token."""
  if not path:
    raise ValueError(f"{flag} is required (a pretraining record directory)")
  try:
    manifest = pretrain_records.load_manifest(path)
  except (FileNotFoundError, ValueError) as e:
    raise type(e)(f"{flag}: {e}") from None
  pretrain_records.check_shards(manifest, f"{flag} {path}")
  trained = run["data"]
  differing = layout_differences(manifest["settings"], trained["settings"])
  if differing:
    made = [", ".join(f"{k}={s.get(k)}" for k in differing)
            for s in (manifest["settings"], trained["settings"])]
    raise ValueError(f"{flag} {path}: made with {made[0]}, the run in {model_dir} with "
                     f"{made[1]}; the measures need records of the run's layout")
  if manifest["spiece"]["sha256"] != trained["spiece_sha256"]:
    raise ValueError(f"{flag} {path}: made with the SentencePiece model "
                     f"{manifest['spiece']['path']}, not the one the run in {model_dir} was "
                     f"trained with (another vocabulary)")
  check_vocabulary(config.n_token, f"{model_dir}/{run_directory.SETTINGS_FILE}", manifest,
                   f"{flag} {path}")
  return manifest


def check_output(output: Optional[str], inputs: Sequence[str]) -> None:
  """--output is a writable file name outside every input directory."""
  if not output:
    raise ValueError("--output is required (the JSON file to write)")
  paths.check_output_file(output, "--output")
  target = os.path.realpath(output)
  for directory in inputs:
    if directory and target.startswith(os.path.realpath(directory) + os.sep):
      raise ValueError(f"--output {output} lies in the input directory {directory}; "
                       f"write it elsewhere (a tool never writes into its input)")


def read_batches(path: str, manifest: Dict[str, Any], count: int) -> List[Dict[str, tf.Tensor]]:
  """The first `count` batches of the records, in order (fewer if the records end)."""
  dataset = pretrain_dataset(path, manifest["settings"]["bsz_per_host"], shuffle_shards=False,
                             repeat=False, manifest=manifest)
  return list(dataset.take(count))


# ---- per-batch measures (numpy) ------------------------------------------------------------

def in_multi_token_span(positions: np.ndarray, valid: np.ndarray) -> np.ndarray:
  """bool [B, P]: the target at positions[b, p] has a target right before or after it in
  its row (it is in a run of >= 2 adjacent targets). positions int [B, P], valid [B, P]."""
  span = np.zeros(positions.shape, bool)
  for row in range(positions.shape[0]):
    targets = set(positions[row][valid[row]].tolist())
    span[row] = [valid[row, p] and (q - 1 in targets or q + 1 in targets)
                 for p, q in enumerate(positions[row].tolist())]
  return span


def attention_sums(probs: np.ndarray, visible: np.ndarray, key_ids: np.ndarray,
                   own_key: np.ndarray, weights: np.ndarray, num_tokens: int) -> Dict[str, Any]:
  """Per-head sums over the counted query rows of one stream and layer.

  Args:
    probs: float [B, N, Q, K] attention probabilities (keys: memory, then the row).
    visible: bool [B, Q, K], the keys each query row may attend to.
    key_ids: int [B, K], each key's token (-1: none).
    own_key: int [B, Q], the key of the query row's own token (M + its position).
    weights: [B, Q], 1 for the rows to count.
    num_tokens: T, the row length (neighbours are the keys own_key +- 1 within the row).
  Returns:
    {"rows", "ratio_rows": [N]-broadcast counts, and per measure a float [N] sum}.
  """
  p = probs.astype(np.float64)
  w = np.asarray(weights, np.float64)[:, None, :]                              # [B, 1, Q]
  entropy = -np.sum(np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0), -1)  # [B, N, Q]
  seen = visible.sum(-1)[:, None, :]                                            # [B, 1, Q]
  spread = seen > 1
  ratio = np.where(spread, entropy / np.log(np.maximum(seen, 2)), 0.0)
  at = lambda key: np.take_along_axis(                                          # [B, N, Q]
      p, np.broadcast_to(np.clip(key, 0, p.shape[-1] - 1)[:, None, :, None],
                         p.shape[:3] + (1,)), -1)[..., 0]
  memory = p.shape[-1] - num_tokens
  before = (own_key - 1 >= memory)[:, None, :]
  after = (own_key + 1 < memory + num_tokens)[:, None, :]
  measures = {
      "entropy": entropy, "entropy_ratio": ratio,
      "sep": np.sum(p * (key_ids == SEP_ID)[:, None, None, :], -1),
      "cls": np.sum(p * (key_ids == CLS_ID)[:, None, None, :], -1),
      "self": at(own_key),
      "neighbours": np.where(before, at(own_key - 1), 0) + np.where(after, at(own_key + 1), 0)}
  sums = {name: np.sum(value * (w * spread if name == "entropy_ratio" else w), (0, 2))
          for name, value in measures.items()}
  sums["rows"] = float(w.sum())
  sums["ratio_rows"] = float(np.sum(w * spread))
  return sums


def finish_attention(sums: Dict[str, Any], stream: str) -> List[Dict[str, Optional[float]]]:
  """Per head: the means of `attention_sums` totals ("self" None for the query stream)."""
  heads = []
  for head in range(len(sums["entropy"])):
    means = {name: float(sums[name][head] / max(sums["ratio_rows" if name == "entropy_ratio"
                                                     else "rows"], 1.0))
             for name in ATTENTION_MEASURES}
    if stream == "query":
      means["self"] = None
    heads.append(means)
  return heads


def loss_split(losses: Dict[str, np.ndarray], targets: np.ndarray,
               span: np.ndarray) -> Dict[str, Any]:
  """Mean of each per-target loss (and the unigram cross-entropy of the targets under
  their own frequencies) over all targets, span targets and single targets."""
  ids, counts = np.unique(targets, return_counts=True)
  log_p = dict(zip(ids.tolist(), np.log(counts / counts.sum()).tolist()))
  losses = {**losses, "unigram": -np.array([log_p[t] for t in targets.tolist()])}
  out = {"targets": int(len(targets)), "span_targets": int(span.sum()),
         "single_targets": int((~span).sum())}
  for name, values in losses.items():
    for part, chosen in (("", slice(None)), ("_span", span), ("_single", ~span)):
      picked = values[chosen]
      out[name + part] = float(picked.mean()) if len(picked) else None
  return out


# ---- one checkpoint ------------------------------------------------------------------------

def held_out_measures(model, batches: Sequence[Dict[str, tf.Tensor]]) -> Dict[str, Any]:
  """Losses (split, context-free, unigram), attention statistics and token counts of the
  held-out batches, memory carried as in evaluation."""
  config = model.encoder.config
  embedding = model.encoder.word_embedding
  mems, memory_ids = None, None
  losses = {"loss": [], "context_free": []}
  targets, spans, token_counts = [], [], np.zeros(config.n_token, np.int64)
  sums = {stream: [None] * config.n_layer for stream in STREAMS}
  for batch in batches:
    mems = row_memories(config, batch, mems)
    input_ids = batch["input_ids"].numpy()                                      # [B, T]
    rows, length = input_ids.shape
    memory = config.mem_len if mems is not None else 0
    if memory:
      fresh = np.full([rows, memory], -1)
      memory_ids = fresh if memory_ids is None else np.where(
          batch["stream_step"].numpy()[:, None] > 0, memory_ids, -1)
    inputs = {k: batch[k] for k in MODEL_INPUTS}
    if mems is not None:
      inputs["mems"] = mems
    outputs = model.encoder(inputs, training=False, output_attentions=True)
    valid = batch["target_mask"].numpy() > 0                                    # [B, P]
    target = batch["target"].numpy()
    logits = model.lm_head(outputs["query"], embedding)                         # [B, P, V]
    weights = batch["target_mask"][:, :, None]
    mean_query = (tf.reduce_sum(outputs["query"] * weights, [0, 1]) /
                  tf.reduce_sum(weights))                                       # [D]
    flat = model.lm_head(mean_query[None, None, :], embedding)[0]               # [1, V]
    losses["loss"].append(tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=target, logits=logits).numpy()[valid])
    losses["context_free"].append(-tf.nn.log_softmax(flat)[0].numpy()[target[valid]])
    positions = np.argmax(batch["target_mapping"].numpy(), -1)                  # [B, P]
    targets.append(target[valid])
    spans.append(in_multi_token_span(positions, valid)[valid])
    np.add.at(token_counts, input_ids.ravel(), 1)

    key_ids = (np.concatenate([memory_ids, input_ids], 1) if memory else input_ids)  # [B, K]
    query_mask = masks.query_attention_mask(length, memory, batch["input_mask"],
                                            batch["perm_mask"])                 # [B, T, K]
    content_visible = ~masks.content_attention_mask(query_mask, length, memory).numpy()
    views = {"content": (content_visible, np.broadcast_to(np.arange(length), [rows, length]),
                         np.ones([rows, length])),
             "query": (np.take_along_axis(~query_mask.numpy(), positions[:, :, None], 1),
                       positions, valid)}
    for stream, key in (("content", "attentions"), ("query", "query_attentions")):
      visible, own, counted = views[stream]
      for layer, probs in enumerate(outputs[key]):
        part = attention_sums(probs.numpy(), visible, key_ids, own + memory, counted, length)
        total = sums[stream][layer]
        sums[stream][layer] = part if total is None else {k: total[k] + part[k] for k in part}

    if memory:
      memory_ids = np.concatenate(
          [memory_ids, input_ids[:, :config.reuse_len or length]], 1)[:, -memory:]
    mems = outputs["new_mems"] or None

  targets = np.concatenate(targets)
  text_log_p = np.log((token_counts + 1) / (token_counts.sum() + config.n_token))   # [V]
  losses["unigram_text"] = [-text_log_p[targets]]
  split = loss_split({k: np.concatenate(v) for k, v in losses.items()}, targets,
                     np.concatenate(spans))
  attention = {stream: [finish_attention(s, stream) for s in sums[stream]] for stream in STREAMS}
  return {"loss": split, "attention": attention, "batches": len(batches)}, token_counts


def parameter_groups(model) -> Dict[str, List[Tuple[int, Optional[int]]]]:
  """Group name -> [(index in model.trainable_variables, layer slice or None)], in the
  order word_embedding, mask_emb, the layers' groups, relative_biases (tied), lm_bias."""
  config = model.encoder.config
  groups: Dict[str, List[Tuple[int, Optional[int]]]] = {}
  for index, variable in enumerate(model.trainable_variables):
    name = variable.name.split(":")[0]
    base = name.rsplit("/", 1)[-1]
    match = _LAYER_PART.match(name)
    if match:
      key = f"layer_{match.group(1)}/" + _LAYER_PART_GROUPS[match.group(2),
                                                            bool(match.group(3))]
      groups.setdefault(key, []).append((index, None))
    elif name.endswith("word_embedding/lookup_table"):
      groups.setdefault("word_embedding", []).append((index, None))
    elif name.endswith("mask_emb/mask_emb"):
      groups.setdefault("mask_emb", []).append((index, None))
    elif name.endswith("lm_loss/bias"):
      groups.setdefault("lm_bias", []).append((index, None))
    elif base in _BIASES and (config.untie_r or base == "seg_embed"):
      for layer in range(config.n_layer):
        groups.setdefault(f"layer_{layer}/relative_biases", []).append((index, layer))
    elif base in _BIASES:
      groups.setdefault("relative_biases", []).append((index, None))
    else:
      raise ValueError(f"the pretrainer has a weight in no group: {name}")
  order = lambda key: (key != "word_embedding", key != "mask_emb", key == "lm_bias",
                       key == "relative_biases", key)
  return {key: groups[key] for key in sorted(groups, key=order)}


def gradient_measures(model, batches: Sequence[Dict[str, tf.Tensor]]) -> Dict[str, Any]:
  """Per group: the norm of the gradient of the mean target cross-entropy over `batches`
  (eval mode, memory carried) and the weights' RMS; "total": the global gradient norm."""
  config = model.encoder.config
  variables = model.trainable_variables
  summed = [tf.zeros_like(v) for v in variables]
  mems, count = None, 0.0
  for batch in batches:
    mems = row_memories(config, batch, mems)
    inputs = {k: batch[k] for k in MODEL_INPUTS}
    if mems is not None:
      inputs["mems"] = mems
    with tf.GradientTape() as tape:
      outputs = model(inputs, training=False)
      loss_sum, n = pretraining_loss(outputs, batch)
    grads = tape.gradient(loss_sum, variables)
    summed = [s + tf.convert_to_tensor(g) for s, g in zip(summed, grads)]
    count += float(n)
    mems = outputs["new_mems"] or None
  grads = [g.numpy().astype(np.float64) / count for g in summed]
  weights = [v.numpy().astype(np.float64) for v in variables]
  part = lambda arrays, index, layer: arrays[index] if layer is None else arrays[index][layer]
  groups = {}
  for name, members in parameter_groups(model).items():
    g2 = sum(np.sum(part(grads, i, layer) ** 2) for i, layer in members)
    w2 = sum(np.sum(part(weights, i, layer) ** 2) for i, layer in members)
    size = sum(part(weights, i, layer).size for i, layer in members)
    groups[name] = {"grad_norm": float(np.sqrt(g2)), "weight_rms": float(np.sqrt(w2 / size))}
  total = float(np.sqrt(sum(np.sum(g ** 2) for g in grads)))
  return {"groups": groups, "total_grad_norm": total, "targets": int(count),
          "batches": len(batches)}


def _pearson(a: np.ndarray, b: np.ndarray) -> Optional[float]:
  """Pearson's r, None when either side is constant."""
  if np.std(a) == 0 or np.std(b) == 0:
    return None
  return float(np.corrcoef(a, b)[0, 1])


def embedding_measures(embedding: np.ndarray, lm_bias: np.ndarray,
                       token_counts: np.ndarray) -> Dict[str, Any]:
  """The top singular direction of the embedding [V, D] against log frequency (None
  where undefined: a zero embedding, a constant projection or bias)."""
  embedding = embedding.astype(np.float64)
  _, singular, right = np.linalg.svd(embedding, full_matrices=False)
  seen = token_counts > 0
  log_frequency = np.log(token_counts[seen] / token_counts.sum())
  energy = np.sum(singular ** 2)
  top_r = _pearson((embedding @ right[0])[seen], log_frequency)               # [V] -> seen
  return {"top_share": float(singular[0] ** 2 / energy) if energy > 0 else None,
          "top_log_frequency_r": None if top_r is None else abs(top_r),
          "lm_bias_log_frequency_r": _pearson(lm_bias[seen], log_frequency),
          "tokens_seen": int(seen.sum())}


def measure_checkpoint(model, prefix: str, held_out, training) -> Dict[str, Any]:
  tf.train.Checkpoint(model=model).read(prefix).expect_partial().assert_existing_objects_matched()
  result, token_counts = held_out_measures(model, held_out)
  result["gradients"] = gradient_measures(model, training)
  result["embedding"] = embedding_measures(model.encoder.word_embedding.numpy(),
                                           model.lm_head.bias.numpy(), token_counts)
  return result


# ---- tables --------------------------------------------------------------------------------

def _cell(value) -> str:
  return "-" if value is None else f"{value:.3f}"


def tables(checkpoints: List[Dict[str, Any]]) -> str:
  """The markdown tables of the results."""
  lines = ["| step | targets (span/single) | loss | span | single | context-free | cf span | "
           "cf single | unigram | unigram span | unigram single | unigram_text |",
           "|" + "---|" * 12]
  for c in checkpoints:
    loss = c["loss"]
    lines.append(f"| {c['step']} | {loss['targets']} ({loss['span_targets']}/"
                 f"{loss['single_targets']}) | "
                 + " | ".join(_cell(loss[k + p]) for k in ("loss", "context_free", "unigram")
                              for p in ("", "_span", "_single"))
                 + f" | {_cell(loss['unigram_text'])} |")
  lines += ["", "| step | stream | layer | head | entropy | H/ln(visible) | <sep> | <cls> | "
            "self | neighbours |", "|" + "---|" * 10]
  for c in checkpoints:
    for stream in STREAMS:
      for layer, heads in enumerate(c["attention"][stream]):
        for head, m in enumerate(heads):
          lines.append(f"| {c['step']} | {stream} | {layer} | {head} | " +
                       " | ".join(_cell(m[k]) for k in ATTENTION_MEASURES) + " |")
  lines += ["", "| group | " + " | ".join(f"grad norm @{c['step']} | weight RMS @{c['step']}"
                                          for c in checkpoints) + " |",
            "|" + "---|" * (1 + 2 * len(checkpoints))]
  for group in checkpoints[0]["gradients"]["groups"]:
    lines.append(f"| {group} | " + " | ".join(
        f"{c['gradients']['groups'][group]['grad_norm']:.4g} | "
        f"{c['gradients']['groups'][group]['weight_rms']:.4g}" for c in checkpoints) + " |")
  lines.append("| (total) | " + " | ".join(f"{c['gradients']['total_grad_norm']:.4g} | "
                                           for c in checkpoints) + " |")
  lines += ["", "| step | top direction's energy share | its r with log frequency | "
            "LM bias r with log frequency |", "|---|---|---|---|"]
  for c in checkpoints:
    e = c["embedding"]
    lines.append(f"| {c['step']} | " + " | ".join(_cell(e[k]) for k in (
        "top_share", "top_log_frequency_r", "lm_bias_log_frequency_r")) + " |")
  return "\n".join(lines)


def diagnose(model_dir: str, records: str, train_records: str, output: str,
             steps: Sequence[str] = (), num_batches: int = 50,
             grad_batches: int = 4) -> Dict[str, Any]:
  """Checks every input, measures every checkpoint, writes `output` (temporary name, then
  rename) and returns what it wrote."""
  for flag, value in (("--num_batches", num_batches), ("--grad_batches", grad_batches)):
    if value < 1:
      raise ValueError(f"{flag} must be >= 1, got {value}")
  run, config, checkpoints = read_run(model_dir, steps)
  held_out_manifest = check_records(records, "--records", run, config, model_dir)
  train_manifest = check_records(train_records, "--train_records", run, config, model_dir)
  check_output(output, (model_dir, records, train_records))

  config = config.replace(dropout=0.0, dropatt=0.0)
  model = build_pretrainer(config)
  held_out = read_batches(records, held_out_manifest, num_batches)
  training = read_batches(train_records, train_manifest, grad_batches)
  results = []
  for step, prefix in checkpoints:
    results.append({"step": step, "checkpoint": prefix,
                    **measure_checkpoint(model, prefix, held_out, training)})
    print(f"measured {prefix}", flush=True)
  report = {"model_dir": model_dir, "records": records, "train_records": train_records,
            "num_batches": len(held_out), "grad_batches": len(training),
            "memory": "carried from row to row as in evaluation (zeros at a stream's start)",
            "checkpoints": results}
  paths.write_json(output, report, sort_keys=True)
  return report
