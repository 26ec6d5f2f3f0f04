"""create_pretraining_data on the bundled corpus: layout, targets, streams, restart, errors."""

import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import sentencepiece as spm
import tensorflow as tf

from data_prep import pipeline
from data_prep.pretraining_rows import RowSettings
from helpers import CORPUS_GLOB
from helpers import PRETRAIN_SETTINGS
from helpers import pretrain_data_flags
from helpers import read_records
from xlnet_tf.data import pretrain_reader
from xlnet_tf.data import pretrain_records
from xlnet_tf.data import storage
from xlnet_tf.data import tokenization
from xlnet_tf.data.tfrecord_writer import TFRecordWriter
from xlnet_tf.data.tfrecord_writer import int64_example

CLS, SEP = tokenization.CLS_ID, tokenization.SEP_ID
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _rows_by_shard(records_dir):
  manifest = pretrain_records.load_manifest(records_dir)
  return manifest, {s["file"]: read_records(s["path"]) for s in manifest["shards"]}


def _a_length(row):
  return int(np.flatnonzero(row["input_ids"] == SEP)[0]) - PRETRAIN_SETTINGS.rows.reuse_len


def test_manifest_has_every_setting_count_and_the_checksum(pretraining_records, spiece_model):
  records_dir, inputs = pretraining_records
  manifest, shards = _rows_by_shard(records_dir)
  assert manifest["settings"] == PRETRAIN_SETTINGS.to_dict()
  assert manifest["settings"]["span_unit"] == "token"
  assert manifest["settings"]["span_context"] == "released"     # the released recipe
  assert manifest["spiece"]["sha256"] == tokenization.spiece_sha256(spiece_model)
  counts = manifest["counts"]
  assert counts["shards"] == len(shards) == 2 * len({s["chunk"] for s in manifest["shards"]})
  assert counts["examples"] == sum(len(rows) for rows in shards.values())
  assert counts["documents"] == len(inputs)                 # one document per file
  assert counts["undecodable_lines"] == counts["overlong_lines"] == 0
  for shard in manifest["shards"]:
    assert shard["examples"] == len(shards[shard["file"]])
    assert shard["examples"] == shard["steps"] * PRETRAIN_SETTINGS.rows.bsz_per_host


def test_rows_have_the_released_layout(pretraining_records):
  s = PRETRAIN_SETTINGS.rows
  _, shards = _rows_by_shard(pretraining_records[0])
  for rows in shards.values():
    for row in rows:
      ids, seg = row["input_ids"], row["segment_ids"]
      assert len(ids) == s.seq_len and ids[-1] == CLS
      seps = np.flatnonzero(ids == SEP)
      assert len(seps) == 2 and seps[1] == s.seq_len - 2 and seps[0] > s.reuse_len
      assert not np.isin(ids[:-1], [CLS]).any()
      expected = np.zeros(s.seq_len, int)
      expected[seps[0] + 1:] = 1
      expected[-1] = 2
      np.testing.assert_array_equal(seg, expected)    # reuse + A + <sep> | B + <sep> | <cls>


def test_exactly_num_predict_targets_never_on_sep_or_cls(pretraining_records):
  s = PRETRAIN_SETTINGS.rows
  reuse_goal, _ = s.predict_per_half
  _, shards = _rows_by_shard(pretraining_records[0])
  for rows in shards.values():
    for row in rows:
      positions = row["target_positions"]
      real = positions[positions >= 0]
      assert np.all(positions[len(real):] == -1)              # padding at the end
      assert np.all(np.diff(real) > 0)
      assert not np.isin(row["input_ids"][real], [SEP, CLS]).any()
      assert np.sum(real < s.reuse_len) == reuse_goal         # no <sep>/<cls> there
      assert s.num_predict - 3 <= len(real) <= s.num_predict  # at most 2 <sep> + <cls> lost


