"""Per-story error analysis of a clustering against labels, pure: which labelled stories were split and which were
merged into one, what each costs in B-cubed, and the headlines and terms that show why.

A story's cost is its share of the B-cubed loss: the split costs sum to 1 - recall, the merge costs to 1 - precision,
so the list says where the score goes (and whether a few label pairs that text cannot tell apart cap it).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Hashable, Sequence
from typing import Any

HEADLINE_CHARS = 90


def story_errors(
    predicted: Sequence[Hashable],
    gold: Sequence[str],
    headlines: Sequence[str],
    terms_of: Callable[[Hashable], list[str]],
    *,
    top: int = 10,
) -> dict[str, list[dict[str, Any]]]:
    """The `top` costliest splits and merges, costliest first."""
    groups: dict[tuple[Hashable, str], list[str]] = defaultdict(list)
    for found, label, headline in zip(predicted, gold, headlines, strict=True):
        groups[found, label].append(headline[:HEADLINE_CHARS])
    by_label: dict[str, Counter[Hashable]] = defaultdict(Counter)
    by_found: dict[Hashable, Counter[str]] = defaultdict(Counter)
    for (found, label), members in groups.items():
        by_label[label][found] = len(members)
        by_found[found][label] = len(members)
    total = len(gold)
    splits = [_split(label, pieces, groups, total) for label, pieces in by_label.items() if len(pieces) > 1]
    merges = [_merge(found, labels, groups, total, terms_of) for found, labels in by_found.items() if len(labels) > 1]
    return {
        "split": sorted(splits, key=lambda e: -e["cost"])[:top],
        "merged": sorted(merges, key=lambda e: -e["cost"])[:top],
    }


def _loss(counts: Counter[Any], total: int) -> float:
    size = sum(counts.values())
    return (size - sum(n * n for n in counts.values()) / size) / total


def _split(label: str, pieces: Counter[Hashable], groups: dict[tuple[Hashable, str], list[str]],
           total: int) -> dict[str, Any]:  # fmt: skip
    ranked = pieces.most_common()
    return {
        "story": label,
        "headline": groups[ranked[0][0], label][0],
        "articles": sum(pieces.values()),
        "pieces": len(pieces),
        "singletons": sum(1 for n in pieces.values() if n == 1),
        "largest_share": round(ranked[0][1] / sum(pieces.values()), 3),
        "cost": round(_loss(pieces, total), 4),
        "apart": [groups[found, label][0] for found, _ in ranked[1:4]],  # what the next pieces are about
    }


def _merge(found: Hashable, labels: Counter[str], groups: dict[tuple[Hashable, str], list[str]], total: int,
           terms_of: Callable[[Hashable], list[str]]) -> dict[str, Any]:  # fmt: skip
    return {
        "articles": sum(labels.values()),
        "cost": round(_loss(labels, total), 4),
        "terms": terms_of(found),  # the story's strongest terms: what held the labels together
        "labels": [_label(label, n, groups[found, label]) for label, n in labels.most_common(4)],
    }


def _label(label: str, articles: int, headlines: list[str]) -> dict[str, Any]:
    return {"story": label, "articles": articles, "headline": headlines[0]}
