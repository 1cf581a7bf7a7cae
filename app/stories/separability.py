"""How far labelled stories can be told apart by their wording at all, pure: a ceiling for any clusterer that
decides by text similarity, so that a score short of a target can be traced to the labels rather than the clusterer.

The nearest-story oracle knows every label and places each article with the labelled story whose other articles
(their summed TF-IDF terms, as the clusterer weighs them) are most like it: no threshold, no arrival order, no
mistake but the wording's own (a story of one article is left alone: it is right by definition). Where it puts an
article with another story, the two stories are confusable; merging the pairs where it does so for a good share of
one story's articles gives the precision a clusterer keeps even when it separates everything else perfectly (the
label cap).
"""

from __future__ import annotations

import math
import operator
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from app.stories.bcubed import bcubed

CONFUSABLE_SHARE = 0.25  # of one story's articles placed with the other: text does not tell the two apart


@dataclass(frozen=True, slots=True)
class Confusion:
    story: str
    nearer_to: str
    articles: int  # of `story` nearer to `nearer_to` than to the rest of their own
    share: float


def nearest_stories(vectors: Sequence[dict[str, float]], gold: Sequence[str]) -> list[str]:
    """Each article's most similar labelled story, leaving the article itself out of its own."""
    documents = Counter(word for vector in vectors for word in vector)
    idf = {word: math.log((len(vectors) + 1) / (n + 1)) + 1 for word, n in documents.items()}
    sums: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for vector, label in zip(vectors, gold, strict=True):
        for word, weight in vector.items():
            sums[label][word] += weight * idf[word]
    norms = {label: _norm(centroid) for label, centroid in sums.items()}
    sizes = Counter(gold)
    nearest = []
    for vector, label in zip(vectors, gold, strict=True):
        if sizes[label] == 1:  # a story of one article has nothing to be like: the oracle leaves it alone
            nearest.append(label)
            continue
        weighted = {word: weight * idf[word] for word, weight in vector.items()}
        nearest.append(max(sums, key=lambda story: (_cosine(weighted, sums[story], norms[story], story == label),
                                                     story == label)))  # fmt: skip
    return nearest


def _norm(vector: dict[str, float]) -> float:
    return math.sqrt(sum(v * v for v in vector.values()))


def _cosine(article: dict[str, float], story: dict[str, float], norm: float, own: bool) -> float:
    """Cosine between an article and a story's summed terms; with `own`, the story without the article."""
    if not own:
        dot = sum(weight * story.get(word, 0.0) for word, weight in article.items())
        return dot / (_norm(article) * norm) if norm and article else 0.0
    rest = {word: story[word] - article.get(word, 0.0) for word in story}
    rest_norm = _norm(rest)
    dot = sum(weight * rest.get(word, 0.0) for word, weight in article.items())
    return dot / (_norm(article) * rest_norm) if rest_norm > 1e-9 and article else 0.0


def confusions(nearest: Sequence[str], gold: Sequence[str]) -> list[Confusion]:
    """Story pairs the oracle mixed up, most articles first."""
    sizes = Counter(gold)
    pairs = Counter((label, found) for label, found in zip(gold, nearest, strict=True) if label != found)
    return [Confusion(label, found, n, round(n / sizes[label], 3)) for (label, found), n in pairs.most_common()]


def label_cap(gold: Sequence[str], confused: Sequence[Confusion], share: float = CONFUSABLE_SHARE) -> float:
    """B-cubed precision of the labels themselves once every pair confused for `share` of a story is one story."""
    parent = {label: label for label in gold}

    def root(label: str) -> str:
        while parent[label] != label:
            label = parent[label]
        return label

    for pair in confused:
        if pair.share >= share:
            parent[root(pair.story)] = root(pair.nearer_to)
    return bcubed([root(label) for label in gold], gold).precision


def separability(vectors: Sequence[dict[str, float]], gold: Sequence[str], *, top: int = 10) -> dict[str, Any]:
    """The oracle's B-cubed and accuracy (the share of articles nearest their own story: a pair of stories that
    trade all their articles keeps B-cubed whole), the label cap, and the `top` most confused story pairs."""
    nearest = nearest_stories(vectors, gold)
    score = bcubed(nearest, gold)
    confused = confusions(nearest, gold)
    sizes = Counter(gold)
    return {
        "oracle_precision": round(score.precision, 4),
        "oracle_recall": round(score.recall, 4),
        "oracle_f1": round(score.f1, 4),
        "oracle_accuracy": round(sum(map(operator.eq, nearest, gold)) / len(gold), 4) if gold else 1.0,
        "label_cap_precision": round(label_cap(gold, confused), 4),
        "confusable": [_pair(c, sizes) for c in confused[:top]],
    }


def _pair(confusion: Confusion, sizes: Counter[str]) -> dict[str, Any]:
    return {"story": confusion.story, "articles": sizes[confusion.story], "nearer_to": confusion.nearer_to,
            "nearer_articles": confusion.articles, "share": confusion.share}  # fmt: skip
