"""zihangdai/xlnet's command lines on our entry points (experiments/released_flags.py,
xlnet_tf/runs/released/flag_translation.py):
train.py-, run_classifier.py-, run_squad.py- and run_race.py-style command lines run; a flag
with no equivalent fails before any work naming what replaced it; every mapping of the table
points at a flag the entry point really defines."""

import json
import os
import subprocess
import sys

import pytest
import yaml

from helpers import PRETRAIN_SETTINGS
from helpers import small_config
from helpers import write_race_sample
from xlnet_tf import build_pretrainer
from xlnet_tf import save_pretrained
from xlnet_tf.runs.released import flag_translation

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SQUAD = os.path.join(ROOT, "data_prep", "sample_data", "qa", "squad.json")

# The flags each released script defines (read from zihangdai/xlnet).
RELEASED_SCRIPT_FLAGS = {
    "train.py": """master tpu gcp_project tpu_zone use_tpu num_hosts num_core_per_host
        track_mean num_passes record_info_dir model_dir init_checkpoint learning_rate clip
        min_lr_ratio warmup_steps adam_epsilon decay_method weight_decay train_batch_size
        train_steps iterations save_steps max_save seq_len reuse_len uncased perm_size
        bi_data mask_alpha mask_beta num_predict n_token mem_len same_length clamp_len
        n_layer d_model d_embed n_head d_head d_inner dropout dropatt untie_r summary_type
        ff_activation use_bfloat16 init init_std init_range pass_id task""",
    "train_gpu.py": """num_hosts num_core_per_host use_tpu num_passes record_info_dir
        model_dir init_checkpoint learning_rate clip min_lr_ratio warmup_steps adam_epsilon
        decay_method weight_decay train_batch_size train_steps iterations save_steps
        seq_len reuse_len bi_data mask_alpha mask_beta num_predict perm_size uncased n_token
        mem_len same_length clamp_len n_layer d_model d_embed n_head d_head d_inner dropout
        dropatt untie_r summary_type ff_activation use_bfloat16 init init_std init_range
        pass_id task""",
    "run_classifier.py": """model_config_path dropout dropatt clamp_len summary_type
        use_summ_proj use_bfloat16 init init_std init_range overwrite_data init_checkpoint
        output_dir spiece_model_file model_dir data_dir use_tpu num_hosts num_core_per_host
        tpu_job_name tpu tpu_zone gcp_project master iterations do_train train_steps
        warmup_steps learning_rate lr_layer_decay_rate min_lr_ratio clip max_save save_steps
        train_batch_size weight_decay adam_epsilon decay_method do_eval do_predict
        predict_threshold eval_split eval_batch_size predict_batch_size predict_dir
        eval_all_ckpt predict_ckpt task_name max_seq_length shuffle_buffer num_passes uncased
        cls_scope is_regression""",
    "run_squad.py": """do_prepro num_proc proc_id model_config_path dropout dropatt
        clamp_len summary_type use_bfloat16 init init_std init_range overwrite_data
        init_checkpoint init_global_vars output_dir predict_dir spiece_model_file model_dir
        train_file predict_file max_seq_length max_query_length doc_stride max_answer_length
        uncased use_colab_tpu use_tpu num_hosts num_core_per_host tpu_job_name tpu
        tpu_address tpu_zone gcp_project master iterations do_train train_batch_size
        train_steps warmup_steps save_steps max_save shuffle_buffer learning_rate
        min_lr_ratio clip weight_decay adam_epsilon decay_method lr_layer_decay_rate
        do_predict predict_batch_size n_best_size start_n_top end_n_top target_eval_key""",
    "run_race.py": """model_config_path dropout dropatt clamp_len summary_type use_summ_proj
        use_bfloat16 init init_std init_range overwrite_data init_checkpoint output_dir
        spiece_model_file model_dir data_dir use_tpu num_hosts num_core_per_host
        tpu_job_name tpu tpu_zone gcp_project master iterations do_train train_steps
        warmup_steps learning_rate lr_layer_decay_rate min_lr_ratio clip max_save save_steps
        train_batch_size weight_decay adam_epsilon decay_method do_eval eval_split
        eval_batch_size max_seq_length max_qa_length shuffle_buffer uncased high_only
        middle_only""",
}


