"""Classification and regression of whole documents through the Transformer-XL memory
(task.mem_len > 0), through the driver: the settings checked naming the field, exact
resume with dropout on (also inside the loop over the segments read without gradient),
the run settings (another mem_len refused; a directory written before these settings
resumes), gradient accumulation equal to one batch, mixed precision (slow), and the
metrics of a documents' split equal to reading each document alone. Real text only: the
bundled movie reviews in segments of 16 pieces, State of the Union speeches. (The lock and
the rest of the driver: tests/tasks/test_driver.py.)"""

import functools
import glob
import json
import os

from official.core import task_factory
import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from helpers import small_config
from xlnet_tf.data import classifier_features
from xlnet_tf.data import classifier_tasks
from xlnet_tf.data import document_features
from xlnet_tf.data import tokenization
from xlnet_tf.models.xlnet_classifier import build_classifier
from xlnet_tf.tasks import classification
from xlnet_tf.tasks import train_lib as driver
from xlnet_tf.training import optimization
from xlnet_tf.training import run_directory
from xlnet_tf.training.trainer import Trainer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIGS = os.path.join(ROOT, "experiments", "configs")
LONG_DEMO = os.path.join(CONFIGS, "classification_long_demo.yaml")
DEMO = os.path.join(CONFIGS, "classification_demo.yaml")
SPEECHES = sorted(glob.glob(os.path.join(ROOT, "data_prep", "sample_data", "sotu", "*_?.txt")))
PAD_ID, PAD_SEGMENT = 0, 4                       # the classifier's padding, written out


def _params(spiece_model, tmp_path, override="", config=LONG_DEMO, train_steps=4,
            steps_per_loop=2):
  cache = tmp_path / "features"
  return driver.parse_params(
      classification.KIND.experiment, [config],
      f"task.train_data.spiece_model={spiece_model},"
      f"task.validation_data.spiece_model={spiece_model},"
      f"task.train_data.cache_dir={cache},task.validation_data.cache_dir={cache},"
      f"trainer.train_steps={train_steps},trainer.steps_per_loop={steps_per_loop},"
      "trainer.checkpoint_interval=2,task.validation_data.max_examples=16" + override)


def test_document_settings_are_checked_naming_the_field(spiece_model, tmp_path):
  for override, message in (
      ("task.mem_len=-1", "task.mem_len must be >= 0 .*got -1"),
      ("task.bptt_segments=0", "task.bptt_segments must be >= 1, got 0"),
      ("task.max_segments=-2", "task.max_segments must be >= 0 .*got -2"),
      ("task.read_from=middle", r"task.read_from must be one of \('start', 'end'\), got "
                                "'middle'"),
      ("task.read_from=end", "task.read_from='end' chooses what the truncating classifier "
                             r"\(task.mem_len 0\) keeps"),
      ("task.mem_len=0,task.bptt_segments=2", "task.bptt_segments=2 applies to whole "
                                              r"documents \(task.mem_len > 0\)"),
      ("task.mem_len=0,task.max_segments=4", "task.max_segments=4 applies to whole")):
    params = _params(spiece_model, tmp_path, "," + override)
    with pytest.raises(ValueError, match=message):
      task_factory.get_task(params.task)
    with pytest.raises(driver.ConfigError, match=message):            # before any work
      driver.run(params, "train", str(tmp_path / "run"))
  assert not os.path.exists(tmp_path / "run")
  task = task_factory.get_task(_params(spiece_model, tmp_path,
                                       ",task.mem_len=0,task.read_from=end").task)
  assert task.spec.mem_len == 0 and not task.reads_documents