def test_each_stream_continues_from_step_to_step(pretraining_records):
  s = PRETRAIN_SETTINGS.rows
  _, shards = _rows_by_shard(pretraining_records[0])
  for rows in shards.values():
    steps = len(rows) // s.bsz_per_host
    for index, row in enumerate(rows):                          # step-major, slot order
      assert (row["stream_step"], row["stream_index"]) == divmod(index, s.bsz_per_host)
    for slot in range(s.bsz_per_host):
      stream = rows[slot::s.bsz_per_host]
      for now, after in zip(stream[:-1], stream[1:]):
        # The next reuse part starts with this row's segment A (the text after this reuse).
        shared = min(_a_length(now), s.reuse_len)
        np.testing.assert_array_equal(after["input_ids"][:shared],
                                      now["input_ids"][s.reuse_len:s.reuse_len + shared])
      assert len(stream) == steps


def test_bi_data_rows_are_the_forward_streams_reversed(pretraining_records):
  s = PRETRAIN_SETTINGS.rows
  per_core = s.bsz_per_host // s.num_core_per_host
  _, shards = _rows_by_shard(pretraining_records[0])
  for rows in shards.values():
    text = {slot: np.concatenate([r["input_ids"][:s.reuse_len]
                                  for r in rows[slot::s.bsz_per_host]])
            for slot in range(s.bsz_per_host)}
    for core in range(s.num_core_per_host):
      for j in range(per_core // 2):
        forward = text[core * per_core + j]                      # stream[0 : n*R]
        backward = text[core * per_core + per_core // 2 + j][::-1]   # stream[N - n*R : N]
        offsets = [d for d in range(len(forward) - s.reuse_len)
                   if np.array_equal(forward[d:], backward[:len(forward) - d])]
        assert offsets, f"backward slot of core {core} is not forward stream {j} reversed"


def test_each_pass_resamples_targets_and_orders_of_the_same_text(pretraining_records):
  _, shards = _rows_by_shard(pretraining_records[0])
  first, second = (shards[pipeline.shard_name(0, p)] for p in (0, 1))
  reuse = PRETRAIN_SETTINGS.rows.reuse_len
  same_text = np.mean([np.array_equal(a["input_ids"][:reuse], b["input_ids"][:reuse])
                       for a, b in zip(first, second)])
  same_targets = np.mean([np.array_equal(a["target_positions"], b["target_positions"])
                          for a, b in zip(first, second)])
  same_order = np.mean([np.array_equal(a["perm_rank"], b["perm_rank"])
                        for a, b in zip(first, second)])
  assert same_text == 1.0 and same_targets < 0.05 and same_order < 0.05


def _bytes_of(directory):
  return {name: open(os.path.join(directory, name), "rb").read()
          for name in sorted(os.listdir(directory)) if name.endswith(".tfrecord")}


def test_same_seed_gives_identical_shards(pretraining_records, spiece_model, tmp_path):
  records_dir, inputs = pretraining_records
  pipeline.create(PRETRAIN_SETTINGS, inputs, spiece_model, str(tmp_path / "again"))
  assert _bytes_of(records_dir) == _bytes_of(tmp_path / "again")
  other = pipeline.DataSettings(**{**PRETRAIN_SETTINGS.__dict__, "seed": 7})
  pipeline.create(other, inputs[:6], spiece_model, str(tmp_path / "seed7"))
  assert _bytes_of(tmp_path / "seed7") != _bytes_of(records_dir)


def test_rerun_skips_finished_shards_and_redoes_the_rest(pretraining_records, spiece_model,
                                                         tmp_path):
  records_dir, inputs = pretraining_records
  out = tmp_path / "records"
  shutil.copytree(records_dir, out)
  first = sorted(p for p in os.listdir(out) if p.endswith(".tfrecord"))
  os.remove(out / first[-1])                                  # lost with a crash
  (out / (first[0] + ".partial-999")).write_bytes(b"half a shard")
  os.remove(out / "manifest.json")
  kept = {name: os.stat(out / name).st_mtime_ns for name in first[:-1]}
  pipeline.create(PRETRAIN_SETTINGS, inputs, spiece_model, str(out))
  assert {name: os.stat(out / name).st_mtime_ns for name in first[:-1]} == kept
  assert _bytes_of(out) == _bytes_of(records_dir)
  assert not glob.glob(str(out / "*.partial*"))
  other = pipeline.DataSettings(**{**PRETRAIN_SETTINGS.__dict__, "seed": 8})
  with pytest.raises(ValueError, match="made with other settings"):
    pipeline.create(other, inputs, spiece_model, str(out))


def test_span_context_is_recorded_and_tells_runs_apart(pretraining_records, spiece_model,
                                                       tmp_path):
  """--span_context=paper (the paper's K*n groups) is recorded in the manifest, and the
  shards of one setting are never taken for the other's on a rerun."""
  _, inputs = pretraining_records
  rows = RowSettings(**{**PRETRAIN_SETTINGS.rows.__dict__, "span_context": "paper"})
  paper = pipeline.DataSettings(**{**PRETRAIN_SETTINGS.__dict__, "rows": rows})
  out = str(tmp_path / "paper")
  manifest = pipeline.create(paper, inputs[:6], spiece_model, out)
  assert manifest["settings"]["span_context"] == "paper"
  assert pretrain_records.load_manifest(out)["settings"]["span_context"] == "paper"
  with pytest.raises(ValueError, match="made with other settings"):
    pipeline.create(PRETRAIN_SETTINGS, inputs[:6], spiece_model, out)


@pytest.mark.slow
def test_killed_run_then_rerun_equals_an_uninterrupted_run(pretraining_records, spiece_model,
                                                           tmp_path):
  """Kills the command line mid-run (after its first shard), then reruns it; also with
  two worker processes, which must give the same bytes."""
  records_dir, inputs = pretraining_records
  out = tmp_path / "records"
  command = [sys.executable, "-m", "data_prep.create_pretraining_data",
             *pretrain_data_flags(inputs, spiece_model, out)]
  process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
  deadline = time.time() + 120
  while not glob.glob(str(out / "*.stats.json")) and time.time() < deadline:
    assert process.poll() is None, "the run ended before it could be killed"
    time.sleep(0.05)
  process.send_signal(signal.SIGKILL)
  process.wait()
  assert not (out / "manifest.json").exists()          # an incomplete run never looks done
  assert len(_bytes_of(out)) < len(_bytes_of(records_dir))
  subprocess.run(command + ["--num_workers=2"], cwd=ROOT, check=True,
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
  assert _bytes_of(out) == _bytes_of(records_dir)
  manifest = json.loads((out / "manifest.json").read_text())
  assert manifest["counts"] == pretrain_records.load_manifest(records_dir)["counts"]


# ---- the writer: TensorFlow's bytes, without importing TensorFlow -------------------------

def _tf_example(row):
  return tf.train.Example(features=tf.train.Features(feature={
      name: tf.train.Feature(int64_list=tf.train.Int64List(value=np.ravel(value).tolist()))
      for name, value in row.items()})).SerializeToString(deterministic=True)


def test_shards_are_the_bytes_tensorflow_writes(pretraining_records, tmp_path):
  """Every shard's rows, encoded by tf.train.Example and written by tf.io.TFRecordWriter,
  give the shard byte for byte (so TensorFlow's readers and CRC checks accept it)."""
  records_dir, _ = pretraining_records
  manifest = pretrain_records.load_manifest(records_dir)
  for shard in manifest["shards"]:
    rows = read_records(shard["path"])
    assert any((row["target_positions"] < 0).any() for row in rows)     # -1 padding too
    path = str(tmp_path / shard["file"])
    with tf.io.TFRecordWriter(path) as writer:
      for row in rows:
        writer.write(_tf_example(row))
    with open(path, "rb") as ours, open(shard["path"], "rb") as theirs:
      assert ours.read() == theirs.read(), shard["file"]


def test_the_record_schema_has_one_home(pretraining_records):
  """pretrain_records.feature_shapes is the docstring's table, the reader's parsing spec
  and what the writer accepts."""
  s = PRETRAIN_SETTINGS.rows
  shapes = pretrain_records.feature_shapes(s.seq_len, s.num_predict)
  table = re.findall(r"^  (\w+) +int \[(\w*)\]", pretrain_records.__doc__, re.MULTILINE)
  assert [name for name, _ in table] == list(shapes) == list(pretrain_records.FEATURES)
  sizes = {"T": s.seq_len, "P": s.num_predict}
  assert [tuple(sizes[d] for d in dims) for _, dims in table] == list(shapes.values())
  spec = pretrain_reader.feature_spec(s.seq_len, s.num_predict)
  assert {k: (tuple(v.shape), v.dtype.name) for k, v in spec.items()} == {
      k: (shape, pretrain_records.DTYPE) for k, shape in shapes.items()}
  row = dict(read_records(pretrain_records.load_manifest(pretraining_records[0])
                          ["shards"][0]["path"])[0])
  assert pretrain_records.serialize_row(row, shapes) == _tf_example(row)
  for bad in ({**row, "extra": 1}, {k: v for k, v in row.items() if k != "stream_step"},
              {**row, "target_positions": row["target_positions"][:-1]}):
    with pytest.raises(ValueError, match="record schema"):
      pretrain_records.serialize_row(bad, shapes)


def test_writer_matches_tensorflow_on_edge_values_and_urls(tmp_path):
  rows = [{"ids": np.array([-1, 0, 1, 2**31, -2**63, 2**63 - 1]), "b": 0},
          {"z": np.zeros([0], np.int64), "a": np.int64(7)},
          {}]
  assert [int64_example(r) for r in rows] == [_tf_example(r) for r in rows]
  # A URL goes through tf.io.gfile: TensorFlow's in-memory file system stands in for gs://.
  url = f"ram://{tmp_path.name}/edge.tfrecord"
  with TFRecordWriter(url + ".partial") as writer:
    for row in rows:
      writer.write(int64_example(row))
  storage.rename(url + ".partial", url)
  assert storage.exists(url) and not storage.exists(url + ".partial")
  assert storage.glob(f"ram://{tmp_path.name}/*") == [url]
  local = str(tmp_path / "edge.tfrecord")
  with tf.io.TFRecordWriter(local) as writer:
    for row in rows:
      writer.write(_tf_example(row))
  with storage.open_file(url, "rb") as f:
    assert f.read() == (tmp_path / "edge.tfrecord").read_bytes()
  assert [r.numpy() for r in tf.data.TFRecordDataset(url)] == [_tf_example(r) for r in rows]


@pytest.mark.slow
def test_preprocessing_local_files_never_imports_tensorflow(pretraining_records,
                                                            spiece_model, tmp_path):
  """The command line with 2 workers runs where `import tensorflow` fails (in its process,
  the pool's server process and the workers alike) and writes the same records."""
  records_dir, inputs = pretraining_records
  blocker = tmp_path / "no_tensorflow" / "tensorflow"
  blocker.mkdir(parents=True)
  (blocker / "__init__.py").write_text(
      "raise ImportError('the preprocessing tool imported tensorflow')\n")
  env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(blocker.parent), ROOT])}
  subprocess.run([sys.executable, "-m", "data_prep.create_pretraining_data",
                  *pretrain_data_flags(inputs, spiece_model, tmp_path / "out"), "--num_workers=2"],
                 cwd=ROOT, env=env, check=True, capture_output=True)
  assert _bytes_of(tmp_path / "out") == _bytes_of(records_dir)
  env["PYTHONPATH"] = os.pathsep.join([str(blocker.parent), ROOT, os.path.join(ROOT, "tests")])
  blocked = subprocess.run([sys.executable, "-c", "import helpers"], cwd=ROOT, env=env,
                           capture_output=True, text=True)
  assert "the preprocessing tool imported tensorflow" in blocked.stderr   # the block works


