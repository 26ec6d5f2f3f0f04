"""A pytest plugin (`-p durations_file`, as `make test` runs the suite): with
`--durations-file=PATH`, the 30 slowest tests (setup, call and teardown together) are
written to PATH when the run ends, with the date, the wall time and the counts (whole:
`paths.write_text`)."""

import time

from xlnet_tf import paths

SLOWEST = 30


def pytest_addoption(parser):
  parser.addoption("--durations-file", default=None, metavar="PATH",
                   help=f"write the {SLOWEST} slowest tests to PATH at the end of the run")


def pytest_sessionstart(session):
  session.config._durations_file_start = time.time()      # pylint: disable=protected-access


def slowest(stats, count=SLOWEST):
  """[(seconds, nodeid)] of the `count` slowest tests of pytest's terminal `stats`."""
  totals = {}
  for reports in stats.values():
    for report in reports:
      if getattr(report, "when", None) in ("setup", "call", "teardown"):
        totals[report.nodeid] = totals.get(report.nodeid, 0.0) + report.duration
  return sorted(((seconds, nodeid) for nodeid, seconds in totals.items()), reverse=True)[:count]


def pytest_terminal_summary(terminalreporter, config):
  path = config.getoption("durations_file")
  if not path or hasattr(config, "workerinput"):          # an xdist worker writes nothing
    return
  start = getattr(config, "_durations_file_start", time.time())
  counts = {key: len(terminalreporter.stats.get(key, [])) for key in ("passed", "failed",
                                                                      "skipped", "error")}
  lines = [f"# {time.strftime('%Y-%m-%d %H:%M')}: {SLOWEST} slowest tests of "
           f"`pytest {' '.join(config.invocation_params.args)}`; wall "
           f"{(time.time() - start) / 60:.1f} min; " +
           ", ".join(f"{n} {key}" for key, n in counts.items() if n),
           "# seconds (setup + call + teardown)  test"]
  lines += [f"{seconds:8.1f}  {nodeid}" for seconds, nodeid in slowest(terminalreporter.stats)]
  paths.write_text(path, "\n".join(lines) + "\n")
  terminalreporter.write_line(f"the {SLOWEST} slowest tests: {path}")
