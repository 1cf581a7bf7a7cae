"""The one search interface the API uses: Meilisearch when `MEILI_URL` is set, PostgreSQL full text otherwise, and
PostgreSQL whenever Meilisearch does not answer.

A failed Meilisearch search is answered from PostgreSQL at once, with a logged warning, and counted (in this
process, and in Redis for all of them: `health { search { fallbacks } }`). For `search_down_seconds` afterwards the
process goes straight to PostgreSQL instead of waiting on a backend that just failed, then tries Meilisearch again.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, TypeVar

from redis.asyncio import Redis
from redis.exceptions import RedisError
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from app.search.postgres import PostgresSearch
from app.search.query import SearchQuery, SearchResult, SearchUnavailable
from app.search.sync import SyncStatus, status
from app.settings import Settings

if TYPE_CHECKING:
    from app.search.meili import MeiliSearch

log = logging.getLogger(__name__)

FALLBACKS_KEY = "newsagg:search:fallbacks"
HEALTH_TIMEOUT_S = 2.0  # each part of the health report
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class SearchHealth:
    backend: str  # the configured one: "meilisearch" or "postgres"
    reachable: bool  # Meilisearch answers its health check (PostgreSQL: always, it is the database)
    pending_events: int | None  # article changes not yet in the index (None: the database did not answer)
    lag_seconds: float | None  # age of the oldest of them
    fallbacks: int | None  # searches answered from PostgreSQL because Meilisearch failed (None: Redis is down)


def meili_index(settings: Settings) -> MeiliSearch | None:
    """The Meilisearch index `MEILI_URL` names, or None. The client is imported only then: a process on PostgreSQL
    alone does not pay for loading it."""
    if not settings.meili_url:
        return None
    from app.search.meili import MeiliSearch

    return MeiliSearch(settings.meili_url, settings.meili_api_key, settings.meili_index,
                       timeout_seconds=settings.search_timeout_seconds)  # fmt: skip


class Search:
    def __init__(self, settings: Settings, sessions: Callable[[], AbstractAsyncContextManager[AsyncSession]],
                 redis: Redis) -> None:  # fmt: skip
        self.postgres = PostgresSearch(sessions, candidates=settings.search_candidates)
        self.meili = meili_index(settings)
        self._redis = redis
        self._down_for = settings.search_down_seconds
        self._down_until = 0.0
        self.fallbacks = 0  # searches this process answered from PostgreSQL because Meilisearch failed

    @property
    def backend(self) -> str:
        return self.meili.name if self.meili else self.postgres.name

    async def search(self, query: SearchQuery, *, now: datetime, limit: int, offset: int) -> SearchResult:
        """The backend's page of hits. A query without `newest_id` (a first page) gets the newest article's id, and
        the result carries it: the search's later pages ask with it, so they page over the same matches."""
        if query.newest_id is None:
            query = replace(query, newest_id=await self.postgres.newest_article_id())
        found = await self._answered(query, now=now, limit=limit, offset=offset)
        return replace(found, newest_id=query.newest_id)

    async def _answered(self, query: SearchQuery, *, now: datetime, limit: int, offset: int) -> SearchResult:
        if self.meili is not None:
            if time.monotonic() >= self._down_until:
                try:
                    return await self.meili.search(query, now=now, limit=limit, offset=offset)
                except SearchUnavailable as error:
                    self._down_until = time.monotonic() + self._down_for
                    log.warning("search: Meilisearch failed, answering from PostgreSQL for the next %.0f s: %s",
                                self._down_for, error)  # fmt: skip
            await self._count_fallback()
        return await self.postgres.search(query, now=now, limit=limit, offset=offset)

    async def _count_fallback(self) -> None:
        self.fallbacks += 1
        try:
            await self._redis.incr(FALLBACKS_KEY)
        except (RedisError, OSError) as error:
            log.warning("search: fallback not counted in Redis: %s", error)

    async def fallbacks_counted(self) -> int | None:
        """Searches answered from PostgreSQL because Meilisearch failed, by every process (None: Redis is down)."""
        try:
            return int(await self._redis.get(FALLBACKS_KEY) or 0)
        except (RedisError, OSError):
            return None

    async def health(self, engine: AsyncEngine) -> SearchHealth:
        """Meilisearch's health check, the sync's backlog and the fallback count, asked at once and each within
        HEALTH_TIMEOUT_S (then unreachable, or unknown): a slow Meilisearch does not hide the backlog, which
        matters most then, and a slow database does not make Meilisearch look down."""
        reachable, synced, fallbacks = await asyncio.gather(
            _within(self._reachable(), False), _within(self._backlog(engine), None),
            _within(self.fallbacks_counted(), None),
        )  # fmt: skip
        return SearchHealth(self.backend, reachable, synced.pending_events if synced else None,
                            synced.lag_seconds if synced else None, fallbacks)  # fmt: skip

    async def _reachable(self) -> bool:
        return await self.meili.healthy() if self.meili else True  # PostgreSQL: it is the database

    async def _backlog(self, engine: AsyncEngine) -> SyncStatus | None:
        try:
            return await status(engine, self.meili)
        except (SQLAlchemyError, OSError):
            return None


async def _within(probe: Awaitable[T], unknown: T) -> T:
    """The probe's answer, or `unknown` when it takes longer than HEALTH_TIMEOUT_S."""
    try:
        return await asyncio.wait_for(probe, HEALTH_TIMEOUT_S)
    except TimeoutError:
        return unknown
