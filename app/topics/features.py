"""Words of an article for topic classification, stemmed (Snowball's English: "companies" and "company" are one
feature, which carries what the model learned to word forms its training headlines did not use) and hashed to a
fixed space (no vocabulary is stored anywhere)."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import mmh3
import numpy as np

from app.text.word_forms import stem

_STOPWORD_TEXT = """
a an the and or but if of to in on at by for with from as is are was were be been being it its this that these those
he she they we you i his her their our your my me him them us not no so than then there here has have had do does did
will would can could should may might must also just into over after before about up out new says said say s t
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())
_WORD = re.compile(r"[a-z0-9]+")
HASH_SEED = 17
DIMENSION = 1 << 18
TITLE_WEIGHT = 2.0  # a title word counts twice: the title says what the article is about


def tokens(text: str, *, stop: bool = True) -> list[str]:
    """Lowercased words, numbers collapsed ("0" short, "0000" years and longer), stopwords out unless `stop`."""
    words = []
    for word in _WORD.findall(text.lower().replace("\u2019", "'").replace("'s ", " ")):
        if word.isdigit():
            word = "0" if len(word) < 4 else "0000"
        if not (stop and word in STOPWORDS):
            words.append(word)
    return words


@functools.lru_cache(maxsize=1 << 17)  # headline words repeat: each is stemmed once
def stemmed(word: str) -> str:
    return stem(word, "en")


@dataclass(frozen=True, slots=True)
class Batch:
    """Sparse rows of hashed word counts: row index, column (hashed word) and count per non-zero."""

    rows: np.ndarray
    columns: np.ndarray
    counts: np.ndarray
    size: int


def featurize(docs: list[tuple[str, str]]) -> Batch:
    rows: list[int] = []
    columns: list[int] = []
    counts: list[float] = []
    for i, (title, summary) in enumerate(docs):
        found: dict[int, float] = {}
        for text, weight in ((title, TITLE_WEIGHT), (summary, 1.0)):
            for word in tokens(text or ""):
                column = mmh3.hash(stemmed(word), HASH_SEED, signed=False) % DIMENSION
                found[column] = found.get(column, 0.0) + weight
        rows += [i] * len(found)
        columns += found.keys()
        counts += found.values()
    return Batch(np.array(rows, np.int64), np.array(columns, np.int64), np.array(counts, np.float64), len(docs))