def _cli(args):
  return subprocess.run([sys.executable, "-m"] + args, cwd=ROOT, capture_output=True,
                        text=True, check=False)


def _python(code):
  result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": ROOT}, timeout=300)
  assert result.returncode == 0, result.stderr[-3000:]
  return json.loads(result.stdout.strip().splitlines()[-1])


def _released_records_flags():
  """train.py's data flags, as the tests' records were made (PRETRAIN_SETTINGS)."""
  rows = PRETRAIN_SETTINGS.rows
  return [f"--seq_len={rows.seq_len}", f"--reuse_len={rows.reuse_len}",
          f"--num_predict={rows.num_predict}", f"--perm_size={rows.perm_size}",
          f"--bi_data={rows.bi_data}", f"--mask_alpha={rows.mask_alpha}",
          f"--mask_beta={rows.mask_beta}", f"--num_core_per_host={rows.num_core_per_host}",
          f"--num_passes={PRETRAIN_SETTINGS.num_passes}", "--uncased=False", "--num_hosts=1",
          f"--train_batch_size={rows.bsz_per_host}"]


# ---- one process per entry point: the flags it defines, and its refusals ------------------

# Run in the probe after `import MODULE`: the flags defined and by which module.
_DEFINED = """
import json
from absl import app, flags
import {module}
from experiments import released_flags
FLAGS, out = flags.FLAGS, {{}}
defined = {{n: FLAGS.find_module_defining_flag(n) for n in FLAGS}}
"""

# Each command line of CASES (name -> argv) after COMMON: train.py's through pretrain's main
# ("ran" or the exit line) ...
_MAIN_CASES = """
for case, argv in CASES.items():
  FLAGS.unparse_flags()
  FLAGS(COMMON + argv)
  try:
    {module}.main(["prog"])
    out[case] = "ran"
  except (SystemExit, app.UsageError) as e:
    out[case] = str(e)
"""
# ... the fine-tuning scripts' through `apply` (what main does first): the flags of REPORT
# or the exit line.
_APPLY_CASES = """
for case, argv in CASES.items():
  FLAGS.unparse_flags()
  FLAGS(COMMON + argv)
  try:
    released_flags.apply(TOOL)
    out[case] = {{k: FLAGS[k].value for k in REPORT}}
  except SystemExit as e:
    out[case] = str(e)
"""


def _probe(module, cases_code, **values):
  """{"defined": {flag: its module}, "cases": {case: outcome}} of one process importing
  `module` (values: CASES, COMMON and what cases_code reads, as Python literals)."""
  code = (_DEFINED.format(module=module)
          + "".join(f"{name} = {value!r}\n" for name, value in values.items())
          + cases_code.format(module=module)
          + 'print(json.dumps({"defined": defined, "cases": out}))\n')
  return _python(code)


