"""A connection's operation budget: a token bucket in the process's memory (one WebSocket lives in one process)."""

from __future__ import annotations

import enum
import time
from collections.abc import Callable


class Verdict(enum.Enum):
    ALLOWED = "allowed"
    REFUSED = "refused"  # over the rate: this operation is refused, the connection goes on
    FLOOD = "flood"  # refused again and again without slowing down: the connection should end


class OperationBudget:
    """`burst` operations at once, then `rate` per second. A refused operation takes a token too: a client that
    slows down is served again after a pause; the `burst`-th operation in a row past the budget is a flood.

    Not app/ratelimit's bucket, on purpose: that one holds a caller's points for every process, so it lives in Redis
    and costs a round trip; this one is asked at every message of one socket, and tells a client that keeps sending
    past its budget (a flood, to disconnect) from one that is merely fast."""

    def __init__(self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate, self.burst, self._clock = rate, burst, clock
        self.tokens = float(burst)
        self._at = clock()

    def take(self) -> Verdict:
        now = self._clock()
        self.tokens = min(float(self.burst), self.tokens + (now - self._at) * self.rate) - 1
        self._at = now
        if self.tokens >= 0:
            return Verdict.ALLOWED
        if self.tokens > 1 - self.burst:
            return Verdict.REFUSED
        self.tokens = 1.0 - self.burst  # the floor: a flood's debt stops growing
        return Verdict.FLOOD
