"""SQuAD v1.1 / v2.0 JSON -> `SquadExample`s, with every answer checked against its context.

  >>> examples, report = read_squad("dev-v2.0.json")
  >>> examples[0].answers[0].text, report["skipped_answers"]

The file layout: `{"data": [{"paragraphs": [{"context": str, "qas": [{"id": str,
"question": str, "answers": [{"text": str, "answer_start": int}], "is_impossible":
bool (v2.0)}]}]}]}`. Extra fields (QuAC's `yesno`, Quoref's `context_id`, ...) are ignored.

Errors (ValueError) name the file and the question id (or the paragraph's place) and the
field: a missing or mistyped field. An answer whose `answer_start` does not point at its
text in the context is not fatal: it is dropped with a warning and counted in
`report["skipped_answers"]` (with the ids in `report["skipped"]`); a question left without
answers that is not marked impossible is dropped too and counted in
`report["skipped_questions"]`.
"""

import dataclasses
import json
from typing import Any, Dict, List, Optional, Tuple

from absl import logging
import tensorflow as tf

from xlnet_tf.data.classifier_readers import delimited


@dataclasses.dataclass(frozen=True)
class Answer:
  text: str
  start: int                        # character offset in the context

  @property
  def end(self) -> int:             # exclusive
    return self.start + len(self.text)


@dataclasses.dataclass(frozen=True)
class SquadExample:
  qas_id: str
  question: str
  context: str
  answers: Tuple[Answer, ...]       # empty when is_impossible
  is_impossible: bool = False


def _field(obj: Dict[str, Any], name: str, kind, where: str):
  if not isinstance(obj, dict) or name not in obj:
    raise ValueError(f"{where}: missing field {name!r}")
  value = obj[name]
  if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
    raise ValueError(f"{where}: field {name!r} must be {getattr(kind, '__name__', kind)}, "
                     f"got {type(value).__name__}")
  return value


def parse_squad(data: Dict[str, Any], path: str = "<json>") -> Tuple[List[SquadExample],
                                                                     Dict[str, Any]]:
  """Examples and a report ({"questions", "skipped_answers", "skipped_questions",
  "skipped": [ids]}) from the parsed JSON."""
  examples: List[SquadExample] = []
  report: Dict[str, Any] = {"questions": 0, "skipped_answers": 0, "skipped_questions": 0,
                            "skipped": []}
  articles = _field(data, "data", list, path)
  for a, article in enumerate(articles):
    paragraphs = _field(article, "paragraphs", list, f"{path}: data[{a}]")
    for p, paragraph in enumerate(paragraphs):
      where = f"{path}: data[{a}].paragraphs[{p}]"
      context = _field(paragraph, "context", str, where)
      for q, qa in enumerate(_field(paragraph, "qas", list, where)):
        qas_id = str(_field(qa, "id", (str, int), f"{where}.qas[{q}]"))
        at = f"{path}: question {qas_id}"
        question = _field(qa, "question", str, at)
        impossible = qa.get("is_impossible", False)
        if not isinstance(impossible, bool):
          raise ValueError(f"{at}: field 'is_impossible' must be bool, got "
                           f"{type(impossible).__name__}")
        raw_answers = [] if impossible else _field(qa, "answers", list, at)
        answers = []
        for k, answer in enumerate(raw_answers):
          text = _field(answer, "text", str, f"{at}: answers[{k}]")
          start = _field(answer, "answer_start", int, f"{at}: answers[{k}]")
          if context[start:start + len(text)] != text:
            logging.warning("%s: answers[%d] %r does not occur at answer_start %d (the "
                            "context there reads %r); answer skipped", at, k, text, start,
                            context[start:start + len(text)])
            report["skipped_answers"] += 1
            report["skipped"].append(qas_id)
            continue
          answers.append(Answer(text, start))
        report["questions"] += 1
        if not impossible and not answers:
          report["skipped_questions"] += 1
          continue
        examples.append(SquadExample(qas_id, question, context, tuple(answers), impossible))
  return examples, report


def read_squad(path: str) -> Tuple[List[SquadExample], Dict[str, Any]]:
  """`parse_squad` of a JSON file (any tf.io.gfile path)."""
  if not tf.io.gfile.exists(path):
    raise FileNotFoundError(f"{path}: no such SQuAD JSON file")
  with tf.io.gfile.GFile(path) as f:
    try:
      data = json.load(f)
    except json.JSONDecodeError as error:
      raise ValueError(f"{path}: not valid JSON ({error})") from None
    except UnicodeDecodeError:
      raise delimited.utf8_error(path) from None
  examples, report = parse_squad(data, path)
  if report["skipped_answers"]:
    logging.warning("%s: %d answer(s) skipped (answer_start mismatch), %d question(s) left "
                    "without an answer", path, report["skipped_answers"],
                    report["skipped_questions"])
  return examples, report


def gold_answers(examples: List[SquadExample]) -> Dict[str, List[str]]:
  """{qas_id: gold answer texts} for `squad_metrics.evaluate` (empty: unanswerable)."""
  return {e.qas_id: [a.text for a in e.answers] for e in examples}


def first_answer(example: SquadExample) -> Optional[Answer]:
  """The answer training uses (the first; None for an unanswerable question)."""
  return example.answers[0] if example.answers else None
