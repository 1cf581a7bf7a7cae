"""`newsagg eval entities`: the extractor measured on hand-labelled headlines, per kind and overall.

The file is JSON lines: {"title", "summary", "entities": [[name, "PER"|"ORG"|"LOC"], ...]}, optionally "language"
(else detected as ingest detects it). An entity counts once per article, matched by its key (kind and folded name,
as stored), so "U.S." and "US" are one; `untyped` matches names whatever the kind.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path

from app.articles.language import article_language
from app.entities.extractor import entity_key as key_of
from app.entities.extractor import extract, extract_uncached

KINDS = ("PER", "ORG", "LOC")


def evaluate(path: Path) -> dict[str, object]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    texts = [(r["title"], r.get("summary") or "", r.get("language") or article_language(r["title"], r.get("summary")
              or "", None)) for r in rows]  # fmt: skip
    extract("warm", "Warm Up")  # the gazetteer loads once per process, not per headline
    started = time.perf_counter()
    found = [extract_uncached(*text) for text in texts]
    seconds = time.perf_counter() - started
    tally: dict[str, Counter[str]] = {kind: Counter() for kind in (*KINDS, "all", "untyped")}
    for row, entities in zip(rows, found, strict=True):
        gold = {key_of(kind, name) for name, kind in row["entities"]}
        predicted = {e.key for e in entities}
        for scope in (*KINDS, "all"):
            _count(tally[scope], _of(gold, scope), _of(predicted, scope))
        _count(tally["untyped"], {k.split(":", 1)[1] for k in gold}, {k.split(":", 1)[1] for k in predicted})
    return {"articles": len(rows), **{scope: _scores(counts) for scope, counts in tally.items()},
            "headlines_per_second": round(len(rows) / seconds, 1) if seconds else None}  # fmt: skip


def _of(keys: set[str], scope: str) -> set[str]:
    return keys if scope == "all" else {k for k in keys if k.startswith(scope.lower() + ":")}


def _count(counts: Counter[str], gold: set[str], predicted: set[str]) -> None:
    counts["true"] += len(gold & predicted)
    counts["gold"] += len(gold)
    counts["predicted"] += len(predicted)


def _scores(counts: Counter[str]) -> dict[str, float | int]:
    precision = counts["true"] / counts["predicted"] if counts["predicted"] else 0.0
    recall = counts["true"] / counts["gold"] if counts["gold"] else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": round(precision, 3), "recall": round(recall, 3), "f1": round(f1, 3), "gold": counts["gold"]}
