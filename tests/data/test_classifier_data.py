"""Tests of the fine-tuning data: task readers, the classification layout, the feature cache
and the classification metrics.

The movie_reviews task reads the bundled real data (data_prep/sample_data/sentiment); GLUE,
IMDB and generic readers read small files written here in the exact layouts of the real
data sets. `encode_example` uses the session SentencePiece model (conftest.py).
"""

import json
import math
import os

import numpy as np
import pytest
from scipy import stats
import tensorflow as tf

from xlnet_tf.data import classifier_features as features
from xlnet_tf.data import classifier_tasks as tasks
from xlnet_tf.data import feature_cache
from xlnet_tf.data import tokenization
from xlnet_tf.data.classifier_readers import movie_reviews as movie_reviews_reader
from xlnet_tf.data.classifier_tasks import InputExample
from xlnet_tf.evaluation import classifier_metrics as metrics

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SENTIMENT_FILE = os.path.join(ROOT,
                              "data_prep", "sample_data", "sentiment",
                              "movieReviewSnippets_GroundTruth.txt")
SEP, CLS = 4, 3    # the released ids, written out


def write_tsv(path, rows, header=None):
  """Rows joined by tabs exactly as given (no quoting), "\\n" line ends."""
  lines = ([header] if header else []) + rows
  with open(path, "w", encoding="utf-8", newline="") as f:
    f.write("".join("\t".join(row) + "\n" for row in lines))
  return str(path)


def read_raw_sentiment():
  """{id: (rating, sentence)} parsed here from the raw bytes (CRLF lines)."""
  with open(SENTIMENT_FILE, "rb") as f:
    text = f.read().decode("utf-8")
  rows = {}
  for line in text.split("\r\n"):
    if line:
      review_id, rating, sentence = line.split("\t")
      rows[review_id] = (float(rating), sentence)
  return rows


# ---- movie_reviews: the bundled real data ----------------------------------------------------


@pytest.fixture(scope="module")
def movie_reviews():
  task = tasks.get_task("movie_reviews")
  return {split: task.read(None, split) for split in ("train", "dev", "test")}


def test_movie_reviews_split_sizes_and_balance(movie_reviews):
  raw = read_raw_sentiment()
  assert len(raw) == 10605
  rated_zero = [i for i, (rating, _) in raw.items() if rating == 0]
  assert len(rated_zero) == 37
  sizes = {split: len(examples) for split, examples in movie_reviews.items()}
  assert sizes == {"train": 8468, "dev": 1019, "test": 1081}
  assert sum(sizes.values()) == 10605 - 37
  for split, examples in movie_reviews.items():
    positive = sum(e.label == "positive" for e in examples) / len(examples)
    assert 0.45 < positive < 0.55, (split, positive)
    assert {e.label for e in examples} == {"negative", "positive"}
    assert all(e.text_b is None for e in examples)


def test_movie_reviews_splits_do_not_overlap_and_cover_the_rated_snippets(movie_reviews):
  ids = {split: {e.guid.split("-", 1)[1] for e in examples}
         for split, examples in movie_reviews.items()}
  assert all(len(ids[s]) == len(movie_reviews[s]) for s in ids)     # guids unique
  assert not ids["train"] & ids["dev"]
  assert not ids["train"] & ids["test"]
  assert not ids["dev"] & ids["test"]
  raw = read_raw_sentiment()
  assert ids["train"] | ids["dev"] | ids["test"] == {i for i, (r, _) in raw.items() if r != 0}
  # The split is a function of the id alone: reading twice, or from an explicit data_dir.
  task = tasks.TASKS["movie_reviews"]
  again = task.read(os.path.dirname(SENTIMENT_FILE), "dev")
  assert again == movie_reviews["dev"]


def test_movie_reviews_labels_follow_the_rating_sign(movie_reviews):
  by_id = {e.guid.split("-", 1)[1]: (split, e) for split, examples in movie_reviews.items()
           for e in examples}
  # Lines checked by hand in the file.
  # 1 <TAB> 2.26666666667 <TAB> The Rock is destined to be the 21st Century's new ''Conan'' ...
  split, e = by_id["1"]
  assert e.label == "positive" and e.text_a.startswith("The Rock is destined to be the 21st")
  assert "''Conan''" in e.text_a                     # raw text, normalised only when encoded
  # 3 <TAB> -0.6 <TAB> Effective but too tepid biopic
  assert by_id["3"][1].label == "negative"
  assert by_id["3"][1].text_a == "Effective but too tepid biopic"   # no "\r" left
  # 77 <TAB> 0.0 <TAB> Absorbing and disturbing ... ; 182 <TAB> 0.0: dropped
  assert "77" not in by_id and "182" not in by_id
  # 100 <TAB> 0.588235294118 <TAB> On the surface, it's a lovers on the run crime flick, ...
  assert by_id["100"][1].label == "positive"
  # 10605 (the last line, no line end) <TAB> -1.8125 <TAB> Her fans walked out muttering ...
  assert by_id["10605"][1].label == "negative"
  assert by_id["10605"][1].text_a.startswith("Her fans walked out muttering")
  # Every example against the raw file.
  raw = read_raw_sentiment()
  for review_id, (split, e) in by_id.items():
    rating, sentence = raw[review_id]
    assert e.label == ("positive" if rating > 0 else "negative")
    assert e.text_a == sentence
    assert e.guid == f"{split}-{review_id}"
    assert movie_reviews_reader.movie_reviews_split(review_id) == split


# ---- GLUE readers on files in the GLUE layouts -----------------------------------------------

MNLI_TRAIN_HEADER = ["index", "promptID", "pairID", "genre", "sentence1_binary_parse",
                     "sentence2_binary_parse", "sentence1_parse", "sentence2_parse",
                     "sentence1", "sentence2", "label1", "gold_label"]
