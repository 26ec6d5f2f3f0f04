"""Issue 15, conversion / serving / task-data items: each case as a user meets it.

1  `xlnet_tf.convert` must never destroy its source or a directory it did not write, and
   replacing an earlier output must not lose it when something fails.
8  Bad output locations of convert and of the SavedModel exports are refused before any
   work, naming the flag.
10 A task file that is not UTF-8: the error names the file and the line.
12 A truncated or corrupt weight file of a HuggingFace directory: the error names the file.
14 The serving signatures check their inputs' shapes and say what they expect.

The command lines (one interpreter per entry point, `probe`) and the fresh-process serving
check are slow; the same refusals made in-process are fast.
"""

import json
import os
import shutil

import pytest

from helpers import run_fresh
from helpers import small_config
from hf_reference import make_hf_model
from probe import probe
from xlnet_tf import model_directory
from xlnet_tf.convert import importer as convert_module
from xlnet_tf import pretrained
from xlnet_tf.convert.importer import convert
from xlnet_tf.data import classifier_tasks
from xlnet_tf.data.classifier_readers import movie_reviews
from xlnet_tf.models.xlnet_classifier import ClassifierSpec
from xlnet_tf.models.xlnet_squad import SquadSpec

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="2")


def _tree(directory):
  """{relative path: bytes} of every file under `directory`."""
  files = {}
  for base, _, names in os.walk(directory):
    for name in names:
      path = os.path.join(base, name)
      with open(path, "rb") as f:
        files[os.path.relpath(path, directory)] = f.read()
  return files


@pytest.fixture(scope="module", name="pristine_hf")
def _pristine_hf(tmp_path_factory):
  """A small HuggingFace XLNet directory (config.json + model.safetensors), never modified."""
  directory = tmp_path_factory.mktemp("pristine") / "hf"
  make_hf_model(small_config(), seed=11).save_pretrained(os.fspath(directory))
  return directory


@pytest.fixture(name="hf_dir")
def _hf_dir(pristine_hf, tmp_path):
  """A copy of the HF directory the test may change."""
  shutil.copytree(pristine_hf, tmp_path / "hf")
  return tmp_path / "hf"


@pytest.fixture(scope="module", name="convert_runs")
def _convert_runs(pristine_hf, tmp_path_factory):
  """The refused xlnet-convert (`experiments.convert`) command lines of this file, in one
  interpreter (`probe`): "own source" (--output a copy of the HF directory that is its
  --source, with "hf_dir" that copy and "before" its files before the run) and "under a
  file" (--output
  "afile"/sub): name -> CompletedProcess, and the paths."""
  work = tmp_path_factory.mktemp("convert_cli")
  hf_dir = work / "hf"
  shutil.copytree(pristine_hf, hf_dir)
  before = _tree(hf_dir)
  (work / "afile").write_text("x")
  own, under = probe("experiments.convert", [
      ["--source", hf_dir, "--output", hf_dir, "--overwrite"],
      ["--source", pristine_hf, "--output", work / "afile" / "sub"]], env=ENV)
  return {"own source": own, "under a file": under, "hf_dir": hf_dir, "before": before,
          "afile": work / "afile"}


# ---- 1: the source and foreign directories are never deleted ---------------------------------

@pytest.mark.slow
def test_convert_into_its_own_source_is_refused_and_the_source_kept(convert_runs):
  """The command line refuses --output that is --source in one line, and the source is as it
  was. (In-process: test_output_inside_containing_or_aliasing_the_source_is_refused.)"""
  # Before: rc 0, and hf_dir held only conversion.json, model.ckpt.*, xlnet_config.json.
  run, hf_dir = convert_runs["own source"], convert_runs["hf_dir"]
  assert run.returncode == 1, run.stderr
  assert f"--output {hf_dir} is --source {hf_dir}" in run.stderr
  assert "Traceback" not in run.stderr
  assert _tree(hf_dir) == convert_runs["before"]


