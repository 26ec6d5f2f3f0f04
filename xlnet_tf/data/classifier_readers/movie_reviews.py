"""The bundled movie_reviews data set: VADER's Rotten Tomatoes snippets rated by people
(data_prep/sample_data/sentiment/), made binary sentiment (rating > 0 positive, < 0
negative, 0 left out) and split 80/10/10 by a stable hash of each snippet's id
(`movie_reviews_split`).
"""

import hashlib
import os
from typing import List

from xlnet_tf.data import sample_data
from xlnet_tf.data.classifier_examples import InputExample
from xlnet_tf.data.classifier_examples import TaskSpec
from xlnet_tf.data.classifier_readers import delimited

MOVIE_REVIEWS_DIR = sample_data.path("sentiment")
MOVIE_REVIEWS_FILE = "movieReviewSnippets_GroundTruth.txt"

MOVIE_REVIEWS_SPLIT_PERCENT = (("train", 80), ("dev", 10), ("test", 10))


def movie_reviews_split(review_id: str) -> str:
  """The split of a snippet: a stable hash of its id (80% train, 10% dev, 10% test)."""
  bucket = int.from_bytes(
      hashlib.sha256(f"movie_reviews:{review_id}".encode()).digest()[:8], "big") % 100
  for split, percent in MOVIE_REVIEWS_SPLIT_PERCENT:
    if bucket < percent:
      return split
    bucket -= percent
  raise AssertionError("percentages must add up to 100")


def movie_reviews_files(spec: TaskSpec, data_dir: str, split: str) -> List[str]:
  return [os.path.join(data_dir, MOVIE_REVIEWS_FILE)]


def read_movie_reviews(spec: TaskSpec, data_dir: str, split: str) -> List[InputExample]:
  """Rotten Tomatoes snippets rated by people from -4 to 4 (VADER's ground truth).

  Lines are "id<TAB>mean rating<TAB>sentence" (CRLF). A positive mean rating is "positive",
  a negative one "negative"; snippets rated exactly 0 are dropped.
  """
  path = os.path.join(data_dir, MOVIE_REVIEWS_FILE)
  if not os.path.isfile(path):
    raise delimited.missing_file(
        path, f"the movie_reviews task reads {MOVIE_REVIEWS_FILE} (id, mean rating, "
        f"sentence; from vaderSentiment), bundled in {MOVIE_REVIEWS_DIR}")
  try:
    return _movie_review_examples(path, split)
  except UnicodeDecodeError:
    raise delimited.utf8_error(path) from None


def _movie_review_examples(path: str, split: str) -> List[InputExample]:
  """The examples of `split` in the movie_reviews file `path` (see `read_movie_reviews`)."""
  examples = []
  with open(path, encoding="utf-8") as f:
    for line, text in enumerate(f, start=1):
      text = text.rstrip("\r\n")
      if not text.strip():
        continue
      fields = text.split("\t")
      if len(fields) != 3:
        raise ValueError(f"{path}:{line}: {len(fields)} tab-separated field(s), expected 3 "
                         f"(id, mean rating, sentence)")
      review_id, rating, sentence = fields
      rating = delimited.parse_label(path, line, rating, None, is_regression=True)
      if rating == 0 or movie_reviews_split(review_id) != split:
        continue
      label = "positive" if rating > 0 else "negative"
      examples.append(InputExample(f"{split}-{review_id}", sentence, None, label))
  return examples
