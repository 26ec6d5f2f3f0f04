"""The weight files of a HuggingFace directory, read as float32 numpy arrays by HF name:
model.safetensors, a sharded safetensors index (model.safetensors.index.json and its
shards), or pytorch_model.bin (which needs torch).

safetensors files are read without torch (the safetensors package's numpy reader; BF16
tensors, which numpy has no type for, from their bytes), after checking that each file is
as long as its header says. A tensor holding NaN or an infinity refuses the file.
"""

import json
import os
from typing import Any, Dict, Mapping, Tuple

import numpy as np

from xlnet_tf import model_directory

WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin")
# Without torch and transformers (pyproject.toml's [huggingface] extra) the parity is not
# measured, and a pytorch_model.bin cannot be read: what to install.
INSTALL_HUGGINGFACE = "install xlnet_tf[huggingface]"


def read_tensors(directory: str) -> Tuple[Dict[str, np.ndarray], str]:
  """All tensors of the directory's weight file(s) as float32 numpy arrays.

  Raises:
    FileNotFoundError: a shard listed in the index is missing (naming both).
    ValueError: a weight file (or the index) is truncated or corrupt, naming the file.
    model_directory.NonFiniteError: a tensor holds NaN or an infinity (naming the file
      and the tensor).
  """
  single = os.path.join(directory, "model.safetensors")
  index = os.path.join(directory, "model.safetensors.index.json")
  binary = os.path.join(directory, "pytorch_model.bin")
  if os.path.isfile(single):
    return _read_safetensors([single]), single
  if os.path.isfile(index):
    paths = [os.path.join(directory, shard) for shard in _index_shards(index)]
    for path in paths:
      if not os.path.isfile(path):
        raise FileNotFoundError(f"{index}: lists {os.path.basename(path)}, which is missing")
    return _read_safetensors(paths, index), index
  try:
    import torch  # pylint: disable=g-import-not-at-top
  except ImportError:
    raise ImportError(f"{binary}: reading pytorch_model.bin needs PyTorch "
                      f"({INSTALL_HUGGINGFACE}); a model.safetensors file needs only "
                      f"the safetensors package") from None
  try:
    state = torch.load(binary, map_location="cpu", weights_only=True)
  except Exception as e:  # pylint: disable=broad-except  (torch raises many kinds)
    detail = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    raise ValueError(f"{binary}: cannot read the PyTorch weights; the file is truncated or "
                     f"corrupt ({os.path.getsize(binary):,} bytes; {detail}). Download it "
                     f"again") from None
  if not isinstance(state, dict):
    raise ValueError(f"{binary}: holds a {type(state).__name__}, expected a state dict "
                     f"(name -> tensor)")
  tensors = {k: v.detach().to(torch.float32).numpy() for k, v in state.items()}
  _check_finite(tensors, binary)
  return tensors, binary


def _check_finite(tensors: Mapping[str, np.ndarray], path: str) -> None:
  """Raises `model_directory.NonFiniteError` naming `path` and (up to three) tensors of
  `tensors` that hold NaN or an infinity."""
  bad = sorted(name for name, value in tensors.items() if not np.all(np.isfinite(value)))
  if bad:
    raise model_directory.NonFiniteError(
        f"{path}: {len(bad)} tensor(s) hold NaN or infinite values (e.g. "
        f"{', '.join(bad[:3])}); nothing was written")


def _index_shards(index: str):
  """The sorted shard file names of a sharded safetensors index."""
  try:
    with open(index, encoding="utf-8") as f:
      weight_map = json.load(f)["weight_map"]
    return sorted(set(weight_map.values()))
  except (ValueError, KeyError, TypeError, AttributeError) as e:
    reason = "not valid JSON" if isinstance(e, ValueError) else "no 'weight_map' object"
    raise ValueError(f"{index}: corrupt sharded-safetensors index ({reason}: {e}); expected "
                     f'{{"weight_map": {{tensor name: shard file}}}}') from None


