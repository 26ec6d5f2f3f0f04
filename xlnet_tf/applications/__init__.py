"""The released scripts' runs on our driver: what zihangdai/xlnet's train.py (`pretrain`),
run_classifier.py, run_squad.py and run_race.py do, as runs of the experiments of
xlnet_tf.tasks (`train_lib.run`). The top of the library, beside xlnet_tf.pipelines:
experiments/pretrain.py, run_classifier.py, run_squad.py and run_race.py define the flags
(and translate the released names, xlnet_tf.tasks.released_flags) and call `run(FLAGS)`
of the module of the same name. Nothing here defines absl flags; every function reads the
flags from the FlagValues it is given.
"""
