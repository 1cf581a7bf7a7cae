"""Quantiles as bench.feed and bench.search report them (bench.push and bench.near_duplicates keep their own)."""

from __future__ import annotations


def quantile(values: list[float], q: float) -> float:
    """The sorted values' one at position int(q * n), no interpolation (the largest for q near 1), to 0.01."""
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2)
