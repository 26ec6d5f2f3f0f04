"""Model Garden tasks (`official.core.base_task.Task`) of XLNet, one module per problem.

`base` holds what every task shares (`XLNetTask`, the configs derived from `XLNetConfig`,
`experiment_config`). Each task module (`classification`, `squad` with the simple span
head's record, `race`, `tagging`, `ranking`, `pretraining`) registers its task with
`task_factory`, its record with `xlnet_tf.task_kind` and, beside the record, its experiment
("xlnet/classification", ...) with `exp_factory`; `all_tasks` is the one list of the task
modules, and `train_lib` is the driver.
"""