@pytest.mark.slow
def test_document_run_resumes_exactly_and_evaluates_every_document(spiece_model, tmp_path):
  """Dropout and attention dropout 0.1, in the segments read with gradient and in those
  read before them without (bucketed batches of documents): a run stopped at step 1 of 2
  and run again gives the uninterrupted losses exactly."""
  def with_dropout(override=""):
    return _params(spiece_model, tmp_path, ",task.model.dropout=0.1,task.model.dropatt=0.1,"
                   "task.optimization.warmup_steps=1" + override, train_steps=2,
                   steps_per_loop=1)

  params = with_dropout()
  straight = driver.run(params, "train", str(tmp_path / "straight"))["train"]
  assert straight["step"] == 2 and len(straight["losses"]) == 2
  assert np.all(np.isfinite(straight["losses"]))

  run_dir = str(tmp_path / "run")
  first = driver.run(params, "train", run_dir, stop_at_step=1)["train"]
  second = driver.run(params, "train", run_dir)["train"]
  assert second["start_step"] == 1 and second["step"] == 2
  assert first["losses"] + second["losses"] == straight["losses"]     # exact resume
  settings = json.loads(open(os.path.join(run_dir, "run_settings.json")).read())
  assert {k: settings["task"][k] for k in ("mem_len", "bptt_segments", "bucket_by_segments",
                                           "max_segments", "read_from")} == {
      "mem_len": 16, "bptt_segments": 1, "bucket_by_segments": True, "max_segments": 0,
      "read_from": "start"}
  for override, line in ((",task.mem_len=8", "task.mem_len: 16 in the directory, 8 now"),
                         (",task.bptt_segments=2",
                          "task.bptt_segments: 1 in the directory, 2 now")):
    with pytest.raises(run_directory.RunSettingsError, match=line):
      driver.run(with_dropout(override), "train", run_dir)

  # The model directory reads documents again; its metrics over the split are those of
  # reading each document alone (no batch, no padding segments).
  task = task_factory.get_task(params.task)
  model = task.load_model_dir(os.path.join(run_dir, driver.FINAL_DIR))
  assert model.encoder.config.mem_len == 16
  results = task.evaluate(model)
  examples = task.task_spec.read(None, "dev")
  order = np.random.default_rng(0).permutation(len(examples))    # max_examples' subset
  examples = [examples[i] for i in sorted(order[:16])]
  sp = tokenization.load_spiece(spiece_model)
  logits, labels = [], []
  for example in examples:
    ids = classifier_features.encode_text(sp, example.text_a)
    layout = document_features.document_layout(ids, None, 16)
    inputs = dict(zip(("input_ids", "segment_ids", "input_mask"),
                      (tf.constant(a[None]) for a in layout)))          # each [1, K, 16]
    logits.append(model(inputs, training=False)["logits"][0].numpy())
    labels.append(task.spec.labels.index(example.label))
  logits, labels = np.array(logits), np.array(labels)
  assert results["num_examples"] == 16
  assert results["accuracy"] == pytest.approx(np.mean(logits.argmax(-1) == labels), abs=1e-9)
  shifted = logits - logits.max(-1, keepdims=True)
  losses = np.log(np.exp(shifted).sum(-1)) - shifted[np.arange(16), labels]
  assert results["validation_loss"] == pytest.approx(losses.mean(), rel=1e-5)
  evaluated = driver.run(params, "eval", run_dir)["eval"]           # the checkpoint's
  assert evaluated["accuracy"] == results["accuracy"]


@pytest.mark.slow
def test_a_run_directory_written_before_the_document_settings_resumes(spiece_model,
                                                                      tmp_path):
  params = _params(spiece_model, tmp_path, config=DEMO)
  run_dir = tmp_path / "run"
  assert driver.run(params, "train", str(run_dir), stop_at_step=2)["train"]["step"] == 2
  settings_file = run_dir / "run_settings.json"
  settings = json.loads(settings_file.read_text())
  for name in ("mem_len", "bptt_segments", "bucket_by_segments", "max_segments",
               "read_from"):
    del settings["task"][name]                             # as an older version wrote it
  settings_file.write_text(json.dumps(settings))
  resumed = driver.run(params, "train", str(run_dir))["train"]
  assert resumed["start_step"] == 2 and resumed["step"] == 4
  with pytest.raises(run_directory.RunSettingsError,
                     match="task.mem_len: 0 in the directory, 16 now"):
    driver.run(_params(spiece_model, tmp_path, ",task.mem_len=16", config=DEMO), "train",
               str(run_dir))


def _padded(layouts):
  """Documents [K_i, S] as one batch [B, max K, S], padding segments in front."""
  longest = max(len(layout[0]) for layout in layouts)
  batch = {}
  for key, value, dtype in (("input_ids", PAD_ID, np.int32),
                            ("segment_ids", PAD_SEGMENT, np.int32),
                            ("input_mask", 1.0, np.float32)):
    index = ("input_ids", "segment_ids", "input_mask").index(key)
    batch[key] = np.stack([np.concatenate(
        [np.full([longest - len(layout[index]), layout[index].shape[1]], value, dtype),
         layout[index]]) for layout in layouts])
  return batch