@pytest.fixture(scope="module")
def probes(pretraining_records, tmp_path_factory):
  """{entry point module: its probe's answers, "work": the directory of their paths}."""
  work = tmp_path_factory.mktemp("released_flags")
  records, _ = pretraining_records
  old = work / "tfrecords"                       # the original's records: no manifest.json
  old.mkdir()
  (old / "record_info-train-0-0.bsz-8.seqlen-64.json").write_text("{}")
  released = work / "xlnet_cased_L-12_H-768_A-12"          # a released model directory
  released.mkdir()
  (released / "xlnet_model.ckpt.index").write_text("")
  answers = {"work": work}
  answers["experiments.pretrain"] = _probe(
      "experiments.pretrain", _MAIN_CASES,
      COMMON=["prog", f"--record_info_dir={records}", f"--model_dir={work / 'pretrain_run'}"],
      CASES={
          "master": ["--master=grpc://10.0.0.1:8470"],
          "cos": ["--decay_method=cos"],
          "bfloat16": ["--use_bfloat16", "--precision=mixed_float16"],
          "cores": ["--num_core_per_host=8"],
          "alpha": ["--mask_alpha=4"],
          "hosts": ["--num_hosts=2"],
          "old_records": [f"--record_info_dir={old}"],
      })
  answers["experiments.run_classifier"] = _probe(
      "experiments.run_classifier", _APPLY_CASES, TOOL="run_classifier",
      REPORT=("max_checkpoints", "precision", "iterations", "predict_dir"),
      COMMON=["prog", "--do_train", "--task_name=movie_reviews",
              f"--output_dir={work / 'out'}", f"--model_dir={work / 'run'}"],
      CASES={
          "eval_all_ckpt": ["--eval_all_ckpt=True"],
          "cores": ["--num_core_per_host=4"],
          "hosts": ["--num_hosts=2"],
          "tpu_job": ["--tpu_job_name=worker"],
          "released_ckpt": [f"--init_checkpoint={released / 'xlnet_model.ckpt'}"],
          "harmless": ["--use_tpu=False", "--num_core_per_host=1", "--eval_all_ckpt=False",
                       "--predict_threshold=0", "--overwrite_data", "--predict_dir=p",
                       "--max_save=5", "--use_bfloat16", "--iterations=7"],
      })
  answers["experiments.run_squad"] = _probe(
      "experiments.run_squad", _APPLY_CASES, TOOL="run_squad",
      REPORT=("max_checkpoints", "precision", "iterations", "shuffle_buffer_size",
              "predict_dir", "output_dir", "tpu"),
      COMMON=["prog", "--do_train", f"--model_dir={work / 'run'}"],
      CASES={
          "do_prepro": ["--do_prepro=True"],
          "proc": ["--num_proc=4"],
          "init_global_vars": ["--init_global_vars=True"],
          "target": ["--target_eval_key=best_exact"],
          "max_save": ["--max_save=2", "--max_checkpoints=3"],
          "cores": ["--num_core_per_host=8"],
          "harmless": ["--use_tpu=False", "--do_prepro=False", "--num_proc=1",
                       "--max_save=0", "--use_bfloat16", "--iterations=7",
                       "--shuffle_buffer=2048", "--predict_dir=p", "--tpu_address=grpc://t"],
      })
  answers["experiments.run_race"] = _probe(
      "experiments.run_race", _APPLY_CASES, TOOL="run_race",
      REPORT=("levels", "max_checkpoints", "shuffle_buffer_size", "precision"),
      COMMON=["prog", "--do_train", f"--model_dir={work / 'run'}"],
      CASES={
          "both_levels": ["--high_only", "--middle_only"],
          "levels": ["--high_only", "--levels=middle"],
          "master": ["--master=grpc://10.0.0.1:8470"],
          "clamp": ["--clamp_len=512"],
          "high": ["--high_only", "--middle_only=False", "--max_save=4",
                   "--shuffle_buffer=64"],
      })
  return answers


# ---- the table -------------------------------------------------------------------------

def test_the_table_covers_every_flag_of_every_released_script():
  for script, names in RELEASED_SCRIPT_FLAGS.items():
    assert flag_translation.script_flags(script) == sorted(names.split()), script
  for name, entry in flag_translation.RELEASED.items():
    assert entry.note and set(entry.scripts) <= set("TGCSR"), name
    assert set(entry.mapped or "") <= set(entry.scripts), name


