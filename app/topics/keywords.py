"""The keyword baseline: hand-written words per topic, counted in the title (double) and the summary.

It needs no training data at all, and it is half of the shipped classifier (app/topics/classifier.py): it knows
topics the weakly-labelled training data rarely shows (science, technology)."""

from __future__ import annotations

import enum
import itertools

import numpy as np

from app.topics.features import TITLE_WEIGHT, tokens


class Topic(enum.StrEnum):
    WORLD = "world"
    POLITICS = "politics"
    BUSINESS = "business"
    TECHNOLOGY = "technology"
    SCIENCE = "science"
    HEALTH = "health"
    SPORTS = "sports"
    ENTERTAINMENT = "entertainment"


TOPICS = tuple(t.value for t in Topic)

_KEYWORDS = {
    "world": """war troops military army ceasefire refugees refugee embassy foreign minister un united nations nato
        iraq iran syria afghanistan israel palestinian gaza lebanon russia ukraine china beijing korea pyongyang
        india pakistan africa europe eu kremlin taliban insurgents militants rebels bomb bombing killed attack
        border sanctions nuclear summit diplomats diplomatic hostage coup protesters""",
    "politics": """election elections vote voters voting ballot campaign candidate parliament congress senate senator
        house lawmakers legislation bill democrat democrats democratic republican republicans gop labour tory tories
        conservatives party mp mps minister prime president governor policy government opposition poll polls
        referendum cabinet chancellor white_house impeachment""",
    "business": """company companies shares stock stocks market markets investors profit profits revenue earnings
        quarter sales bank banks economy economic inflation interest rates oil prices price deal merger acquisition
        takeover ceo chief executive firm billion million dollar euro trade exports jobs unemployment retail
        growth gdp bankruptcy debt tax""",
    "technology": """technology tech software computer computers internet online web microsoft google apple ibm intel
        oracle yahoo amazon facebook twitter phone phones mobile smartphone iphone broadband wireless digital
        users hackers hacker virus spam security app apps chip chips linux windows gadget robot ai data""",
    "science": """science scientists scientist research researchers study space nasa mars moon planet astronomers
        telescope satellite species climate warming environment fossil dinosaur genetic gene genes dna
        biology physics experiment discovery evolution ocean earth spacecraft launch""",
    "health": """health medical hospital hospitals doctors doctor patients patient disease cancer drug drugs vaccine
        vaccines virus flu infection infections heart diabetes obesity treatment surgery nurses nhs fda clinical
        trial covid coronavirus pandemic mental""",
    "sports": """game games match matches team teams season coach player players league cup championship champion
        win won victory defeat beat goal goals score scored football soccer rugby cricket tennis golf baseball
        basketball nfl nba olympic olympics tournament final sport sports striker midfielder""",
    "entertainment": """film films movie movies actor actress star stars music album band singer song songs concert
        tv television show series hollywood oscar oscars award awards festival box office celebrity theatre
        comedy drama director book novel chart""",
}
KEYWORDS = {t: frozenset(w.replace("_", " ") for w in words.split()) for t, words in _KEYWORDS.items()}
_TOPICS_OF: dict[str, list[int]] = {}  # keyword -> the topics (by index) it counts for
for _index, _topic in enumerate(TOPICS):
    for _word in KEYWORDS[_topic]:
        _TOPICS_OF.setdefault(_word, []).append(_index)


def keyword_probabilities(docs: list[tuple[str, str]]) -> np.ndarray:
    """One row per (title, summary): keyword hits per topic as a distribution (uniform when none matched)."""
    scores = np.zeros((len(docs), len(TOPICS)))
    for i, (title, summary) in enumerate(docs):
        for text, weight in ((title, TITLE_WEIGHT), (summary, 1.0)):
            words = tokens(text or "", stop=False)
            for gram in words + [f"{a} {b}" for a, b in itertools.pairwise(words)]:
                for j in _TOPICS_OF.get(gram, ()):
                    scores[i, j] += weight
    scores += 1e-3
    return np.asarray(scores / scores.sum(1, keepdims=True))
