"""The conversion of each kind of model: what `xlnet_tf.convert` asks a kind, answered in the
kind's own module and referenced from its `task_kind` record (`conversion`).

  base.py        the protocol (`Conversion`, `HeadConversion`), `Head`, and the helpers the
                 kinds share (HuggingFace Linear layers, labels, shapes)
  summary.py     the sequence summary the classifier's and the RACE head sit on
  classifier.py  XLNetForSequenceClassification; the original's run_classifier.py head
  race.py        XLNetForMultipleChoice; the original's run_race.py head
  tagger.py      XLNetForTokenClassification
  squad.py       XLNetForQuestionAnswering (the original's run_squad.py head) and
                 XLNetForQuestionAnsweringSimple
  pretrained.py  XLNetLMHeadModel and XLNetModel (the pretrained layout: no task head)

This package file imports nothing.
"""
