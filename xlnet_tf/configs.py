"""`XLNetConfig`: the architecture of a released XLNet plus the options of a run.

The eight architecture keys are exactly those of the released `xlnet_config.json`
(`n_layer, d_model, n_head, d_head, d_inner, ff_activation, untie_r, n_token`). The run
options (dropout, memory, attention type, ...) are the flags of the original `train.py`;
they do not change the weights, so one set of weights can be run with different options.

Example:
  >>> cfg = XLNetConfig.from_json_file("xlnet_cased_L-12_H-768_A-12/xlnet_config.json")
  >>> cfg = cfg.replace(mem_len=384, reuse_len=256, bi_data=True)
  >>> cfg.to_json_file("out/xlnet_config.json")
"""

import dataclasses
import json
import os
from typing import Any, Dict, Mapping, Tuple

# "gelu" is the tanh approximation the released checkpoints were trained with (HF "gelu_new");
# "gelu_exact" is the erf form (HF "gelu").
FF_ACTIVATIONS = ("gelu", "gelu_exact", "relu")
ATTN_TYPES = ("bi", "uni")
# "none": the backward pass reads the activations kept from the forward pass; "layer":
# each layer keeps only its inputs and is run again in the backward pass (less memory,
# about one more forward pass of compute; `XLNetEncoder`).
RECOMPUTE_MODES = ("none", "layer")

# HuggingFace's activation names and ours.
_HF_TO_OUR_ACTIVATION = {"gelu_new": "gelu", "gelu_pytorch_tanh": "gelu", "gelu": "gelu_exact",
                         "relu": "relu"}
_OUR_TO_HF_ACTIVATION = {"gelu": "gelu_new", "gelu_exact": "gelu", "relu": "relu"}


# What each field of `XLNetConfig` is (its metadata "role"); the field list is declared once,
# in the class, and every other list of its names is derived from the roles
# (`keys_of`): the released keys, the run options, the task configs' network fields
# (`xlnet_tf.tasks.base.network_config`) and the command-line flags of the network
# (experiments/common_flags.py, from the metadata's "help": the flag's help text; "flag":
# the flag's name where it is not the field's; "choices": the values of an enum flag).
RELEASED = "released"        # a key of the released xlnet_config.json: the architecture
RUN = "run"                  # a run option every task sets (dropout, recomputation)
MEMORY = "memory"            # a run option of the memory and attention span
DATA = "data"                # a run option the data decides (records, objective, fine-tuning)
INITIALIZER = "initializer"  # how new weights are drawn
NUMERICS = "numerics"        # fixed by the architecture's numerics (not a run option)


def _field(default: Any = dataclasses.MISSING, role: str = RUN, flag_help: str = "",
           **flag: Any):
  return dataclasses.field(default=default, metadata={"role": role, "help": flag_help, **flag})


def keys_of(*roles: str) -> Tuple[str, ...]:
  """The names of `XLNetConfig`'s fields of `roles`, in declaration order."""
  return tuple(f.name for f in dataclasses.fields(XLNetConfig)
               if f.metadata["role"] in roles)