MNLI_DEV_HEADER = MNLI_TRAIN_HEADER[:11] + ["label2", "label3", "label4", "label5",
                                            "gold_label"]
MNLI_TEST_HEADER = MNLI_TRAIN_HEADER[:10]


def mnli_row(index, premise, hypothesis, labels):
  return [str(index), "31193", "31193n", "government", "( ( Conceptually cream ) ...",
          "( ( ( Product and ) ...", "(ROOT (S ...", "(ROOT (S ...", premise,
          hypothesis] + labels


@pytest.fixture
def mnli_dir(tmp_path):
  write_tsv(tmp_path / "train.tsv", [
      mnli_row(0, 'He said "yes.', "He agreed.", ["entailment", "entailment"]),
      mnli_row(1, "It rained.", "It was dry.", ["contradiction", "contradiction"])],
      MNLI_TRAIN_HEADER)
  write_tsv(tmp_path / "dev_matched.tsv", [
      mnli_row(7, "Matched premise.", "Matched hypothesis.",
               ["neutral"] * 5 + ["neutral"])], MNLI_DEV_HEADER)
  write_tsv(tmp_path / "dev_mismatched.tsv", [
      mnli_row(9, "Mismatched premise.", "Mismatched hypothesis.",
               ["entailment", "neutral", "entailment", "entailment", "neutral",
                "entailment"])], MNLI_DEV_HEADER)
  write_tsv(tmp_path / "test_matched.tsv", [
      mnli_row(0, "Test premise.", "Test hypothesis.", []),
      mnli_row(1, "Second.", "Pair.", [])], MNLI_TEST_HEADER)
  write_tsv(tmp_path / "test_mismatched.tsv", [
      mnli_row(0, "Mm premise.", "Mm hypothesis.", [])], MNLI_TEST_HEADER)
  return str(tmp_path)


def test_mnli_columns_and_matched_mismatched_splits(mnli_dir):
  task = tasks.TASKS["mnli"]
  assert task.labels == ("contradiction", "entailment", "neutral")
  assert task.metrics == ("accuracy",) and not task.is_regression
  train = task.read(mnli_dir, "train")
  assert train == [
      InputExample("train-0", 'He said "yes.', "He agreed.", "entailment"),   # quote kept
      InputExample("train-1", "It rained.", "It was dry.", "contradiction")]
  assert task.read(mnli_dir, "dev") == [
      InputExample("dev-7", "Matched premise.", "Matched hypothesis.", "neutral")]
  assert task.read(mnli_dir, "dev_mismatched") == [
      InputExample("dev_mismatched-9", "Mismatched premise.", "Mismatched hypothesis.",
                   "entailment")]                   # gold_label, not label1..5
  test = task.read(mnli_dir, "test")
  assert [(e.guid, e.text_a, e.label) for e in test] == [("test-0", "Test premise.", None),
                                                         ("test-1", "Second.", None)]
  assert task.read(mnli_dir, "test_mismatched")[0].text_b == "Mm hypothesis."
  assert task.input_files(mnli_dir, "dev_mismatched") == [
      os.path.join(mnli_dir, "dev_mismatched.tsv")]


# (task, header of train/dev, a train row, header of test, a test row, expected example of
# the train row (guid, text_a, text_b, label), expected test example)
PAIR_LAYOUTS = [
    ("qnli", ["index", "question", "sentence", "label"],
     ["3", "Who wrote it?", "It was written by Ann.", "entailment"],
     ["index", "question", "sentence"], ["5", "Where?", "Here."],
     ("train-3", "Who wrote it?", "It was written by Ann.", "entailment"),
     ("test-5", "Where?", "Here.", None)),
    ("qqp", ["id", "qid1", "qid2", "question1", "question2", "is_duplicate"],
     ["201359", "303345", "303346", "Why are dogs loyal?", "Why is a dog loyal?", "1"],
     ["id", "question1", "question2"], ["0", "How do I cook?", "Cooking tips?"],
     ("train-201359", "Why are dogs loyal?", "Why is a dog loyal?", "1"),
     ("test-0", "How do I cook?", "Cooking tips?", None)),
    ("rte", ["index", "sentence1", "sentence2", "label"],
     ["0", "No weapons were found.", "Weapons were found.", "not_entailment"],
     ["index", "sentence1", "sentence2"], ["2", "A.", "B."],
     ("train-0", "No weapons were found.", "Weapons were found.", "not_entailment"),
     ("test-2", "A.", "B.", None)),
    ("wnli", ["index", "sentence1", "sentence2", "label"],
     ["0", "I stuck a pin in the pad.", "The pad was stuck.", "1"],
     ["index", "sentence1", "sentence2"], ["0", "X.", "Y."],
     ("train-0", "I stuck a pin in the pad.", "The pad was stuck.", "1"),
     ("test-0", "X.", "Y.", None)),
    ("sts-b", ["index", "genre", "filename", "year", "old_index", "source1", "source2",
               "sentence1", "sentence2", "score"],
     ["0", "main-captions", "MSRvid", "2012test", "0001", "none", "none",
      "A plane is taking off.", "An air plane is taking off.", "5.000"],
     ["index", "genre", "filename", "year", "old_index", "source1", "source2", "sentence1",
      "sentence2"],
     ["0", "main-news", "headlines", "2016", "0001", "none", "none", "One.", "Two."],
     ("train-0", "A plane is taking off.", "An air plane is taking off.", 5.0),
     ("test-0", "One.", "Two.", None)),
    ("mrpc", ["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"],
     ["1", "702876", "702977", "Amrozi accused his brother.", "Referring to him.."],
     ["index", "#1 ID", "#2 ID", "#1 String", "#2 String"],
     ["0", "1089874", "1089925", "PCCW 's chief.", "Current Chief."],
     ("train-2", "Amrozi accused his brother.", "Referring to him..", "1"),
     ("test-0", "PCCW 's chief.", "Current Chief.", None)),
]


