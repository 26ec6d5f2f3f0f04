"""HuggingFace's PyTorch XLNet timed on our pretraining inputs (the benchmarks' baseline).

  >>> forward_s, train_step_s = benchmark_hf(config, inputs, None, steps=3)
"""

import os

from xlnet_tf.benchmarks.timing import median_seconds


def benchmark_hf(config, inputs, mems_shape, steps, clip_norm=None):
  """Median seconds of a forward pass and of a training step (LM loss at the targets,
  AdamW, optional clipping by global norm) of `XLNetLMHeadModel` at `config`, fp32."""
  import torch  # pylint: disable=g-import-not-at-top
  import transformers  # pylint: disable=g-import-not-at-top
  torch.set_num_threads(os.cpu_count())
  model = transformers.XLNetLMHeadModel(transformers.XLNetConfig(**config.to_hf_dict()))
  kwargs = {"input_ids": torch.as_tensor(inputs["input_ids"], dtype=torch.long),
            "token_type_ids": torch.as_tensor(inputs["segment_ids"], dtype=torch.long),
            "perm_mask": torch.as_tensor(inputs["perm_mask"]),
            "target_mapping": torch.as_tensor(inputs["target_mapping"]), "use_mems": False}
  if mems_shape:
    b, m, d = mems_shape
    kwargs["mems"] = [torch.randn(m, b, d) for _ in range(config.n_layer)]
  labels = torch.as_tensor(inputs["target"], dtype=torch.long)
  optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)

  def forward():
    model.eval()
    with torch.no_grad():
      model(**kwargs)

  def train_step():
    model.train()
    optimizer.zero_grad()
    loss = model(**kwargs, labels=labels).loss
    loss.backward()
    if clip_norm:
      torch.nn.utils.clip_grad_norm_(model.parameters(), clip_norm)
    optimizer.step()

  return median_seconds(forward, steps), median_seconds(train_step, steps)
