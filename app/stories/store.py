"""The story store on PostgreSQL, behind the interface the clusterer uses (app/stories/clustering.py).

Callers hold the clustering lock (`lock_clustering`) for the whole transaction: clustering is serialized across
workers, so two articles of one story ingested at once still end in one story, and centroids are updated by
read-modify-write without lost updates.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import func, select, text, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncConnection

from app.articles.models import Article
from app.sources.models import Source
from app.stories.clustering import IncomingArticle, StoryView
from app.stories.models import StoryCluster, StoryVocabulary

TOP_TERMS = 50  # a story is found through its strongest terms
TOTAL = ""  # the vocabulary row that counts articles


async def lock_clustering(connection: AsyncConnection) -> None:
    await connection.execute(text("SELECT pg_advisory_xact_lock(hashtext('newsagg:clustering'))"))


def _top_terms(centroid: dict[str, float]) -> list[str]:
    return [w[:64] for w in sorted(centroid, key=lambda w: -centroid[w])[:TOP_TERMS]]


class PgStoryStore:
    def __init__(self, connection: AsyncConnection) -> None:
        self.db = connection

    async def document_frequencies(self, words: list[str]) -> tuple[dict[str, int], int]:
        rows = await self.db.execute(
            select(StoryVocabulary.term, StoryVocabulary.documents).where(StoryVocabulary.term.in_([*words, TOTAL]))
        )
        found = {row.term: int(row.documents) for row in rows}
        return {w: found.get(w, 0) for w in words}, found.get(TOTAL, 0)

    async def observe(self, words: list[str]) -> None:
        terms = sorted({w[:64] for w in words} | {TOTAL})
        statement = insert(StoryVocabulary).values([{"term": t, "documents": 1} for t in terms])
        await self.db.execute(statement.on_conflict_do_update(
            index_elements=[StoryVocabulary.term], set_={"documents": StoryVocabulary.documents + 1}))  # fmt: skip

    async def candidates(self, words: list[str], since: datetime) -> list[StoryView]:
        return await self._views(StoryCluster.top_terms.overlap([w[:64] for w in words]), since)

    async def active(self, since: datetime) -> list[StoryView]:
        return await self._views(None, since)

    async def _views(self, condition: object, since: datetime) -> list[StoryView]:
        query = select(StoryCluster.id, StoryCluster.centroid, StoryCluster.article_count, StoryCluster.source_ids,
                       StoryCluster.last_updated_at).where(StoryCluster.last_updated_at >= since,
                                                           StoryCluster.merged_into_id.is_(None))  # fmt: skip
        if condition is not None:
            query = query.where(condition)  # type: ignore[arg-type]
        return [StoryView(row.id, dict(row.centroid), row.article_count, {str(s) for s in row.source_ids},
                          row.last_updated_at) for row in await self.db.execute(query)]  # fmt: skip

    async def create(self, article: IncomingArticle, weights: dict[str, float]) -> int:
        story_id = await self.db.scalar(
            insert(StoryCluster).values(
                title=article.title, representative_article_id=article.id, centroid=weights,
                top_terms=_top_terms(weights), article_count=1, source_count=1, source_ids=[int(article.source)],
                first_seen_at=article.at, last_updated_at=article.at,
            ).returning(StoryCluster.id)
        )  # fmt: skip
        assert story_id is not None
        await self.db.execute(update(Article).where(Article.id == article.id).values(cluster_id=story_id))
        return int(story_id)

    async def join(self, story_id: int, article: IncomingArticle, weights: dict[str, float]) -> None:
        columns = (StoryCluster.centroid, StoryCluster.source_ids, StoryCluster.last_updated_at)
        story = (await self.db.execute(select(*columns).where(StoryCluster.id == story_id))).one()
        centroid = dict(story.centroid)
        for word, weight in weights.items():
            centroid[word] = centroid.get(word, 0.0) + weight
        sources = sorted({*story.source_ids, int(article.source)})
        await self.db.execute(update(StoryCluster).where(StoryCluster.id == story_id).values(
            centroid=centroid, top_terms=_top_terms(centroid), article_count=StoryCluster.article_count + 1,
            source_ids=sources, source_count=len(sources), last_updated_at=max(story.last_updated_at, article.at),
        ))  # fmt: skip
        await self.db.execute(update(Article).where(Article.id == article.id).values(cluster_id=story_id))
        await self._maybe_represent(story_id, article)

    async def _maybe_represent(self, story_id: int, article: IncomingArticle) -> None:
        """The representative is the article of the most authoritative source (ties: the earliest)."""
        current = (
            select(Source.authority)
            .join(Article, Article.source_id == Source.id)
            .where(Article.id == StoryCluster.representative_article_id)
            .scalar_subquery()
        )
        await self.db.execute(
            update(StoryCluster)
            .where(StoryCluster.id == story_id, func.coalesce(current, -1.0) < article.authority)
            .values(representative_article_id=article.id, title=article.title)
        )

    async def merge(self, story_id: int, into_id: int) -> None:
        rows = {row.id: row for row in await self.db.execute(
            select(StoryCluster.id, StoryCluster.centroid, StoryCluster.source_ids, StoryCluster.article_count,
                   StoryCluster.first_seen_at, StoryCluster.last_updated_at)
            .where(StoryCluster.id.in_([story_id, into_id])))}  # fmt: skip
        small, large = rows[story_id], rows[into_id]
        centroid = dict(large.centroid)
        for word, weight in small.centroid.items():
            centroid[word] = centroid.get(word, 0.0) + weight
        sources = sorted({*small.source_ids, *large.source_ids})
        await self.db.execute(update(StoryCluster).where(StoryCluster.id == into_id).values(
            centroid=centroid, top_terms=_top_terms(centroid), source_ids=sources, source_count=len(sources),
            article_count=small.article_count + large.article_count,
            first_seen_at=min(small.first_seen_at, large.first_seen_at),
            last_updated_at=max(small.last_updated_at, large.last_updated_at),
        ))  # fmt: skip
        await self.db.execute(update(Article).where(Article.cluster_id == story_id).values(cluster_id=into_id))
        await self.db.execute(update(StoryCluster).where(StoryCluster.id == story_id).values(
            merged_into_id=into_id, centroid={}, top_terms=[]))  # fmt: skip

    async def resolve(self, story_id: int) -> int:
        while into := await self.db.scalar(select(StoryCluster.merged_into_id).where(StoryCluster.id == story_id)):
            story_id = into
        return story_id
