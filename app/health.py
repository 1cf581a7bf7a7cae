"""Is this process able to serve: the database answers. Redis is derived state (cache, pub/sub, rankings): without it
the process serves degraded, so it is reported, not decisive; so is the search backend (it falls back to PostgreSQL)."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass

from redis.asyncio import Redis
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.search.service import HEALTH_TIMEOUT_S, Search, SearchHealth

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Check:
    ok: bool
    latency_ms: float
    error: str | None = None  # "timeout" or "unreachable": /healthz is public; the cause (hosts, addresses) is logged


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


# The failure each check last logged: a balancer asks every 2 s, so one that goes on is logged once, not each time
_logged: dict[str, str] = {}


async def _timed(name: str, probe: object) -> Check:
    started = time.perf_counter()
    try:
        await asyncio.wait_for(probe, HEALTH_TIMEOUT_S)  # type: ignore[arg-type]
    except Exception as error:
        reason = "timeout" if isinstance(error, TimeoutError) else "unreachable"
        cause = f"{type(error).__name__}: {error}"
        if _logged.get(name) != cause:
            log.warning("health check: %s %s (%s)", name, reason, cause)
            _logged[name] = cause
        return Check(False, (time.perf_counter() - started) * 1000, reason)
    if _logged.pop(name, None) is not None:
        log.info("health check: %s answers again", name)
    return Check(True, round((time.perf_counter() - started) * 1000, 2))


async def _database(engine: AsyncEngine) -> None:
    async with engine.connect() as connection:
        await connection.execute(text("SELECT 1"))


async def check_health(engine: AsyncEngine, redis: Redis, search: Search) -> HealthReport:
    """The three checks at once, each within HEALTH_TIMEOUT_S (search's parts included)."""
    database, cache, searching = await asyncio.gather(
        _timed("database", _database(engine)), _timed("redis", redis.ping()), search.health(engine)
    )
    return HealthReport(database=database, redis=cache, search=searching)
