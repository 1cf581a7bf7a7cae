"""Read-through caching in Redis with single flight: one computation per key, however many callers miss at once.

Within a process, concurrent misses for one key share one in-flight computation. Across processes a short Redis
lock (`SET NX PX`) elects one computer; the others poll for its value and compute themselves only if it does not
arrive before the lock lapses (a computer that died). Values are strings (JSON, usually). When Redis is down the
value is computed and served uncached: a cache never makes an answer fail.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from redis.asyncio import Redis
from redis.exceptions import RedisError

from app.resilience.metrics import REDIS_DEGRADED

log = logging.getLogger(__name__)

LOCK_MS = 5_000  # longest a computation may hold the key before others compute too
POLL_S = 0.01


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    computed: int = 0
    errors: int = 0  # Redis errors: the value was computed and served uncached


class SingleFlightCache:
    def __init__(self, redis: Redis, prefix: str = "newsagg:cache:") -> None:
        self._redis = redis
        self._prefix = prefix
        self._inflight: dict[str, asyncio.Task[str]] = {}
        self.stats = CacheStats()
        self._versioned = redis.register_script(_VERSIONED)  # EVALSHA: the scripts are sent once
        self._release = redis.register_script(_RELEASE)

    async def get(self, key: str) -> str | None:
        try:
            value = await self._redis.get(self._prefix + key)
        except (RedisError, OSError) as error:
            self._failed(error)
            return None
        return value.decode() if isinstance(value, bytes) else value

    async def get_or_compute(self, key: str, ttl_s: float, compute: Callable[[], Awaitable[str]]) -> str:
        cached = await self.get(key)
        if cached is not None:
            self.stats.hits += 1
            return cached
        self.stats.misses += 1
        task = self._inflight.get(key)
        if task is None:
            # its own task: a caller that goes away (a client disconnecting) does not cancel it for the others
            task = asyncio.create_task(self._elect(key, ttl_s, compute), name=f"cache:{key}")
            self._inflight[key] = task
            task.add_done_callback(lambda done: self._finished(key, done))
        return await asyncio.shield(task)

    def _finished(self, key: str, task: asyncio.Task[str]) -> None:
        if self._inflight.get(key) is task:
            del self._inflight[key]
        if not task.cancelled():
            task.exception()  # retrieved: no "never retrieved" warning when every caller went away

    async def _elect(self, key: str, ttl_s: float, compute: Callable[[], Awaitable[str]]) -> str:
        lock, token = self._prefix + key + ":lock", uuid.uuid4().hex
        try:
            elected = bool(await self._redis.set(lock, token, nx=True, px=LOCK_MS))
        except (RedisError, OSError) as error:
            self._failed(error)
            return await self._compute(compute)
        if elected:
            try:
                value = await self.get(key)  # another computer may have stored it between our read and the lock
                if value is None:
                    value = await self._compute(compute)
                    await self.put(key, value, ttl_s)
                return value
            finally:
                try:
                    await self._release(keys=[lock], args=[token])  # only if still ours: it may have lapsed
                except (RedisError, OSError) as error:
                    self._failed(error)
        deadline = time.monotonic() + LOCK_MS / 1000
        while time.monotonic() < deadline:
            await asyncio.sleep(POLL_S)
            value = await self.get(key)
            if value is not None:
                return value
        value = await self._compute(compute)  # the computer died or is very slow: do not wait forever
        await self.put(key, value, ttl_s)
        return value

    async def _compute(self, compute: Callable[[], Awaitable[str]]) -> str:
        self.stats.computed += 1
        return await compute()

    async def get_versioned(self, version_key: str, key: str) -> tuple[int, str | None]:
        """In one round trip: the counter at `version_key` (0 when unset) and the value cached at `key:<counter>`."""
        try:
            version, value = await self._versioned(keys=[version_key], args=[self._prefix + key])
        except (RedisError, OSError) as error:
            self._failed(error)
            return -1, None
        return int(version), value.decode() if isinstance(value, bytes) else value

    async def put(self, key: str, value: str, ttl_s: float) -> None:
        try:
            await self._redis.set(self._prefix + key, value, px=max(int(ttl_s * 1000), 1))
        except (RedisError, OSError) as error:
            self._failed(error)

    async def delete(self, key: str) -> None:
        try:
            await self._redis.delete(self._prefix + key)
        except (RedisError, OSError) as error:
            self._failed(error)

    def _failed(self, error: Exception) -> None:
        self.stats.errors += 1
        REDIS_DEGRADED.labels("cache").inc()
        log.warning("cache: Redis unavailable, serving uncached: %s", error)


_VERSIONED = "local v = redis.call('get', KEYS[1]) or '0' return {v, redis.call('get', ARGV[1] .. ':' .. v)}"
_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"
