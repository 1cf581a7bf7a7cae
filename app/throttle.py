"""At most once per period per key, across all processes (Redis SET NX EX)."""

from __future__ import annotations

from redis.asyncio import Redis


async def once_per(redis: Redis, key: str, seconds: int) -> int:
    """0 when the caller may go ahead now (and the period starts); else the seconds until it may."""
    if await redis.set(f"newsagg:throttle:{key}", 1, ex=seconds, nx=True):
        return 0
    return max(int(await redis.ttl(f"newsagg:throttle:{key}")), 1)
