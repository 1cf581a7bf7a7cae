"""Stories at ingest: new articles are clustered into stories, and stories that prove to be one are merged."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import UTC, datetime

from sqlalchemy.ext.asyncio import AsyncEngine

from app.observability.work import count_clustered
from app.stories.clustering import ClusteringPolicy, IncomingArticle, StoryClusterer
from app.stories.store import ClusteringCache

# At ingest the merge pass runs on its own schedule (jobs: merge_stories), not every N articles.
INGEST_POLICY = dataclasses.replace(ClusteringPolicy(), merge_every=10**9)


async def cluster_articles(db: AsyncEngine, article_ids: Sequence[int], cache: ClusteringCache | None = None, *,
                           pending: int = 0, flush_vocabulary: bool = False) -> dict[int, int]:  # fmt: skip
    """Article id -> story id, for the given articles not yet in a story, and up to `pending` more that are
    understood and waiting (under load, one job then clusters what several enqueued: bigger, cheaper batches).
    A worker passes its cache (without one, or with `flush_vocabulary`, everything is written at once, vocabulary
    counts included)."""
    ephemeral = cache is None
    cache = cache or ClusteringCache()
    # The batch comes with its story ids and revision, reserved before catching up: the revision tells whether anyone
    # else wrote since this worker's last save.
    async with cache.locked(db) as connection:
        articles = [IncomingArticle(row.id, row.title, row.summary, str(row.source_id), row.published_at,
                                    row.authority, tuple(row.topics), row.language, row.crawled_at)
                    for row in await cache.batch(connection, article_ids, pending=pending)]  # fmt: skip
        if not articles:
            return {}
        state = await cache.catch_up(connection, since=articles[0].at - INGEST_POLICY.window)
        StoryClusterer(INGEST_POLICY).assign_all(state, articles)
        placed = await cache.save(connection, datetime.now(UTC), flush_vocabulary=ephemeral or flush_vocabulary)
    count_clustered((a.arrived for a in articles if a.id in placed), datetime.now(UTC))
    return placed


async def merge_stories(db: AsyncEngine, now: datetime, cache: ClusteringCache | None = None) -> int:
    """Stories changed in clustering since the previous pass (on any worker), compared with every active story sharing
    their strongest terms; and the velocity of breaking stories measured again."""
    cache = cache or ClusteringCache()
    async with cache.locked(db) as connection:
        since = now - INGEST_POLICY.window
        changed = await cache.begin_merge_pass(connection, since)
        state = await cache.catch_up(connection, since=since)
        state.since_merge = changed & state.stories.keys()
        merged = StoryClusterer(INGEST_POLICY).merge_pass(state, now)
        state.changed |= {s.id for s in state.stories.values() if s.is_breaking}  # cooling down is a change
        await cache.save(connection, datetime.now(UTC), flush_vocabulary=True)
        return merged