def test_output_inside_containing_or_aliasing_the_source_is_refused(hf_dir, tmp_path):
  before = _tree(hf_dir)
  os.symlink(hf_dir, tmp_path / "alias")
  cases = [(hf_dir / "converted", "lies inside"), (hf_dir / "a" / "b", "lies inside"),
           (tmp_path, "contains"), (tmp_path / "alias", "is"),
           (tmp_path / "alias" / "out", "lies inside"), (hf_dir / ".." / "hf", "is")]
  for output, relation in cases:
    with pytest.raises(ValueError, match=f"{relation} --source"):
      convert(os.fspath(hf_dir), os.fspath(output), overwrite=True)
  # Also when the source is given through the link.
  with pytest.raises(ValueError, match="is --source"):
    convert(os.fspath(tmp_path / "alias"), os.fspath(hf_dir), overwrite=True)
  assert _tree(hf_dir) == before
  assert sorted(os.listdir(tmp_path)) == ["alias", "hf"]
  # Components, not string prefixes: ".../hf2" is not inside ".../hf".
  convert(os.fspath(hf_dir), os.fspath(tmp_path / "hf2"))
  assert (tmp_path / "hf2" / "conversion.json").exists()


def test_overwrite_replaces_only_an_earlier_conversion_output(hf_dir, tmp_path):
  # Before: --overwrite deleted any directory, e.g. a user's folder of notes.
  user = tmp_path / "notes"
  user.mkdir()
  (user / "thesis.txt").write_text("years of work")
  with pytest.raises(FileExistsError, match=r"not the output of a previous conversion .*no "
                                            r"conversion.json.*thesis.txt"):
    convert(os.fspath(hf_dir), os.fspath(user), overwrite=True)
  assert (user / "thesis.txt").read_text() == "years of work"

  out = tmp_path / "out"
  convert(os.fspath(hf_dir), os.fspath(out))
  (out / "my_results.csv").write_text("1,2")
  with pytest.raises(FileExistsError, match=r"holds files a conversion does not write: "
                                            r"\['my_results.csv'\]"):
    convert(os.fspath(hf_dir), os.fspath(out), overwrite=True)
  os.remove(out / "my_results.csv")
  convert(os.fspath(hf_dir), os.fspath(out), overwrite=True)     # an earlier output: replaced
  assert sorted(os.listdir(tmp_path)) == ["hf", "notes", "out"]


def test_a_failed_replacement_keeps_the_previous_output(hf_dir, tmp_path, monkeypatch):
  out = tmp_path / "out"
  convert(os.fspath(hf_dir), os.fspath(out))
  previous = _tree(out)

  def failing_save(*args, **kwargs):
    del args, kwargs
    raise OSError(28, "No space left on device")
  with monkeypatch.context() as patch:
    patch.setattr(pretrained, "save_pretrained", failing_save)
    with pytest.raises(OSError, match="No space left"):
      convert(os.fspath(hf_dir), os.fspath(out), overwrite=True)
  assert _tree(out) == previous
  assert sorted(os.listdir(tmp_path)) == ["hf", "out"]          # no partial output left

  def failing(move):
    def move_unless_partial(src, dst):
      if ".partial-" in os.fspath(src):
        raise OSError(18, "Invalid cross-device link")
      return move(src, dst)
    return move_unless_partial
  with monkeypatch.context() as patch:      # the move of the new output into place fails
    patch.setattr(convert_module.os, "rename", failing(os.rename))
    patch.setattr(convert_module.os, "replace", failing(os.replace))
    with pytest.raises(OSError, match="cross-device"):
      convert(os.fspath(hf_dir), os.fspath(out), overwrite=True)
  assert _tree(out) == previous
  assert sorted(os.listdir(tmp_path)) == ["hf", "out"]


# ---- 8: bad output locations, before any work ------------------------------------------------

@pytest.mark.slow
def test_convert_output_under_a_file_is_refused_first_on_the_command_line(convert_runs):
  """The command line refuses an --output under a file in one line, no traceback, and the
  file is kept."""
  # Before: NotADirectoryError: [Errno 20] Not a directory: '.../afile/sub.partial-5118'
  # (a traceback after reading and building the model).
  run, afile = convert_runs["under a file"], convert_runs["afile"]
  assert run.returncode == 1
  assert f"--output: {afile / 'sub'} lies under {afile}, which is a file" in run.stderr
  assert "Traceback" not in run.stderr
  assert afile.read_text() == "x"


