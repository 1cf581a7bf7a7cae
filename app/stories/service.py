"""Stories at ingest: new articles are clustered into stories, and stories that prove to be one are merged."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from app.articles.models import Article
from app.sources.models import Source
from app.stories.clustering import ClusteringPolicy, IncomingArticle, StoryClusterer
from app.stories.store import PgStoryStore, lock_clustering

# At ingest the merge pass runs on its own schedule (jobs: merge_stories), not every N articles.
INGEST_POLICY = dataclasses.replace(ClusteringPolicy(), merge_every=10**9)


async def cluster_articles(db: AsyncEngine, article_ids: Sequence[int]) -> dict[int, int]:
    """Article id -> story id, for the given articles not yet in a story."""
    async with db.begin() as connection:
        await lock_clustering(connection)
        rows = await connection.execute(
            select(Article.id, Article.title, Article.summary, Article.source_id, Article.published_at,
                   Source.authority)
            .join(Source, Source.id == Article.source_id)
            .where(Article.id.in_(article_ids), Article.cluster_id.is_(None))
            .order_by(Article.published_at, Article.id)
        )  # fmt: skip
        clusterer = StoryClusterer(PgStoryStore(connection), INGEST_POLICY)
        return {
            row.id: await clusterer.assign(IncomingArticle(row.id, row.title, row.summary, str(row.source_id),
                                                           row.published_at, row.authority))
            for row in rows
        }  # fmt: skip


async def merge_stories(db: AsyncEngine, now: datetime) -> int:
    async with db.begin() as connection:
        await lock_clustering(connection)
        return await StoryClusterer(PgStoryStore(connection), INGEST_POLICY).merge_pass(now)
