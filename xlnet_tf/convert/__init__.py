"""Weights in and out: released TF1 checkpoints (pretrained and fine-tuned, with their task
heads) and HuggingFace XLNet models (with their heads) to our model directory, and model
directories back to HuggingFace.

  importer.py        `convert(source, output, ConvertOptions(...))`: any source into our
                     layout (`python -m xlnet_tf.convert`, `xlnet-convert`)
  released.py        the released TF1 layout (xlnet_config.json + xlnet_model.ckpt)
  source.py          `SourceWeights`: arrays by released name, the config, what was read
  task_heads.py      a source's task head found by name and loaded into our model of its
                     kind (the original's TF1 heads identified here)
  heads/             each kind's conversion (its record's `conversion` in
                     `xlnet_tf.task_kind`): HF classes and head tensors, the original's head,
                     the model and spec written, the parity probes, the card
  huggingface.py     HuggingFace directories in (config, tokenizer settings, the encoder's
                     names)
  hf_weights.py      their weight files (safetensors without torch, pytorch_model.bin)
  hf_heads.py        the head of a HuggingFace directory: which kind, read by its conversion
  hf_parity.py       the parity with HuggingFace at conversion
  to_huggingface.py  a model directory out to HuggingFace (`--to huggingface`)
  __main__.py        the command line

This package file imports nothing, so that `xlnet_tf.convert.released` and `source` stay
as low in the stack as they are.
"""
