"""The released scripts' runs on our driver: what zihangdai/xlnet's train.py (`pretrain`),
run_classifier.py, run_squad.py and run_race.py do, as runs of the experiments of
xlnet_tf.tasks (`train_lib.run`); `flag_translation` says what each released flag is here
and translates the flags an entry point was given. experiments/pretrain.py,
run_classifier.py, run_squad.py and run_race.py define the flags and call `run(FLAGS)` of
the module of the same name; every function here reads the flags from the FlagValues it is
given.
"""
