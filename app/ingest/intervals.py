"""When to fetch a source next: adaptive to its publishing rate on success, exponential back-off on failure."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime


def rate_from_spread(published: Sequence[datetime]) -> float | None:
    """Articles per hour implied by the timestamps in one feed document (first sight of a source)."""
    if len(published) < 2:
        return None
    span_h = (max(published) - min(published)).total_seconds() / 3600
    return (len(published) - 1) / span_h if span_h > 0 else None


def updated_rate(previous: float, new_articles: int, elapsed_h: float, alpha: float) -> float:
    """EMA of articles/hour, fed with what one fetch found since the previous fetch."""
    if elapsed_h <= 0:
        return previous
    return alpha * (new_articles / elapsed_h) + (1 - alpha) * previous


def success_interval_s(rate_per_hour: float, target_new: float, min_s: int, max_s: int) -> int:
    """Time for ~`target_new` new articles at `rate_per_hour`, clamped to the source's bounds."""
    if rate_per_hour <= 0:
        return max_s
    return int(min(max(target_new / rate_per_hour * 3600, min_s), max_s))


def failure_delay_s(consecutive_failures: int, cap_exponent: int) -> int:
    """2^min(failures, cap) minutes."""
    return int(60 * 2 ** min(max(consecutive_failures, 0), cap_exponent))
