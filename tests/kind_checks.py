"""The checks the tests that walk the registry of task kinds make of each kind, as
functions of the kind (its test record: `kind_tests.of(kind.name)`): run for every
registered kind by tests/tasks/test_task_kinds.py, test_experiment_configs.py and
test_every_kind.py, and for a kind made inside tests/tasks/test_a_new_kind.py."""

import inspect
import itertools
import os

import numpy as np
import pytest
import tensorflow as tf
from official.core import exp_factory
from official.core import task_factory

from helpers import small_config
import kind_tests
from xlnet_tf import model_directory
from xlnet_tf import pretrained
from xlnet_tf import task_kind
from xlnet_tf.configs import XLNetConfig
from xlnet_tf.convert import hf_heads
from xlnet_tf.convert import task_heads
from xlnet_tf.convert import to_huggingface
from xlnet_tf.convert.heads.base import HeadConversion
from xlnet_tf.tasks import base
from xlnet_tf.tasks import train_lib

CONFIGS = sorted(os.path.join(kind_tests.CONFIGS, name)
                 for name in os.listdir(kind_tests.CONFIGS) if name.endswith(".yaml"))
SIZES = {"base": (12, 768), "large": (24, 1024), "small": (2, 128)}


def check_every_consumer(kind: task_kind.TaskKind, tmp_path) -> None:
  """What every consumer of the registry asks of `kind`, asked (its test record:
  `kind_tests.of(kind.name)`)."""
  config = small_config()
  directory = str(tmp_path / "model")
  if kind.spec_class is None:                                  # the pretrained layout
    model = kind.build_model(config)
    pretrained.save_pretrained(model, directory)
    loaded = pretrained.load_directory(directory)
  else:
    spec = kind_tests.of(kind.name).example_spec
    assert type(spec) is kind.spec_class and kind.spec_file == spec.FILE
    assert spec.WRITTEN_BY
    model = spec.build_model(config)
    model_directory.save(model, directory, spec, None)
    loaded, read = model_directory.load(directory, kind.spec_class)
    assert read.to_values() == spec.to_values()          # as the spec file records it
    assert kind.max_seq_length                       # a converted checkpoint's default
  # The model: its class, found back from the instance and the class (from_preset).
  assert isinstance(model, kind.model_class)
  assert task_kind.of_model(model) is kind and task_kind.of_model_class(kind.model_class) is kind
  for ours, theirs in zip(model.variables, loaded.variables):
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
  # The model directory and the exporter to HuggingFace find the kind by its spec file.
  assert task_kind.of_model_dir(directory) is kind
  if kind.conversion is None:
    with pytest.raises(ValueError, match=kind.hf_not_exportable):
      to_huggingface.detect_kind(directory)
  else:
    assert to_huggingface.detect_kind(directory) == kind.name
  # HuggingFace: the class written, and every class read maps back to the kind.
  if kind.conversion is None:                     # refused, saying why (the ranker)
    with pytest.raises(ValueError, match=f"cannot be exported to HuggingFace: "
                                         f"{kind.hf_not_exportable}"):
      hf_heads.architecture_out(kind.name)
  else:
    assert hf_heads.architecture_out(kind.name) == kind.conversion.hf_architecture_out
    for architecture in kind.conversion.hf_architectures_in:
      assert hf_heads.architectures_in()[architecture] == kind.name
    assert kind.conversion.released_head
  # The original's head: its variables by their released (or converted) names.
  if kind.name == task_kind.PRETRAINED:
    assert not isinstance(kind.conversion, HeadConversion)
  else:
    assert kind.name in task_heads.task_kind.head_kinds()
  if isinstance(kind.conversion, HeadConversion):
    assert kind.conversion.spec_class is kind.spec_class
    heads = kind.conversion.head_variables(model, "sst-2")
    assert heads and all(any(v is w for w in model.variables) for v in heads.values())
  # The card, the export, the description.
  assert kind.card_task and kind.description
  assert {"model_dir", "export_dir"} <= set(inspect.signature(kind.export).parameters)
  # The driver: a trained kind's experiment builds a task whose record is the kind.
  if kind.experiment is not None:
    params = exp_factory.get_exp_config(kind.experiment)
    task_class = task_factory._REGISTERED_TASK_CLS[type(params.task)]  # pylint: disable=protected-access
    assert task_class.KIND is kind
    assert task_class.loss_fn is not base.XLNetTask.loss_fn


def experiment_configs(kind: task_kind.TaskKind):
  """The YAML files of `kind`'s experiment: experiments/configs/<name>_*.yaml for the
  experiment "xlnet/<name>", and the demo run's."""
  name = kind.experiment.split("/")[-1]
  demo = kind_tests.of(kind.name).demo_run
  files = [p for p in CONFIGS if os.path.basename(p).startswith(name + "_")]
  return files, demo


