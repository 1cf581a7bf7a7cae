"""Stories at ingest: new articles are clustered into stories, and stories that prove to be one are merged."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from sqlalchemy import ColumnElement, select
from sqlalchemy.ext.asyncio import AsyncEngine

from app.articles.models import Article
from app.sources.models import Source
from app.stories.clustering import ClusteringPolicy, IncomingArticle, StoryClusterer
from app.stories.store import ClusteringCache, lock_clustering

# At ingest the merge pass runs on its own schedule (jobs: merge_stories), not every N articles.
INGEST_POLICY = dataclasses.replace(ClusteringPolicy(), merge_every=10**9)
MERGE_LOOKBACK = timedelta(minutes=10)  # the merge pass compares stories changed this recently with the rest


async def cluster_articles(db: AsyncEngine, article_ids: Sequence[int], cache: ClusteringCache | None = None, *,
                           pending: int = 0) -> dict[int, int]:  # fmt: skip
    """Article id -> story id, for the given articles not yet in a story, and up to `pending` more that are
    understood and waiting (under load, one job then clusters what several enqueued: bigger, cheaper batches).
    A worker passes its cache (without one, everything is written at once, vocabulary counts included)."""
    ephemeral = cache is None
    cache = cache or ClusteringCache()
    clusterer = StoryClusterer(INGEST_POLICY)
    try:
        async with db.begin() as connection:
            await lock_clustering(connection)
            wanted: ColumnElement[bool] = Article.id.in_(article_ids)
            if pending:
                waiting = (select(Article.id).where(Article.cluster_id.is_(None), Article.simhash.is_not(None))
                           .order_by(Article.id).limit(pending))  # fmt: skip
                wanted = wanted | Article.id.in_(waiting.scalar_subquery())
            rows = await connection.execute(
                select(Article.id, Article.title, Article.summary, Article.source_id, Article.published_at,
                       Source.authority, Article.topics, Article.language, Article.crawled_at)
                .join(Source, Source.id == Article.source_id)
                .where(wanted, Article.cluster_id.is_(None))
                .order_by(Article.published_at, Article.id)
            )  # fmt: skip
            articles = [IncomingArticle(row.id, row.title, row.summary, str(row.source_id), row.published_at,
                                        row.authority, tuple(row.topics), row.language, row.crawled_at)
                        for row in rows]  # fmt: skip
            if not articles:
                return {}
            state = await cache.catch_up(connection, since=articles[0].at - INGEST_POLICY.window)
            await cache.reserve_ids(connection, len(articles))
            clusterer.assign_all(state, articles)
            saved = await cache.save(connection, datetime.now(UTC), flush_vocabulary=ephemeral)
            return saved.placed
    except BaseException:
        cache.reset()
        raise


async def merge_stories(db: AsyncEngine, now: datetime, cache: ClusteringCache | None = None) -> int:
    """Stories changed in the last few minutes, compared with every active story sharing their strongest terms; and
    the velocity of breaking stories measured again."""
    cache = cache or ClusteringCache()
    clusterer = StoryClusterer(INGEST_POLICY)
    try:
        async with db.begin() as connection:
            await lock_clustering(connection)
            state = await cache.catch_up(connection, since=now - INGEST_POLICY.window)
            state.since_merge = {s.id for s in state.stories.values() if s.last_updated >= now - MERGE_LOOKBACK}
            merged = clusterer.merge_pass(state, now)
            state.changed |= {s.id for s in state.stories.values() if s.is_breaking}  # cooling down is a change
            await cache.save(connection, datetime.now(UTC), flush_vocabulary=True)
            return merged
    except BaseException:
        cache.reset()
        raise
