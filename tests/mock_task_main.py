"""The driver's command line (`experiments.train`) with the mock task registered: what
`python -m experiments.train --experiment=test/mock ...` would be if the mock task were
one of the package's (tests/mock_task.py). tests/tasks/test_driver.py kills it with
SIGKILL in the middle of a run (`helpers.run_killed_at_step`).

  PYTHONPATH=.:tests python -m mock_task_main --experiment=test/mock --mode=train ...
"""

import mock_task  # noqa: F401  (registers the task and its experiment)
from experiments import train

if __name__ == "__main__":
  train.run()
