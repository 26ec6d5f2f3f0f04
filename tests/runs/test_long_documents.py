"""The long-document benchmark's data: the era labels of the bundled speeches and the folds
in which every speech is tested once (`pipelines.long_documents`)."""

import glob
import json
import os

import pytest

from xlnet_tf.runs import long_documents

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_every_bundled_speech_has_the_era_of_its_year():
  files = sorted(glob.glob(os.path.join(ROOT, "data_prep", "sample_data", "sotu", "*.txt")))
  rows = long_documents.speeches()
  assert [r["id"] for r in rows] == [os.path.basename(f)[:-4] for f in files]
  years = [int(os.path.basename(f)[:4]) for f in files]
  expected = ["1900-1932" if y <= 1932 else "1933-1980" if y <= 1980 else "1981-2021"
              for y in years]
  assert [r["era"] for r in rows] == expected
  assert (expected.count("1900-1932"), expected.count("1933-1980"),
          expected.count("1981-2021")) == (33, 49, 41)
  # the demo's pretraining holds out every tenth speech from the sixth on
  assert [r["id"] for r in rows if r["held_out_of_pretraining"]] == [
      os.path.basename(f)[:-4] for i, f in enumerate(files) if i % 10 == 5]
  assert all(r["text"].strip() for r in rows)
  with pytest.raises(ValueError, match="year 1899 is outside the eras"):
    long_documents.era_of(1899)


def test_each_speech_is_tested_in_exactly_one_fold(tmp_path):
  rows = long_documents.speeches()[:20]
  directories = long_documents.write_folds(str(tmp_path), rows, 3)
  tested = []
  for fold, directory in enumerate(directories):
    def ids(split):
      with open(os.path.join(directory, f"{split}.jsonl"), encoding="utf-8") as f:
        return [json.loads(line)["id"] for line in f]
    dev, train = ids("dev"), ids("train")
    assert dev == [r["id"] for i, r in enumerate(rows) if i % 3 == fold]
    assert sorted(dev + train) == sorted(r["id"] for r in rows)
    tested += dev
  assert sorted(tested) == sorted(r["id"] for r in rows)
  assert not glob.glob(os.path.join(str(tmp_path), "*.partial"))