def _safetensors_header(path: str, index: str = None) -> Tuple[int, Dict[str, Any]]:
  """(header length, header) of the safetensors file `path`, checked complete.

  The layout is an 8-byte little-endian header length N, N bytes of JSON header giving every
  tensor's dtype, shape and byte range (`data_offsets`, relative to the end of the header),
  then the data: a file shorter than its header says is truncated (an interrupted download
  or copy); ValueError naming `path` (and the `index` listing it) if it is not complete.
  """
  listed = f" (listed in {index})" if index else ""
  size = os.path.getsize(path)
  with open(path, "rb") as f:
    head = f.read(8)
    length = int.from_bytes(head, "little") if len(head) == 8 else None
    if length is None or length > size - 8:
      raise ValueError(
          f"{path}{listed}: truncated or corrupt safetensors file: {size:,} bytes, too short "
          f"for its header{'' if length is None else f' ({length:,} bytes)'}. Download it "
          f"again")
    try:
      header = json.loads(f.read(length))
      end = max([int(v["data_offsets"][1]) for k, v in header.items() if k != "__metadata__"],
                default=0)
    except (ValueError, TypeError, KeyError, IndexError, AttributeError):
      raise ValueError(f"{path}{listed}: corrupt safetensors file: its header is not a valid "
                       f"safetensors header. Download it again") from None
  expected = 8 + length + end
  if size < expected:
    raise ValueError(f"{path}{listed}: truncated safetensors file: {size:,} bytes, its header "
                     f"describes {expected:,} bytes. Download it again")
  return length, header


def _bf16_tensor(path: str, header_length: int, key: str, entry: Mapping[str, Any],
                 listed: str) -> np.ndarray:
  """A BF16 tensor of a safetensors file as float32 (exact: bfloat16 is the upper half of a
  float32), read from its bytes (numpy has no bfloat16, so safetensors' numpy reader
  cannot)."""
  try:
    shape = [int(n) for n in entry["shape"]]
    begin, end = (int(n) for n in entry["data_offsets"])
  except (KeyError, TypeError, ValueError):
    raise ValueError(f"{path}{listed}: corrupt safetensors file: tensor {key} has no valid "
                     f"shape and data_offsets in its header. Download it again") from None
  count = int(np.prod(shape, dtype=np.int64))
  if end - begin != 2 * count:
    raise ValueError(f"{path}{listed}: corrupt safetensors file: tensor {key} (BF16, shape "
                     f"{shape}) has {end - begin:,} bytes, expected {2 * count:,}. Download "
                     f"it again")
  with open(path, "rb") as f:
    f.seek(8 + header_length + begin)
    data = f.read(end - begin)
  halves = np.frombuffer(data, dtype="<u2").astype(np.uint32)
  return (halves << 16).view(np.float32).reshape(shape)


def _read_safetensors(paths, index: str = None) -> Dict[str, np.ndarray]:
  """Every tensor of the safetensors files `paths` as float32 (BF16 ones converted from
  their bytes, `_bf16_tensor`).

  Raises:
    ValueError naming the file (and the tensor and its dtype, for a dtype that does not
    convert to float32): truncated or corrupt.
  """
  from safetensors import SafetensorError  # pylint: disable=g-import-not-at-top
  from safetensors import safe_open  # pylint: disable=g-import-not-at-top
  tensors = {}
  for path in paths:
    listed = f" (listed in {index})" if index else ""
    length, header = _safetensors_header(path, index)
    read = {}
    try:
      with safe_open(path, framework="np") as f:
        for key in f.keys():
          dtype = header.get(key, {}).get("dtype")
          if dtype == "BF16":
            read[key] = _bf16_tensor(path, length, key, header[key], listed)
            continue
          try:
            read[key] = np.asarray(f.get_tensor(key), dtype=np.float32)
          except (TypeError, ValueError) as e:
            raise ValueError(f"{path}{listed}: tensor {key} has dtype {dtype}, which cannot "
                             f"be read as float32 ({e}); expected F32, F16, BF16 or F64") \
                from None
    except (SafetensorError, OSError) as e:
      raise ValueError(f"{path}{listed}: cannot read the safetensors file; it is corrupt "
                       f"({e}). Download it again") from None
    _check_finite(read, path)
    tensors.update(read)
  return tensors