@pytest.mark.slow
@pytest.mark.parametrize("module", sorted(set(flag_translation.ENTRY_POINTS.values())))
def test_every_mapping_names_a_flag_its_entry_point_defines(module, probes):
  """Each released name parses on the entry point that replaces its script, and where the
  table maps it to one of our flags, the entry point (not released_flags) defines that flag."""
  defined = probes[module]["defined"]
  assert any(m == "experiments.released_flags" for m in defined.values()), (
      f"{module} does not call released_flags.define")
  for script in (s for s, m in flag_translation.ENTRY_POINTS.items() if m == module):
    for name in flag_translation.script_flags(script):
      assert name in defined, (script, name)
      targets = flag_translation.maps_to(name, script)
      if targets:
        ours = [t for t in targets if t in defined
                and defined[t] != "experiments.released_flags"]
        assert ours, f"{script} --{name}: the table says {targets}, {module} defines none"


# ---- train.py ---------------------------------------------------------------------------

@pytest.mark.slow
def test_a_train_py_command_line_pretrains(pretraining_records, tmp_path):
  records, _ = pretraining_records
  run = tmp_path / "run"
  result = _cli(
      ["experiments.pretrain", f"--record_info_dir={records}", f"--model_dir={run}",
       "--use_tpu=False", "--n_layer=1", "--d_model=32", "--d_embed=32", "--n_head=2",
       "--d_head=16", "--d_inner=64", "--untie_r=True", "--ff_activation=gelu",
       "--mem_len=16", "--dropout=0.0", "--dropatt=0.0", "--learning_rate=1e-3",
       "--warmup_steps=2", "--train_steps=4", "--iterations=2", "--save_steps=2",
       "--max_save=0", "--use_bfloat16=True", "--decay_method=poly", "--init=normal",
       "--init_std=0.02", "--init_range=0.1", "--pass_id=0", "--task=0", "--track_mean",
       "--min_lr_ratio=0.001", "--weight_decay=0.01", "--adam_epsilon=1e-6", "--clip=1.0",
       f"--export_dir={tmp_path / 'export'}"] + _released_records_flags())
  assert result.returncode == 0, result.stderr[-3000:]
  params = yaml.safe_load((run / "params.yaml").read_text())
  assert params["task"]["train_data"]["input_path"] == records          # record_info_dir
  assert params["task"]["optimization"]["precision"] == "bfloat16"      # use_bfloat16
  assert params["trainer"]["steps_per_loop"] == 2                       # iterations
  assert params["trainer"]["max_to_keep"] == flag_translation.KEEP_ALL_CHECKPOINTS
  assert (run / "ckpt-2.index").exists() and (run / "ckpt-4.index").exists()
  assert (run / "final" / "xlnet_config.json").exists()              # the driver's layout
  assert (tmp_path / "export" / "saved_model.pb").exists()        # a SavedModel (encoder)


@pytest.mark.slow
def test_train_py_flags_that_contradict_the_records_or_are_gone_fail_before_any_work(probes):
  """The probe parses each command line and runs pretrain's main."""
  out = probes["experiments.pretrain"]["cases"]
  assert out["master"] == ("pretrain: --master=grpc://10.0.0.1:8470 (zihangdai/xlnet) is "
                           "not taken here: the TF1 session master is gone: the strategy "
                           "connects itself (--tpu=NAME; TF_CONFIG with "
                           "--strategy=multi_worker)")
  assert "linear (poly) decay only: cosine is not implemented" in out["cos"]
  assert ("--use_bfloat16=True means --precision=bfloat16, but --precision=mixed_float16 "
          "is given too") in out["bfloat16"]
  assert out["cores"].startswith("--num_core_per_host=8 contradicts the records")
  assert "--strategy=mirrored --num_gpus=8" in out["cores"]
  assert out["alpha"].startswith("--mask_alpha=4 contradicts the records")
  assert out["hosts"].startswith("--num_hosts=2 contradicts the strategy, which has 1")
  assert "holds the original's records (record_info-*.json)" in out["old_records"]
  assert not (probes["work"] / "pretrain_run").exists()         # nothing ran


# ---- run_classifier.py ------------------------------------------------------------------

