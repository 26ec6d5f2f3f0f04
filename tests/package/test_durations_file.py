"""`make test`'s list of the slowest tests (tests/durations_file.py): a test's setup, call
and teardown add up, the slowest come first, and only SLOWEST are kept."""

import types

import durations_file


def _report(nodeid, when, duration):
  return types.SimpleNamespace(nodeid=nodeid, when=when, duration=duration)


def test_the_slowest_tests_add_their_phases_and_come_first():
  stats = {"passed": [_report("a", "call", 1.0), _report("b", "call", 5.0),
                      _report("a", "setup", 4.5), _report("a", "teardown", 0.25)],
           "failed": [_report("c", "call", 2.0)],
           "warnings": [types.SimpleNamespace(message="not a report")]}
  assert durations_file.slowest(stats) == [(5.75, "a"), (5.0, "b"), (2.0, "c")]
  assert durations_file.slowest(stats, count=1) == [(5.75, "a")]
