"""Counted leases in Redis: at most N holders of something at once (a site's concurrent fetches, the cluster's digest
runs), each lease a member of a sorted set scored by when it expires, so a holder that dies frees its place when its
lease runs out. Taken by one script (atomic), given back with ZREM of the lease id."""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import AsyncIterator

from redis.asyncio import Redis
from redis.exceptions import RedisError

from app.resilience.metrics import REDIS_DEGRADED

log = logging.getLogger(__name__)

# KEYS[1] the leases; ARGV cap, lease (s), lease id. 1 when the lease was taken, 0 when the cap is reached. Redis's own
# clock judges expiry, so the holders' clocks need not agree.
TAKE_LEASE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
redis.call('EXPIRE', KEYS[1], math.ceil(tonumber(ARGV[2])) + 1)
return 1
"""


class CountedLeases:
    """The leases one part of the code takes (`part`: its label in newsagg_redis_degraded_total)."""

    def __init__(self, redis: Redis, part: str) -> None:
        self._redis, self.part = redis, part
        self._take = redis.register_script(TAKE_LEASE)

    @contextlib.asynccontextmanager
    async def held(self, key: str, cap: int, seconds: float, *, fail_open: bool = False) -> AsyncIterator[bool]:
        """One of the `cap` leases of `key`, held for the block; False when all are taken. A lease its holder never
        gives back expires after `seconds`. Without Redis, taking one raises (the caller fails closed), or with
        `fail_open` the block goes ahead uncounted; a lease that cannot be given back is left to expire rather than
        failing the work it covered. Both are counted in newsagg_redis_degraded_total."""
        lease = uuid.uuid4().hex
        try:
            taken = bool(await self._take(keys=[key], args=[cap, seconds, lease]))
        except (RedisError, OSError) as error:
            if not fail_open:
                raise
            REDIS_DEGRADED.labels(self.part).inc()
            log.warning("%s: Redis unreachable (%s); going ahead without the cap of %s", self.part, error, key)
            yield True
            return
        try:
            yield taken
        finally:
            if taken:
                await self._give_back(key, lease, seconds)

    async def _give_back(self, key: str, lease: str, seconds: float) -> None:
        try:
            await self._redis.zrem(key, lease)
        except (RedisError, OSError) as error:
            REDIS_DEGRADED.labels(self.part).inc()
            log.warning("%s: could not return a lease of %s (Redis: %s): it expires in %.0f s", self.part, key, error,
                        seconds)  # fmt: skip
