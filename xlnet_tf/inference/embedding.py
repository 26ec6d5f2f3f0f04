"""Document embeddings of text files: the library of `xlnet-embed` (experiments/embed.py).

One vector per input line (`unit="line"`) or per whole file (`unit="file"`), texts of any
length, through the encoder's `serving_document` (`serving.encoder_export`): either a
SavedModel export (`saved_model=`) or a pretrained model directory (`model_dir=`), for
which the same serving module is built in this process, so both give the same numbers.

  >>> texts = read_texts(["speeches.txt"], unit="line")        # checked before the model
  >>> embedder = Embedder.from_model_dir("runs/pretrain/final", max_seq_length=128)
  >>> vectors = embed(embedder, texts.texts, pooling="mean")   # float32 [N, D]

`embed_files` is the command's whole run: the checks, the model, the vectors, the output.

Pooling: "cls", the content stream at the document's final <cls> (serving_document's
`embedding`); "mean", the average of the text's own pieces' vectors (`token_embeddings`
under `token_mask`; a text without pieces has none and is refused, naming it).

Outputs (`write_outputs`, written under a temporary name in the same directory and renamed
when complete; an existing output is refused unless `overwrite`):
  .npy   float32 [N, D], row i the vector of text i (line i, or file i).
  .npz   (`per_token`) `embeddings` float32 [N, D] as above; `token_embeddings` float32
         [P, D], every text's pieces' vectors concatenated in order; `token_ids` int32 [P],
         their SentencePiece ids; `offsets` int64 [N + 1]: text i's pieces are rows
         offsets[i]:offsets[i + 1].
"""

import dataclasses
import os
import sys
import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

from xlnet_tf import model_directory
from xlnet_tf import paths
from xlnet_tf.serving import encoder_export

UNITS = ("line", "file")
POOLINGS = ("cls", "mean")
# Texts per call of serving_document; the texts are sorted by length first, so a batch
# holds texts of about the same number of segments.
BATCH_SIZE = 16


class EmbedInputError(ValueError):
  """A bad input, output or model location; the message is one line naming it."""


@dataclasses.dataclass
class Texts:
  """The texts to embed and where each comes from ("FILE line N" or "FILE")."""
  texts: List[str]
  sources: List[str]


def read_texts(inputs: Sequence[str], unit: str = "line") -> Texts:
  """The texts of `inputs`: every line (without its line break; blank lines included, so
  row i is line i) or every whole file. Raises EmbedInputError for a missing file, a
  directory, an empty file, or invalid UTF-8 (naming the line)."""
  if unit not in UNITS:
    raise EmbedInputError(f"--unit {unit!r}: expected one of {', '.join(UNITS)}")
  if not inputs:
    raise EmbedInputError("--input: no file given")
  texts, sources = [], []
  for path in inputs:
    if not os.path.exists(path):
      raise EmbedInputError(f"--input {path}: no such file")
    if os.path.isdir(path):
      raise EmbedInputError(f"--input {path}: is a directory; expected a text file")
    with open(path, "rb") as f:
      data = f.read()
    if not data.strip():
      raise EmbedInputError(f"--input {path}: the file is empty; expected UTF-8 text")
    lines = data.split(b"\n")
    if lines[-1] == b"":                        # the last line's line break
      lines.pop()
    decoded = []
    for number, line in enumerate(lines, start=1):
      try:
        decoded.append(line.decode("utf-8").rstrip("\r"))
      except UnicodeDecodeError as e:
        raise EmbedInputError(f"--input {path} line {number}: invalid UTF-8 (byte "
                              f"{e.start + 1} of the line)") from None
    if unit == "file":
      texts.append("\n".join(decoded))
      sources.append(path)
    else:
      texts.extend(decoded)
      sources.extend(f"{path} line {n}" for n in range(1, len(decoded) + 1))
  return Texts(texts, sources)


def check_model_dir(model_dir: str) -> None:
  """A pretrained model directory: xlnet_config.json, model.ckpt and spiece.model.
  Raises EmbedInputError naming what is missing."""
  if not os.path.isdir(model_dir):
    raise EmbedInputError(f"--model_dir {model_dir}: not a directory")
  for name in (model_directory.CONFIG_FILE, model_directory.CHECKPOINT_PREFIX + ".index",
               model_directory.SPIECE_FILE):
    if not os.path.exists(os.path.join(model_dir, name)):
      raise EmbedInputError(f"--model_dir {model_dir}: no {name}; expected a pretrained "
                            f"model directory (xlnet-convert, pretraining's final/)")


