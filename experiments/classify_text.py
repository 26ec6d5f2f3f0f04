r"""Classifies raw sentences with an exported SavedModel, using nothing of xlnet_tf.

  xlnet-classify --saved_model=export/sentiment \
      "A gripping, beautifully acted film." "Ninety minutes of tedium."

(`python -m experiments.classify_text ...` or `python experiments/classify_text.py ...`
works the same from a checkout; the file alone is enough where the SavedModel is served.)

Only `tensorflow` and `tensorflow_text` (for the in-graph SentencePiece ops) are imported,
so this runs wherever the SavedModel is served. The `serving_default` signature of
`experiments.export_saved_model` takes `text_a` (and `text_b` for pair tasks) and returns
`probabilities` [B, C] and `label` [B] (the label's name, e.g. b"positive").
Prints one JSON object per sentence with `--json`, else a table.
"""

import argparse
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402
import tensorflow_text  # noqa: E402,F401  (registers the SentencePiece ops)


def classify(saved_model_dir, texts_a, texts_b=None):
  """[{text, label, probabilities}] for each sentence."""
  serve = tf.saved_model.load(saved_model_dir).signatures["serving_default"]
  inputs = {"text_a": tf.constant(texts_a, tf.string)}
  if texts_b is not None:
    inputs["text_b"] = tf.constant(texts_b, tf.string)
  outputs = serve(**inputs)
  labels = [label.decode() for label in outputs["label"].numpy()]
  probabilities = outputs["probabilities"].numpy().tolist()
  return [{"text": text, "label": label, "probabilities": [round(p, 4) for p in probs]}
          for text, label, probs in zip(texts_a, labels, probabilities)]


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--saved_model", required=True, help="An exported SavedModel directory.")
  parser.add_argument("--json", action="store_true", help="One JSON object per line.")
  parser.add_argument("sentences", nargs="+", help="Raw UTF-8 sentences.")
  args = parser.parse_args(argv)
  if not tf.io.gfile.exists(os.path.join(args.saved_model, "saved_model.pb")):
    parser.error(f"--saved_model {args.saved_model}: no saved_model.pb there")
  results = classify(args.saved_model, args.sentences)
  for result in results:
    if args.json:
      print(json.dumps(result, ensure_ascii=False))
    else:
      print(f"{result['label']:>10}  {max(result['probabilities']):.3f}  {result['text']}")
  return 0


if __name__ == "__main__":
  sys.exit(main())
