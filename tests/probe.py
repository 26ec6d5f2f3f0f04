"""Several command lines of one entry point in one interpreter (`probe`).

Each `python -m MODULE ARGS` a test starts spends most of its time importing TensorFlow and
xlnet_tf before the command does anything. Where a test file runs one entry point several
times to check what the command line does (refusals, a report), `probe` starts one
interpreter that imports MODULE once (a package's __main__) and then, for each command line,
does what `python -m MODULE ARGS` does after its imports: absl's flags reset to their defaults and
parsed from the command line, `app.run(MODULE.main)`. Each run's exit status, stdout and
stderr are those of the command (file descriptors 1 and 2 redirected, so absl's log lines and
TensorFlow's C++ lines are caught too; an uncaught exception's traceback is written to its
stderr and the status is 1, as Python does at exit).

What one interpreter shares between the runs: the imported modules (their import-time
work, such as `console.start`'s log levels, is done once, for the first command line), the
Keras global policy and TensorFlow's caches. Tests of what a real process does (its quiet
start, a kill, the imports it makes) start real processes instead.
"""

import json
import os
import subprocess
import sys
from typing import List, Optional, Sequence

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_PROBE = r"""
import importlib, json, os, sys, tempfile, traceback
module_name = sys.argv[1]
cases = json.loads(sys.stdin.read())
report = os.fdopen(os.dup(1), "w")          # the results go back on the original stdout
sys.argv = [module_name]
module = importlib.import_module(module_name)
if hasattr(module, "__path__"):                 # a package: `python -m` runs its __main__
  module = importlib.import_module(module_name + ".__main__")
sys.modules["__main__"].__doc__ = module.__doc__        # what --help and usage errors show
from absl import app, flags
results = []
for args in cases:
  argv = [module_name, *args]
  with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
    sys.stdout.flush(); sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    os.dup2(out.fileno(), 1); os.dup2(err.fileno(), 2)
    code = 0
    try:
      flags.FLAGS.unparse_flags()
      sys.argv = argv
      app.run(module.main, argv=argv)
    except SystemExit as stop:
      if stop.code is None or isinstance(stop.code, int):
        code = stop.code or 0
      else:
        print(stop.code, file=sys.stderr)
        code = 1
    except BaseException:  # pylint: disable=broad-except
      traceback.print_exc()
      code = 1
    finally:
      sys.stdout.flush(); sys.stderr.flush()
      os.dup2(saved[0], 1); os.dup2(saved[1], 2)
      os.close(saved[0]); os.close(saved[1])
    out.seek(0); err.seek(0)
    results.append({"args": argv, "returncode": code, "stdout": out.read(),
                    "stderr": err.read()})
report.write(json.dumps(results) + "\n")
report.flush()
"""


def probe(module: str, cases: Sequence[Sequence[str]], cwd: str = ROOT,
          env: Optional[dict] = None,
          timeout: float = 600) -> List[subprocess.CompletedProcess]:
  """Runs `python -m MODULE ARGS` for each ARGS of `cases`, in this order, in one fresh
  interpreter started in `cwd` (PYTHONPATH: this checkout first, then `env`'s or the
  environment's). Returns one CompletedProcess (args, returncode, stdout, stderr) per case.
  The interpreter itself must end well: a crash of it fails the test with its stderr."""
  env = dict(os.environ if env is None else env)
  env["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, env.get("PYTHONPATH")) if p)
  done = subprocess.run([sys.executable, "-c", _PROBE, module], cwd=os.fspath(cwd), env=env,
                        input=json.dumps([[os.fspath(a) for a in args] for args in cases]),
                        capture_output=True, text=True, timeout=timeout, check=False)
  assert done.returncode == 0 and done.stdout.strip(), (
      f"the probe of {module} ended with {done.returncode}:\n{done.stderr[-3000:]}")
  return [subprocess.CompletedProcess(r["args"], r["returncode"], r["stdout"], r["stderr"])
          for r in json.loads(done.stdout.strip().splitlines()[-1])]
