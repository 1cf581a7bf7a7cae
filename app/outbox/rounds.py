"""Draining an outbox topic: one batch after another until a batch comes back short, bounded per run."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

ROUNDS = 50  # batches one drain runs at most (then the next run goes on)


async def drain(deliver: Callable[[], Awaitable[int]], *, batch: int) -> int:
    """Runs `deliver` (one batch, returning how many it delivered) until a batch comes back short: nothing more is
    pending, or the target is down and the next run tries again. At most ROUNDS batches; returns the total."""
    delivered = 0
    for _ in range(ROUNDS):
        done = await deliver()
        delivered += done
        if done < batch:
            break
    return delivered