@pytest.mark.parametrize("name,header,row,test_header,test_row,want,want_test", PAIR_LAYOUTS,
                         ids=[layout[0] for layout in PAIR_LAYOUTS])
def test_glue_pair_task_columns(tmp_path, name, header, row, test_header, test_row, want,
                                want_test):
  write_tsv(tmp_path / "train.tsv", [row], header)
  write_tsv(tmp_path / "dev.tsv", [row], header)
  write_tsv(tmp_path / "test.tsv", [test_row], test_header)
  task = tasks.get_task(name)
  assert task.read(str(tmp_path), "train") == [InputExample(*want)]
  dev = task.read(str(tmp_path), "dev")
  assert dev == [InputExample("dev-" + want[0].split("-", 1)[1], *want[1:])]
  assert task.read(str(tmp_path), "test") == [InputExample(*want_test)]


def test_glue_task_specs():
  expected = {"mnli": ("accuracy",), "qnli": ("accuracy",), "qqp": ("f1", "accuracy"),
              "rte": ("accuracy",), "sst-2": ("accuracy",), "mrpc": ("f1", "accuracy"),
              "cola": ("matthews_corr",), "sts-b": ("pearson", "spearman"),
              "wnli": ("accuracy",)}
  assert set(tasks.TASKS) == set(expected) | {"imdb", "movie_reviews", "generic"}
  for name, task_metrics in expected.items():
    assert tasks.TASKS[name].metrics == task_metrics
    assert tasks.TASKS[name].name == name
  sts_b = tasks.TASKS["sts-b"]
  assert sts_b.is_regression and sts_b.labels is None and sts_b.num_labels == 1
  assert tasks.TASKS["rte"].labels == ("entailment", "not_entailment")
  assert tasks.TASKS["qqp"].labels == ("0", "1")
  assert tasks.get_task("SST2") is tasks.TASKS["sst-2"]
  assert tasks.get_task("STS_B") is tasks.TASKS["sts-b"]
  with pytest.raises(ValueError, match="unknown task 'sst-5'"):
    tasks.get_task("sst-5")


def test_pair_tasks_come_from_the_registry():
  """Which tasks are sentence pairs is the registry's (serving's default asks it)."""
  assert {name for name, task in tasks.TASKS.items() if task.is_pair} == {
      "mnli", "qnli", "qqp", "rte", "mrpc", "sts-b", "wnli"}
  assert tasks.is_pair_task("STS_B") and not tasks.is_pair_task("sst-2")
  assert not tasks.is_pair_task("yelp5")                  # not registered: single texts
  generic = tasks.get_task("generic")
  assert generic.configure(labels=["a", "b"], text_b_column="t2").is_pair
  assert not generic.configure(labels=["a", "b"]).is_pair


def test_mrpc_byte_order_mark_is_ignored(tmp_path):
  header = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
  with open(tmp_path / "train.tsv", "w", encoding="utf-8-sig") as f:
    f.write(header + "0\t1\t2\tOne.\tTwo.\n")
  assert tasks.TASKS["mrpc"].read(str(tmp_path), "train") == [
      InputExample("train-2", "One.", "Two.", "0")]


def test_sst2_and_cola_single_sentence_layouts(tmp_path):
  sst = tmp_path / "sst"
  sst.mkdir()
  write_tsv(sst / "train.tsv", [["hide new secretions from the parental units ", "0"],
                                ["the greatest musicians ", "1"]], ["sentence", "label"])
  write_tsv(sst / "test.tsv", [["0", "uneasy mishmash of styles and genres ."]],
            ["index", "sentence"])
  task = tasks.TASKS["sst-2"]
  assert task.read(str(sst), "train") == [
      InputExample("train-2", "hide new secretions from the parental units ", None, "0"),
      InputExample("train-3", "the greatest musicians ", None, "1")]
  assert task.read(str(sst), "test") == [
      InputExample("test-0", "uneasy mishmash of styles and genres .", None, None)]

  cola = tmp_path / "cola"
  cola.mkdir()
  # No header in train/dev: source, label, the original mark ("*" or empty), sentence.
  rows = [["gj04", "1", "", "Our friends won't buy this analysis, let alone the next one."],
          ["gj04", "0", "*", "One more pseudo generalization and I'm giving up."]]
  write_tsv(cola / "train.tsv", rows)
  write_tsv(cola / "dev.tsv", rows[1:])
  write_tsv(cola / "test.tsv", [["0", "Bill whistled past the house."]], ["index", "sentence"])
  task = tasks.TASKS["cola"]
  assert task.read(str(cola), "train") == [
      InputExample("train-1", rows[0][3], None, "1"),      # line 1 is data, not a header
      InputExample("train-2", rows[1][3], None, "0")]
  assert task.read(str(cola), "dev") == [InputExample("dev-1", rows[1][3], None, "0")]
  assert task.read(str(cola), "test") == [
      InputExample("test-0", "Bill whistled past the house.", None, None)]


def test_glue_quotes_are_text_not_quoting(tmp_path):
  # With CSV quoting the opening quote would swallow the following lines into one field.
  header = ["index", "sentence1", "sentence2", "label"]
  write_tsv(tmp_path / "train.tsv", [["0", '"Quoted start', "b", "entailment"],
                                     ["1", "plain", 'end quote"', "not_entailment"],
                                     ["2", '""', '"', "entailment"]], header)
  examples = tasks.TASKS["rte"].read(str(tmp_path), "train")
  assert [(e.text_a, e.text_b) for e in examples] == [
      ('"Quoted start', "b"), ("plain", 'end quote"'), ('""', '"')]


