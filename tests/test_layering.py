"""The stack's direction: serving and the model directory import no training or task
code (a SavedModel export and a model directory are read without the trainer), and every
contract has one home."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _loaded_modules(*modules):
  code = ("import sys\n" + "".join(f"import {m}\n" for m in modules) +
          "print('\\n'.join(sorted(m for m in sys.modules if m.startswith('xlnet_tf'))))")
  done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                        text=True, check=True)
  return done.stdout.split()


def test_serving_and_the_model_directory_import_no_training_code():
  loaded = _loaded_modules("xlnet_tf.serving.export", "xlnet_tf.serving.squad_export",
                           "xlnet_tf.serving.race_export", "xlnet_tf.serving.tagger_export",
                           "xlnet_tf.serving.encoder_export", "xlnet_tf.model_directory")
  assert "xlnet_tf.serving.export" in loaded and "xlnet_tf.model_directory" in loaded
  above = [m for m in loaded if m.startswith(("xlnet_tf.training", "xlnet_tf.tasks"))]
  assert not above, above


def test_every_task_spec_file_is_named_once():
  """classifier.json, squad.json, race.json, tagger.json and model.ckpt are spelled only
  in model_directory.py (the other modules use its constants)."""
  spelled = {}
  for base, _, files in os.walk(os.path.join(ROOT, "xlnet_tf")):
    for name in files:
      if name.endswith(".py"):
        path = os.path.join(base, name)
        text = open(path, encoding="utf-8").read()
        for spec in ('"classifier.json"', '"squad.json"', '"race.json"', '"tagger.json"',
                     '"model.ckpt"'):
          if spec in text:
            spelled.setdefault(spec, []).append(os.path.relpath(path, ROOT))
  assert len(spelled) == 5, spelled
  assert all(paths == ["xlnet_tf/model_directory.py"] for paths in spelled.values()), spelled
