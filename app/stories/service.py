"""Stories at ingest: new articles are clustered into stories, and stories that prove to be one are merged."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from app.articles.models import Article
from app.sources.models import Source
from app.stories.clustering import ClusteringPolicy, IncomingArticle, StoryClusterer
from app.stories.store import ClusteringCache, lock_clustering

# At ingest the merge pass runs on its own schedule (jobs: merge_stories), not every N articles.
INGEST_POLICY = dataclasses.replace(ClusteringPolicy(), merge_every=10**9)
MERGE_LOOKBACK = timedelta(minutes=10)  # the merge pass compares stories changed this recently with the rest


async def cluster_articles(db: AsyncEngine, article_ids: Sequence[int], cache: ClusteringCache | None = None,
                           ) -> dict[int, int]:  # fmt: skip
    """Article id -> story id, for the given articles not yet in a story. A worker passes its cache."""
    cache = cache or ClusteringCache()
    clusterer = StoryClusterer(INGEST_POLICY)
    try:
        async with db.begin() as connection:
            await lock_clustering(connection)
            rows = await connection.execute(
                select(Article.id, Article.title, Article.summary, Article.source_id, Article.published_at,
                       Source.authority)
                .join(Source, Source.id == Article.source_id)
                .where(Article.id.in_(article_ids), Article.cluster_id.is_(None))
                .order_by(Article.published_at, Article.id)
            )  # fmt: skip
            articles = [IncomingArticle(row.id, row.title, row.summary, str(row.source_id), row.published_at,
                                        row.authority) for row in rows]  # fmt: skip
            if not articles:
                return {}
            state = await cache.catch_up(connection, since=articles[0].at - INGEST_POLICY.window)
            await cache.reserve_ids(connection, len(articles))
            clusterer.assign_all(state, articles)
            return await cache.save(connection)
    except BaseException:
        cache.reset()
        raise


async def merge_stories(db: AsyncEngine, now: datetime, cache: ClusteringCache | None = None) -> int:
    """Stories changed in the last few minutes, compared with every active story sharing their strongest terms."""
    cache = cache or ClusteringCache()
    clusterer = StoryClusterer(INGEST_POLICY)
    try:
        async with db.begin() as connection:
            await lock_clustering(connection)
            state = await cache.catch_up(connection, since=now - INGEST_POLICY.window)
            state.since_merge = {s.id for s in state.stories.values() if s.last_updated >= now - MERGE_LOOKBACK}
            merged = clusterer.merge_pass(state, now)
            await cache.save(connection)
            return merged
    except BaseException:
        cache.reset()
        raise