def test_glue_errors_name_file_line_and_expectation(tmp_path):
  header = ["index", "sentence1", "sentence2", "label"]
  path = write_tsv(tmp_path / "train.tsv", [["0", "a", "b", "entailment"],
                                            ["1", "a", "b"],
                                            ["2", "a", "b", "entailment"]], header)
  task = tasks.TASKS["rte"]
  with pytest.raises(ValueError, match=rf"{path}:3: 3 column\(s\), expected the 4 columns"):
    task.read(str(tmp_path), "train")
  # skip_malformed (e.g. for QQP releases with broken rows) drops the row instead.
  assert [e.guid for e in task.read(str(tmp_path), "train", skip_malformed=True)] == [
      "train-0", "train-2"]
  bound = task.configure(skip_malformed=True)
  assert len(bound.read(str(tmp_path), "train")) == 2

  write_tsv(tmp_path / "dev.tsv", [["0", "a", "b", "entailment"],
                                   ["1", "a", "b", "neutral"]], header)
  with pytest.raises(ValueError) as error:
    task.read(str(tmp_path), "dev")
  message = str(error.value)
  assert f"{tmp_path / 'dev.tsv'}:3" in message and "'neutral'" in message
  assert "['entailment', 'not_entailment']" in message

  with pytest.raises(FileNotFoundError) as error:
    task.read(str(tmp_path), "test")
  assert str(tmp_path / "test.tsv") in str(error.value)
  assert "test.tsv" in str(error.value) and "GLUE RTE" in str(error.value)

  sts = tmp_path / "sts"
  sts.mkdir()
  sts_header = PAIR_LAYOUTS[4][1]
  write_tsv(sts / "train.tsv", [["0", "g", "f", "y", "o", "s", "s", "A.", "B.", "n/a"]],
            sts_header)
  with pytest.raises(ValueError, match=r"train.tsv:2: regression target 'n/a' is not a finite"):
    tasks.TASKS["sts-b"].read(str(sts), "train")

  write_tsv(tmp_path / "test.tsv", [["0", "a"]], ["index", "premise"])
  with pytest.raises(ValueError, match=r"test.tsv:1: no text_a column 'sentence1' in the "
                                       r"header \['index', 'premise'\]"):
    task.read(str(tmp_path), "test")


def test_unknown_split_and_option():
  with pytest.raises(ValueError, match=r"task rte: unknown split 'dev_mismatched'"):
    tasks.TASKS["rte"].read("x", "dev_mismatched")
  with pytest.raises(ValueError, match=r"task rte: unknown option\(s\) \['labels'\]"):
    tasks.TASKS["rte"].read("x", "train", labels=("a", "b"))
  with pytest.raises(ValueError, match="task mnli: no data_dir given"):
    tasks.TASKS["mnli"].read(None, "train")


# ---- IMDB ------------------------------------------------------------------------------------


def write_review(directory, name, text):
  os.makedirs(directory, exist_ok=True)
  with open(os.path.join(directory, name), "w", encoding="utf-8") as f:
    f.write(text)


def test_imdb_directory_layout(tmp_path):
  write_review(tmp_path / "train" / "pos", "10_9.txt", "Great film.<br /><br />Loved it.")
  write_review(tmp_path / "train" / "pos", "2_8.txt", "Fine.")
  write_review(tmp_path / "train" / "neg", "3_1.txt", "Awful.")
  write_review(tmp_path / "train" / "unsup", "0_0.txt", "Unlabeled, never read.")
  write_review(tmp_path / "test" / "pos", "0_10.txt", "Superb.")
  write_review(tmp_path / "test" / "neg", "0_2.txt", "Dull.")
  task = tasks.TASKS["imdb"]
  assert task.labels == ("neg", "pos")
  train = task.read(str(tmp_path), "train")
  assert train == [InputExample("train-neg_3_1", "Awful.", None, "neg"),
                   InputExample("train-pos_10_9", "Great film.  Loved it.", None, "pos"),
                   InputExample("train-pos_2_8", "Fine.", None, "pos")]
  # aclImdb has no dev set: "dev" is the test set.
  assert [e.text_a for e in task.read(str(tmp_path), "dev")] == ["Dull.", "Superb."]
  assert task.input_files(str(tmp_path), "test") == [
      str(tmp_path / "test" / "neg"), str(tmp_path / "test" / "pos")]
  with pytest.raises(FileNotFoundError, match=r"aclImdb layout DATA_DIR/\{train,test\}"):
    task.read(str(tmp_path / "nothing"), "train")


def test_imdb_csv_layout(tmp_path):
  with open(tmp_path / "train.csv", "w", encoding="utf-8", newline="") as f:
    f.write('text,label\n"Good, really<br />good.",pos\n'
            '"Two\nlines, ""quoted""",negative\nok,1\n')
  task = tasks.TASKS["imdb"]
  assert task.read(str(tmp_path), "train") == [
      InputExample("train-2", "Good, really good.", None, "pos"),
      InputExample("train-3", 'Two\nlines, "quoted"', None, "neg"),
      InputExample("train-5", "ok", None, "pos")]      # the row that starts on line 5
  with open(tmp_path / "test.csv", "w", encoding="utf-8") as f:
    f.write("text,label\nfine,pos\nmeh,meh\n")
  with pytest.raises(ValueError, match=r"test.csv:3: label 'meh' is not one of the task's "
                                       r"labels \['neg', 'pos'\]"):
    task.read(str(tmp_path), "test")


# ---- generic ---------------------------------------------------------------------------------


