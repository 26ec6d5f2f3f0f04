"""What `xlnet_tf.convert` asks a kind of model, and the helpers the kinds' answers share.

A kind's conversion (a `Conversion`, its record's `conversion`; one module per kind in this
package) answers for its models:

  HuggingFace in   `hf_architectures_in`, the tensors of its head (`hf_head_keys`) and
                   reading them into our head (`read_hf_head`), for `hf_heads`
  the original     its TF1 checkpoint's head (`released_scope`, `owns_released`,
                   `identify_released`), for `task_heads`
  our model        the head's shapes (`expected_shapes`), the model for it (`build_model`),
                   its variables by name (`head_variables`), the spec written
                   (`converted_spec`), for `importer`
  parity           the probe batch and how to read HuggingFace's and our outputs, at import
                   (`probe`, `hf_outputs`, `our_outputs`: `hf_parity`) and at export
                   (`export_probe`, `export_pairs`: `to_huggingface`)
  HuggingFace out  `hf_architecture_out`, our head as HF's tensors (`hf_tensors`), the
                   config.json values (`hf_config`), the card (`card_title`, ...)

The pretrained layout's conversion is a `Conversion` (no head); a task head's a
`HeadConversion`. What the converters do with the answers is theirs: this module holds no
kind's answer.
"""

import abc
import dataclasses
import re
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from xlnet_tf import model_directory
from xlnet_tf.configs import XLNetConfig
from xlnet_tf.convert.huggingface import HF_DEFAULTS

# {released name: ([shape], why)}: the variables of a head and the shapes the config gives.
Shapes = Dict[str, Tuple[List[int], str]]


@dataclasses.dataclass(frozen=True)
class Head:
  """A task head found in a source (a TF1 checkpoint or a HuggingFace directory).

  kind: its `task_kind` (`task_kind.head_kinds()`).
  names: the names of its variables (the released names where the original has the head,
    else those of our layers): what is loaded.
  task_name: the task it was fine-tuned on, where the source names one (the classifier's
    <task> of model/classification_<task>, HuggingFace's finetuning_task).
  Each kind's head (`ClassifierHead`, ...) adds what its model and spec need.
  """
  kind: str
  names: Tuple[str, ...]
  task_name: Optional[str] = None

  @property
  def top_k(self) -> int:
    """The answer candidates the head searches (0: none); the parity probe is made long
    enough for them."""
    return 0


