"""B-cubed scoring."""

from __future__ import annotations

import random

import pytest

from app.stories.bcubed import BCubed, bcubed, bcubed_items


def brute_force(predicted: list[int], gold: list[str]) -> tuple[float, float]:
    n = len(gold)
    precision = sum(sum(1 for j in range(n) if predicted[j] == predicted[i] and gold[j] == gold[i])
                    / sum(1 for j in range(n) if predicted[j] == predicted[i]) for i in range(n)) / n  # fmt: skip
    recall = sum(sum(1 for j in range(n) if predicted[j] == predicted[i] and gold[j] == gold[i])
                 / sum(1 for j in range(n) if gold[j] == gold[i]) for i in range(n)) / n  # fmt: skip
    return precision, recall


def test_extremes() -> None:
    gold = ["a", "a", "b", "b", "b"]
    assert bcubed([1, 1, 2, 2, 2], gold).f1 == 1.0
    singletons = bcubed([1, 2, 3, 4, 5], gold)
    assert singletons.precision == 1.0
    assert singletons.recall == pytest.approx((2 * 0.5 + 3 / 3) / 5)
    lumped = bcubed([1] * 5, gold)
    assert lumped.recall == 1.0
    assert lumped.precision == pytest.approx((2 * 0.4 + 3 * 0.6) / 5)


def test_matches_the_definition() -> None:
    rng = random.Random(3)
    for _ in range(50):
        gold = [rng.choice("abcdef") for _ in range(40)]
        predicted = [rng.randint(0, 8) for _ in range(40)]
        score = bcubed(predicted, gold)
        assert (score.precision, score.recall) == pytest.approx(brute_force(predicted, gold))


def test_lengths_must_match() -> None:
    with pytest.raises(ValueError, match="one predicted cluster"):
        bcubed([1, 2], ["a"])


def test_item_scores_average_to_bcubed_and_score_any_subset_against_whole_clusters() -> None:
    predicted, gold = [1, 1, 1, 2, 2], ["a", "a", "b", "b", "b"]
    items = bcubed_items(predicted, gold)
    whole = bcubed(predicted, gold)
    assert sum(i.precision for i in items) / 5 == pytest.approx(whole.precision)
    assert sum(i.recall for i in items) / 5 == pytest.approx(whole.recall)
    assert items[2] == BCubed(1 / 3, 1 / 3)  # the "b" among the "a"s: alone in its cluster, a third of its story
