"""The steps every export shares: the export directory checked, the SavedModel written whole.

`export_model_dir` is the export of a fine-tuned model directory, whatever its kind:

  check_export_dir    the export directory is usable, and new or empty (before any work)
  model_directory     the model and its spec (`model_directory.load` with the kind's spec
                      class), the SentencePiece model beside it
  serving(...)        the kind's serving module (a `tf.Module` with `signatures()`)
  save                the SavedModel, its card and export.json (`export_card`), written
                      under a temporary name and renamed when complete

Each kind's export module calls it with its spec class, its serving module and its card
(`classifier_export`, `tagger_export`, `squad_export`, `race_export`, `ranker_export`);
the exports that take their model otherwise (`squad_export.export_squad`, given the
model; `encoder_export`, a pretrained directory) call `check_export_dir` and `save`.

  >>> export_model_dir("runs/brown/final", "exports/brown", TaggerSpec, TaggerServing,
  ...                  card=tagger_card)
"""

import os
from typing import Any, Callable, Dict, Optional

import tensorflow as tf

from xlnet_tf import model_directory
from xlnet_tf import paths
from xlnet_tf.serving import export_card


def check_export_dir(export_dir: str, flag: str = "--export_dir") -> None:
  """Before any work: `export_dir` is a usable location (`paths.check_output_dir`) that
  does not exist or is empty; an export never overwrites one (FileExistsError)."""
  paths.check_output_dir(export_dir, flag)
  if tf.io.gfile.exists(export_dir) and tf.io.gfile.listdir(export_dir):
    raise FileExistsError(f"{flag} {export_dir} is not empty; an export never overwrites: "
                          f"give a new directory")


def remove_empty_export_dir(export_dir: str) -> None:
  """Makes way for the complete export: `export_dir` must not exist or be an empty
  directory, which is removed. A local one is removed with `os.rmdir`, which refuses a
  directory someone has filled since `check_export_dir` (FileExistsError); a URL's (no
  such call) is checked empty again, then removed."""
  if paths.is_url(export_dir):
    if tf.io.gfile.exists(export_dir):
      check_export_dir(export_dir)               # still empty: nothing of anyone's is lost
      tf.io.gfile.rmtree(export_dir)
    return
  if os.path.lexists(export_dir):
    try:
      os.rmdir(export_dir)                       # only ever an empty directory
    except OSError as e:
      raise FileExistsError(f"--export_dir {export_dir} is not empty (any more) or not a "
                            f"directory ({e.strerror}); an export never overwrites: give "
                            f"a new directory") from None


def save(module: tf.Module, export_dir: str, model_dir: str, model,
         card: Optional[export_card.ExportCard] = None) -> str:
  """The export, whole or not at all: `module` with its `signatures()` and, with `card`,
  its README.md (`export_card.write`) and export.json (`export_card.write_description`)
  are written under the temporary name `paths.atomic_output` gives
  (`<export_dir>.partial-<pid>-<n>@<host>`; those that dead processes left are removed
  first), which is then renamed to `export_dir` (checked empty by `check_export_dir`
  first; `remove_empty_export_dir` just before the rename). Whatever fails on the way
  (saving, the parity, the card, the rename) removes the temporary directory and leaves
  `export_dir` as it was: an existing `export_dir` is never removed with its contents.
  Returns `export_dir`."""
  export_dir = export_dir.rstrip("/")
  with paths.atomic_output(export_dir) as partial:
    tf.saved_model.save(module, partial, signatures=module.signatures())
    if card is not None:
      export_card.write(partial, model_dir, model, card)
      export_card.write_description(partial, card)
    remove_empty_export_dir(export_dir)
  return export_dir


def export_model_dir(model_dir: str, export_dir: str,
                     spec_class: type,
                     serving: Callable[[Any, Any, str], tf.Module],
                     spiece_model: Optional[str] = None,
                     spiece_hint: Optional[str] = None,
                     card: Optional[Callable[[tf.Module], export_card.ExportCard]] = None,
                     build_options: Optional[Callable[[Any], Dict[str, Any]]] = None
                     ) -> str:
  """Exports a fine-tuned model's directory as a SavedModel; returns export_dir.

  `export_dir` is checked first (`check_export_dir`: a file, under a file, not writable,
  not empty), then `model_directory.load(model_dir, spec_class)` gives (model, spec) and
  `serving(model, spec, spiece_model)` the module whose `signatures()` are saved (`save`).
  `spiece_model` defaults to `model_dir/spiece.model`; a missing one raises
  FileNotFoundError (`spiece_hint`, when given, names how to pass another). `card(module)`
  describes the export for its model card (`export_card.write`: README.md beside the
  SavedModel, with the parity measured on the reloaded SavedModel). `build_options(spec)`
  gives the options the model is built with (`model_directory.load`'s, e.g. the serving
  memory).
  """
  check_export_dir(export_dir)
  options = {}
  if build_options is not None and tf.io.gfile.exists(os.path.join(model_dir,
                                                                   spec_class.FILE)):
    options = build_options(spec_class.from_values(
        model_directory.read_spec(model_dir, spec_class.FILE), source=model_dir))
  model, spec = model_directory.load(model_dir, spec_class, **options)
  spiece_model = spiece_model or os.path.join(model_dir, model_directory.SPIECE_FILE)
  if not tf.io.gfile.exists(spiece_model):
    hint = f" (pass {spiece_hint})" if spiece_hint else ""
    raise FileNotFoundError(f"{spiece_model}: the SentencePiece model to put in the "
                            f"SavedModel is missing{hint}")
  module = serving(model, spec, spiece_model)
  return save(module, export_dir, model_dir, model, None if card is None else card(module))
