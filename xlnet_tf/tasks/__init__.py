"""Model Garden tasks (`official.core.base_task.Task`) of XLNet, one module per problem.

Each task module registers its task with `task_factory` and its record with
`xlnet_tf.task_kind`; `all_tasks` imports every one of them, `experiments` registers the
experiments ("xlnet/classification", ...) with `exp_factory`, and `train_lib` is the driver.
"""