# ---- errors before any work ------------------------------------------------------------------

@pytest.mark.parametrize("changes, message", [
    (dict(reuse_len=80), r"--reuse_len \(80\) must be >= 0 and less than --seq_len \(64\)"),
    (dict(perm_size=12), r"--perm_size \(12\) must divide --reuse_len \(32\)"),
    (dict(bsz_per_host=6, num_core_per_host=2),
     r"--bi_data needs --bsz_per_host \(6\) divisible by 2 x --num_core_per_host \(4\)"),
    (dict(bsz_per_host=9, num_core_per_host=2, bi_data=False),
     r"--bsz_per_host \(9\) must be divisible by --num_core_per_host \(2\)"),
    (dict(num_predict=70), r"--num_predict \(70\) must be in 1..seq_len - 3"),
    (dict(span_context="wide"),
     r"--span_context must be one of \('released', 'paper'\), got 'wide'"),
])
def test_inconsistent_flags_fail_before_any_work(changes, message, spiece_model, tmp_path):
  rows = RowSettings(**{**PRETRAIN_SETTINGS.rows.__dict__, **changes})
  settings = pipeline.DataSettings(**{**PRETRAIN_SETTINGS.__dict__, "rows": rows})
  with pytest.raises(ValueError, match=message):
    pipeline.create(settings, [CORPUS_GLOB], spiece_model, str(tmp_path / "out"))
  assert not (tmp_path / "out").exists()


