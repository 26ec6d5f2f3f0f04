"""MultiWorkerMirroredStrategy: two worker processes on loopback ports train like one
process on the same global batches (tests/multi_worker_run.py)."""

import json
import os
import socket
import subprocess
import sys

import numpy as np
import pytest

from xlnet_tf.models.xlnet_pretrainer import build_pretrainer
from xlnet_tf.pretrained import save_pretrained
from helpers import pretrain_config

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "tests", "multi_worker_run.py")
STEPS = 4


def _free_loopback_ports(count):
  sockets = [socket.socket() for _ in range(count)]
  for s in sockets:
    s.bind(("127.0.0.1", 0))
  ports = [s.getsockname()[1] for s in sockets]
  for s in sockets:
    s.close()
  return ports


def _last_json(stdout):
  return json.loads(stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_two_workers_train_like_one_process_on_the_same_global_batch(pretraining_records,
                                                                     tmp_path):
  records_dir, _ = pretraining_records
  init = tmp_path / "init"
  save_pretrained(build_pretrainer(pretrain_config(records_dir)), str(init))
  env = {**os.environ, "PYTHONPATH": ROOT}
  cluster = {"worker": [f"localhost:{p}" for p in _free_loopback_ports(2)]}
  model_dir = tmp_path / "multi_worker"
  workers = []
  for index in range(2):
    tf_config = json.dumps({"cluster": cluster, "task": {"type": "worker", "index": index}})
    workers.append(subprocess.Popen(
        [sys.executable, SCRIPT, "worker", records_dir, str(init), str(model_dir), str(STEPS)],
        cwd=ROOT, env={**env, "TF_CONFIG": tf_config}, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True))
  reference = subprocess.run(
      [sys.executable, SCRIPT, "reference", records_dir, str(init), str(tmp_path / "one"),
       str(STEPS)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
  results = []
  for process in workers:
    try:
      stdout, stderr = process.communicate(timeout=600)
    finally:
      process.kill()
    assert process.returncode == 0, stderr[-3000:]
    results.append(_last_json(stdout))
  assert reference.returncode == 0, reference.stderr[-3000:]
  one = _last_json(reference.stdout)

  chief, other = results
  assert (chief["task_id"], other["task_id"]) == (0, 1)
  assert chief["replicas"] == other["replicas"] == 2
  assert len(one["losses"]) == STEPS
  np.testing.assert_allclose(chief["losses"], one["losses"], rtol=1e-5)
  np.testing.assert_allclose(other["losses"], one["losses"], rtol=1e-5)
  assert one["losses"][-1] < one["losses"][0]
  assert sorted(chief["weights"]) == sorted(one["weights"])
  for name, value in one["weights"].items():
    assert chief["weights"][name] == pytest.approx(value, rel=1e-5), name
  # Only the chief wrote the run directory; the other worker's scratch directory is gone.
  assert (model_dir / "final").is_dir()
  assert not [p for p in os.listdir(model_dir) if p.startswith(".worker")]
  print(f"\n2 workers vs 1 process, {STEPS} steps: losses {chief['losses']} vs {one['losses']}")
