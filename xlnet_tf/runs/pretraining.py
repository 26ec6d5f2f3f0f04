"""Pretraining from Python: the "xlnet/pretraining" experiment run by the driver
(`train_lib.train`, like every task) from an `XLNetConfig`, a record directory and
`loop.RunOptions`.

  >>> options = pretrain_options("runs/small", train_steps=2000, learning_rate=1e-3)
  >>> summary = pretrain(config, "records/", options)
  >>> summary["final_dir"]                          # the pretrained model directory
"""

import dataclasses
from typing import Any, Dict, Optional

from official.core import exp_factory
from official.core import task_factory
import tensorflow as tf

from xlnet_tf.configs import XLNetConfig
from xlnet_tf.data import pretrain_records
from xlnet_tf.models.xlnet_pretrainer import check_attn_type
from xlnet_tf.models.xlnet_pretrainer import objective_attn_type
from xlnet_tf.tasks import base
from xlnet_tf.tasks import pretraining
from xlnet_tf.tasks import train_lib
from xlnet_tf.training import loop

# The network of the pretraining config that `XLNetConfig` gives (the fields of
# `pretraining.PretrainModelConfig` of its names); bi_data and reuse_len come from the
# records, attn_type from the objective.
_NETWORK_KEYS = tuple(field.name for field in dataclasses.fields(pretraining.PretrainModelConfig)
                      if field.name in {f.name for f in dataclasses.fields(XLNetConfig)})


def pretrain_options(model_dir: str, train_steps: int, **changes) -> loop.RunOptions:
  """`loop.RunOptions` with the pretraining task's defaults (its `optimization`: the
  paper's values, the released train.py's flags) and `changes`."""
  defaults = exp_factory.get_exp_config(pretraining.KIND.experiment).task.optimization.as_dict()
  return loop.RunOptions(model_dir=model_dir, train_steps=train_steps,
                         **{**defaults, **changes})


def pretrain(config: XLNetConfig, records: str, options: loop.RunOptions, *,
             validation_records: str = "",
             strategy: Optional[tf.distribute.Strategy] = None) -> Dict[str, Any]:
  """Pretrains `config`'s network with its run options on the records of `records`, with
  `options` (the loop, the optimizer, the warm start), evaluating on `validation_records`
  when given; returns the driver's summary, the pretrained model directory in
  summary["final_dir"].

  Raises ValueError before any work when `config` disagrees with the records (bi_data,
  reuse_len) or the objective (attn_type), or `options` sets what pretraining has no use
  for (layer-wise decay, gradient accumulation, the collapse check)."""
  check_attn_type(config.attn_type, options.objective)
  manifest = pretrain_records.check_data(records)
  settings = manifest["settings"]
  if settings["bi_data"] != config.bi_data or settings["reuse_len"] != config.reuse_len:
    raise ValueError(f"the model config says bi_data={config.bi_data}, reuse_len="
                     f"{config.reuse_len}; the records were made with bi_data="
                     f"{settings['bi_data']}, reuse_len={settings['reuse_len']}")
  params = exp_factory.get_exp_config(pretraining.KIND.experiment)
  optimization = params.task.optimization.as_dict()
  values = dataclasses.asdict(options)
  unused = [key for key in values if key not in optimization and key not in base.LOOP_FIELDS
            and values[key] != getattr(loop.RunOptions, key)]
  if unused:
    raise ValueError(f"pretraining has no use for {unused} (fine-tuning's settings)")
  params.override({
      "task": {"model": {key: getattr(config, key) for key in _NETWORK_KEYS},
               "train_data": {"input_path": records},
               "validation_data": {"input_path": validation_records},
               "init_checkpoint": options.init_checkpoint or "",
               "optimization": {key: values[key] for key in optimization}},
      "trainer": {"train_steps": options.train_steps, "steps_per_loop": options.steps_per_loop,
                  "checkpoint_interval": options.save_steps,
                  "max_to_keep": options.max_checkpoints}})
  task = task_factory.get_task(params.task, logging_dir=options.model_dir)
  if objective_attn_type(options.objective) != config.attn_type:
    raise ValueError(f"the model config says attn_type={config.attn_type!r}; the objective "
                     f"{options.objective!r} trains with attn_type="
                     f"{objective_attn_type(options.objective)!r}")
  return train_lib.train(task, params, options.model_dir, options.stop_at_step,
                         evaluate=bool(validation_records), strategy=strategy)