def test_bad_inputs_fail_with_the_flag_and_the_file(spiece_model, tmp_path):
  out = str(tmp_path / "out")
  with pytest.raises(FileNotFoundError, match=r"--input_glob: no file matches '.*nothing\*'"):
    pipeline.create(PRETRAIN_SETTINGS, [str(tmp_path / "nothing*")], spiece_model, out)
  (tmp_path / "empty.txt").write_text("")
  with pytest.raises(ValueError, match="are all empty"):
    pipeline.create(PRETRAIN_SETTINGS, [str(tmp_path / "empty.txt")], spiece_model, out)
  (tmp_path / "blank.txt").write_text("\n   \n\t\n")
  with pytest.raises(ValueError, match="gave no complete row"):
    pipeline.create(PRETRAIN_SETTINGS, [str(tmp_path / "blank.txt")], spiece_model, out)
  assert not os.path.exists(os.path.join(out, "manifest.json"))

  plain = tmp_path / "plain"
  spm.SentencePieceTrainer.train(sentence_iterator=iter(["the whale and the sea"] * 50),
                                 model_prefix=str(plain), vocab_size=20,
                                 hard_vocab_limit=False)
  with pytest.raises(ValueError, match=r"plain.model.*<cls> is missing"):
    pipeline.create(PRETRAIN_SETTINGS, [CORPUS_GLOB], str(plain) + ".model", out)


def test_undecodable_bytes_and_overlong_lines_are_counted_not_fatal(spiece_model, tmp_path):
  corpus = tmp_path / "corpus"
  corpus.mkdir()
  for path in sorted(glob.glob(CORPUS_GLOB))[:6]:
    shutil.copy(path, corpus)
  with open(corpus / "chapter_1.txt", "ab") as f:
    f.write(b"\nbroken \xff\xfe bytes in a line\n\n" + b"long " * 400 + b"\n")
  settings = pipeline.DataSettings(**{**PRETRAIN_SETTINGS.__dict__, "max_line_chars": 1000})
  manifest = pipeline.create(settings, [str(corpus / "*.txt")], spiece_model,
                             str(tmp_path / "out"))
  long_lines = sum(len(line) > 1000 for path in corpus.iterdir()
                   for line in path.read_bytes().decode("utf-8", "replace").split("\n"))
  assert long_lines >= 2                                   # ours and Melville's own
  assert manifest["counts"]["undecodable_lines"] == 1
  assert manifest["counts"]["overlong_lines"] == long_lines
  assert manifest["counts"]["examples"] > 0