@pytest.mark.slow
def test_a_run_classifier_py_command_line_fine_tunes_evaluates_and_predicts(spiece_model,
                                                                            tmp_path):
  pretrained = tmp_path / "pretrained"
  save_pretrained(build_pretrainer(small_config(n_token=4000)), str(pretrained), spiece_model)
  out, run, predictions = tmp_path / "proc_data", tmp_path / "exp", tmp_path / "predict"
  result = _cli(
      ["experiments.run_classifier", "--do_train=True", "--do_eval=True",
       "--do_predict=True", "--task_name=movie_reviews", f"--output_dir={out}",
       f"--model_dir={run}", f"--predict_dir={predictions}",
       f"--spiece_model_file={spiece_model}",
       f"--model_config_path={pretrained / 'xlnet_config.json'}",
       f"--init_checkpoint={pretrained}", "--uncased=False", "--max_seq_length=32",
       "--train_batch_size=16", "--learning_rate=1e-3", "--train_steps=8",
       "--warmup_steps=1", "--iterations=2", "--save_steps=2", "--max_save=0",
       "--num_hosts=1", "--num_core_per_host=1", "--use_tpu=False", "--eval_split=dev",
       "--eval_batch_size=64", "--predict_batch_size=64", "--shuffle_buffer=2048",
       "--overwrite_data=True", "--decay_method=poly", "--clamp_len=-1",
       "--summary_type=last", "--use_summ_proj=True", "--num_passes=1",
       "--is_regression=False", "--init=normal", "--init_std=0.02", "--dropout=0.1",
       "--dropatt=0.1", "--lr_layer_decay_rate=1.0", "--weight_decay=0.0",
       "--adam_epsilon=1e-8", "--min_lr_ratio=0.0", "--clip=1.0"])
  assert result.returncode == 0, result.stderr[-3000:]
  params = yaml.safe_load((run / "params.yaml").read_text())
  assert params["task"]["train_data"]["shuffle_buffer_size"] == 2048     # shuffle_buffer
  assert params["task"]["validation_data"]["global_batch_size"] == 64   # predict_batch_size
  assert sorted(p.name for p in run.glob("ckpt-*.index")) == [          # max_save 0: all
      "ckpt-2.index", "ckpt-4.index", "ckpt-6.index", "ckpt-8.index"]
  results = json.loads((out / "eval_results_dev.json").read_text())
  assert results["num_examples"] == 1019 and 0.0 <= results["accuracy"] <= 1.0
  rows = (predictions / "movie_reviews_test_predictions.tsv").read_text().splitlines()
  assert rows[0] == "index\tprediction" and len(rows) == 1 + 1081       # predict_dir
  assert (run / "final" / "classifier.json").exists()


@pytest.mark.slow
def test_run_classifier_py_flags_without_an_equivalent_fail_naming_the_replacement(probes):
  """The probe parses each command line and runs `apply` (what main does first)."""
  out = probes["experiments.run_classifier"]["cases"]
  assert out["eval_all_ckpt"] == (
      "run_classifier: --eval_all_ckpt=True (zihangdai/xlnet) is not taken here: --do_eval "
      "evaluates the newest checkpoint; python -m experiments.train --mode=train_and_eval "
      "evaluates during training and keeps the best model")
  assert out["cores"].startswith("run_classifier: --num_core_per_host=4, but the strategy "
                                 "flags select 1 replica(s) per host: for 4 GPUs give "
                                 "--strategy=mirrored --num_gpus=4")
  assert "several hosts are --strategy=multi_worker" in out["hosts"]
  assert "TPUStrategy finds the TPU workers from --tpu" in out["tpu_job"]
  assert "python -m xlnet_tf.convert --source" in out["released_ckpt"]
  assert out["harmless"] == {"max_checkpoints": 5, "precision": "bfloat16",
                             "iterations": 7, "predict_dir": "p"}


