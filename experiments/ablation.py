r"""The paper's Table 6 in miniature: pretraining objectives and XLNet's parts, ablated.

  python -m experiments.ablation --work_dir=runs/ablation --seeds=0,1,2

Every variant pretrains the same small model for the same number of steps on the same
bundled text (the shuffled train-split movie-review sentences), then is fine-tuned on
the bundled sentiment task; accuracy is measured on the held-out dev and test splits.

  plm_k6          XLNet: permutation LM, K = 6 (1 token in 6 predicted), spans, memory,
                  bidirectional data
  plm_k7          the same with K = 7
  mlm             BERT-style denoising on the same rows and model: 15% of the tokens,
                  80% <mask> / 10% random / 10% kept, predicted from the content stream
  plm_no_memory   no Transformer-XL memory (mem_len 0)
  plm_no_span     single-token targets instead of spans (max_span 1)
  plm_no_bi_data  forward streams only
  no_pretraining  fine-tuning from random weights (the floor)

Writes WORK_DIR/results.md (median and range over seeds), results.json (every run) and
ablation.png. Stages already done are reused (see xlnet_tf/runs/demo.py); the runner
is xlnet_tf/runs/ablation.py.
"""


from xlnet_tf import console  # noqa: E402

console.start()  # before TensorFlow is imported: the log levels of --verbosity

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from experiments import common_flags  # noqa: E402
from xlnet_tf import settings_record  # noqa: E402
from xlnet_tf.runs import ablation  # noqa: E402

VARIANTS = ablation.VARIANTS

FLAGS = flags.FLAGS
_VARIANTS = flags.DEFINE_list("variants", list(VARIANTS), f"Any of {list(VARIANTS)}.")
_SIZE = flags.DEFINE_enum("size", "demo", ["demo", "tiny"], "Preset sizes (the model, the "
                          "data); 'tiny' for a smoke test.")
common_flags.define_flags(
    ("work_dir", "seeds", "pretrain_steps", "finetune_steps"),
    notes={"seeds": "one run per variant and seed",
           "pretrain_steps": "the compute budget of every variant"},
    work_dir="runs/ablation", seeds=["0", "1", "2"], pretrain_steps=2000, finetune_steps=400)


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  unknown = [v for v in _VARIANTS.value if v not in VARIANTS]
  if unknown:
    raise app.UsageError(f"--variants: unknown {unknown}; choose from {list(VARIANTS)}")
  try:
    seeds = [int(s) for s in FLAGS.seeds]
  except ValueError:
    raise app.UsageError(f"--seeds must be integers, got {FLAGS.seeds}") from None
  command = (f"python -m experiments.ablation --size={_SIZE.value} --seeds="
             f"{','.join(map(str, seeds))} --variants={','.join(_VARIANTS.value)} "
             f"--pretrain_steps={FLAGS.pretrain_steps} "
             f"--finetune_steps={FLAGS.finetune_steps}")
  try:
    ablation.ablate(FLAGS.work_dir, _VARIANTS.value, seeds, _SIZE.value,
                    FLAGS.pretrain_steps, FLAGS.finetune_steps, command)
  except settings_record.SettingsMismatch as e:
    raise SystemExit(f"ablation: {e}") from None


if __name__ == "__main__":
  app.run(main)
