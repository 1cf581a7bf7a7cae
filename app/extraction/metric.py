"""The article extraction benchmark's own metric, reimplemented: word 4-gram shingles of the extracted text against
the true article body; per page, true/false positives and false negatives normalized to sum to 1; precision and
recall averaged over pages, F1 from the two averages.

Faithful to `evaluate.py` of scrapinghub/article-extraction-benchmark (MIT): `_tokenize` (`\\w+`, Unicode),
`_ngrams` (one shorter shingle when a text has fewer than n tokens), `string_shingle_matching`, `precision_score`,
`recall_score` and `metrics_from_tp_fp_fns` (pages with tp + fp = 0 left out of precision, tp + fn = 0 out of
recall). The bootstrap confidence intervals are not reproduced.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from collections.abc import Sequence

Counts = tuple[float, float, float]  # tp, fp, fn, normalized to sum to 1 (or all 0)

_TOKEN = re.compile(r"\w+", re.UNICODE | re.MULTILINE | re.IGNORECASE | re.DOTALL)


def shingles(text: str, n: int = 4) -> Counter[tuple[str, ...]]:
    tokens = _TOKEN.findall(text or "")
    return Counter(shingle for i in range(max(1, len(tokens) - n + 1)) if (shingle := tuple(tokens[i : i + n])))


def shingle_matching(true: str, predicted: str, n: int = 4) -> Counts:
    expected, found = shingles(true, n), shingles(predicted, n)
    tp = fp = fn = 0.0
    for key in expected.keys() | found.keys():
        t, p = expected.get(key, 0), found.get(key, 0)
        tp += min(t, p)
        fp += max(0, p - t)
        fn += max(0, t - p)
    total = tp + fp + fn
    return (tp / total, fp / total, fn / total) if total > 0 else (tp, fp, fn)


def precision_score(tp: float, fp: float, fn: float) -> float:
    if fp == fn == 0:
        return 1.0
    return 0.0 if tp == fp == 0 else tp / (tp + fp)


def recall_score(tp: float, fp: float, fn: float) -> float:
    if fp == fn == 0:
        return 1.0
    return 0.0 if tp == fn == 0 else tp / (tp + fn)


def scores(pages: Sequence[Counts]) -> dict[str, float]:
    """F1, precision and recall over pages, as the benchmark reports them."""
    precision = statistics.mean(precision_score(*c) for c in pages if c[0] + c[1] > 0)
    recall = statistics.mean(recall_score(*c) for c in pages if c[0] + c[2] > 0)
    return {"f1": 2 * precision * recall / (precision + recall), "precision": precision, "recall": recall}