def _pretrained_1_layer(spiece_model, directory):
  """A random 1-layer model directory (xlnet_config.json, model.ckpt, spiece.model)."""
  save_pretrained(build_pretrainer(small_config(n_layer=1, d_model=32, n_head=2, d_head=16,
                                                d_inner=64, n_token=4000)),
                  str(directory), spiece_model)
  return directory


# The flags every fine-tuning script shares, at their released values (harmless here).
_RELEASED_FINETUNING = [
    "--use_tpu=False", "--num_hosts=1", "--num_core_per_host=1", "--overwrite_data=False",
    "--decay_method=poly", "--clamp_len=-1", "--init=normal", "--init_std=0.02",
    "--init_range=0.1", "--uncased=False", "--weight_decay=0.0", "--min_lr_ratio=0.0",
    "--clip=1.0", "--dropout=0.1", "--dropatt=0.1", "--shuffle_buffer=2048"]


# ---- run_squad.py -----------------------------------------------------------------------

def _assert_the_loop_flags(params):
  """What `--iterations=2 --save_steps=2 --max_save=0 --use_bfloat16=True` of run_squad.py
  and run_race.py make of the experiment (params.yaml's values)."""
  assert params["trainer"]["steps_per_loop"] == 2                       # iterations
  assert params["trainer"]["checkpoint_interval"] == 2                  # save_steps
  assert params["trainer"]["max_to_keep"] == flag_translation.KEEP_ALL_CHECKPOINTS
  assert params["task"]["optimization"]["precision"] == "bfloat16"      # use_bfloat16


@pytest.mark.slow
def test_a_run_squad_py_command_line_fine_tunes_and_predicts(spiece_model, tmp_path):
  pretrained = _pretrained_1_layer(spiece_model, tmp_path / "pretrained")
  out, run, predictions = tmp_path / "proc_data", tmp_path / "exp", tmp_path / "predict"
  result = _cli(
      ["experiments.run_squad", "--do_train=True", "--do_predict=True",
       f"--train_file={SQUAD}", f"--predict_file={SQUAD}", f"--output_dir={out}",
       f"--model_dir={run}", f"--predict_dir={predictions}",
       f"--spiece_model_file={spiece_model}",
       f"--model_config_path={pretrained / 'xlnet_config.json'}",
       f"--init_checkpoint={pretrained}", "--max_seq_length=64", "--doc_stride=24",
       "--max_query_length=16", "--max_answer_length=64", "--n_best_size=5",
       "--start_n_top=3", "--end_n_top=3", "--train_batch_size=8",
       "--predict_batch_size=16", "--learning_rate=3e-3", "--lr_layer_decay_rate=0.75",
       "--adam_epsilon=1e-6", "--train_steps=4", "--warmup_steps=1", "--iterations=2",
       "--save_steps=2", "--max_save=0", "--use_bfloat16=True", "--do_prepro=False",
       "--num_proc=1", "--proc_id=0", "--init_global_vars=False",
       "--target_eval_key=best_f1", "--use_colab_tpu=False", "--summary_type=last"]
      + _RELEASED_FINETUNING)
  assert result.returncode == 0, result.stderr[-3000:]
  params = yaml.safe_load((run / "params.yaml").read_text())
  _assert_the_loop_flags(params)
  assert params["task"]["train_data"]["shuffle_buffer_size"] == 2048     # shuffle_buffer
  assert params["task"]["validation_data"]["global_batch_size"] == 16   # predict_batch_size
  assert params["task"]["init_checkpoint"] == str(pretrained)
  assert params["task"]["model"]["n_layer"] == 1                        # model_config_path
  assert sorted(p.name for p in run.glob("ckpt-*.index")) == ["ckpt-2.index", "ckpt-4.index"]
  assert (run / "final" / "squad.json").exists()
  answers = json.loads((predictions / "predictions.json").read_text())  # predict_dir
  assert len(answers) == 5
  assert json.loads((predictions / "eval_results.json").read_text())["total"] == 5


