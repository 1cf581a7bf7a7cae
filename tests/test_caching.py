"""The single-flight cache on real Redis: one computation however many callers miss at once, in one process or
several; errors reach every waiter and are not cached; expiry; serving uncached when Redis is unreachable."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest
from redis.asyncio import Redis

from app.caching import SingleFlightCache
from app.runtime.processes import free_port
from app.services import Services
from app.settings import Settings

CALLERS = 100


class Computation:
    """Counts its calls; each call waits until every caller has missed (so all of them overlap it), then answers."""

    def __init__(self, caches: list[SingleFlightCache], callers: int, error: Exception | None = None) -> None:
        self.caches, self.callers, self.error, self.calls = caches, callers, error, 0

    async def __call__(self) -> str:
        self.calls += 1
        while sum(cache.stats.misses for cache in self.caches) < self.callers:  # noqa: ASYNC110 (no event to await)
            await asyncio.sleep(0.001)
        await asyncio.sleep(0.05)  # a computation takes a while: the other process's lock request lands meanwhile
        if self.error is not None:
            raise self.error
        return "ranking"


def callers(cache: SingleFlightCache, count: int, compute: Callable[[], Awaitable[str]]) -> list[Awaitable[str]]:
    return [cache.get_or_compute("trending:1h", 30, compute) for _ in range(count)]


async def test_a_hundred_concurrent_misses_compute_once(services: Services) -> None:
    cache = SingleFlightCache(services.redis)
    compute = Computation([cache], CALLERS)
    values = await asyncio.wait_for(asyncio.gather(*callers(cache, CALLERS, compute)), timeout=30)
    assert values == ["ranking"] * CALLERS
    assert compute.calls == 1
    assert (cache.stats.misses, cache.stats.computed) == (CALLERS, 1)
    assert await cache.get_or_compute("trending:1h", 30, compute) == "ranking"  # then a hit
    assert (compute.calls, cache.stats.hits) == (1, 1)


async def test_two_processes_sharing_redis_compute_once(services: Services, settings: Settings) -> None:
    assert settings.redis_url
    other_redis = Redis.from_url(settings.redis_url)  # another process: its own connections and in-flight table
    here, there = SingleFlightCache(services.redis), SingleFlightCache(other_redis)
    compute = Computation([here, there], CALLERS)
    try:
        values = await asyncio.wait_for(asyncio.gather(*callers(here, CALLERS // 2, compute),
                                                       *callers(there, CALLERS // 2, compute)), timeout=30)  # fmt: skip
    finally:
        await other_redis.aclose()
    assert values == ["ranking"] * CALLERS
    assert compute.calls == 1


async def test_an_error_reaches_every_waiter_and_is_not_cached(services: Services) -> None:
    cache = SingleFlightCache(services.redis)
    failing = Computation([cache], CALLERS, error=RuntimeError("Redis said no"))
    outcomes = await asyncio.wait_for(asyncio.gather(*callers(cache, CALLERS, failing), return_exceptions=True),
                                      timeout=30)  # fmt: skip
    assert failing.calls == 1
    assert all(isinstance(o, RuntimeError) and str(o) == "Redis said no" for o in outcomes)
    working = Computation([], 0)
    assert await cache.get_or_compute("trending:1h", 30, working) == "ranking"  # the next call computes again
    assert working.calls == 1


async def test_a_value_is_served_until_it_expires_or_is_deleted(services: Services) -> None:
    cache = SingleFlightCache(services.redis)
    versions = iter(["first", "second", "third"])

    async def compute() -> str:
        return next(versions)

    assert await cache.get_or_compute("k", 30, compute) == "first"
    assert await cache.get_or_compute("k", 30, compute) == "first"  # cached, however the source changed
    await cache.delete("k")
    assert await cache.get_or_compute("k", 0.05, compute) == "second"
    for _ in range(500):  # until Redis expires it
        if await cache.get("k") is None:
            break
        await asyncio.sleep(0.01)
    assert await cache.get_or_compute("k", 30, compute) == "third"


@pytest.mark.parametrize("concurrent", [1, 10])
async def test_with_redis_unreachable_the_value_is_computed_and_served(concurrent: int) -> None:
    unreachable = Redis(port=free_port())
    cache = SingleFlightCache(unreachable)
    try:
        values = await asyncio.gather(*callers(cache, concurrent, Computation([cache], concurrent)))
    finally:
        await unreachable.aclose()
    assert values == ["ranking"] * concurrent
    assert cache.stats.computed == 1  # concurrent callers in one process still share one computation
    assert cache.stats.errors >= 1


async def test_a_caller_going_away_does_not_cancel_the_computation_for_the_others(services: Services) -> None:
    cache = SingleFlightCache(services.redis)
    compute = Computation([cache], 2)
    first = asyncio.ensure_future(cache.get_or_compute("feed:1", 30, compute))
    second = asyncio.ensure_future(cache.get_or_compute("feed:1", 30, compute))
    while cache.stats.misses < 2:  # noqa: ASYNC110 (no event to await)
        await asyncio.sleep(0.001)
    first.cancel()  # the client that started it disconnected
    assert await asyncio.wait_for(second, 10) == "ranking"
    assert compute.calls == 1
    assert await cache.get("feed:1") == "ranking"  # stored for the next caller too