def _stand_in_checkpoint(path, size):
  """A directory with only xlnet_config.json of the released size (what the task reads
  before building)."""
  n_layer, d_model = SIZES[size]
  os.makedirs(path, exist_ok=True)
  XLNetConfig(n_layer=n_layer, d_model=d_model, n_head=d_model // 64, d_head=64,
              d_inner=4 * d_model).to_json_file(os.path.join(path, "xlnet_config.json"))
  return path


def check_experiment_configs(kind: task_kind.TaskKind, fixtures: kind_tests.Fixtures,
                             configs=None) -> None:
  """Every YAML file of `kind`'s experiment (`configs`: paths instead) parses with the
  overrides of its test record and builds its task (recomputation on: every task has the
  option) and, at demo size, its model."""
  files, demo = experiment_configs(kind)
  record = kind_tests.of(kind.name)
  demo_file, demo_override = demo(fixtures)
  paths = list(configs) if configs is not None else sorted(
      set(files) | {os.path.join(kind_tests.CONFIGS, demo_file)})
  for path in paths:
    name = os.path.basename(path)
    size = next((s for s in SIZES if f"_{s}" in name), None)
    if name == demo_file or not record.config_override:
      override = [demo_override]
    else:
      override = [record.config_override(fixtures)]
    if size and kind.name != task_kind.PRETRAINED:
      override.append("task.init_checkpoint=" +
                      _stand_in_checkpoint(str(fixtures.tmp_path / size), size))
    override.append("task.model.recompute=layer")
    params = train_lib.parse_params(kind.experiment, [path], ",".join(override))
    task = task_factory.get_task(params.task)
    config = task.xlnet_config()
    assert config.recompute == "layer", name
    if size:
      assert (config.n_layer, config.d_model) == SIZES[size], name
    else:
      assert config.n_layer == 1, name                     # demo size
      task.build_model()


def check_stream_from_step(kind: task_kind.TaskKind, fixtures: kind_tests.Fixtures,
                           config_file: str = "", override: str = "") -> None:
  """The part of an exact resume that is the kind's own: the training data a run resumed at
  step k reads is the uninterrupted run's from step k. Two task objects are built from the
  kind's demo run (`config_file` and `override`: another run of the kind), as a process
  started again after a kill builds its own; `train_dataset_fn(data, A)(ctx, start_step=k)`
  of the second yields exactly the micro-batches k·A·R, k·A·R + 1, ... of the first's
  stream from step 0 (every key equal), for R = 1 and 2 replicas an input pipeline feeds
  and A = 2 micro-batches a step (pretraining: 1, it takes whole steps; its k is past the
  largest shard, so that the record skipping crosses into another shard)."""
  demo_file, demo_override = kind_tests.of(kind.name).demo_run(fixtures)
  config_file = config_file or os.path.join(kind_tests.CONFIGS, demo_file)
  accumulate = 1 if kind.name == task_kind.PRETRAINED else 2
  override = override or demo_override
  if accumulate > 1:
    override += f",task.optimization.grad_accum_steps={accumulate}"
  params = train_lib.parse_params(kind.experiment, [config_file], override)
  params = train_lib.resolve_init_checkpoint(train_lib._with_default_cache(  # pylint: disable=protected-access
      params, str(fixtures.tmp_path / "stream")))
  whole, resumed = (task_factory.get_task(params.task) for _ in range(2))
  data = params.task.train_data
  step = 3
  if kind.name == task_kind.PRETRAINED:
    step = 1 + max(shard["steps"] for shard in whole.manifest(data)["shards"])
  for replicas in (1, 2):
    context = tf.distribute.InputContext(num_input_pipelines=1, input_pipeline_id=0,
                                         num_replicas_in_sync=replicas)
    skipped = step * accumulate * replicas
    expected = list(itertools.islice(
        whole.train_dataset_fn(data, accumulate)(context, 0).as_numpy_iterator(),
        skipped, skipped + 2 * replicas))
    got = list(itertools.islice(
        resumed.train_dataset_fn(data, accumulate)(context, step).as_numpy_iterator(),
        2 * replicas))
    assert len(got) == len(expected) == 2 * replicas, (kind.name, replicas)
    for k, (ours, theirs) in enumerate(zip(got, expected)):
      assert ours.keys() == theirs.keys(), (kind.name, replicas, k)
      for key in ours:
        np.testing.assert_array_equal(ours[key], theirs[key],
                                      err_msg=f"{kind.name}: {replicas} replica(s), "
                                              f"micro-batch {k} after step {step}, {key}")
