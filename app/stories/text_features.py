"""Terms of a headline (and summary) for story matching, pure: stopwords out, plurals folded, names weighted."""

from __future__ import annotations

import functools
import re
from collections import defaultdict

_WORD = re.compile("[A-Za-z0-9][A-Za-z0-9'\u2019.-]*")
_STOPWORD_TEXT = """
a about above after again against all also am an and any are as at be been before being below between both but by
can could did do does doing down during each few for from further had has have having he her here hers him his how
i if in into is it its itself just me more most my new no nor not now of off on once only or other our out over own
says said same she should so some such than that the their them then there these they this those through to too
under until up very via was we were what when where which while who whom why will with would you your
report reports update updates live video photos watch
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())
NAME_WEIGHT = 2.0  # a capitalised word inside a headline is usually a name: strong evidence of the story
SUMMARY_WEIGHT = 0.5


@functools.lru_cache(maxsize=1 << 17)  # headline words repeat: fold each once
def _fold(word: str) -> str:
    word = word.lower().replace("\u2019", "'").strip("'.-")
    if word.endswith("'s"):
        word = word[:-2]
    if len(word) > 4 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    return word


def terms(title: str, summary: str = "") -> dict[str, float]:
    """Weighted terms: headline words, names (capitalised, not sentence-initial) doubled, summary words halved."""
    counts: dict[str, float] = defaultdict(float)
    for index, raw in enumerate(_WORD.findall(title)):
        word = _fold(raw)
        if len(word) < 2 or word in STOPWORDS:
            continue
        counts[word] += NAME_WEIGHT if index > 0 and raw[:1].isupper() else 1.0
    for raw in _WORD.findall(summary):
        word = _fold(raw)
        if len(word) >= 3 and word not in STOPWORDS:
            counts[word] += SUMMARY_WEIGHT
    return dict(counts)