def test_gradient_accumulation_of_documents_equals_one_batch(spiece_model):
  """Two micro-batches, each padded to its own longest document, give the update of the
  one batch of the four documents padded to the longest (bptt through two segments).
  The trainer's per-replica step (`Trainer._replica_step`, what each step runs on its
  k micro-batches) runs eagerly: tracing orbit's loop around a document's while loop and
  its gradient takes 10 to 20 s per model on a CPU, and the drivers' runs in this file
  trace it anyway (grad_accum_steps 2 in the regression test)."""
  sp = tokenization.load_spiece(spiece_model)
  reviews = classifier_tasks.get_task("movie_reviews").read(None, "train")[:40]
  layouts = [document_features.document_layout(
      classifier_features.encode_text(sp, e.text_a), None, 16) for e in reviews]
  chosen = sorted(range(40), key=lambda i: len(layouts[i][0]))[::13][:4]   # K 1 to ~5
  labels = np.array([int(reviews[i].label == "positive") for i in chosen], np.int32)
  documents = [layouts[i] for i in chosen]
  whole = {**_padded(documents), "label_id": labels}
  micro = [{**_padded(documents[:2]), "label_id": labels[:2]},
           {**_padded(documents[2:]), "label_id": labels[2:]}]
  assert whole["input_ids"].shape[1] > micro[0]["input_ids"].shape[1] >= 1
  weights = {}
  for accum, batches in ((1, [whole]), (2, micro)):
    tf_keras.utils.set_random_seed(7)
    model = build_classifier(small_config(n_token=4000), 2, mem_len=16, bptt_segments=2,
                             dropout_rate=0.0)
    optimizer = optimization.build_optimizer(1e-3, 10, 0, weight_decay=0.01)
    strategy = tf.distribute.get_strategy()
    trainer = Trainer(strategy, model, optimizer, None,
                      input_keys=classification.MODEL_INPUTS,
                      loss_fn=functools.partial(classification.classifier_loss,
                                                is_regression=False),
                      grad_accum_steps=accum)
    batches = [{k: tf.constant(v) for k, v in batch.items()} for batch in batches]
    for _ in range(2):                                         # two updates
      strategy.run(trainer._replica_step, args=(batches,))  # pylint: disable=protected-access
    assert int(optimizer.iterations.numpy()) == 2
    weights[accum] = [v.numpy() for v in model.trainable_variables]
  for ours, reference in zip(weights[2], weights[1]):
    np.testing.assert_allclose(ours, reference, atol=2e-5, rtol=0)


@pytest.mark.slow
def test_regression_of_speeches_trains_in_bfloat16_with_accumulation(spiece_model,
                                                                     tmp_path):
  """The generic task's regression on real documents (the year of a State of the Union
  speech from 60 to 300 of its words), mixed_bfloat16 and two micro-batches a step:
  finite losses, the split's regression metrics."""
  data_dir = tmp_path / "sotu"
  data_dir.mkdir()
  for split, speeches in (("train", SPEECHES[::5][:16]), ("dev", SPEECHES[2::9][:8])):
    with open(data_dir / f"{split}.jsonl", "w", encoding="utf-8") as f:
      for k, path in enumerate(speeches):
        words = open(path, encoding="utf-8").read().split()
        year = int(os.path.basename(path)[:4])
        f.write(json.dumps({"text": " ".join(words[100:100 + 60 + 40 * (k % 7)]),
                            "label": (year - 1960) / 40}) + "\n")
  params = _params(spiece_model, tmp_path,
                   f",task.task_name=generic,task.data_dir={data_dir},"
                   "task.is_regression=true,task.max_segments=8,task.bptt_segments=2,"
                   "task.train_data.global_batch_size=4,"
                   "task.optimization.grad_accum_steps=2,"
                   "task.optimization.precision=bfloat16")
  out = driver.run(params, "train_and_eval", str(tmp_path / "run"))
  assert out["train"]["step"] == 4 and np.all(np.isfinite(out["train"]["losses"]))
  assert tf_keras.mixed_precision.global_policy().name == "mixed_bfloat16"
  assert out["eval"]["num_examples"] == 8
  task = task_factory.get_task(params.task)
  assert task.spec.is_regression and task.METRIC in out["eval"]
  assert np.isfinite(out["eval"]["validation_loss"])
  spec = json.loads(open(tmp_path / "run" / "final" / "classifier.json").read())
  assert spec["mem_len"] == 16 and spec["is_regression"]
