r"""Per-token latency of greedy generation: ours (`xlnet_tf.generation`, memory of keys and
values) vs HuggingFace's `XLNetLMHeadModel.generate` (its default memory, `use_mems=True`),
same weights, same prompt, in one run.

The weights are HF's random initialisation (`XLNetLMHeadModel(config)`), saved with HF's
`save_pretrained` and converted with `xlnet_tf.convert`. The prompt is P random ids; both
generate N tokens with no stop id. A token's latency is the time from the previous token
to it (ours: a `callback` after each step; HF: a stopping criterion, called after each
step); the first token includes the prompt's forward pass and is reported on its own. For
the first, middle and last tenth of the other tokens the median latency is printed, with
HF / ours, and "last / first" per implementation: 1.0 is a per-token cost that stays flat
as the output grows. `--no_mems` adds ours with `use_mems=False` (the whole sequence at
every step, as HF's `use_mems=False`), whose cost grows with the output. On a machine
shared with other work, `--threads=1` keeps torch's thread pool from stalling (its
latencies then jump by 10x and more with two threads).

  python -m experiments.benchmark_generation                 # 12 layers, d_model 768
  python -m experiments.benchmark_generation --n_layer=4 --d_model=256 --n_head=4 \
      --d_inner=1024 --prompt_len=64 --new_tokens=512 --no_mems

The measuring is xlnet_tf/benchmarks/generation_speed.py.
"""


from xlnet_tf import console  # noqa: E402

console.start()  # before TensorFlow is imported: the log levels of --verbosity

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from experiments import common_flags  # noqa: E402
from xlnet_tf.benchmarks import generation_speed  # noqa: E402

FLAGS = flags.FLAGS
common_flags.define_network_flags(
    ("n_layer", "d_model", "n_head", "d_inner", "n_token"),
    notes={"n_layer": "XLNet-Base: 12", "d_model": "XLNet-Base: 768",
           "n_head": "d_head = d_model / n_head"},
    n_layer=12, d_model=768, n_head=12, d_inner=3072)
_PROMPT = flags.DEFINE_integer("prompt_len", 32, "Prompt tokens (P).")
_NEW = flags.DEFINE_integer("new_tokens", 256, "Generated tokens (N).")
_BATCH = flags.DEFINE_integer("batch", 1, "Prompts generated together.")
_NO_MEMS = flags.DEFINE_bool("no_mems", False, "Also time ours with use_mems=False (the whole "
                             "sequence fed again at every step, as xlnet-generate --no_mems).")
common_flags.define_flags(("seed", "threads"), notes={"seed": "the weights and the prompt"})


def main(argv):
  del argv
  generation_speed.benchmark(FLAGS.n_layer, FLAGS.d_model, FLAGS.n_head, FLAGS.d_inner,
                             FLAGS.n_token, _PROMPT.value, _NEW.value, _BATCH.value,
                             _NO_MEMS.value, FLAGS.seed, FLAGS.threads)


if __name__ == "__main__":
  app.run(main)
