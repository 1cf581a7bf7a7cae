"""Retry waits: exponential back-off with full jitter (a random wait up to base * 2^(attempt-1), capped), so that
deliveries failing together do not retry together."""

from __future__ import annotations

import random


def retry_wait(attempt: int, base: float, cap: float, *, rng: random.Random | None = None) -> float:
    """Seconds to wait before retrying after failed attempt number `attempt` (1 for the first)."""
    ceiling = min(cap, base * 2 ** min(max(attempt - 1, 0), 62))
    return (rng or random).uniform(0, ceiling)
