"""Presets: the released XLNet models by name, a table (a leaf: it imports no model code).

Each `Preset` names a released archive: its URL, the directory it unpacks to, its config.
`xlnet_tf.hub` resolves a preset name to a local model directory (download once into a
cache, verify, convert) and builds models from it:

  >>> model = xlnet_tf.load_pretrained("xlnet_base_cased")          # encoder + LM head
  >>> clf = xlnet_tf.from_preset("xlnet_large_cased", XLNetClassifier, num_classes=2)

Other archives (a mirror, a model of your own in the released layout) are added with
`register_preset(Preset(...))`.
"""

import dataclasses
import os
import re
from typing import Dict, List, Tuple
import urllib.parse

from xlnet_tf import model_card
from xlnet_tf.configs import XLNetConfig
from xlnet_tf.released_names import RELEASED_FILES

_RELEASED_URL = "https://storage.googleapis.com/xlnet/released_models/"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


@dataclasses.dataclass(frozen=True)
class Preset:
  """A released (or released-layout) archive and what it must hold.

  Attributes:
    name: the preset's name (also its cache entry's directory name).
    url: where the zip archive is downloaded from (http, https or file).
    directory: the archive's top-level directory, holding `files`.
    config: the architecture of its xlnet_config.json (the eight released keys are
      compared).
    description: one line for the model card and `preset_names`' callers.
    licence: the licence of the weights (the model card's).
    files: the archive's files, exactly (under `directory`).
  """
  name: str
  url: str
  directory: str
  config: XLNetConfig
  description: str = ""
  licence: str = model_card.RELEASED_LICENCE
  files: Tuple[str, ...] = RELEASED_FILES

  def __post_init__(self):
    if not _NAME.match(self.name):
      raise ValueError(f"preset name {self.name!r}: expected letters, digits, '_', '.', '-' "
                       f"(it names the cache entry's directory)")
    if not self.archive_name:
      raise ValueError(f"preset {self.name}: url {self.url!r} names no file")
    if not self.directory or "/" in self.directory.strip("/"):
      raise ValueError(f"preset {self.name}: directory {self.directory!r}: expected the "
                       f"archive's one top-level directory")

  @property
  def archive_name(self) -> str:
    """The archive's file name (the last part of the URL's path)."""
    return os.path.basename(urllib.parse.urlparse(self.url).path)

  def expected_members(self) -> List[str]:
    return [f"{self.directory.strip('/')}/{name}" for name in self.files]


# The released models of zihangdai/xlnet (README, "Pre-trained models"). The configs are
# their xlnet_config.json files.
_PRESETS: Dict[str, Preset] = {}


def register_preset(preset: Preset, overwrite: bool = False) -> Preset:
  """Adds `preset` to the table (`overwrite`: replace one of the same name)."""
  if preset.name in _PRESETS and not overwrite:
    raise ValueError(f"preset {preset.name!r} exists; pass overwrite=True to replace it")
  _PRESETS[preset.name] = preset
  return preset


def unregister_preset(name: str) -> None:
  """Removes the preset `name` from the table (its cache entry stays)."""
  get_preset(name)
  del _PRESETS[name]


def preset_names() -> List[str]:
  return sorted(_PRESETS)


def get_preset(name: str) -> Preset:
  """The preset `name`, or ValueError listing the known names."""
  if name not in _PRESETS:
    raise ValueError(f"unknown preset {name!r}; the known presets are {preset_names()}")
  return _PRESETS[name]


register_preset(Preset(
    name="xlnet_base_cased", url=_RELEASED_URL + "cased_L-12_H-768_A-12.zip",
    directory="xlnet_cased_L-12_H-768_A-12",
    config=XLNetConfig(n_layer=12, d_model=768, n_head=12, d_head=64, d_inner=3072,
                       ff_activation="gelu", untie_r=True, n_token=32000),
    description="XLNet-Base, cased (the released model: 12 layers, 768 hidden, 12 heads)"))
register_preset(Preset(
    name="xlnet_large_cased", url=_RELEASED_URL + "cased_L-24_H-1024_A-16.zip",
    directory="xlnet_cased_L-24_H-1024_A-16",
    config=XLNetConfig(n_layer=24, d_model=1024, n_head=16, d_head=64, d_inner=4096,
                       ff_activation="gelu", untie_r=True, n_token=32000),
    description="XLNet-Large, cased (the released model: 24 layers, 1024 hidden, 16 heads)"))
