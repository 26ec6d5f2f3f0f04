"""Serving: TensorFlow graphs that take raw strings and need none of this package at run time.

The text side, as TF / TF Text ops (a SavedModel built from them is served with only
`tensorflow` and `tensorflow_text` installed):
  text_encoder       XLNet text normalisation (`normalize_text_tf`), SentencePiece encoding
                     with the released digit-comma re-split (`XLNetTextEncoder`), and the
                     shape checks of every signature's inputs (`check_shapes`)
  text_layouts       ids -> model inputs: the classification and document layouts, and the
                     padding to the batch's bucket (`bucket_lengths`, `padded_length`)
  squad_text         pieces with their raw-character spans, the SQuAD layout
The exports, one module per kind, each with its serving module and its card:
  classifier_export  classifiers and regression models
  tagger_export      taggers
  squad_export       SQuAD models and simple span QA (span decoding in the graph)
  race_export        multiple choice (RACE)
  ranker_export      K-NRM rankers
  encoder_export     a pretrained model's encoder (feature extraction)
What the exports share:
  model_dir_export   the export of a model directory (`export_model_dir`), and the
                     SavedModel written whole (`check_export_dir`, `save`)
  export_card        the card (README.md) beside the SavedModel with its parity,
                     export.json, and the probe inputs of several kinds
"""