def test_generic_tsv_with_pairs_and_train_labels(tmp_path):
  header = ["id", "premise", "claim", "verdict"]
  write_tsv(tmp_path / "train.tsv", [["a", "P1", "C1", "true"], ["b", "P2", "C2", "false"],
                                     ["c", "P3", 'C"3', "mixed"]], header)
  write_tsv(tmp_path / "dev.tsv", [["d", "P4", "C4", "false"]], header)
  write_tsv(tmp_path / "test.tsv", [["e", "P5", "C5"]], header[:3])
  options = dict(text_a_column="premise", text_b_column="claim", label_column="verdict")
  task = tasks.TASKS["generic"].configure(str(tmp_path), **options)
  assert task.labels == ("false", "mixed", "true") and task.num_labels == 3
  assert task.metrics == ("accuracy",)
  assert task.read(str(tmp_path), "train")[2] == InputExample("train-4", "P3", 'C"3', "mixed")
  assert task.read(str(tmp_path), "dev") == [InputExample("dev-2", "P4", "C4", "false")]
  assert task.read(str(tmp_path), "test") == [InputExample("test-2", "P5", "C5", None)]

  write_tsv(tmp_path / "dev.tsv", [["d", "P4", "C4", "unproven"]], header)
  with pytest.raises(ValueError, match=r"dev.tsv:2: label 'unproven' is not one of the "
                                       r"task's labels \['false', 'mixed', 'true'\]"):
    tasks.TASKS["generic"].read(str(tmp_path), "dev", **options)   # labels from train


