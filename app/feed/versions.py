"""A reader's feed version: a counter in Redis that every cached ranking and page of theirs is keyed by. Any change
of their interests, follows, mutes or languages bumps it, which invalidates all of them at once."""

from __future__ import annotations

import logging

from redis.asyncio import Redis
from redis.exceptions import RedisError

log = logging.getLogger(__name__)


def version_key(user_id: int) -> str:
    return f"newsagg:feed-version:{user_id}"


async def read(redis: Redis, user_id: int | None) -> int:
    """0 for an anonymous reader; -1 when Redis cannot say (uncached rather than wrong)."""
    if user_id is None:
        return 0
    try:
        value = await redis.get(version_key(user_id))
    except (RedisError, OSError):
        return -1
    return int(value or 0)


async def bump(redis: Redis, user_id: int) -> None:
    """The reader's cached rankings and pages are stale; a Redis failure is logged, never raised (what changed is
    committed already, and the caches expire on their own)."""
    try:
        await redis.incr(version_key(user_id))
    except (RedisError, OSError) as error:
        log.warning("feed: could not invalidate the cached feed of user %d: %s", user_id, error)
