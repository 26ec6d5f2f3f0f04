"""The experiments of `exp_factory` and their defaults, the released scripts'.

  >>> from official.core import exp_factory
  >>> import xlnet_tf.tasks.experiments
  >>> params = exp_factory.get_exp_config("xlnet/classification")

  xlnet/pretraining     100K steps, 1000 per loop, a checkpoint every 10K; optimisation as
                        the paper's runs (lr 4e-4, weight decay 0.01, eps 1e-6, min_lr_ratio
                        0.001) (give task.train_data.input_path, a record directory)
  xlnet/classification  run_classifier.py: lr 1e-5, batch 8, 1000 steps (give
                        init_checkpoint)
  xlnet/squad           run_squad.py: lr 3e-5, layer decay 0.75, batch 48, 8000 steps,
                        max_seq_length 512; 1000 warmup steps as its TPU script
                        (tpu_squad_large.sh; the script's flag default is 0) (give
                        init_checkpoint, train_file, predict_file)
  xlnet/race            run_race.py: lr 2e-5, batch 8, 12000 steps, 1000 per loop; the
                        released script saves no intermediate checkpoint, here one every
                        1000 steps (its README scripts' --save_steps) (give data_dir)
  xlnet/tagging         the fine-tuning defaults on the Brown corpus (bundled subset)
  xlnet/ranking         K-NRM over a frozen pretrained XLNet (the paper's ClueWeb09-B
                        reranking): batch 32 pairs, 2000 steps at lr 0.05 (K-NRM's release:
                        1e-3 for far more steps; the head is 12 numbers), Adam epsilon 1e-5
                        as that release; BM25's top 100 reranked (give init_checkpoint and
                        the collection's files)

The task defaults are in each task's config (`xlnet_tf/tasks/<task>.py`). YAML files in
experiments/configs override them (`--config_file`; a tiny `<task>_demo.yaml` for each),
`--params_override` on top.
"""

from official.core import config_definitions as cfg
from official.core import exp_factory

from xlnet_tf.tasks import classification
from xlnet_tf.tasks import pretraining
from xlnet_tf.tasks import race
from xlnet_tf.tasks import ranking
from xlnet_tf.tasks import squad
from xlnet_tf.tasks import tagging

# The experiments' names are the task kinds' (`task_kind.TaskKind.experiment`).
PRETRAINING = pretraining.KIND.experiment
CLASSIFICATION = classification.KIND.experiment
SQUAD = squad.KIND.experiment
RACE = race.KIND.experiment
TAGGING = tagging.KIND.experiment
RANKING = ranking.KIND.experiment


def _experiment(task: cfg.TaskConfig, train_steps: int, steps_per_loop: int,
                checkpoint_interval: int, validation_interval: int,
                max_to_keep: int = 3) -> cfg.ExperimentConfig:
  restrictions = ["task.train_data.is_training != None"]
  if not isinstance(task, pretraining.PretrainingConfig):
    restrictions.append("task.validation_data.is_training != None")
  return cfg.ExperimentConfig(
      task=task, runtime=cfg.RuntimeConfig(distribution_strategy="one_device"),
      trainer=cfg.TrainerConfig(
          train_steps=train_steps, steps_per_loop=steps_per_loop,
          checkpoint_interval=checkpoint_interval, max_to_keep=max_to_keep,
          summary_interval=steps_per_loop, validation_steps=-1,
          validation_interval=validation_interval),
      restrictions=restrictions)


@exp_factory.register_config_factory(PRETRAINING)
def pretraining_experiment() -> cfg.ExperimentConfig:
  return _experiment(pretraining.PretrainingConfig(), 100_000, 1000, 10_000, 10_000,
                     max_to_keep=5)


@exp_factory.register_config_factory(CLASSIFICATION)
def classification_experiment() -> cfg.ExperimentConfig:
  return _experiment(classification.ClassificationConfig(), 1000, 100, 1000, 1000)


@exp_factory.register_config_factory(SQUAD)
def squad_experiment() -> cfg.ExperimentConfig:
  return _experiment(squad.SquadConfig(), 8000, 1000, 1000, 2000, max_to_keep=5)


@exp_factory.register_config_factory(RACE)
def race_experiment() -> cfg.ExperimentConfig:
  return _experiment(race.RaceConfig(), 12000, 1000, 1000, 1000)


@exp_factory.register_config_factory(TAGGING)
def tagging_experiment() -> cfg.ExperimentConfig:
  return _experiment(tagging.TaggingConfig(), 1000, 100, 1000, 1000)


@exp_factory.register_config_factory(RANKING)
def ranking_experiment() -> cfg.ExperimentConfig:
  return _experiment(ranking.RankingConfig(), 2000, 100, 500, 500)