def test_generic_yelp_style_csv(tmp_path):
  # Yelp/Amazon review polarity/full: "label","text" without header, labels 1..N.
  rows = ['"5","Loved it, will return."', '"1","Cold food.\\nRude staff."',
          '"10","Off the scale"', '"2","Meh, ""fine"""']
  (tmp_path / "yelp_train.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
  options = dict(header=False, label_column=0, text_a_column=1,
                 filenames={"train": "yelp_train.csv"})
  task = tasks.TASKS["generic"].configure(str(tmp_path), **options)
  assert task.labels == ("1", "2", "5", "10")                  # numerically sorted
  examples = task.read(str(tmp_path), "train")
  assert examples[0] == InputExample("train-1", "Loved it, will return.", None, "5")
  assert examples[3] == InputExample("train-4", 'Meh, "fine"', None, "2")
  with pytest.raises(ValueError, match=r"column 'text' is a name, but the file has no "
                                       r"header"):
    tasks.TASKS["generic"].read(str(tmp_path), "train", header=False,
                                filenames={"train": "yelp_train.csv"})


def test_generic_jsonl_labels_regression_and_errors(tmp_path):
  with open(tmp_path / "train.jsonl", "w", encoding="utf-8") as f:
    for record in ({"text": "a", "label": 1}, {"text": "b", "label": 0},
                   {"text": "c", "label": "1"}):
      f.write(json.dumps(record) + "\n")
  task = tasks.TASKS["generic"].configure(str(tmp_path))
  assert task.labels == ("0", "1")
  assert [e.label for e in task.read(str(tmp_path), "train")] == ["1", "0", "1"]
  fixed = tasks.TASKS["generic"].configure(None, labels=(1, 0))     # given order kept
  assert fixed.labels == ("1", "0")

  with open(tmp_path / "dev.jsonl", "w", encoding="utf-8") as f:
    f.write('{"text": "a", "label": 1}\n\n{"txt": "b", "label": 0}\n')
  with pytest.raises(ValueError, match=r"dev.jsonl:3: missing text_a field 'text'"):
    task.read(str(tmp_path), "dev")

  with open(tmp_path / "test.jsonl", "w", encoding="utf-8") as f:
    f.write('{"text": "unlabeled"}\n')
  assert task.read(str(tmp_path), "test") == [InputExample("test-1", "unlabeled", None, None)]

  reg = tmp_path / "reg"
  reg.mkdir()
  (reg / "train.jsonl").write_text('{"s": "x", "y": 0.25}\n{"s": "z", "y": "high"}\n')
  regression = tasks.TASKS["generic"].configure(str(reg), text_a_column="s", label_column="y",
                                                is_regression=True)
  assert regression.is_regression and regression.labels is None
  assert regression.metrics == ("pearson", "spearman") and regression.num_labels == 1
  with pytest.raises(ValueError, match=r"train.jsonl:2: regression target 'high' is not a "
                                       r"finite number"):
    regression.read(str(reg), "train")

  with pytest.raises(FileNotFoundError, match=r"dev\.\{tsv,csv,jsonl\}"):
    tasks.TASKS["generic"].read(str(reg), "dev", is_regression=True)


# ---- the layout ------------------------------------------------------------------------------


def layout(ids_a, ids_b, max_seq_length):
  input_ids, segment_ids, input_mask = features.classifier_layout(ids_a, ids_b,
                                                                  max_seq_length)
  assert input_ids.dtype == np.int32 and segment_ids.dtype == np.int32
  assert input_mask.dtype == np.float32
  assert input_ids.shape == segment_ids.shape == input_mask.shape == (max_seq_length,)
  return input_ids.tolist(), segment_ids.tolist(), input_mask.tolist()


def test_layout_pair_is_left_padded():
  assert layout([11, 12, 13], [21, 22], 10) == (
      [0, 0, 11, 12, 13, SEP, 21, 22, SEP, CLS],
      [4, 4, 0, 0, 0, 0, 1, 1, 1, 2],
      [1, 1, 0, 0, 0, 0, 0, 0, 0, 0])


def test_layout_single_sentence():
  assert layout([7, 8], None, 6) == ([0, 0, 7, 8, SEP, CLS], [4, 4, 0, 0, 0, 2],
                                     [1, 1, 0, 0, 0, 0])
  # Too long: cut from the end to max_seq_length - 2.
  assert layout(list(range(100, 110)), None, 5) == ([100, 101, 102, SEP, CLS],
                                                    [0, 0, 0, 0, 2], [0] * 5)


def test_layout_truncates_the_longer_text_first():
  a, b = list(range(101, 107)), [201, 202]
  # Room for 8 - 3 = 5 tokens: A (6) loses its last 3 tokens, B (2) is kept.
  assert layout(a, b, 8) == ([101, 102, 103, SEP, 201, 202, SEP, CLS],
                             [0, 0, 0, 0, 1, 1, 1, 2], [0] * 8)
  # B longer: B is cut.
  assert layout([1], list(range(201, 211)), 7)[0] == [1, SEP, 201, 202, 203, SEP, CLS]
  # Both too long and equally long: B loses the tie, so A keeps 3 and B 2 of 5.
  assert layout([1, 2, 3, 4], [5, 6, 7, 8], 8)[0] == [1, 2, 3, SEP, 5, 6, SEP, CLS]
  assert layout([1, 2, 3, 4], [5, 6, 7, 8], 9)[0] == [1, 2, 3, SEP, 5, 6, 7, SEP, CLS]


def test_layout_exact_fit_and_empty_texts():
  assert layout([1, 2], [3, 4, 5], 8) == ([1, 2, SEP, 3, 4, 5, SEP, CLS],
                                          [0, 0, 0, 1, 1, 1, 1, 2], [0] * 8)
  assert layout([1, 2, 3, 4], None, 6) == ([1, 2, 3, 4, SEP, CLS], [0, 0, 0, 0, 0, 2], [0] * 6)
  assert layout([], None, 4) == ([0, 0, SEP, CLS], [4, 4, 0, 2], [1, 1, 0, 0])
  # As released (`if tokens_b:`), a second text without tokens is no second text.
  assert layout([], [], 5) == ([0, 0, 0, SEP, CLS], [4, 4, 4, 0, 2], [1, 1, 1, 0, 0])
  assert layout([1, 2, 3], [], 4) == layout([1, 2, 3], None, 4) == (
      [1, 2, SEP, CLS], [0, 0, 0, 2], [0, 0, 0, 0])
  assert layout([], [9], 3) == ([SEP, SEP, CLS], [0, 1, 2], [0, 0, 0])
  with pytest.raises(ValueError, match="max_seq_length 2 leaves no room"):
    features.classifier_layout([1], [2], 2)


def test_truncated_lengths_equals_popping_one_token_at_a_time():
  for max_tokens in range(0, 14):
    for len_a in range(0, 16):
      for len_b in range(0, 16):
        a, b = len_a, len_b
        while a + b > max_tokens:     # the rule as stated: pop from the longer, B on ties
          if a > b:
            a -= 1
          else:
            b -= 1
        assert features.truncated_lengths(len_a, len_b, max_tokens) == (a, b), (
            len_a, len_b, max_tokens)


# ---- encode_example with a real SentencePiece model ------------------------------------------


def test_encode_example_matches_encode_ids(spiece_model, movie_reviews):
  sp = tokenization.load_spiece(spiece_model)
  first, second = movie_reviews["train"][0], movie_reviews["train"][1]
  labels = tasks.TASKS["movie_reviews"].labels
  single = features.encode_example(sp, first, 128, label_list=labels)
  ids = tokenization.encode_ids(sp, tokenization.normalize_text(first.text_a))
  assert 40 < len(ids) < 126                       # 80 pieces with the Moby-Dick model
  padding = 126 - len(ids)
  assert single["input_ids"].tolist() == [0] * padding + ids + [SEP, CLS]
  assert single["segment_ids"].tolist() == [4] * padding + [0] * (len(ids) + 1) + [2]
  assert single["input_mask"].tolist() == [1.0] * padding + [0.0] * (len(ids) + 2)
  assert single["label_id"] == labels.index(first.label) == 1     # "positive"
  # ''Conan'' is normalised to "Conan" before encoding.
  assert sp.piece_to_id('"') in ids
  assert ids != tokenization.encode_ids(sp, first.text_a)

  pair = InputExample("x", first.text_a, second.text_a, "negative")
  encoded = features.encode_example(sp, pair, 48, label_list=labels)
  ids_b = tokenization.encode_ids(sp, tokenization.normalize_text(second.text_a))
  len_a, len_b = features.truncated_lengths(len(ids), len(ids_b), 45)
  assert len_a + len_b == 45 and len_a < len(ids) and len_b < len(ids_b)   # both cut
  assert encoded["input_ids"].tolist() == (ids[:len_a] + [SEP] + ids_b[:len_b]
                                           + [SEP, CLS])
  # An empty or blank text_b encodes as the single text, as the released code does
  # (`if example.text_b:` then `if tokens_b:`), not as `A <sep> <sep> <cls>`.
  for blank in ("", "   "):
    empty_b = features.encode_example(sp, InputExample("y", first.text_a, blank, "positive"),
                                      128, label_list=labels)
    for key in ("input_ids", "segment_ids", "input_mask"):
      assert empty_b[key].tolist() == single[key].tolist()
  assert encoded["label_id"] == 0
  expected = features.classifier_layout(ids, ids_b, 48)
  for got, want in zip((encoded["input_ids"], encoded["segment_ids"], encoded["input_mask"]),
                       expected):
    np.testing.assert_array_equal(got, want)

  uncased = features.encode_example(sp, InputExample("u", "Call me Ishmael."), 16,
                                    is_regression=True, uncased=True)
  lower = tokenization.encode_ids(sp, "call me ishmael.")
  assert uncased["input_ids"].tolist()[-len(lower) - 2:] == lower + [SEP, CLS]
  assert math.isnan(uncased["label_id"])                    # unlabeled regression example


def test_label_ids():
  labels = ("0", "1")
  assert features.label_id(InputExample("a", "t", None, "1"), labels) == 1
  assert features.label_id(InputExample("a", "t"), labels) == features.NO_LABEL_ID == -1
  assert features.label_id(InputExample("a", "t", None, 2.5), None, True) == 2.5
  with pytest.raises(ValueError, match=r"example g-3: label '2' is not in the label list "
                                       r"\['0', '1'\]"):
    features.label_id(InputExample("g-3", "t", None, "2"), labels)


# ---- the cache and the dataset ---------------------------------------------------------------


def read_records(path, max_seq_length, is_regression):
  spec = features.feature_spec(max_seq_length, is_regression)
  return [{k: v.numpy() for k, v in tf.io.parse_single_example(r, spec).items()}
          for r in tf.data.TFRecordDataset(path)]


def test_cache_is_reused_and_rebuilt_when_settings_change(spiece_model, movie_reviews,
                                                          tmp_path):
  sp = tokenization.load_spiece(spiece_model)
  examples = movie_reviews["dev"][:40] + [InputExample("dev-x", "Unlabeled.")]
  labels = tasks.TASKS["movie_reviews"].labels
  cache_dir = str(tmp_path / "cache")
  kwargs = dict(label_list=labels, task="movie_reviews", split="dev", cache_dir=cache_dir,
                input_files=[SENTIMENT_FILE])
  path = features.cached_features(examples, spiece_model, 32, **kwargs)
  assert os.path.basename(path).startswith("movie_reviews-dev-32-")
  info = feature_cache.read_cache_info(path)
  assert info["num_examples"] == 41 and info["max_seq_length"] == 32
  assert info["spiece_sha256"] == tokenization.spiece_sha256(spiece_model)
  assert sorted(os.listdir(cache_dir)) == sorted([os.path.basename(path),
                                                  os.path.basename(path) + ".json"])
  records = read_records(path, 32, False)
  assert len(records) == 41
  for record, example in zip(records, examples):
    want = features.encode_example(sp, example, 32, label_list=labels)
    for name in ("input_ids", "segment_ids", "input_mask", "label_id"):
      np.testing.assert_array_equal(record[name], want[name])
  assert records[-1]["label_id"] == -1

  mtime = os.stat(path).st_mtime_ns
  os.utime(path, ns=(mtime - 10**9, mtime - 10**9))       # so a rewrite would show
  mtime = os.stat(path).st_mtime_ns
  assert features.cached_features(examples, spiece_model, 32, **kwargs) == path
  assert os.stat(path).st_mtime_ns == mtime                 # reused, not rewritten

  longer = features.cached_features(examples, spiece_model, 48, **kwargs)
  assert longer != path and len(read_records(longer, 48, False)) == 41
  assert os.stat(path).st_mtime_ns == mtime
  others = {features.cached_features(examples, spiece_model, 32, **{**kwargs, **change})
            for change in ({"uncased": True}, {"label_list": labels[::-1]},
                           {"split": "test"})}
  others.add(features.cached_features(examples[:-1], spiece_model, 32, **kwargs))
  assert len(others) == 4 and path not in others and longer not in others
  with pytest.raises(ValueError, match="classification needs label_list"):
    features.cached_features(examples, spiece_model, 32,
                             **{**kwargs, "label_list": None})


def test_cache_key_follows_input_file_stamps(spiece_model, tmp_path):
  data = tmp_path / "train.tsv"
  data.write_text("text\tlabel\nx\t1\n")
  examples = [InputExample("train-2", "x", None, "1")]
  kwargs = dict(label_list=("0", "1"), cache_dir=str(tmp_path / "c"), input_files=[str(data)])
  path = features.cached_features(examples, spiece_model, 8, **kwargs)
  data.write_text("text\tlabel\nx\t1\n\n")                   # size (and mtime) change
  assert features.cached_features(examples, spiece_model, 8, **kwargs) != path


def test_classifier_dataset_shapes_and_dtypes(spiece_model, movie_reviews, tmp_path):
  examples = movie_reviews["test"][:10]
  labels = tasks.TASKS["movie_reviews"].labels
  path = features.cached_features(examples, spiece_model, 24, label_list=labels,
                                  cache_dir=str(tmp_path))
  train = features.classifier_dataset(path, 4, is_training=True, seed=3)
  assert train.element_spec["input_ids"].shape.as_list() == [4, 24]
  batch = next(iter(train))
  assert batch["input_ids"].dtype == tf.int32 and batch["segment_ids"].dtype == tf.int32
  assert batch["input_mask"].dtype == tf.float32 and batch["label_id"].dtype == tf.int32
  assert batch["input_ids"].shape == [4, 24] and batch["label_id"].shape == [4]
  assert np.all(batch["input_ids"].numpy()[:, -1] == CLS)
  # Training repeats forever: more batches than one epoch holds.
  assert len(list(train.take(7))) == 7

  evaluation = list(features.classifier_dataset(path, 4, is_training=False))
  assert [b["label_id"].shape[0] for b in evaluation] == [4, 4, 2]        # last batch kept
  got = np.concatenate([b["label_id"].numpy() for b in evaluation])
  np.testing.assert_array_equal(got, [labels.index(e.label) for e in examples])   # in order
  with pytest.raises(ValueError, match=r"max_seq_length is 32, but the cache was built "
                                       r"with 24"):
    features.classifier_dataset(path, 4, is_training=False, max_seq_length=32)

  regression = [InputExample(f"r-{i}", f"Text {i}.", None, i / 4) for i in range(5)]
  reg_path = features.cached_features(regression, spiece_model, 16, is_regression=True,
                                      cache_dir=str(tmp_path))
  batch = next(iter(features.classifier_dataset(reg_path, 8, is_training=False)))
  assert batch["label_id"].dtype == tf.float32
  np.testing.assert_allclose(batch["label_id"].numpy(), [0, 0.25, 0.5, 0.75, 1.0])


# ---- metrics ---------------------------------------------------------------------------------

PREDICTED = [1, 0, 1, 1, 0, 1]
ACTUAL = [1, 0, 0, 1, 1, 1]     # TP 3 (0, 3, 5), TN 1 (1), FP 1 (2), FN 1 (4)


def test_accuracy_f1_and_matthews_by_hand():
  assert metrics.accuracy(PREDICTED, ACTUAL) == pytest.approx(4 / 6)
  assert metrics.f1(PREDICTED, ACTUAL) == pytest.approx(2 * 3 / (2 * 3 + 1 + 1))
  # (TP TN - FP FN) / sqrt((TP+FP)(TP+FN)(TN+FP)(TN+FN)) = (3 - 1) / sqrt(4 * 4 * 2 * 2)
  assert metrics.matthews_corr(PREDICTED, ACTUAL) == pytest.approx(0.25)
  assert metrics.matthews_corr([1, 1, 1], [0, 1, 1]) == 0.0        # constant prediction
  assert metrics.f1([0, 0], [0, 0]) == 0.0
  assert metrics.matthews_corr([0, 1, 0, 1], [1, 0, 1, 0]) == pytest.approx(-1.0)


def test_matthews_against_the_binary_formula():
  rng = np.random.default_rng(0)
  for _ in range(20):
    labels = rng.integers(0, 2, 50)
    predictions = np.where(rng.random(50) < 0.7, labels, 1 - labels)
    tp = np.sum((predictions == 1) & (labels == 1))
    tn = np.sum((predictions == 0) & (labels == 0))
    fp = np.sum((predictions == 1) & (labels == 0))
    fn = np.sum((predictions == 0) & (labels == 1))
    want = (tp * tn - fp * fn) / math.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    assert metrics.matthews_corr(predictions, labels) == pytest.approx(want, abs=1e-12)


def test_pearson_and_spearman():
  x, y = [1.0, 2.0, 3.0, 4.0], [2.0, 4.0, 5.0, 4.0]
  # By hand: deviations x (-1.5, -.5, .5, 1.5), y (-1.75, .25, 1.25, .25):
  # sum xy = 2.625 + -.125 + .625 + .375 = 3.5; sum x^2 = 5; sum y^2 = 4.75.
  assert metrics.pearson(x, y) == pytest.approx(3.5 / math.sqrt(5 * 4.75))
  # Ranks of y with the tie averaged: (1, 2.5, 4, 2.5).
  np.testing.assert_allclose(metrics.average_ranks(y), [1, 2.5, 4, 2.5])
  rng = np.random.default_rng(1)
  a = rng.normal(size=40)
  b = np.round(a + rng.normal(size=40), 1)          # rounding makes ties
  assert metrics.pearson(a, b) == pytest.approx(stats.pearsonr(a, b)[0], abs=1e-12)
  assert metrics.spearman(a, b) == pytest.approx(stats.spearmanr(a, b)[0], abs=1e-12)
  assert math.isnan(metrics.pearson([1, 1, 1], [1, 2, 3]))
  with pytest.raises(ValueError, match="same length"):
    metrics.accuracy([1, 0], [1])


def test_task_metrics():
  mrpc = tasks.TASKS["mrpc"]
  logits = np.array([[0.1, 0.9], [2.0, -1.0], [0.0, 1.0], [-1.0, 3.0], [1.0, 0.5],
                     [0.2, 0.3]])                     # argmax = PREDICTED
  assert metrics.task_metrics(mrpc, logits, ACTUAL) == pytest.approx(
      {"f1": 0.75, "accuracy": 4 / 6})
  assert list(metrics.task_metrics(mrpc, logits, ACTUAL)) == ["f1", "accuracy"]
  assert metrics.task_metrics(tasks.TASKS["cola"], PREDICTED, ACTUAL) == pytest.approx(
      {"matthews_corr": 0.25})
  mnli = tasks.TASKS["mnli"]
  assert metrics.task_metrics(mnli, [0, 1, 2], ["contradiction", "neutral", "neutral"]) == (
      pytest.approx({"accuracy": 2 / 3}))
  sts = metrics.task_metrics(tasks.TASKS["sts-b"], [[0.5], [2.0], [4.5]], [1.0, 2.5, 4.0])
  assert sts == pytest.approx({"pearson": stats.pearsonr([0.5, 2, 4.5], [1, 2.5, 4])[0],
                               "spearman": 1.0})
  with pytest.raises(ValueError, match="unlabeled examples"):
    metrics.task_metrics(mrpc, PREDICTED, [1, 0, -1, 1, 1, 1])
  with pytest.raises(ValueError, match="scores for 3 classes"):
    metrics.task_metrics(mrpc, np.zeros([6, 3]), ACTUAL)


def test_write_glue_predictions(tmp_path):
  path = tmp_path / "out" / metrics.glue_submission_name("mnli", "test_mismatched")
  assert path.name == "MNLI-mm.tsv"
  examples = [InputExample("test_mismatched-0", "a", "b"),
              InputExample("test_mismatched-1", "c", "d")]
  metrics.write_glue_predictions(str(path), tasks.TASKS["mnli"], [[0.1, 0.2, 0.9], [3, 0, 0]],
                                 [tasks.glue_index(e.guid) for e in examples])
  assert path.read_text() == "index\tprediction\n0\tneutral\n1\tcontradiction\n"
  assert os.listdir(path.parent) == ["MNLI-mm.tsv"]          # no temporary left

  sts = tmp_path / "STS-B.tsv"
  metrics.write_glue_predictions(str(sts), tasks.TASKS["sts-b"],
                                 np.array([3.1, 0.0, 4.25], np.float32), [0, 1, 2])
  assert sts.read_text() == "index\tprediction\n0\t3.1\n1\t0\n2\t4.25\n"
  with pytest.raises(ValueError, match="2 predictions but 3 indices"):
    metrics.write_glue_predictions(str(sts), tasks.TASKS["rte"], [0, 1], [0, 1, 2])
