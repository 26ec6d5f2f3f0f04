"""Every YAML file in experiments/configs parses (strictly: an unknown key is an error) and
builds its task and network, and every registered experiment has a demo-size file that
the driver's tests train (tests/test_tasks_*.py, tests/tasks/test_tasks_kill_resume.py)."""

import glob
import os

from official.core import exp_factory
from official.core import task_factory

import helpers
from xlnet_tf.configs import XLNetConfig
from xlnet_tf.tasks import classification
from xlnet_tf.tasks import pretraining
from xlnet_tf.tasks import race
from xlnet_tf.tasks import ranking
from xlnet_tf.tasks import squad
from xlnet_tf.tasks import tagging
from xlnet_tf.tasks import train_lib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIGS = sorted(glob.glob(os.path.join(ROOT, "experiments", "configs", "*.yaml")))
EXPERIMENT_OF_PREFIX = {"classification": classification.KIND.experiment,
                        "pretraining": pretraining.KIND.experiment,
                        "squad": squad.KIND.experiment, "race": race.KIND.experiment,
                        "tagging": tagging.KIND.experiment, "ranking": ranking.KIND.experiment}
SIZES = {"base": (12, 768), "large": (24, 1024), "small": (2, 128)}


def _stand_in_checkpoint(path, size):
  """A directory with only xlnet_config.json of the released size (what the task reads
  before building)."""
  n_layer, d_model = SIZES[size]
  os.makedirs(path, exist_ok=True)
  XLNetConfig(n_layer=n_layer, d_model=d_model, n_head=d_model // 64, d_head=64,
              d_inner=4 * d_model).to_json_file(os.path.join(path, "xlnet_config.json"))
  return path


def test_every_registered_experiment_has_a_demo_config():
  registry = exp_factory._REGISTERED_CONFIGS  # pylint: disable=protected-access
  registered = {f"xlnet/{name}" for name in registry["xlnet"]}      # nested by "/"
  assert registered == set(EXPERIMENT_OF_PREFIX.values())
  demos = {EXPERIMENT_OF_PREFIX[os.path.basename(p).split("_")[0]] for p in CONFIGS
           if p.endswith("_demo.yaml")}
  assert demos == registered


def test_every_yaml_parses_and_builds_its_task(spiece_model, pretraining_records, tmp_path):
  assert len(CONFIGS) >= 10
  race_dir = tmp_path / "race"
  helpers.write_race_sample(race_dir, splits=("train", "dev"))
  tiny_pretrained = helpers.write_pretrained_dir(tmp_path / "pretrained", spiece_model)
  for path in CONFIGS:
    name = os.path.basename(path)
    experiment = EXPERIMENT_OF_PREFIX[name.split("_")[0]]
    size = next((s for s in SIZES if f"_{s}" in name), None)
    override = []
    if experiment == pretraining.KIND.experiment:
      override.append(f"task.train_data.input_path={pretraining_records[0]}")
    else:
      override += [f"task.train_data.spiece_model={spiece_model}",
                   f"task.validation_data.spiece_model={spiece_model}"]
      if size:
        override.append("task.init_checkpoint=" +
                        _stand_in_checkpoint(str(tmp_path / size), size))
    if experiment == race.KIND.experiment:
      override.append(f"task.data_dir={race_dir}")
    if experiment == squad.KIND.experiment and size:
      sample = os.path.join(ROOT, "data_prep", "sample_data", "qa", "squad.json")
      override += [f"task.train_file={sample}", f"task.predict_file={sample}"]
    if experiment == classification.KIND.experiment and size:
      override.append("task.task_name=movie_reviews")     # its data is bundled
    if experiment == ranking.KIND.experiment and not size:
      override.append(f"task.init_checkpoint={tiny_pretrained}")   # make demo's model
    override.append("task.model.recompute=layer")       # every task has the option
    params = train_lib.parse_params(experiment, [path], ",".join(override))
    task = task_factory.get_task(params.task)
    config = task.xlnet_config()
    assert config.recompute == "layer", name
    if size:
      assert (config.n_layer, config.d_model) == SIZES[size], name
    else:
      assert config.n_layer == 1, name                     # demo size
      task.build_model()


def _demo_override(experiment, spiece_model, records, race_dir, tmp_path):
  if experiment == pretraining.KIND.experiment:
    return (f"task.train_data.input_path={records},"
            f"task.validation_data.input_path={records}")
  override = (f"task.train_data.spiece_model={spiece_model},"
              f"task.validation_data.spiece_model={spiece_model}")
  if experiment == race.KIND.experiment:
    override += f",task.data_dir={race_dir}"
  if experiment == ranking.KIND.experiment:       # a tiny model over 12 chapters' passages
    files = helpers.write_ranking_sample(tmp_path / "collection")
    model_dir = helpers.write_pretrained_dir(tmp_path / "pretrained", spiece_model)
    override += (f",task.init_checkpoint={model_dir},task.documents={files['documents']},"
                 "task.max_seq_length=32,task.mem_len=32" + "".join(
                     f",task.{split}.{key}={files[key]}"
                     for split in ("train_data", "validation_data")
                     for key in ("queries", "qrels")))
  return override


def test_every_task_trains_in_bfloat16_with_gradient_accumulation(
    spiece_model, pretraining_records, tmp_path):
  """The same precision (bfloat16: the mixed_bfloat16 policy) and accumulation settings
  work for every task (pretraining with memories takes no accumulation: the trainer
  refuses it, as a micro-batch's memory is the previous micro-batch's text)."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tf_keras  # pylint: disable=g-import-not-at-top
  race_dir = tmp_path / "race"
  helpers.write_race_sample(race_dir, splits=("train", "dev"))
  for experiment in sorted(EXPERIMENT_OF_PREFIX.values()):
    demo = os.path.join(ROOT, "experiments", "configs",
                        f"{experiment.split('/')[1]}_demo.yaml")
    accumulate = 1 if experiment == pretraining.KIND.experiment else 2
    override = (_demo_override(experiment, spiece_model, pretraining_records[0], race_dir,
                               tmp_path) +
                ",trainer.train_steps=2,trainer.steps_per_loop=1,"
                "trainer.checkpoint_interval=2,task.optimization.warmup_steps=1,"
                "task.optimization.precision=bfloat16"
                + ("" if accumulate == 1 else
                   f",task.optimization.grad_accum_steps={accumulate}"))
    params = train_lib.parse_params(experiment, [demo], override)
    model_dir = str(tmp_path / experiment.replace("/", "_"))
    summary = train_lib.run(params, "train", model_dir)["train"]
    assert summary["step"] == 2 and len(summary["losses"]) == 2, experiment
    assert np.all(np.isfinite(summary["losses"])), (experiment, summary["losses"])
    assert tf_keras.mixed_precision.global_policy().name == "mixed_bfloat16"
    assert os.path.isdir(os.path.join(model_dir, "final")), experiment
    tf_keras.mixed_precision.set_global_policy("float32")
