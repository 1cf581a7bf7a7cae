"""B-cubed precision, recall and F1 of a clustering against labels (Bagga & Baldwin 1998), pure."""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class BCubed:
    precision: float
    recall: float

    @property
    def f1(self) -> float:
        total = self.precision + self.recall
        return 2 * self.precision * self.recall / total if total else 0.0


def bcubed(predicted: Sequence[Hashable], gold: Sequence[Hashable]) -> BCubed:
    """For each item: the share of its predicted cluster that shares its label (precision), and the share of its
    label that shares its predicted cluster (recall); both averaged over items. O(n) with pair counts."""
    if len(predicted) != len(gold):
        raise ValueError("one predicted cluster and one label per item")
    if not gold:
        return BCubed(1.0, 1.0)
    both = Counter(zip(predicted, gold, strict=True))
    per_cluster, per_label = Counter(predicted), Counter(gold)
    precision = sum(n * n / per_cluster[c] for (c, _), n in both.items()) / len(gold)
    recall = sum(n * n / per_label[g] for (_, g), n in both.items()) / len(gold)
    return BCubed(precision, recall)


def bcubed_items(predicted: Sequence[Hashable], gold: Sequence[Hashable]) -> list[BCubed]:
    """Each item's own precision and recall (their means are `bcubed`): B-cubed of any subset of the items, scored
    against whole clusters, as when some labelled stories are held out of a choice but clustered with the rest."""
    if len(predicted) != len(gold):
        raise ValueError("one predicted cluster and one label per item")
    both = Counter(zip(predicted, gold, strict=True))
    per_cluster, per_label = Counter(predicted), Counter(gold)
    pairs = zip(predicted, gold, strict=True)
    return [BCubed(both[c, g] / per_cluster[c], both[c, g] / per_label[g]) for c, g in pairs]
