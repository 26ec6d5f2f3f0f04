"""read_squad on the real samples, and its errors and skip counts."""

import copy
import json
import os

import pytest

from xlnet_tf.data import squad

QA_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                      "data_prep", "sample_data", "qa")


def _squad_json():
  with open(os.path.join(QA_DIR, "squad.json")) as f:
    return json.load(f)


def test_reads_the_real_samples():
  counts = {}
  for name in ("squad.json", "quac_sample.json", "quoref_sample.json"):
    examples, report = squad.read_squad(os.path.join(QA_DIR, name))
    counts[name] = len(examples)
    assert report["skipped_answers"] == report["skipped_questions"] == 0
    for example in examples:
      for answer in example.answers:
        assert example.context[answer.start:answer.end] == answer.text
  assert counts == {"squad.json": 5, "quac_sample.json": 12, "quoref_sample.json": 4}
  examples, _ = squad.read_squad(os.path.join(QA_DIR, "squad.json"))
  nieuwl = [e for e in examples if e.qas_id == "5733b1da4776f4190066106b"][0]
  assert nieuwl.answers[0].text == "Father Julius Nieuwl" and nieuwl.answers[0].start == 222


def test_missing_field_names_the_question_and_the_field(tmp_path):
  data = _squad_json()
  del data["data"][0]["paragraphs"][1]["qas"][2]["question"]
  path = tmp_path / "bad.json"
  path.write_text(json.dumps(data))
  with pytest.raises(ValueError, match=rf"{path}: question 5733b1da4776f41900661067: "
                                       r"missing field 'question'"):
    squad.read_squad(str(path))
  data = _squad_json()
  del data["data"][0]["paragraphs"][0]["qas"][0]["answers"][0]["answer_start"]
  path.write_text(json.dumps(data))
  with pytest.raises(ValueError, match=r"question 5733be284776f41900661182: answers\[0\]: "
                                       r"missing field 'answer_start'"):
    squad.read_squad(str(path))
  data = _squad_json()
  del data["data"][0]["paragraphs"][1]["context"]
  path.write_text(json.dumps(data))
  with pytest.raises(ValueError, match=r"data\[0\]\.paragraphs\[1\]: missing field "
                                       r"'context'"):
    squad.read_squad(str(path))


def test_misplaced_answer_is_skipped_and_counted(tmp_path):
  data = _squad_json()
  qas = data["data"][0]["paragraphs"][1]["qas"]
  qas[0]["answers"][0]["answer_start"] += 1                 # "1882" at 4 reads "882,"
  wrong_only_one = copy.deepcopy(data["data"][0]["paragraphs"][0]["qas"][1])
  wrong_only_one["id"] = "two-answers-one-wrong"
  wrong_only_one["answers"][1]["answer_start"] = 0
  data["data"][0]["paragraphs"][0]["qas"].append(wrong_only_one)
  path = tmp_path / "shifted.json"
  path.write_text(json.dumps(data))
  examples, report = squad.read_squad(str(path))
  assert report == {"questions": 6, "skipped_answers": 2, "skipped_questions": 1,
                    "skipped": ["two-answers-one-wrong", "5733b1da4776f41900661068"]}
  ids = [e.qas_id for e in examples]
  assert "5733b1da4776f41900661068" not in ids                 # no answer left: dropped
  kept = [e for e in examples if e.qas_id == "two-answers-one-wrong"][0]
  # The sample question has three answers (the third is the whole paragraph); the two
  # that are right are kept.
  assert [a.start for a in kept.answers] == [92, 0]


def test_v2_impossible_questions_and_gold_answers():
  data = _squad_json()
  data["data"][0]["paragraphs"][0]["qas"].append(
      {"id": "constructed-impossible", "question": "Who designed the gold dome in 1990?",
       "answers": [], "is_impossible": True})
  examples, report = squad.parse_squad(data)
  impossible = [e for e in examples if e.is_impossible]
  assert [e.qas_id for e in impossible] == ["constructed-impossible"]
  assert squad.gold_answers(examples)["constructed-impossible"] == []
  assert squad.first_answer(impossible[0]) is None
  data["data"][0]["paragraphs"][0]["qas"][-1]["is_impossible"] = "yes"
  with pytest.raises(ValueError, match="question constructed-impossible: field "
                                       "'is_impossible' must be bool, got str"):
    squad.parse_squad(data)


def test_not_json_and_missing_file(tmp_path):
  path = tmp_path / "broken.json"
  path.write_text("{not json")
  with pytest.raises(ValueError, match=rf"{path}: not valid JSON"):
    squad.read_squad(str(path))
  with pytest.raises(FileNotFoundError, match="no such SQuAD JSON file"):
    squad.read_squad(str(tmp_path / "absent.json"))