def check_saved_model(export_dir: str) -> None:
  """A SavedModel with the signature serving_document (read from saved_model.pb, without
  loading it). Raises EmbedInputError naming what is missing."""
  pb = os.path.join(export_dir, "saved_model.pb")
  if not os.path.isfile(pb):
    raise EmbedInputError(f"--saved_model {export_dir}: no saved_model.pb; expected an "
                          f"encoder export (xlnet-convert --saved_model of a pretrained "
                          f"model)")
  proto = saved_model_pb2.SavedModel()
  with open(pb, "rb") as f:
    proto.ParseFromString(f.read())
  names = sorted({name for graph in proto.meta_graphs for name in graph.signature_def
                  if not name.startswith("__")})          # not the internal init op
  if encoder_export.DOCUMENT_SIGNATURE not in names:
    raise EmbedInputError(f"--saved_model {export_dir}: no signature "
                          f"{encoder_export.DOCUMENT_SIGNATURE} (it has "
                          f"{', '.join(names) or 'none'}); expected an encoder export of "
                          f"this version")


def default_output(inputs: Sequence[str], per_token: bool) -> str:
  """INPUT.npy (INPUT.npz with per_token) for one input file."""
  if len(inputs) != 1:
    raise EmbedInputError("--output: required with several --input files")
  return inputs[0] + (".npz" if per_token else ".npy")


def check_output(path: str, per_token: bool, overwrite: bool = False) -> None:
  """The output's name fits its format (.npz with per_token, else .npy), it does not exist
  (unless `overwrite`) and its directory is writable."""
  suffix = ".npz" if per_token else ".npy"
  if not path.endswith(suffix):
    raise EmbedInputError(f"--output {path}: expected a name ending in {suffix}"
                          f"{' (--per_token writes an .npz archive)' if per_token else ''}")
  if os.path.isdir(path):
    raise EmbedInputError(f"--output {path}: is a directory; expected a file name")
  if os.path.lexists(path) and not overwrite:
    raise EmbedInputError(f"--output {path}: exists; never overwritten (give a new name, "
                          f"or --overwrite)")
  directory = os.path.dirname(os.path.abspath(path))
  if os.path.exists(directory) and not os.path.isdir(directory):
    raise EmbedInputError(f"--output {path}: {directory} is a file, not a directory")
  if not os.path.isdir(directory):
    raise EmbedInputError(f"--output {path}: the directory {directory} does not exist")
  if not os.access(directory, os.W_OK | os.X_OK):
    raise EmbedInputError(f"--output {path}: cannot write into {directory}")


class Embedder:
  """serving_document as a function: text string [B] -> its dict of outputs (numpy)."""

  def __init__(self, document_fn: Callable[..., Dict[str, tf.Tensor]], source: str):
    self._document_fn = document_fn
    self.source = source

  @classmethod
  def from_saved_model(cls, export_dir: str) -> "Embedder":
    loaded = tf.saved_model.load(export_dir)
    embedder = cls(loaded.signatures[encoder_export.DOCUMENT_SIGNATURE], export_dir)
    embedder._loaded = loaded                   # keeps the resources alive
    return embedder

  @classmethod
  def from_model_dir(cls, model_dir: str, max_seq_length: int = 128,
                     document_mem_len: Optional[int] = None) -> "Embedder":
    """The pretrained directory's serving module (`encoder_export.load_encoder_serving`,
    what an export saves), its serving_document traced in this process."""
    module = encoder_export.load_encoder_serving(model_dir, max_seq_length,
                                                 document_mem_len=document_mem_len)
    function = module.signatures()[encoder_export.DOCUMENT_SIGNATURE]
    embedder = cls(function, model_dir)
    embedder._module = module
    return embedder

  def __call__(self, texts: Sequence[str]) -> Dict[str, np.ndarray]:
    outputs = self._document_fn(text=tf.constant(list(texts), tf.string))
    return {key: value.numpy() for key, value in outputs.items()}


class ProgressBar:
  """A one-line progress bar on stderr (redrawn at most every 0.2 s, and at the end)."""

  def __init__(self, total: int, label: str = "embedding", stream=None):
    self.total, self.label, self.done = total, label, 0
    self.stream = stream or sys.stderr
    self._last = 0.0

  def update(self, count: int) -> None:
    self.done += count
    now = time.monotonic()
    if now - self._last < 0.2 and self.done < self.total:
      return
    self._last = now
    filled = int(30 * self.done / max(self.total, 1))
    self.stream.write(f"\r{self.label} [{'#' * filled}{'.' * (30 - filled)}] "
                      f"{self.done}/{self.total} texts")
    if self.done >= self.total:
      self.stream.write("\n")
    self.stream.flush()


