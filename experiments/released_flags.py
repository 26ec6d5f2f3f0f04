"""The flag names of zihangdai/xlnet's train.py, train_gpu.py, run_classifier.py,
run_squad.py and run_race.py, on our entry points: defined here, translated by
xlnet_tf.runs.released.flag_translation (whose `RELEASED` says for every released flag what it is
here: our flag of the same name, an alias, a translation or check, ignored, or gone).

An entry point defines its own flags, then calls `define(...)` with the released scripts
it replaces, and `apply(tool)` first thing in `main`:

  released_flags.define("run_classifier.py")     # after the entry point's own flags
  def main(argv):
    released_flags.apply("run_classifier")        # before any work

`define` defines each released name the entry point lacks: an alias of our flag of the
same meaning, else a flag of its own (translated, ignored, or gone: accepted with its
released default, any other value refused by `apply` with one line saying what replaced
it and why).
"""

from absl import flags

from xlnet_tf.runs.released import flag_translation as table

FLAGS = flags.FLAGS

_KIND = {}          # name -> "alias" | "translate" | "ignored" | "gone" | "unmapped"


def define(*scripts: str) -> None:
  """Defines the released flag names of `scripts` (see the module docstring); call it
  after the entry point has defined its own flags."""
  names = sorted({n for script in scripts for n in table.script_flags(script)})
  for name in names:
    if name in FLAGS:
      continue                                          # the entry point's own flag
    entry = table.RELEASED[name]
    targets = [t for script in scripts for t in table.maps_to(name, script) if t in FLAGS]
    if targets and entry.to is None:
      flags.DEFINE_alias(name, targets[0])
      _KIND[name] = "alias"
      continue
    mapped = any(table.maps_to(name, script) for script in scripts)
    kind = ("translate" if targets else "unmapped" if mapped else
            table.IGNORED if entry.ours == table.IGNORED else "gone")
    define_flag = {bool: flags.DEFINE_bool, int: flags.DEFINE_integer,
                   float: flags.DEFINE_float}.get(type(entry.default), flags.DEFINE_string)
    define_flag(name, entry.default, f"zihangdai/xlnet's --{name}"
                + (f" (-> --{targets[0]})" if targets else f" ({kind})") + f": {entry.note}")
    _KIND[name] = kind


def apply(tool: str) -> None:
  """Before any work: the given released flags translated into ours, or the run ended with
  one line naming what replaced a flag (`xlnet_tf.runs.released.flag_translation.apply`)."""
  table.apply(tool, _KIND, FLAGS)
