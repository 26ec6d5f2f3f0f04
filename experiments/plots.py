r"""Pictures of what XLNet does (matplotlib, PNG).

  python -m experiments.plots masks --order=3,2,4,1 --out=masks.png
  python -m experiments.plots attention --model_dir=runs/demo/pretrain/final \
      --sentence="The film is a gripping, beautifully acted drama." --out=attention.png
  python -m experiments.plots curves --event_dir=runs/demo/pretrain/train --out=curves.png

masks      the permutation objective: for a factorization order (1-based, as the paper's
           [3, 2, 4, 1]), which tokens each position's content stream and query stream
           may attend to, made by the same functions the model uses (xlnet_tf.masks).
masks, attention and curves each write one PNG; attention also prints, for the paper's
named patterns, the heads that score highest:
  self_exclusion  1 - min(1, T x mean_i p(i -> i)): the token ignores itself
  relative_stride max over offsets d != 0 of mean_i p(i -> i + d): a fixed relative offset
  one_side        |mean_i (left mass - right mass)|: attends to one side only
The figures are made by xlnet_tf/runs/plots.py.
"""


from xlnet_tf import console

console.start()  # before TensorFlow is imported: the log levels of --verbosity

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from experiments import common_flags  # noqa: E402
from xlnet_tf.runs import plots  # noqa: E402

_ORDER = flags.DEFINE_list("order", ["3", "2", "4", "1"], "masks: a factorization order of "
                           "positions 1..T (first predicted first).")
FLAGS = flags.FLAGS
common_flags.define_network_flags(
    ("mem_len",), notes={"mem_len": "masks: the memory positions drawn, always visible"})
common_flags.define_flags(
    ("model_dir",), notes={"model_dir": "attention: a pretrained model directory, with "
                                        "spiece.model"})
_SENTENCE = flags.DEFINE_string("sentence", "The film is a gripping, beautifully acted "
                                "drama.", "attention: the sentence.")
_EVENT_DIR = flags.DEFINE_string("event_dir", None, "curves: a directory of TensorBoard "
                                 "event files (e.g. MODEL_DIR/train).")
_OUT = flags.DEFINE_string("out", None, "The PNG to write.")
_DPI = flags.DEFINE_integer("dpi", 100, "Resolution.")


def main(argv):
  if len(argv) != 2 or argv[1] not in ("masks", "attention", "curves"):
    raise app.UsageError("usage: python -m experiments.plots {masks|attention|curves} "
                         "--out=FILE.png [flags]")
  if not _OUT.value:
    raise app.UsageError("--out is required (the PNG to write)")
  what = argv[1]
  if what == "masks":
    try:
      order = plots.parse_order(_ORDER.value)
    except ValueError as error:
      raise app.UsageError(f"--order: {error} (1-based positions)") from None
    plots.plot_masks(order, _OUT.value, FLAGS.mem_len, _DPI.value)
  elif what == "attention":
    if not FLAGS.model_dir:
      raise app.UsageError("attention needs --model_dir")
    pieces, probs = plots.sentence_attentions(FLAGS.model_dir, _SENTENCE.value)
    scores = plots.plot_attention(pieces, probs, _OUT.value, _DPI.value)
    for line in plots.best_heads(scores):
      print(line)
  else:
    if not _EVENT_DIR.value:
      raise app.UsageError("curves needs --event_dir")
    plots.plot_curves(plots.read_scalars(_EVENT_DIR.value), _OUT.value, dpi=_DPI.value)
  print(f"wrote {_OUT.value}")


if __name__ == "__main__":
  app.run(main)
