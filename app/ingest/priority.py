"""Crawl priority: the news decides which sources are crawled sooner.

A story that is breaking raises the priority of every source covering it, a trending one (among the top
`crawl_priority_trending_stories` of the last hour, with a score of at least `crawl_priority_trending_min_score`: a
quiet day's top stories are noise) too, less; a hub's announcement of new items raises its source's, at most once per
`crawl_priority_websub_window_minutes` however many it pushes.
A raise also makes the source due as soon as its minimum interval allows. Priority then halves every
`crawl_priority_half_life_minutes` unless raised again, and due sources are claimed highest first
(app/sources/repository.py: `claim_due`, which computes `decayed` in SQL).
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from datetime import datetime, timedelta

from redis.asyncio import Redis

from app.db.engine import Executor
from app.observability.work import count_priority_raised
from app.settings import Settings
from app.sources import repository as sources
from app.stories.repository import sources_of_stories
from app.trending.store import scores

log = logging.getLogger(__name__)
TRENDING_WINDOW = timedelta(hours=1)


def decayed(priority: float, set_at: datetime | None, now: datetime, half_life_s: float) -> float:
    """A priority set at `set_at`, as of `now`: halved every `half_life_s`."""
    if not priority or set_at is None:
        return float(priority)
    return float(priority * 0.5 ** (max((now - set_at).total_seconds(), 0.0) / half_life_s))


async def raise_sources(db: Executor, settings: Settings, source_ids: Collection[int], *, reason: str,
                        now: datetime) -> int:  # fmt: skip
    """Raise the sources to the priority of `reason` (breaking, trending, websub); how many were raised."""
    level = {"breaking": settings.crawl_priority_breaking, "trending": settings.crawl_priority_trending,
             "websub": settings.crawl_priority_websub}[reason]  # fmt: skip
    window = settings.crawl_priority_websub_window_minutes
    push_window = timedelta(minutes=window) if reason == "websub" and window > 0 else None
    raised = await sources.raise_priority(db, source_ids, priority=level, now=now, push_window=push_window,
                                          half_life_s=settings.crawl_priority_half_life_minutes * 60)  # fmt: skip
    count_priority_raised(reason, raised)
    if raised < len(source_ids) and push_window is not None:
        count_priority_raised("websub_within_window", len(source_ids) - raised)
    return raised


async def raise_for_news(db: Executor, redis: Redis, settings: Settings, now: datetime) -> dict[str, int]:
    """The sources of breaking and trending stories raised (trending read from Redis: none while it is down)."""
    breaking = await sources_of_stories(db, breaking=True)
    top = await scores(redis, TRENDING_WINDOW, now, limit=settings.crawl_priority_trending_stories)
    trending_ids = [story_id for story_id, score in top if score >= settings.crawl_priority_trending_min_score]
    trending = await sources_of_stories(db, ids=trending_ids) - breaking
    raised = {"breaking": await raise_sources(db, settings, breaking, reason="breaking", now=now),
              "trending": await raise_sources(db, settings, trending, reason="trending", now=now)}  # fmt: skip
    if any(raised.values()):
        log.info("crawl priority raised: %(breaking)d sources of breaking stories, %(trending)d of trending", raised)
    return raised