def embed(embedder: Embedder, texts: Sequence[str], pooling: str = "cls",
          per_token: bool = False, batch_size: int = BATCH_SIZE,
          sources: Optional[Sequence[str]] = None,
          progress: Optional[ProgressBar] = None) -> Dict[str, np.ndarray]:
  """The vectors of `texts`, in order: `embeddings` float32 [N, D] (pooled), and with
  per_token `token_embeddings` [P, D], `token_ids` [P], `offsets` [N + 1] (see the module
  docstring). Raises EmbedInputError for mean pooling of a text without pieces (naming its
  source)."""
  if pooling not in POOLINGS:
    raise EmbedInputError(f"--pooling {pooling!r}: expected one of {', '.join(POOLINGS)}")
  order = sorted(range(len(texts)), key=lambda i: len(texts[i]))   # similar lengths
  pooled: List[Optional[np.ndarray]] = [None] * len(texts)
  tokens: List[Optional[np.ndarray]] = [None] * len(texts)
  token_ids: List[Optional[np.ndarray]] = [None] * len(texts)
  for start in range(0, len(order), batch_size):
    rows = order[start:start + batch_size]
    out = embedder([texts[i] for i in rows])
    for k, i in enumerate(rows):
      count = int(out["token_mask"][k].sum())
      own = out["token_embeddings"][k, :count]                            # [n, D]
      if pooling == "mean":
        if count == 0:
          where = sources[i] if sources else f"text {i}"
          raise EmbedInputError(f"{where}: no text to average (--pooling mean); remove the "
                                f"blank line or use --pooling cls")
        pooled[i] = own.mean(axis=0)
      else:
        pooled[i] = out["embedding"][k]
      if per_token:
        tokens[i], token_ids[i] = own, out["token_ids"][k, :count]
    if progress is not None:
      progress.update(len(rows))
  dim = pooled[0].shape[-1] if texts else 0
  result = {"embeddings": np.stack(pooled).astype(np.float32) if texts
            else np.zeros([0, dim], np.float32)}
  if per_token:
    lengths = [len(t) for t in token_ids]
    result["offsets"] = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    result["token_embeddings"] = np.concatenate(tokens).astype(np.float32)
    result["token_ids"] = np.concatenate(token_ids).astype(np.int32)
  return result


def write_outputs(path: str, outputs: Dict[str, np.ndarray], per_token: bool,
                  overwrite: bool = False) -> str:
  """Writes `outputs` (`embed`'s) to `path` (.npz with per_token, else the embeddings as
  .npy) under a temporary name in the same directory, then gives it the name `path`: a
  hard link that fails if `path` has appeared meanwhile (FileExistsError), unless
  `overwrite` (then a rename over it)."""
  paths.remove_stale_partials(path)
  partial = paths.partial_path(path)
  try:
    with paths.reporting_disk_full(path, [partial]):
      with open(partial, "wb") as f:
        if per_token:
          np.savez(f, **outputs)
        else:
          np.save(f, outputs["embeddings"])
      if overwrite:
        os.replace(partial, path)
      else:
        try:
          os.link(partial, path)
        except FileExistsError:
          raise EmbedInputError(f"--output {path}: exists (written meanwhile); never "
                                f"overwritten") from None
  finally:
    if os.path.exists(partial):
      os.remove(partial)
  return path


def embed_files(inputs: Sequence[str], output: Optional[str] = None, *,
                model_dir: Optional[str] = None, saved_model: Optional[str] = None,
                unit: str = "line", pooling: str = "cls", per_token: bool = False,
                max_seq_length: int = 128, mem_len: Optional[int] = None,
                batch_size: int = BATCH_SIZE, overwrite: bool = False,
                progress: bool = True) -> Tuple[str, Dict[str, np.ndarray]]:
  """What `xlnet-embed` does: the texts of `inputs` (one per line, or per file: `unit`)
  embedded by the pretrained model directory `model_dir` (segments of `max_seq_length`
  read through a memory of `mem_len` positions) or by the encoder export `saved_model`,
  written to `output` (default: `default_output`). Every input, the model's location and
  the output are checked before the model is loaded (EmbedInputError naming the flag);
  `progress`: a bar on stderr when there is more than one batch.

  Returns:
    (the output's path, `embed`'s outputs).
  """
  if bool(model_dir) == bool(saved_model):
    raise EmbedInputError("give one of --model_dir and --saved_model")
  texts = read_texts(inputs, unit)
  if model_dir:
    check_model_dir(model_dir)
  else:
    check_saved_model(saved_model)
  output = output or default_output(inputs, per_token)
  check_output(output, per_token, overwrite)
  if model_dir:
    embedder = Embedder.from_model_dir(model_dir, max_seq_length, mem_len)
  else:
    embedder = Embedder.from_saved_model(saved_model)
  batches = -(-len(texts.texts) // batch_size)
  bar = ProgressBar(len(texts.texts)) if progress and batches > 1 else None
  outputs = embed(embedder, texts.texts, pooling, per_token, batch_size, texts.sources, bar)
  write_outputs(output, outputs, per_token, overwrite)
  return output, outputs
