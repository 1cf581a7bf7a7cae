"""Following a share link: shape and signature first (a made-up code costs no lookup), then Redis, then PostgreSQL
for a code not cached; the visit is counted in Redis only (the flush writes it). No database write on this path."""

from __future__ import annotations

import asyncio
import enum
import logging
from dataclasses import dataclass
from datetime import UTC, datetime

from prometheus_client import Counter
from redis.asyncio import Redis
from redis.exceptions import RedisError
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.settings import Settings
from app.sharing import codes
from app.sharing import repository as links
from app.sharing.counters import CLICK, PREVIEW, Cached, ShareCounters
from app.sharing.keys import SigningKey
from app.sharing.visits import Visit

log = logging.getLogger(__name__)
FOLLOWED = Counter("newsagg_share_link_visits", "Visits to share links, by outcome", ["outcome"])
UNCOUNTED = Counter("newsagg_share_link_visits_uncounted", "Visits to share links followed while Redis was "
                    "unavailable: redirected from PostgreSQL, their clicks or previews dropped", ["kind"])  # fmt: skip
UNKNOWN = Cached(0, 0, 0, "")


class Outcome(enum.StrEnum):
    FOUND = "found"  # 302 to the article
    GONE = "gone"  # the article or story was deleted: 410
    UNKNOWN = "unknown"  # a code we never issued: 404
    MALFORMED = "malformed"  # not the shape or signature of one: 404, nothing looked up
    UNAVAILABLE = "unavailable"  # not cached, and PostgreSQL did not answer: 503


@dataclass(frozen=True, slots=True)
class Followed:
    outcome: Outcome
    url: str | None = None


class ShareRedirects:
    def __init__(self, db: async_sessionmaker[AsyncSession], redis: Redis, settings: Settings,
                 key: SigningKey) -> None:  # fmt: skip
        self._db = db
        self._counters = ShareCounters(redis)
        self._cache_s = settings.share_link_cache_seconds
        self._story_page = settings.share_story_url
        self._key = key
        self._lookups: dict[str, asyncio.Task[Cached]] = {}

    async def follow(self, code: str, visit: Visit, now: datetime | None = None) -> Followed:
        try:
            return await self._follow(code, visit, now)
        except (SQLAlchemyError, OSError) as error:  # the key or a destination not cached could not be read
            log.warning("share link %r not followed, the database is unavailable: %s", code[:32], error)
            FOLLOWED.labels(Outcome.UNAVAILABLE).inc()
            return Followed(Outcome.UNAVAILABLE)

    async def _follow(self, code: str, visit: Visit, now: datetime | None) -> Followed:
        if not codes.well_formed(code) or not codes.authentic(code, await self._key.read()):
            FOLLOWED.labels(Outcome.MALFORMED).inc()
            return Followed(Outcome.MALFORMED)
        day = (now or datetime.now(UTC)).strftime("%Y-%m-%d")
        kind = PREVIEW if visit.preview else CLICK
        try:
            cached = await self._counters.visit(code, None, self._cache_s, kind, day, visit.referrer_host,
                                                visit.visitor)  # fmt: skip
            if cached is None:  # one lookup per code in this process however many ask at once
                fresh = await self._looked_up(code)
                cached = await self._counters.visit(code, fresh, self._cache_s, kind, day, visit.referrer_host,
                                                    visit.visitor)  # fmt: skip
        except (RedisError, OSError) as error:  # Redis down: PostgreSQL answers, the visit goes uncounted
            log.warning("share link %s followed without Redis (visit not counted): %s", code, error)
            UNCOUNTED.labels("preview" if visit.preview else "click").inc()
            cached = await self._looked_up(code)
        return self._answer(cached or UNKNOWN)

    def _answer(self, cached: Cached) -> Followed:
        if cached.link_id == 0:
            outcome = Followed(Outcome.UNKNOWN)
        elif not cached.url:
            outcome = Followed(Outcome.GONE)
        else:
            outcome = Followed(Outcome.FOUND, cached.url)
        FOLLOWED.labels(outcome.outcome).inc()
        return outcome

    async def _looked_up(self, code: str) -> Cached:
        task = self._lookups.get(code)
        if task is None:
            task = asyncio.create_task(self._lookup(code), name=f"share:{code}")
            self._lookups[code] = task
            task.add_done_callback(lambda _: self._lookups.pop(code, None))
        return await asyncio.shield(task)

    async def _lookup(self, code: str) -> Cached:
        async with self._db() as session:
            found = await links.destination(session, code, self._story_page)
        if found is None:
            return UNKNOWN
        return Cached(found.link_id, found.article_id or 0, found.story_id or 0, found.url or "")
