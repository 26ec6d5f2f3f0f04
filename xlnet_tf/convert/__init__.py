"""Weights in and out: released TF1 checkpoints (pretrained and fine-tuned, with their task
heads) and HuggingFace XLNet models (with their heads) to our model directory, and model
directories back to HuggingFace.

  importer.py        `convert(source, output, ConvertOptions(...))`: any source into our
                     layout (`python -m xlnet_tf.convert`, `xlnet-convert`)
  released.py        the released TF1 layout (xlnet_config.json + xlnet_model.ckpt)
  source.py          `SourceWeights`: arrays by released name, the config, what was read
  task_heads.py      the original's task heads found by name; our model for one (through
                     the kind's spec in `xlnet_tf.task_kind`)
  huggingface.py     HuggingFace directories in (config, weights, heads)
  to_huggingface.py  a model directory out to HuggingFace (`--to huggingface`)
  __main__.py        the command line

This package file imports nothing, so that `xlnet_tf.convert.released` and `source` stay
as low in the stack as they are.
"""
