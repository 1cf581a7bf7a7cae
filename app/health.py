"""Is this process able to serve: the database answers. Redis is derived state (cache, pub/sub, rankings): without it
the process serves degraded, so it is reported, not decisive; so is the search backend (it falls back to PostgreSQL)."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from redis.asyncio import Redis
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.search.service import HEALTH_TIMEOUT_S, Search, SearchHealth


@dataclass(frozen=True, slots=True)
class Check:
    ok: bool
    latency_ms: float
    error: str | None = None


@dataclass(frozen=True, slots=True)
class HealthReport:
    database: Check
    redis: Check
    search: SearchHealth

    @property
    def ok(self) -> bool:
        """The process can serve: what a load balancer should route by."""
        return self.database.ok

    @property
    def degraded(self) -> list[str]:
        """What the process serves without (answers slower or with typed errors, events come late)."""
        return [] if self.redis.ok else ["redis"]


async def _timed(probe: object) -> Check:
    started = time.perf_counter()
    try:
        await asyncio.wait_for(probe, HEALTH_TIMEOUT_S)  # type: ignore[arg-type]
    except Exception as error:
        return Check(False, (time.perf_counter() - started) * 1000, f"{type(error).__name__}: {error}")
    return Check(True, round((time.perf_counter() - started) * 1000, 2))


async def _database(engine: AsyncEngine) -> None:
    async with engine.connect() as connection:
        await connection.execute(text("SELECT 1"))


async def check_health(engine: AsyncEngine, redis: Redis, search: Search) -> HealthReport:
    """The three checks at once, each within HEALTH_TIMEOUT_S (search's parts included)."""
    database, cache, searching = await asyncio.gather(
        _timed(_database(engine)), _timed(redis.ping()), search.health(engine)
    )
    return HealthReport(database=database, redis=cache, search=searching)
