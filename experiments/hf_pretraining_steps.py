r"""Our pretraining and HuggingFace's XLNetLMHeadModel stepped side by side on the same records.

  python -m experiments.hf_pretraining_steps --train_data=records/train \
      --output=runs/hf_steps/released.json --steps=500 --train_steps=2000 \
      --learning_rate=1e-3 --warmup_steps=100 --adam_bias_correction=released --threads=1

Tells the code from the recipe (issue 28): if HuggingFace's model, trained by the released
optimizer, follows our curve, a plateau of the curve is the recipe's, not our code's. One
initial model (ours, from --seed, written with `save_pretrained` and exported with
`xlnet_tf.convert.to_huggingface`) is trained twice on the same batches of --train_data
(`pretrain_dataset` with --seed): by ours (`runs.pretraining.pretrain`, the optimizer of
`optimization.build_optimizer`: what a user's run executes) and by HuggingFace's in PyTorch
(`xlnet_tf.runs.hf_training`: the training-parity tests' optimizer, the released
get_train_op in torch). Both: --steps updates of a schedule of --train_steps (warmup,
linear decay to 0.001 x lr), weight decay 0.01, Adam epsilon 1e-6, clipping at 1.0,
dropout 0, Transformer-XL memory of --mem_len carried from step to step. Adam's bias
correction follows --adam_bias_correction on both sides (released: none with weight decay,
as the released AdamWeightDecayOptimizer; always: corrected).

Prints step, our loss, HF's loss and their difference every --print_every steps, then the
mean |difference| and the final losses; writes both curves and the timings to --output
(JSON, temporary name then rename). The model size flags default to the issue's small
model (2 layers x 128, 2 heads x 64, d_inner 256); the vocabulary is the records'. The
run is xlnet_tf/runs/hf_pretraining_steps.py.
"""


from xlnet_tf import console

console.start()  # before TensorFlow is imported: the log levels of --verbosity

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from xlnet_tf.runs import hf_pretraining_steps  # noqa: E402

_TRAIN_DATA = flags.DEFINE_string("train_data", None, "Record directory (read only).")
_OUTPUT = flags.DEFINE_string("output", None, "The curves as JSON (a new file).")
_STEPS = flags.DEFINE_integer("steps", 500, "Updates taken by each side.", lower_bound=1)
_TRAIN_STEPS = flags.DEFINE_integer("train_steps", 2000, "Length of the learning-rate "
                                    "schedule (>= --steps).", lower_bound=1)
_LEARNING_RATE = flags.DEFINE_float("learning_rate", 1e-3, "Peak learning rate.")
_WARMUP_STEPS = flags.DEFINE_integer("warmup_steps", 100, "Linear warmup steps.")
_BIAS_CORRECTION = flags.DEFINE_enum(
    "adam_bias_correction", "released", list(hf_pretraining_steps.ADAM_BIAS_CORRECTIONS),
    "released: none with weight decay (the released AdamWeightDecayOptimizer); always: "
    "Adam's correction; never.")
_MEM_LEN = flags.DEFINE_integer("mem_len", 64, "Memory length (0: no memory).",
                                lower_bound=0)
_N_LAYER = flags.DEFINE_integer("n_layer", 2, "Layers.", lower_bound=1)
_D_MODEL = flags.DEFINE_integer("d_model", 128, "Hidden size.", lower_bound=1)
_N_HEAD = flags.DEFINE_integer("n_head", 2, "Heads.", lower_bound=1)
_D_HEAD = flags.DEFINE_integer("d_head", 64, "Head size.", lower_bound=1)
_D_INNER = flags.DEFINE_integer("d_inner", 256, "Feed-forward size.", lower_bound=1)
_SEED = flags.DEFINE_integer("seed", 0, "Seed of the initial weights and the shard order.")
_PRINT_EVERY = flags.DEFINE_integer("print_every", 50, "Print the losses every this many "
                                    "steps.", lower_bound=1)
_THREADS = flags.DEFINE_integer("threads", 0, "CPU threads of TensorFlow's ops (intra-op)"
                                " and of PyTorch (0: their defaults).",
                                lower_bound=0)


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  for flag in ("train_data", "output"):
    if not flags.FLAGS[flag].value:
      raise app.UsageError(f"--{flag} is required")
  if _THREADS.value:
    hf_pretraining_steps.set_threads(_THREADS.value)
  config_values = dict(n_layer=_N_LAYER.value, d_model=_D_MODEL.value, n_head=_N_HEAD.value,
                       d_head=_D_HEAD.value, d_inner=_D_INNER.value, mem_len=_MEM_LEN.value)
  try:
    hf_pretraining_steps.run(
        _TRAIN_DATA.value, _OUTPUT.value, config_values, _STEPS.value, _TRAIN_STEPS.value,
        _LEARNING_RATE.value, _WARMUP_STEPS.value, _BIAS_CORRECTION.value, _SEED.value,
        _PRINT_EVERY.value, report=lambda line: print(line, flush=True))
  except (OSError, ValueError) as e:
    raise SystemExit(f"hf_pretraining_steps: {e}") from None


if __name__ == "__main__":
  app.run(main)
