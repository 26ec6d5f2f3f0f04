"""Model outputs of SQuAD windows -> one answer per question (and an n-best list).

For every window of a question, every pair (i-th best start, j-th best end of that start)
is a candidate when the start and the end are paragraph pieces of this window, the start
is one the window gives its largest context (`max_context`), end >= start and the span has
at most `max_answer_length` pieces. Its score is start log-prob + end log-prob. The best
candidate over all windows is the answer; its text is the raw context between the first
piece's begin and the last piece's end. The question's null score is the smallest
answer-class logit over its windows (v2.0): with `null_threshold` set, a question whose
null score exceeds it is answered "".

  >>> answers, nbest, null_scores = decode(examples, windows, outputs)
"""

import collections
import dataclasses
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from xlnet_tf.data.squad import SquadExample
from xlnet_tf.data.squad_features import SquadWindow


@dataclasses.dataclass(frozen=True)
class Candidate:
  text: str
  start_char: int
  end_char: int
  score: float                  # start + end log-probability
  window_index: int


def window_candidates(window: SquadWindow, context: str, start_log_probs, start_index,
                      end_log_probs, end_index, max_answer_length: int) -> List[Candidate]:
  """Candidates of one window: start_* [K1], end_* [K1, K2] (start-major)."""
  out = []
  for i, start in enumerate(start_index):
    start = int(start)
    if window.raw_spans[start] is None or not window.max_context[start] or \
        window.p_mask[start] > 0:
      continue
    for j, end in enumerate(end_index[i]):
      end = int(end)
      if window.raw_spans[end] is None or window.p_mask[end] > 0 or end < start or \
          end - start + 1 > max_answer_length:
        continue
      begin_char, end_char = window.raw_spans[start][0], window.raw_spans[end][1]
      out.append(Candidate(context[begin_char:end_char], begin_char, end_char,
                           float(start_log_probs[i] + end_log_probs[i][j]),
                           window.window_index))
  return out


def decode(examples: Sequence[SquadExample], windows: Sequence[SquadWindow],
           outputs: Mapping[str, np.ndarray], n_best: int = 5, max_answer_length: int = 64,
           null_threshold: Optional[float] = None
           ) -> Tuple[Dict[str, str], Dict[str, List[Candidate]], Dict[str, float]]:
  """(answers {qas_id: text}, n-best {qas_id: [Candidate]}, null scores {qas_id: float}).

  `outputs` holds the head's inference outputs for `windows`, in the same order:
  start_top_log_probs, start_top_index [N, K1], end_top_log_probs, end_top_index
  [N, K1, K2], cls_logits [N].
  """
  by_question: Dict[str, List[int]] = collections.defaultdict(list)
  for row, window in enumerate(windows):
    by_question[window.qas_id].append(row)
  answers, nbest, null_scores = {}, {}, {}
  for example in examples:
    rows = by_question.get(example.qas_id, [])
    candidates = []
    for row in rows:
      candidates.extend(window_candidates(
          windows[row], example.context, outputs["start_top_log_probs"][row],
          outputs["start_top_index"][row], outputs["end_top_log_probs"][row],
          outputs["end_top_index"][row], max_answer_length))
    best: Dict[Tuple[int, int], Candidate] = {}
    for candidate in candidates:                  # one entry per distinct span
      key = (candidate.start_char, candidate.end_char)
      if key not in best or candidate.score > best[key].score:
        best[key] = candidate
    ranked = sorted(best.values(), key=lambda c: -c.score)[:n_best]
    nbest[example.qas_id] = ranked
    null_scores[example.qas_id] = (float(min(outputs["cls_logits"][r] for r in rows))
                                   if rows else float("inf"))
    text = ranked[0].text if ranked else ""
    if null_threshold is not None and null_scores[example.qas_id] > null_threshold:
      text = ""
    answers[example.qas_id] = text
  return answers, nbest, null_scores
