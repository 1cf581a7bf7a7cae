"""Exponential back-off, the one computation of how long to wait after failure number n (base * 2^(n-1), capped),
jittered two ways for two purposes, and the dead-letter rule of stored work retried with it."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Literal

Settled = Literal["delivered", "failed", "dead"]


def ceiling(failure: int, base: float, cap: float) -> float:
    """The longest wait after failure number `failure` (1 for the first): base * 2^(failure-1), at most `cap`."""
    return float(min(cap, base * 2 ** min(max(failure - 1, 0), 62)))


def retry_wait(failure: int, base: float, cap: float, *, rng: random.Random | None = None) -> float:
    """Full jitter, for stored work items (deliveries, digests, fan-outs) that fail together when one receiver or
    server does: a random wait anywhere up to the ceiling, so that their retries spread out instead of coming back
    together."""
    return (rng or random).uniform(0, ceiling(failure, base, cap))


@dataclass(frozen=True)
class RetryPolicy:
    """How stored work is retried: after a failed attempt, again after `retry_wait`; after `max_attempts` failed
    attempts (or one permanent failure), dead, for an administrator to see and replay."""

    max_attempts: int
    base: float
    cap: float

    def settle(self, attempt: int, failed: bool, *, permanent: bool = False) -> tuple[Settled, float]:
        """(status, seconds until the next attempt) after attempt number `attempt` (1 for the first)."""
        if not failed:
            return "delivered", 0.0
        if permanent or attempt >= self.max_attempts:
            return "dead", 0.0
        return "failed", retry_wait(attempt, self.base, self.cap)


@dataclass
class Backoff:
    """A loop's own wait before it tries a dependency that went away again (a lost Redis, a crashed worker loop):
    `first`, then twice as long each failure up to `cap`. Unlike `retry_wait` it is one waiter, not many items, and
    a wait near zero would only hammer the server: the jitter takes off at most a quarter (so the processes that
    lost one Redis still do not all come back at the same instant); `reset` after a success."""

    first: float = 0.1
    cap: float = 5.0
    failures: int = 0

    def next_wait(self) -> float:
        self.failures = min(self.failures + 1, 31)
        return ceiling(self.failures, self.first, self.cap) * random.uniform(0.75, 1.0)

    def reset(self) -> None:
        self.failures = 0
