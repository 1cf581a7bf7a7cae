"""Exponential back-off with jitter, for loops that retry a dependency that went away."""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass
class Backoff:
    """Waits `first`, then twice as long each failure up to `cap`, each wait jittered down by up to a quarter (so
    the processes that lost one Redis do not all come back at the same instant); `reset` after a success."""

    first: float = 0.1
    cap: float = 5.0
    failures: int = 0

    def next_wait(self) -> float:
        wait = min(self.cap, self.first * 2**self.failures)
        self.failures = min(self.failures + 1, 30)
        return float(wait * random.uniform(0.75, 1.0))

    def reset(self) -> None:
        self.failures = 0
