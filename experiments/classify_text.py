r"""Classifies raw sentences with an exported SavedModel, using nothing of xlnet_tf.

  xlnet-classify --saved_model=export/sentiment \
      "A gripping, beautifully acted film." "Ninety minutes of tedium."
  xlnet-classify --saved_model=export/mnli "A man is eating." --text_b "Someone eats."

(`python -m experiments.classify_text ...` or `python experiments/classify_text.py ...`
works the same from a checkout; the file alone is enough where the SavedModel is served.)

Only `tensorflow` and `tensorflow_text` (for the in-graph SentencePiece ops) are imported,
so this runs wherever the SavedModel is served. The `serving_default` signature of
`experiments.export_saved_model` takes `text_a` (and `text_b` for pair tasks) and returns
`probabilities` [B, C] and `label` [B] (the label's name, e.g. b"positive"). For a pair
export, give one --text_b per sentence, in order. Prints one JSON object per sentence with
`--json`, else a table. Another kind of export (a tagger, SQuAD, RACE, a ranker, an
encoder) or a sentence that is not valid UTF-8 is refused, naming it, before anything is
classified: every export says what it is and what serves it in its export.json (written
beside its README.md), which names it in the message.
"""

import argparse
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402
import tensorflow_text  # noqa: E402,F401  (registers the SentencePiece ops)


# What an export is and what serves it, written by the export beside its README.md
# ({"task": ..., "about": "a tagger export: its serving_default takes text ..."};
# xlnet_tf.serving.export_card.DESCRIPTION_FILE).
DESCRIPTION_FILE = "export.json"


def export_description(saved_model_dir):
  """The `about` of the export's export.json: what it is and what serves it; None when
  it has none (an export written before export.json was) or it cannot be read."""
  path = os.path.join(saved_model_dir, DESCRIPTION_FILE)
  try:
    with tf.io.gfile.GFile(path) as f:
      about = json.loads(f.read()).get("about")
  except (tf.errors.OpError, OSError, ValueError, AttributeError):
    return None
  return about if isinstance(about, str) and about else None


def classifier_signature(saved_model_dir):
  """(serving_default, pair) of a classifier export; ValueError naming the kind of export
  (and what serves it) for any other."""
  signatures = tf.saved_model.load(saved_model_dir).signatures
  if "serving_default" not in signatures:
    raise ValueError(f"{saved_model_dir}: no serving_default signature (it has "
                     f"{sorted(signatures)}); expected a classifier export (xlnet-export)")
  serve = signatures["serving_default"]
  inputs = set(serve.structured_input_signature[1])
  if inputs in ({"text_a"}, {"text_a", "text_b"}):
    return serve, "text_b" in inputs
  kind = (export_description(saved_model_dir)
          or f"an export whose serving_default takes {sorted(inputs)}")
  raise ValueError(f"{saved_model_dir} is {kind}. xlnet-classify serves classifier exports "
                   f"(serving_default takes text_a, and text_b for pairs; written by "
                   f"xlnet-export)")


def check_utf8(texts, what):
  """ValueError naming `what` (e.g. "sentence 2") for a text that is not valid UTF-8 (argv's
  undecodable bytes arrive as surrogate escapes)."""
  for number, text in enumerate(texts, 1):
    try:
      text.encode("utf-8")
    except UnicodeEncodeError as e:
      raise ValueError(f"{what} {number}: not valid UTF-8 (character {e.start + 1}); give "
                       f"UTF-8 text") from None


def classify(saved_model_dir, texts_a, texts_b=None):
  """[{text, label, probabilities}] for each sentence (of each pair `texts_a[i]`,
  `texts_b[i]` for a pair classifier), [{text, score}] for a regression export;
  ValueError for texts that do not fit the export."""
  if texts_b is not None and len(texts_b) != len(texts_a):
    raise ValueError(f"--text_b: {len(texts_b)} given for {len(texts_a)} sentence(s); give "
                     f"one per sentence, in order")
  serve, pair = classifier_signature(saved_model_dir)
  if pair != (texts_b is not None):
    raise ValueError(
        f"{saved_model_dir} classifies sentence pairs: give one --text_b per sentence"
        if pair else f"{saved_model_dir} classifies single sentences: give no --text_b")
  inputs = {"text_a": tf.constant(texts_a, tf.string)}
  if texts_b is not None:
    inputs["text_b"] = tf.constant(texts_b, tf.string)
  outputs = serve(**inputs)
  if "score" in outputs:                                   # a regression export
    return [{"text": text, "score": round(float(score), 4)}
            for text, score in zip(texts_a, outputs["score"].numpy())]
  labels = [label.decode() for label in outputs["label"].numpy()]
  probabilities = outputs["probabilities"].numpy().tolist()
  return [{"text": text, "label": label, "probabilities": [round(p, 4) for p in probs]}
          for text, label, probs in zip(texts_a, labels, probabilities)]


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--saved_model", required=True, help="An exported SavedModel directory.")
  parser.add_argument("--json", action="store_true", help="One JSON object per line.")
  parser.add_argument("--text_b", action="append", default=None,
                      help="Pair classifiers: the second text of a sentence; give one per "
                           "sentence, in order.")
  parser.add_argument("sentences", nargs="+", help="Raw UTF-8 sentences.")
  args = parser.parse_args(argv)
  if not tf.io.gfile.exists(os.path.join(args.saved_model, "saved_model.pb")):
    parser.error(f"--saved_model {args.saved_model}: no saved_model.pb there")
  try:
    check_utf8(args.sentences, "sentence")
    check_utf8(args.text_b or [], "--text_b")
    results = classify(args.saved_model, args.sentences, args.text_b)
  except ValueError as e:
    parser.error(str(e))
  for result in results:
    if args.json:
      print(json.dumps(result, ensure_ascii=False))
    elif "score" in result:
      print(f"{result['score']:>10.4f}  {result['text']}")
    else:
      print(f"{result['label']:>10}  {max(result['probabilities']):.3f}  {result['text']}")
  return 0


if __name__ == "__main__":
  sys.exit(main())