@dataclasses.dataclass(frozen=True)
class XLNetConfig:
  """Architecture (released keys) and run options of an XLNet model.

  Attributes:
    n_layer: number of Transformer-XL blocks.
    d_model: hidden size.
    n_head: attention heads.
    d_head: size of each head (need not equal d_model / n_head).
    d_inner: feed-forward inner size.
    ff_activation: "gelu" (tanh approximation, as released), "gelu_exact" (erf) or "relu".
    untie_r: True for per-layer relative biases [n_layer, n_head, d_head], False for one
      set shared by all layers [n_head, d_head].
    n_token: vocabulary size.
    dropout: dropout on embeddings, positional encodings, attention output and FFN.
    dropatt: dropout on attention probabilities.
    mem_len: number of hidden states kept as memory per layer (0 = no memory returned).
    reuse_len: number of leading tokens of a segment cached for the next segment
      (0 = cache the whole segment).
    attn_type: "bi" (bidirectional) or "uni" (causal).
    bi_data: forward positions for the first half of the batch, backward for the second.
    clamp_len: clip relative distances to [-clamp_len, clamp_len]; -1 = no clipping.
    same_length: with attn_type "uni", every query sees the same number of keys.
    initializer_range: stddev of the normal initializer (the original `init_std`).
    layer_norm_eps: LayerNorm epsilon.
    recompute: activation recomputation in training, "none" or "layer": with "layer" each
      layer's activations are not kept for the backward pass but computed again there
      from the layer's inputs (the same dropout masks and losses; gradients equal in a
      graph, within 1e-6 relative under XLA or through the memory; less activation memory
      for about a third more compute). Not a property of the weights: HuggingFace
      export leaves it out.
  """
  n_layer: int = _field(role=RELEASED, flag_help="Layers")
  d_model: int = _field(role=RELEASED, flag_help="Hidden size")
  n_head: int = _field(role=RELEASED, flag_help="Heads")
  d_head: int = _field(role=RELEASED, flag_help="Head size")
  d_inner: int = _field(role=RELEASED, flag_help="Feed-forward size")
  ff_activation: str = _field("gelu", RELEASED, "Feed-forward activation: gelu (the tanh "
                              "form, as released), gelu_exact or relu")
  untie_r: bool = _field(True, RELEASED, "Per-layer relative biases")
  n_token: int = _field(32000, RELEASED, "Vocabulary size")
  dropout: float = _field(0.1, RUN, "Dropout")
  dropatt: float = _field(0.1, RUN, "Attention dropout")
  mem_len: int = _field(0, MEMORY, "Memory length")
  reuse_len: int = _field(0, DATA, "Tokens at the start of a segment that the next "
                          "segment's memory caches")
  attn_type: str = _field("bi", DATA)
  bi_data: bool = _field(False, DATA)
  clamp_len: int = _field(-1, MEMORY, "Clip relative distances (-1: off)")
  same_length: bool = _field(False, MEMORY, "Same-length attention")
  initializer_range: float = _field(0.02, INITIALIZER, "Initializer stddev", flag="init_std")
  layer_norm_eps: float = _field(1e-12, NUMERICS)
  recompute: str = _field("none", RUN, "Activation recomputation: layer keeps only each "
                          "layer's inputs for the backward pass and computes the layer "
                          "again there, for less activation memory at about a third more "
                          "compute and the same losses and gradients",
                          choices=RECOMPUTE_MODES)

  def __post_init__(self):
    for key in ("n_layer", "d_model", "n_head", "d_head", "d_inner", "n_token"):
      value = getattr(self, key)
      if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"XLNetConfig.{key} must be a positive integer, got {value!r}")
    for key in ("mem_len", "reuse_len"):
      value = getattr(self, key)
      if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"XLNetConfig.{key} must be an integer >= 0, got {value!r}")
    if not isinstance(self.clamp_len, int) or isinstance(self.clamp_len, bool):
      raise ValueError(f"XLNetConfig.clamp_len must be an integer (-1 = off), got "
                       f"{self.clamp_len!r}")
    if self.ff_activation not in FF_ACTIVATIONS:
      raise ValueError(f"XLNetConfig.ff_activation must be one of {FF_ACTIVATIONS}, got "
                       f"{self.ff_activation!r} (HuggingFace names are mapped by "
                       f"XLNetConfig.from_hf_dict)")
    if self.attn_type not in ATTN_TYPES:
      raise ValueError(f"XLNetConfig.attn_type must be one of {ATTN_TYPES}, got "
                       f"{self.attn_type!r}")
    if self.recompute not in RECOMPUTE_MODES:
      raise ValueError(f"XLNetConfig.recompute must be one of {RECOMPUTE_MODES}, got "
                       f"{self.recompute!r}")
    for key in ("dropout", "dropatt"):
      value = getattr(self, key)
      if not 0.0 <= float(value) < 1.0:
        raise ValueError(f"XLNetConfig.{key} must be in [0, 1), got {value!r}")
    for key in ("untie_r", "bi_data", "same_length"):
      if not isinstance(getattr(self, key), bool):
        raise ValueError(f"XLNetConfig.{key} must be true or false, got "
                         f"{getattr(self, key)!r}")
    if self.initializer_range <= 0 or self.layer_norm_eps <= 0:
      raise ValueError("XLNetConfig.initializer_range and layer_norm_eps must be positive")

  def min_weight_count(self) -> int:
    """A lower bound of the number of weights: the word embedding and, per layer, the
    attention projections (q, k, v, o, r) and the feed-forward kernels (biases, norms and
    heads left out); what a plausibility check of the sizes needs."""
    per_layer = (5 * self.d_model * self.n_head * self.d_head +
                 2 * self.d_model * self.d_inner)
    return self.n_token * self.d_model + self.n_layer * per_layer

  # ---- dict / JSON -------------------------------------------------------------------

  def to_dict(self) -> Dict[str, Any]:
    return dataclasses.asdict(self)

  def released_dict(self) -> Dict[str, Any]:
    """Only the eight keys of the released xlnet_config.json."""
    return {key: getattr(self, key) for key in RELEASED_KEYS}

  @classmethod
  def from_dict(cls, values: Mapping[str, Any], source: str = "config") -> "XLNetConfig":
    """Builds a config from released keys (required) and run options (optional).

    Raises:
      ValueError: naming `source` and the key, for a missing released key or an unknown key.
    """
    known = {field.name for field in dataclasses.fields(cls)}
    unknown = sorted(set(values) - known)
    if unknown:
      raise ValueError(f"{source}: unknown key(s) {unknown}; expected the released keys "
                       f"{list(RELEASED_KEYS)} and optionally {sorted(known - set(RELEASED_KEYS))}")
    missing = [key for key in RELEASED_KEYS if key not in values]
    if missing:
      raise ValueError(f"{source}: missing key(s) {missing} (a released xlnet_config.json has "
                       f"{list(RELEASED_KEYS)})")
    try:
      return cls(**dict(values))
    except ValueError as e:
      raise ValueError(f"{source}: {e}") from None

  @classmethod
  def from_json_file(cls, path: str) -> "XLNetConfig":
    """Reads a released xlnet_config.json or one written by `to_json_file`."""
    if not os.path.isfile(path):
      raise FileNotFoundError(f"XLNet config file not found: {path}")
    with open(path, encoding="utf-8") as f:
      try:
        values = json.load(f)
      except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(values, dict):
      raise ValueError(f"{path}: expected a JSON object")
    return cls.from_dict(values, source=path)

  def to_json_file(self, path: str, released_only: bool = False) -> None:
    """Writes the config; `released_only` writes just the eight released keys."""
    values = self.released_dict() if released_only else self.to_dict()
    with open(path, "w", encoding="utf-8") as f:
      json.dump(values, f, indent=2)
      f.write("\n")

  def replace(self, **changes) -> "XLNetConfig":
    return dataclasses.replace(self, **changes)

  def for_finetuning(self, dropout: float = 0.1, dropatt: float = 0.1) -> "XLNetConfig":
    """The run options of fine-tuning, as the released scripts set them: no memory, no
    bi_data, bidirectional attention, the given dropout."""
    return self.replace(mem_len=0, reuse_len=0, bi_data=False, same_length=False,
                        attn_type="bi", dropout=dropout, dropatt=dropatt)

  # ---- HuggingFace -------------------------------------------------------------------

  @classmethod
  def from_hf_dict(cls, hf: Mapping[str, Any], source: str = "config.json") -> "XLNetConfig":
    """Maps a HuggingFace XLNet `config.json` to our config.

    HF's "gelu" is the exact erf form and becomes our "gelu_exact"; HF's "gelu_new" is the
    tanh form of the released checkpoints and becomes our "gelu". HF has one dropout for
    everything (no dropatt); HF `mem_len`/`reuse_len` of null mean 0 here.
    """
    if hf.get("model_type") not in (None, "xlnet"):
      raise ValueError(f"{source}: model_type is {hf.get('model_type')!r}, expected 'xlnet'")
    vocab = hf.get("vocab_size", hf.get("n_token"))
    required = {"vocab_size": vocab, "d_model": hf.get("d_model"), "n_layer": hf.get("n_layer"),
                "n_head": hf.get("n_head"), "d_inner": hf.get("d_inner")}
    missing = [key for key, value in required.items() if value is None]
    if missing:
      raise ValueError(f"{source}: missing key(s) {missing} of a HuggingFace XLNet config")
    activation = hf.get("ff_activation", "gelu")
    if activation not in _HF_TO_OUR_ACTIVATION:
      raise ValueError(f"{source}: ff_activation {activation!r} is not supported; expected one "
                       f"of {sorted(_HF_TO_OUR_ACTIVATION)}")
    d_head = hf.get("d_head") or hf["d_model"] // hf["n_head"]
    dropout = float(hf.get("dropout", 0.1))
    try:
      return cls(
          n_layer=hf["n_layer"], d_model=hf["d_model"], n_head=hf["n_head"], d_head=d_head,
          d_inner=hf["d_inner"], ff_activation=_HF_TO_OUR_ACTIVATION[activation],
          untie_r=bool(hf.get("untie_r", True)), n_token=vocab, dropout=dropout,
          dropatt=dropout, mem_len=hf.get("mem_len") or 0, reuse_len=hf.get("reuse_len") or 0,
          attn_type=hf.get("attn_type", "bi"), bi_data=bool(hf.get("bi_data", False)),
          clamp_len=hf.get("clamp_len", -1), same_length=bool(hf.get("same_length", False)),
          initializer_range=float(hf.get("initializer_range", 0.02)),
          layer_norm_eps=float(hf.get("layer_norm_eps", 1e-12)))
    except ValueError as e:
      raise ValueError(f"{source}: {e}") from None

  def to_hf_dict(self) -> Dict[str, Any]:
    """The HuggingFace `XLNetConfig` keyword arguments for this config (dropatt is dropped:
    HF uses `dropout` for attention probabilities too)."""
    if self.d_head * self.n_head != self.d_model:
      raise ValueError(f"HuggingFace XLNet needs d_head * n_head == d_model, got "
                       f"{self.d_head} * {self.n_head} != {self.d_model}")
    return dict(
        vocab_size=self.n_token, d_model=self.d_model, n_layer=self.n_layer,
        n_head=self.n_head, d_inner=self.d_inner,
        ff_activation=_OUR_TO_HF_ACTIVATION[self.ff_activation], untie_r=self.untie_r,
        attn_type=self.attn_type, initializer_range=self.initializer_range,
        layer_norm_eps=self.layer_norm_eps, dropout=self.dropout,
        mem_len=self.mem_len or None, reuse_len=self.reuse_len or None,
        bi_data=self.bi_data, clamp_len=self.clamp_len, same_length=self.same_length)


# The keys of the released xlnet_config.json, in the released order.
RELEASED_KEYS = keys_of(RELEASED)
# Run options that may differ between runs of the same weights (`load_pretrained` overrides).
RUN_OPTION_KEYS = keys_of(RUN, MEMORY, DATA)