class Conversion(abc.ABC):
  """The conversion of one kind of model; the defaults are those of a head with one output
  called "logits" read from the probe batch as it is.

  hf_architectures_in: the HuggingFace classes imported as this kind.
  hf_architecture_out: the HuggingFace class an export writes.
  hf_head_keys: the head's tensors in HuggingFace's state dict (none: no task head);
    hf_head_pattern: the same, short, for messages ("classifier.*").
  takes_task_name: --task_name applies (it names the classification task).
  released_head: the head's variables in the original's checkpoints (or, where the
    original has no such head, in ours): a description for errors and docs.
  card_head: what a model card adds about the head when its task does not say it.
  """
  hf_architectures_in: Tuple[str, ...] = ()
  hf_architecture_out: str = ""
  hf_head_keys: Tuple[str, ...] = ()
  hf_head_pattern: str = ""
  takes_task_name: bool = False
  released_head: str = ""
  card_head: str = ""

  # ---- the parity at import (`hf_parity`): HF's model and ours on `probe_batch` --------------

  def reference_class(self, architecture: str) -> str:
    """The transformers class the parity runs (default: the `architecture` read)."""
    return architecture

  def probe(self, feed: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
    """The probe batch of this kind, from the released classification layout's `feed`
    (input_ids, segment_ids, input_mask [B, T])."""
    return feed

  def hf_inputs(self, feed: Mapping[str, np.ndarray], tensor) -> Dict[str, Any]:
    """What HF's model is called with besides input_ids, token_type_ids and input_mask
    (`tensor(key, torch dtype)`: the probe's array as a torch tensor)."""
    del feed, tensor
    return {}

  def hf_outputs(self, out, model) -> Dict[str, np.ndarray]:
    """HF's outputs `out` (of its `model`) in our layout and names."""
    del model
    return {"logits": out.logits.numpy()}

  def our_outputs(self, model, inputs) -> Dict[str, np.ndarray]:
    """Our `model`'s outputs on `inputs` (tensors), as `hf_outputs` names them."""
    return {"logits": model(inputs, training=False)["logits"].numpy()}

  # ---- the export (`to_huggingface`) ----------------------------------------------------------

  @abc.abstractmethod
  def load_model_dir(self, model_dir: str):
    """(our model, its spec values) of a model directory of this kind."""

  def check_exportable(self, model_dir: str, spec: Mapping[str, Any]) -> None:
    """Raises ValueError naming the spec field when HuggingFace has no equivalent of it
    (before anything is loaded)."""
    del model_dir, spec

  @abc.abstractmethod
  def hf_tensors(self, model) -> Dict[str, np.ndarray]:
    """HF name -> array of the head of `model` (the encoder's are `to_huggingface`'s)."""

  def hf_config(self, model, spec: Mapping[str, Any], model_dir: str,
                notes: List[str]) -> Dict[str, Any]:
    """The head's config.json values (over HF's defaults); notes appended to `notes`."""
    del model, spec, model_dir, notes
    return {}

  def export_probe(self, inputs: Dict[str, np.ndarray], pad: np.ndarray,
                   rng: np.random.Generator, config: XLNetConfig) -> Dict[str, np.ndarray]:
    """The export's probe inputs of this kind, from two rows [B, T] (`pad` [B, T]: 1 at
    the padding; `rng` the probe's generator)."""
    del pad, rng, config
    return inputs

  def export_pairs(self, model, hf_model, inputs: Mapping[str, np.ndarray],
                   torch_in: Mapping[str, Any], feed: Mapping[str, Any], torch):
    """[(what, ours, HF's)] on the export's probe (`inputs` as arrays, `torch_in` HF's
    input_ids, token_type_ids and input_mask, `feed` ours as tensors); None when the
    outputs cannot be compared (the SQuAD head's top-k positions differ)."""
    del inputs, torch
    return [("logits", model(feed, training=False)["logits"].numpy(),
             hf_model(**torch_in).logits.numpy())]

  def card_task(self, task: str, values: Mapping[str, Any]) -> str:
    """The card's task for a model whose spec (or conversion report) has `values`
    (default: the record's `card_task`, `task`)."""
    del values
    return task

  @abc.abstractmethod
  def card_title(self, spec: Mapping[str, Any], task: str) -> str:
    """What the export's card title calls the model ("SQuAD", "sst-2 classification")."""

  def card_details(self, spec: Mapping[str, Any],
                   hf_values: Mapping[str, Any]) -> Dict[str, Any]:
    """Lines the export's card adds about the head (`hf_values`: config.json's)."""
    del spec, hf_values
    return {}

  def export_options(self, text: Mapping[str, Any],
                     max_seq_length: Optional[int]) -> Dict[str, Any]:
    """The options of the kind's SavedModel export after a conversion (`text`: uncased,
    keep_accents; `max_seq_length`: --max_seq_length)."""
    del text, max_seq_length
    return {}


class HeadConversion(Conversion):
  """The conversion of a kind with a task head.

  spec_class: the kind's spec class (the record's), which its converted spec is.
  released_scope: the scopes of its head's variables in the original's TF1 checkpoints
    (None: the original has no such head); `task_heads.is_task_head` reads them.
  released_shared_what: what the variables it shares with other heads are (`shares_released`;
    "sequence-summary"), for errors.
  """
  spec_class: type
  released_scope: Optional[re.Pattern] = None
  released_shared_what: str = ""

  # ---- the original's TF1 checkpoints (`task_heads.identify_head`) -----------------------------

  def owns_released(self, name: str) -> bool:
    """Whether the variable `name` belongs to this head alone (it tells the head is there)."""
    del name
    return False

  def shares_released(self, name: str) -> bool:
    """Whether this head reads the variable `name`, which other heads read too."""
    del name
    return False

  def identify_released(self, own: Sequence[str], shared: Sequence[str],
                        heads: Mapping[str, np.ndarray], config: XLNetConfig, source: str,
                        task_name: Optional[str], summary_type: Optional[str]) -> Head:
    """The head of a checkpoint whose variables of this head are `own` (sorted) and `shared`
    (`heads`: every task-head array by name), checked complete; a kind whose head the
    original has (`released_scope`) answers."""
    raise NotImplementedError(f"{type(self).__name__}: the original has no such head")

  def check_labels(self, head: Head, labels: Optional[Sequence[str]],
                   heads: Mapping[str, np.ndarray], source: str) -> None:
    """Raises when --labels do not fit the original's `head` (default: they do not apply)."""
    del head, labels, heads, source

  # ---- HuggingFace's heads (`hf_heads.identify_hf_head`) ---------------------------------------

  @abc.abstractmethod
  def read_hf_head(self, weights, architecture: str, labels: Optional[Sequence[str]],
                   notes: List[str]) -> Head:
    """The head of the `HFSourceWeights` `weights` (config.json and its head tensors),
    checked; its arrays put into `weights.heads` by our names; notes appended to `notes`."""

  def reads_without_architectures(self, weights) -> bool:
    """Whether head tensors this kind shares with others are its own when config.json has
    no architectures (or ValueError when they cannot tell)."""
    del weights
    return True

  # ---- our model and its spec (`importer`) ----------------------------------------------------

  @abc.abstractmethod
  def expected_shapes(self, head: Head, config: XLNetConfig) -> Shapes:
    """Name -> (shape, why) for every variable of `head`."""

  @abc.abstractmethod
  def build_model(self, head: Head, config: XLNetConfig, options):
    """Our model for `head` (every weight created); `options`: the `ConvertOptions`."""

  @abc.abstractmethod
  def head_variables(self, model, task_name: Optional[str]) -> Dict[str, Any]:
    """Released (or converted) name -> our variable, for the head of `model`; `task_name`:
    the head's `task_name`."""

  def check_options(self, options, max_seq_length: int) -> None:
    """Raises ValueError naming the flag when the `ConvertOptions` cannot work with this
    head at `max_seq_length`."""
    del options, max_seq_length

  @abc.abstractmethod
  def converted_spec(self, head: Head, options, settings: Dict[str, Any], weights,
                     described: Dict[str, Any], notes: List[str]):
    """(spec, task settings) of the converted model directory: `settings` holds
    max_seq_length, uncased and keep_accents (when true); what conversion.json says about
    the head is added to `described`, and notes to `notes`."""

  def load_model_dir(self, model_dir: str):
    model, spec = model_directory.load(model_dir, self.spec_class)
    return model, spec.to_values()


# ---- the original's checkpoints ----------------------------------------------------------------

def fail(source: str, message: str) -> ValueError:
  return ValueError(f"{source}: {message}")


def require_all(source: str, what: str, present: Sequence[str],
                required: Sequence[str]) -> None:
  missing = [name for name in required if name not in present]
  if missing:
    raise fail(source, f"incomplete {what}: it has {sorted(present)} but not {missing}")


# ---- HuggingFace's heads (`weights`: the `huggingface.HFSourceWeights`) -------------------------

def setting(weights, key: str):
  """config.json's `key`, else HuggingFace's default."""
  return weights.hf_config.get(key, HF_DEFAULTS.get(key))


def hf_labels(weights, key: str, outputs: int) -> Tuple[str, ...]:
  """id2label in id order, checked against the head's `outputs` (the rows of `key`)."""
  where = weights.config_path
  id2label = weights.hf_config.get("id2label")
  if id2label is None:            # HF's default: LABEL_0 .. LABEL_{num_labels - 1}
    count = num_labels(weights)
    if count != outputs:
      raise ValueError(
          f"{where}: no id2label, so HuggingFace's {count} default labels (num_labels "
          f"{count}), but the head's {key} has {outputs} outputs (shape "
          f"{list(weights.head_tensors[key].shape)}); expected id2label with one label per "
          f"output")
    return tuple(f"LABEL_{i}" for i in range(outputs))
  if not isinstance(id2label, dict):
    raise ValueError(f"{where}: id2label is {id2label!r}, expected an object mapping ids "
                     f"0..{outputs - 1} to label names")
  try:
    by_id = {int(k): v for k, v in id2label.items()}
  except (TypeError, ValueError):
    raise ValueError(f"{where}: id2label has keys {sorted(id2label)}, expected the ids "
                     f"0..{outputs - 1}") from None
  if len(by_id) != outputs:
    raise ValueError(
        f"{where}: id2label has {len(by_id)} labels {[by_id[i] for i in sorted(by_id)]}, but "
        f"the head's {key} has {outputs} outputs (shape "
        f"{list(weights.head_tensors[key].shape)}); expected one label per output")
  if sorted(by_id) != list(range(outputs)):
    raise ValueError(f"{where}: id2label has the ids {sorted(by_id)}, expected 0..{outputs - 1}")
  labels = tuple(str(by_id[i]) for i in range(outputs))
  if len(set(labels)) != len(labels) or not all(labels):
    raise ValueError(f"{where}: id2label {list(labels)}: expected distinct, non-empty names")
  return labels


def num_labels(weights) -> int:
  """HF's num_labels: the size of id2label, else num_labels, else its default 2."""
  id2label = weights.hf_config.get("id2label")
  if isinstance(id2label, dict) and id2label:
    return len(id2label)
  return int(weights.hf_config.get("num_labels", 2))


def given_labels(weights, tensor: str, outputs: int, labels: Optional[Sequence[str]]):
  """--labels if given (as many as the head's outputs), else config.json's id2label
  (checked against the head either way)."""
  found = hf_labels(weights, tensor, outputs)
  if labels is None:
    return found
  if len(labels) != outputs:
    raise ValueError(f"--labels {list(labels)}: {len(labels)} labels, but the head's "
                     f"{tensor} has {outputs} outputs")
  return tuple(labels)


def no_labels(labels: Optional[Sequence[str]], architecture: str) -> None:
  if labels is not None:
    raise ValueError(f"--labels {list(labels)}: a {architecture} head has no labels")


def check_hf_shapes(weights, expected: Shapes) -> None:
  """Raises naming the first tensor (HF name) whose shape is not `expected`, or that is
  missing."""
  present = sorted(weights.head_tensors)
  for key, (shape, why) in expected.items():
    if key not in weights.head_tensors:
      raise ValueError(f"{weights.path}: incomplete task head: no {key} (it has "
                       f"{present}); expected {sorted(expected)}")
    found = list(weights.head_tensors[key].shape)
    if found != shape:
      raise ValueError(f"{weights.path}: tensor {key} has shape {found}, expected {shape} "
                       f"({why})")
  extra = sorted(set(present) - set(expected))
  if extra:
    raise ValueError(f"{weights.path}: tensor(s) {extra} do not belong to this head "
                     f"(expected {sorted(expected)}; check config.json's summary_use_proj)")


def rows(weights, key: str, d: int) -> int:
  """The outputs of the Linear weight `key` [out, d_model], its input width checked."""
  tensor = weights.head_tensors.get(key)
  if tensor is None:
    raise ValueError(f"{weights.path}: incomplete task head: no {key} (it has "
                     f"{sorted(weights.head_tensors)})")
  if tensor.ndim != 2 or tensor.shape[1] != d or tensor.shape[0] < 1:
    raise ValueError(f"{weights.path}: tensor {key} has shape {list(tensor.shape)}, expected "
                     f"[outputs, {d}] (torch Linear [out, in]; d_model {d} from "
                     f"config.json)")
  return int(tensor.shape[0])


def linear(weights, key: str, ours: str, bias: bool = True) -> None:
  """HF Linear `key` (weight [out, in], bias [out]) -> `ours`/kernel [in, out], /bias."""
  weights.heads[f"{ours}/kernel"] = np.ascontiguousarray(
      weights.head_tensors[f"{key}.weight"].T)
  if bias:
    weights.heads[f"{ours}/bias"] = weights.head_tensors[f"{key}.bias"]


# ---- our weights -> HuggingFace's tensors ------------------------------------------------------

def value(variable) -> np.ndarray:
  return np.asarray(variable.numpy(), dtype=np.float32)


def dense(prefix: str, layer, bias: bool = True) -> List[Tuple[str, np.ndarray]]:
  """A Keras Dense layer as a torch Linear: weight [out, in] (the kernel transposed)."""
  tensors = [(f"{prefix}.weight", value(layer.kernel).T)]
  if bias:
    tensors.append((f"{prefix}.bias", value(layer.bias)))
  return tensors
