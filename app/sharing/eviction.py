"""Cached destinations that changed, evicted from Redis: triggers queue a link's code whenever what it leads to may
have changed (migration 0026: the link repointed, emptied by its target's deletion, or deleted with its creator's
account; its story's representative article or merge; its article's URL), and the workers drain the queue every
flush interval. The next visit reads PostgreSQL again: 302 to the new place, 410 Gone, or 404 for a deleted link.
The hot path never asks PostgreSQL whether its cache is fresh."""

from __future__ import annotations

from redis.asyncio import Redis
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.sharing import repository as links
from app.sharing.counters import ShareCounters

BATCH = 1000


async def evict_changed(db: async_sessionmaker[AsyncSession], redis: Redis) -> int:
    """How many codes were evicted. A batch leaves the queue only once Redis has forgotten its codes: when Redis
    fails, the transaction rolls back and the next run evicts them again."""
    evicted = 0
    while True:
        async with db.begin() as session:
            codes = await links.take_evictions(session, BATCH)
            await ShareCounters(redis).forget(sorted(set(codes)))
        evicted += len(set(codes))
        if len(codes) < BATCH:
            return evicted