@pytest.mark.slow
def test_run_squad_py_flags_without_an_equivalent_fail_naming_the_replacement(probes):
  out = probes["experiments.run_squad"]["cases"]
  assert out["do_prepro"] == (
      "run_squad: --do_prepro=True (zihangdai/xlnet) is not taken here: features are built "
      "and cached by the run that needs them (--do_train, --do_predict)")
  assert "features are built in the training process" in out["proc"]
  assert "--init_checkpoint warm-starts the encoder" in out["init_global_vars"]
  assert "maximises F1 over all questions (best_f1)" in out["target"]
  assert out["max_save"] == ("run_squad: --max_save=2 means --max_checkpoints=2, but "
                             "--max_checkpoints=3 is given too")
  assert "--strategy=mirrored --num_gpus=8" in out["cores"]
  assert out["harmless"] == {
      "max_checkpoints": flag_translation.KEEP_ALL_CHECKPOINTS, "precision": "bfloat16",
      "iterations": 7, "shuffle_buffer_size": 2048, "predict_dir": "p", "output_dir": None,
      "tpu": "grpc://t"}


# ---- run_race.py ------------------------------------------------------------------------

@pytest.mark.slow
def test_a_run_race_py_command_line_fine_tunes_and_evaluates(spiece_model, tmp_path):
  data = tmp_path / "RACE"
  write_race_sample(data, splits=("train", "dev"))
  pretrained = _pretrained_1_layer(spiece_model, tmp_path / "pretrained")
  out, run = tmp_path / "proc_data", tmp_path / "exp"
  result = _cli(
      ["experiments.run_race", "--do_train=True", "--do_eval=True", f"--data_dir={data}",
       f"--output_dir={out}", f"--model_dir={run}", f"--spiece_model_file={spiece_model}",
       f"--model_config_path={pretrained / 'xlnet_config.json'}",
       f"--init_checkpoint={pretrained}", "--max_seq_length=64", "--max_qa_length=16",
       "--train_batch_size=4", "--eval_batch_size=8", "--learning_rate=1e-3",
       "--lr_layer_decay_rate=1.0", "--adam_epsilon=1e-6", "--train_steps=4",
       "--warmup_steps=1", "--iterations=2", "--save_steps=2", "--max_save=0",
       "--use_bfloat16=True", "--middle_only=True", "--high_only=False",
       "--eval_split=dev", "--summary_type=last", "--use_summ_proj=True"]
      + _RELEASED_FINETUNING)
  assert result.returncode == 0, result.stderr[-3000:]
  params = yaml.safe_load((run / "params.yaml").read_text())
  _assert_the_loop_flags(params)
  assert params["task"]["levels"] == ["middle"]                         # middle_only
  assert params["task"]["train_data"]["shuffle_buffer_size"] == 2048     # shuffle_buffer
  assert params["task"]["model"]["n_layer"] == 1                        # model_config_path
  assert sorted(p.name for p in run.glob("ckpt-*.index")) == ["ckpt-2.index", "ckpt-4.index"]
  results = json.loads((out / "eval_results_dev.json").read_text())
  assert results["total"] == results["middle_total"] == 4 and "high_total" not in results
  assert (run / "final" / "race.json").exists()


@pytest.mark.slow
def test_run_race_py_flags_without_an_equivalent_fail_naming_the_replacement(probes):
  out = probes["experiments.run_race"]["cases"]
  assert out["both_levels"] == ("run_race: --middle_only=True means --levels=middle, but "
                                "--high_only=True means --levels=high")
  assert out["levels"] == ("run_race: --high_only=True means --levels=high, but "
                           "--levels=middle is given too")
  assert "the TF1 session master is gone" in out["master"]
  assert out["clamp"] == ("run_race: --clamp_len=512 (zihangdai/xlnet) is not taken here: "
                          "fine-tuning takes the pretrained xlnet_config.json's (-1)")
  assert out["high"] == {"levels": ["high"], "max_checkpoints": 4,
                         "shuffle_buffer_size": 64, "precision": "float32"}