def test_convert_output_under_a_file_or_a_file_is_refused_first(hf_dir, tmp_path):
  """An --output under a file, or that is a file, is refused naming the flag before any
  work (a missing --source is not even looked at), and the file is kept."""
  (tmp_path / "afile").write_text("x")
  with pytest.raises(NotADirectoryError) as refused:
    convert(os.fspath(hf_dir), os.fspath(tmp_path / "afile" / "sub"))
  assert (f"--output: {tmp_path / 'afile' / 'sub'} lies under {tmp_path / 'afile'}, which is "
          f"a file") in str(refused.value)
  # Before: NotADirectoryError from shutil.rmtree after the whole conversion.
  with pytest.raises(NotADirectoryError, match="--output: .*afile is a file"):
    convert(os.fspath(tmp_path / "missing_source"), os.fspath(tmp_path / "afile"),
            overwrite=True)
  assert (tmp_path / "afile").read_text() == "x"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_convert_output_in_a_read_only_directory(hf_dir, tmp_path):
  locked = tmp_path / "locked"
  locked.mkdir()
  locked.chmod(0o555)
  try:
    with pytest.raises(PermissionError, match="--output: cannot write"):
      convert(os.fspath(hf_dir), os.fspath(locked / "out"))
  finally:
    locked.chmod(0o755)


# ---- 12: truncated or corrupt weight files name the file -------------------------------------

