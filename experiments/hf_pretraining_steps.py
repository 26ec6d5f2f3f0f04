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

from experiments import common_flags  # noqa: E402
from xlnet_tf.runs import hf_pretraining_steps  # noqa: E402

FLAGS = flags.FLAGS
common_flags.define_flags(
    ("train_data", "steps", "seed", "threads"),
    notes={"train_data": "read only", "steps": "updates taken by each side",
           "seed": "the initial weights and the shard order"},
    lower_bounds={"steps": 1, "threads": 0}, steps=500)
_OUTPUT = flags.DEFINE_string("output", None, "The curves as JSON (a new file).")
common_flags.define_optimization_flags(
    ("train_steps", "learning_rate", "warmup_steps", "adam_bias_correction"),
    notes={"train_steps": ">= --steps"}, lower_bounds={"train_steps": 1},
    train_steps=2000, learning_rate=1e-3, warmup_steps=100)
_NETWORK = ("n_layer", "d_model", "n_head", "d_head", "d_inner", "mem_len")
common_flags.define_network_flags(
    _NETWORK, notes={"mem_len": "0: no memory"},
    lower_bounds={"mem_len": 0, "n_layer": 1, "d_model": 1, "n_head": 1, "d_head": 1,
                  "d_inner": 1},
    mem_len=64, n_layer=2, d_model=128, n_head=2, d_head=64, d_inner=256)
_PRINT_EVERY = flags.DEFINE_integer("print_every", 50, "Print the losses every this many "
                                    "steps.", lower_bound=1)


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  for flag in ("train_data", "output"):
    if not FLAGS[flag].value:
      raise app.UsageError(f"--{flag} is required")
  if FLAGS.threads:
    hf_pretraining_steps.set_threads(FLAGS.threads)
  config_values = {name: FLAGS[name].value for name in _NETWORK}
  try:
    hf_pretraining_steps.run(
        FLAGS.train_data, _OUTPUT.value, config_values, FLAGS.steps, FLAGS.train_steps,
        FLAGS.learning_rate, FLAGS.warmup_steps, FLAGS.adam_bias_correction, FLAGS.seed,
        _PRINT_EVERY.value, report=lambda line: print(line, flush=True))
  except (OSError, ValueError) as e:
    raise SystemExit(f"hf_pretraining_steps: {e}") from None


if __name__ == "__main__":
  app.run(main)