def test_truncated_safetensors_names_the_file(hf_dir, tmp_path):
  path = hf_dir / "model.safetensors"
  data = path.read_bytes()
  # Before: "SafetensorError: Error while deserializing header: incomplete metadata, file not
  # fully covered" (and "header too small" for 5 bytes): no file named.
  path.write_bytes(data[:len(data) // 2])
  with pytest.raises(ValueError, match=f"{path}: truncated safetensors file: "
                                       f"{len(data) // 2:,} bytes, its header describes "
                                       f"{len(data):,} bytes"):
    convert(os.fspath(hf_dir), os.fspath(tmp_path / "out"))
  path.write_bytes(data[:5])
  with pytest.raises(ValueError, match=f"{path}: truncated or corrupt safetensors file"):
    convert(os.fspath(hf_dir), os.fspath(tmp_path / "out"))
  path.write_bytes(data[:8] + b"{not json" + data[17:])
  with pytest.raises(ValueError, match=f"{path}: corrupt safetensors file"):
    convert(os.fspath(hf_dir), os.fspath(tmp_path / "out"))

  # A sharded directory whose second shard is truncated.
  from safetensors.numpy import load_file, save_file  # pylint: disable=g-import-not-at-top
  path.write_bytes(data)
  tensors = load_file(os.fspath(path))
  names = sorted(tensors)
  shards = {"model-00001-of-00002.safetensors": names[:3],
            "model-00002-of-00002.safetensors": names[3:]}
  for shard, keys in shards.items():
    save_file({k: tensors[k] for k in keys}, os.fspath(hf_dir / shard))
  os.remove(path)
  (hf_dir / "model.safetensors.index.json").write_text(json.dumps(
      {"weight_map": {k: shard for shard, keys in shards.items() for k in keys}}))
  convert(os.fspath(hf_dir), os.fspath(tmp_path / "sharded_ok"))
  second = hf_dir / "model-00002-of-00002.safetensors"
  second.write_bytes(second.read_bytes()[:-100])
  with pytest.raises(ValueError, match=f"{second} \\(listed in .*index.json\\): truncated "
                                       f"safetensors file"):
    convert(os.fspath(hf_dir), os.fspath(tmp_path / "out"))
  (hf_dir / "model.safetensors.index.json").write_text('{"weight_map": ')
  with pytest.raises(ValueError, match="model.safetensors.index.json: corrupt sharded"):
    convert(os.fspath(hf_dir), os.fspath(tmp_path / "out"))
  assert not (tmp_path / "out").exists()


def test_truncated_pytorch_bin_names_the_file(hf_dir, tmp_path):
  import torch  # pylint: disable=g-import-not-at-top
  from safetensors.torch import load_file  # pylint: disable=g-import-not-at-top
  state = load_file(os.fspath(hf_dir / "model.safetensors"))
  os.remove(hf_dir / "model.safetensors")
  binary = hf_dir / "pytorch_model.bin"
  torch.save(state, binary)
  binary.write_bytes(binary.read_bytes()[:1000])
  # Before: "RuntimeError: PytorchStreamReader failed reading zip archive: failed finding
  # central directory", no file named.
  with pytest.raises(ValueError, match=f"{binary}: cannot read the PyTorch weights; the file "
                                       f"is truncated or corrupt"):
    convert(os.fspath(hf_dir), os.fspath(tmp_path / "out"))


# ---- 8 (exports) and 14: the SavedModel exports -------------------------------------------

SEQ = 16

# Runs in a fresh interpreter with no PYTHONPATH, in an empty directory (`run_fresh`): only
# TensorFlow and tensorflow-text can be imported. Calls each signature with good and bad
# inputs and gives {case: "ok" or the error message}.
SERVE_CASES = r"""
result = {}
loaded = {}
for case, (export_dir, signature, inputs, dtypes) in request["cases"].items():
  if export_dir not in loaded:
    loaded[export_dir] = tf.saved_model.load(export_dir)
  serve = loaded[export_dir].signatures[signature]
  try:
    out = serve(**{k: tf.constant(v, dtypes[k]) for k, v in inputs.items()})
    result[case] = "ok " + json.dumps({k: list(v.shape) for k, v in out.items()},
                                      sort_keys=True)
  except tf.errors.InvalidArgumentError as e:
    result[case] = e.message
"""


@pytest.fixture(scope="module", name="model_dirs")
def _model_dirs(spiece_model, tmp_path_factory):
  """The model directory of a tiny random classifier (max_seq_length SEQ) and a directory
  with a SQuAD model's settings and SentencePiece model (the export takes the model)."""
  from xlnet_tf.models.xlnet_classifier import build_classifier  # pylint: disable=g-import-not-at-top
  work = tmp_path_factory.mktemp("model_dirs")
  spec = ClassifierSpec(task_name="movie_reviews", labels=("negative", "positive"),
                        max_seq_length=SEQ)
  model = build_classifier(small_config(n_layer=1, n_token=4000), 2, dropout_rate=0.0)
  model_directory.save(model, os.fspath(work / "classifier"), spec, spiece_model)
  squad_dir = work / "squad"
  squad_dir.mkdir()
  shutil.copyfile(spiece_model, squad_dir / model_directory.SPIECE_FILE)
  (squad_dir / SquadSpec.FILE).write_text(json.dumps(
      {"max_seq_length": 48, "max_query_length": 16, "uncased": False}))
  return {"classifier_dir": work / "classifier", "squad_dir": squad_dir}


@pytest.fixture(scope="module", name="exports")
def _exports(model_dirs, tmp_path_factory):
  """(classifier export with text_a/text_b, SQuAD export) of the tiny random models."""
  from xlnet_tf.models.xlnet_squad import build_squad_model  # pylint: disable=g-import-not-at-top
  from xlnet_tf.serving import classifier_export  # pylint: disable=g-import-not-at-top
  from xlnet_tf.serving import squad_export  # pylint: disable=g-import-not-at-top
  work = tmp_path_factory.mktemp("exports")
  classifier = classifier_export.export_classifier(os.fspath(model_dirs["classifier_dir"]),
                                                   os.fspath(work / "classifier_export"),
                                                   pair=True)
  squad = squad_export.export_squad(build_squad_model(small_config(n_layer=1, n_token=4000)),
                                    os.fspath(model_dirs["squad_dir"]),
                                    os.fspath(work / "squad_export"))
  return {"classifier": classifier, "squad": squad}


@pytest.mark.slow
def test_signatures_check_input_shapes_in_a_fresh_process(exports, tmp_path):
  text, ids = "serving_default", "serving_ids"
  strings = {"text_a": "string", "text_b": "string"}
  id_types = {"input_ids": "int32", "segment_ids": "int32", "input_mask": "float32"}
  qa_types = {"question": "string", "context": "string"}

  def id_inputs(batch, width):
    return {"input_ids": [[5] * width] * batch, "segment_ids": [[0] * width] * batch,
            "input_mask": [[0.0] * width] * batch}
  classifier, squad = exports["classifier"], exports["squad"]
  cases = {
      "text_ok": (classifier, text, {"text_a": ["a fine film"], "text_b": ["yes"]}, strings),
      "text_scalar": (classifier, text, {"text_a": "a fine film", "text_b": ["yes"]}, strings),
      "text_2d": (classifier, text, {"text_a": [["a"]], "text_b": [["b"]]}, strings),
      "text_batches": (classifier, text, {"text_a": ["a", "b"], "text_b": ["c"]}, strings),
      "ids_ok": (classifier, ids, id_inputs(2, SEQ), id_types),
      "ids_200": (classifier, ids, id_inputs(1600, 200), id_types),
      "ids_1d": (classifier, ids, {k: v[0] for k, v in id_inputs(1, SEQ).items()}, id_types),
      "ids_batches": (classifier, ids, {**id_inputs(2, SEQ),
                                        "input_mask": id_inputs(3, SEQ)["input_mask"]},
                      id_types),
      "qa_ok": (squad, text, {"question": ["Who?"], "context": ["Ahab hunted."]}, qa_types),
      "qa_scalar": (squad, text, {"question": "Who?", "context": ["Ahab hunted."]}, qa_types),
      "qa_batches": (squad, text, {"question": ["Who?", "Why?"], "context": ["Ahab."]},
                     qa_types),
  }
  got = run_fresh(SERVE_CASES, {"cases": cases}, tmp_path)
  for case in ("text_ok", "ids_ok", "qa_ok"):
    assert got.pop(case).startswith("ok "), case
  texts = "(a 1-D string Tensor, one UTF-8 text per example"
  ids_note = f"max_seq_length of this export: {SEQ}"
  # Before: "params must be at least 1 dimensional" / "Input to reshape is a tensor with
  # 320000 values, but the requested shape has ..." from deep inside the graph.
  expected = {
      "text_scalar": f"serving_default: input text_a has shape []; expected [batch] {texts}",
      "text_2d": f"serving_default: input text_a has shape [1, 1]; expected [batch] {texts}",
      "text_batches": "serving_default: inputs text_a and text_b have batch sizes 2 and 1",
      "ids_200": f"serving_ids: input input_ids has shape [1600, 200]; expected [batch, {SEQ}]"
                 f" (int32 token ids, {ids_note}",
      "ids_1d": f"serving_ids: input input_ids has shape [{SEQ}]; expected [batch, {SEQ}]",
      "ids_batches": "serving_ids: inputs input_ids and input_mask have batch sizes 2 and 3",
      "qa_scalar": "serving_default: input question has shape []; expected [batch] (a 1-D "
                   "string Tensor, one UTF-8 question per example)",
      "qa_batches": "serving_default: inputs question and context have batch sizes 2 and 1",
  }
  assert sorted(got) == sorted(expected)
  for case, message in expected.items():
    assert message in got[case], (case, got[case][-1500:])


@pytest.mark.slow
def test_export_output_location_is_checked_before_loading(model_dirs, tmp_path):
  """experiments.export_saved_model refuses an --export_dir under a file, or that is a file,
  in one line naming the flag (both command lines in one interpreter, `probe`)."""
  (tmp_path / "afile").write_text("x")
  bad = tmp_path / "afile" / "export"
  # Before: a raw "FailedPreconditionError: .../afile is not a directory" traceback from
  # tf.saved_model.save, after loading the model and tracing the signatures.
  under, onto = probe("experiments.export_saved_model", [
      [f"--model_dir={model_dirs['classifier_dir']}", f"--export_dir={bad}"],
      [f"--model_dir={model_dirs['classifier_dir']}", f"--export_dir={tmp_path / 'afile'}"]],
      env=ENV)
  assert under.returncode == 1
  assert (f"export_saved_model: --export_dir: {bad} lies under {tmp_path / 'afile'}, which is "
          f"a file") in under.stderr
  assert "Traceback" not in under.stderr
  assert "--export_dir: " in onto.stderr and "is a file" in onto.stderr, onto.stderr[-2000:]
  assert (tmp_path / "afile").read_text() == "x"


def test_squad_export_location_is_checked_before_tracing(model_dirs, tmp_path):
  """The SQuAD export refuses an export directory under a file, naming the flag, and the file
  is kept."""
  from xlnet_tf.models.xlnet_squad import build_squad_model  # pylint: disable=g-import-not-at-top
  from xlnet_tf.serving import squad_export  # pylint: disable=g-import-not-at-top
  (tmp_path / "afile").write_text("x")
  bad = tmp_path / "afile" / "export"
  with pytest.raises(NotADirectoryError, match="--export_dir: .* lies under"):
    squad_export.export_squad(build_squad_model(small_config(n_token=4000)),
                              os.fspath(model_dirs["squad_dir"]), os.fspath(bad))
  assert (tmp_path / "afile").read_text() == "x"


# ---- 10: task files that are not UTF-8 ------------------------------------------------------

LATIN1 = "Un film très réussi".encode("latin-1")       # b"\xe8" in "très"


def _write_with_bad_line(path, good_lines, bad_line, line_end=b"\n"):
  """`good_lines` (str) then `bad_line` (bytes, Latin-1) as line len(good_lines) + 1."""
  data = b"".join(line.encode("utf-8") + line_end for line in good_lines) + bad_line + line_end
  path.write_bytes(data)


def test_non_utf8_task_files_name_the_file_and_line(tmp_path):
  rows = [f"a good sentence number {i} with some words\t{i % 2}" for i in range(60)]
  glue = tmp_path / "SST-2"
  glue.mkdir()
  # Before: "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xe8 in position 2840:
  # invalid continuation byte" (a position in the read buffer, no file, no line).
  _write_with_bad_line(glue / "train.tsv", ["sentence\tlabel"] + rows, LATIN1 + b"\t1",
                       line_end=b"\r\n")
  with pytest.raises(ValueError, match=f"{glue / 'train.tsv'}:62: not valid UTF-8: byte 0xe8 "
                                       f"at byte 11 of the line .*must be UTF-8"):
    classifier_tasks.get_task("sst-2").read(os.fspath(glue), "train")

  generic = tmp_path / "generic"
  generic.mkdir()
  _write_with_bad_line(generic / "train.csv", ["text,label"] + [r.replace("\t", ",")
                                                                for r in rows], LATIN1 + b",1")
  _write_with_bad_line(generic / "dev.jsonl", [json.dumps({"text": "fine", "label": "1"})] * 5,
                       b'{"text": "' + LATIN1 + b'", "label": "0"}')
  _write_with_bad_line(generic / "test.tsv", ["text\tlabel", "ok\t1"], b"x\t" + LATIN1)
  task = classifier_tasks.get_task("generic")
  with pytest.raises(ValueError, match=r"train.csv:62: not valid UTF-8: byte 0xe8"):
    task.read(os.fspath(generic), "train")
  with pytest.raises(ValueError, match=r"dev.jsonl:6: not valid UTF-8: byte 0xe8 at byte 21"):
    task.read(os.fspath(generic), "dev", labels=["0", "1"])
  (generic / "test.tsv").write_bytes(b"text\t" + LATIN1 + b"\nok\t1\n")   # in the header
  with pytest.raises(ValueError, match=r"test.tsv:1: not valid UTF-8"):
    task.read(os.fspath(generic), "test", labels=["0", "1"])

  movies = tmp_path / "movies"
  movies.mkdir()
  _write_with_bad_line(movies / movie_reviews.MOVIE_REVIEWS_FILE,
                       [f"{i}_1\t1.5\tgood {i}" for i in range(9)], b"9_1\t1.5\t" + LATIN1,
                       line_end=b"\r\n")
  with pytest.raises(ValueError, match=r"movieReviewSnippets_GroundTruth.txt:10: not valid "
                                       r"UTF-8"):
    classifier_tasks.get_task("movie_reviews").read(os.fspath(movies), "train")

  imdb = tmp_path / "aclImdb"
  for label in ("pos", "neg"):
    (imdb / "train" / label).mkdir(parents=True)
    (imdb / "train" / label / "0_7.txt").write_text("fine<br />film")
  (imdb / "train" / "neg" / "1_2.txt").write_bytes(b"line one\nline two " + LATIN1)
  with pytest.raises(ValueError, match=r"neg/1_2.txt:2: not valid UTF-8: byte 0xe8 at byte 20"):
    classifier_tasks.get_task("imdb").read(os.fspath(imdb), "train")
