"""DataLoaders, one set per request: every hop is batched, so a list of N items costs what one item costs."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from strawberry.dataloader import DataLoader

from app.articles import repository as articles
from app.articles.models import Article
from app.entities import repository as entities
from app.entities.repository import NamedEntity
from app.extraction import repository as texts
from app.extraction.models import ArticleText
from app.places import repository as places
from app.places.perspectives import StoryPerspectives
from app.places.repository import PlaceMention
from app.places.service import perspectives
from app.sharing import repository as share_links
from app.sharing.service import LinkClicks, clicks_of_links
from app.sources import repository as sources
from app.sources.models import CrawlSchedule, Source
from app.stories import repository as stories
from app.stories.coverage import CoveragePage, coverage_pages
from app.stories.models import StoryCluster
from app.stories.repository import CoverageRequest

M = TypeVar("M")
SourceLoader = DataLoader[int, Source | None]


def _by_key(
    db: async_sessionmaker[AsyncSession],
    query: Callable[[AsyncSession, Sequence[int]], Coroutine[Any, Any, list[M]]],
    key: Callable[[M], int],
) -> DataLoader[int, M | None]:
    async def load(ids: list[int]) -> list[M | None]:
        async with db() as session:
            found = {key(row): row for row in await query(session, ids)}
        return [found.get(i) for i in ids]

    return DataLoader(load_fn=load)


_EVENT_LOADERS = "_loaders"


@dataclass(frozen=True)
class Loaders:
    source_by_id: DataLoader[int, Source | None]
    article_by_id: DataLoader[int, Article | None]
    crawl_schedule_by_source_id: DataLoader[int, CrawlSchedule | None]
    story_by_id: DataLoader[int, StoryCluster | None]
    coverage_by_story: DataLoader[CoverageRequest, CoveragePage]
    latest_articles_by_story: DataLoader[tuple[int, int], list[Article]]  # (story id, how many)
    entities_by_article: DataLoader[int, list[NamedEntity]]
    entities_by_story: DataLoader[tuple[int, int], list[NamedEntity]]  # (story id, how many)
    places_by_article: DataLoader[int, list[PlaceMention]]
    places_by_story: DataLoader[int, list[PlaceMention]]
    perspectives_by_story: DataLoader[int, StoryPerspectives]
    text_by_article: DataLoader[int, ArticleText | None]
    share_clicks_by_link: DataLoader[int, int]  # every click a share link has had
    share_link_days_by_link: DataLoader[tuple[int, int], LinkClicks]  # (link id, days): its last days' clicks

    @classmethod
    def for_event(cls, db: async_sessionmaker[AsyncSession], event: dict[str, Any]) -> Loaders:
        """Loaders shared by every subscriber of this process that receives `event` (the broadcaster hands them all
        the same object): 5,000 subscribers asking for its story make one query per hop, not 5,000. They live as
        long as the event, so what a long-lived connection resolves is never stale and its caches never grow."""
        loaders: Loaders | None = event.get(_EVENT_LOADERS)
        if loaders is None:
            loaders = event[_EVENT_LOADERS] = cls.for_request(db)
        return loaders

    @classmethod
    def for_request(cls, db: async_sessionmaker[AsyncSession]) -> Loaders:
        source_by_id = _by_key(db, sources.sources_by_ids, lambda s: s.id)
        return cls(
            source_by_id=source_by_id,
            article_by_id=_articles(db, source_by_id),
            crawl_schedule_by_source_id=_by_key(db, sources.schedules_by_source_ids, lambda c: c.source_id),
            story_by_id=_stories(db),
            coverage_by_story=_coverage(db, source_by_id),
            latest_articles_by_story=_latest_articles(db, source_by_id),
            entities_by_article=_entities_of_articles(db),
            entities_by_story=_entities_of_stories(db),
            places_by_article=_grouped(db, places.of_articles),
            places_by_story=_grouped(db, places.of_stories),
            perspectives_by_story=_perspectives(db),
            text_by_article=_by_key(db, texts.texts_of_articles, lambda t: t.article_id),
            share_clicks_by_link=_share_clicks(db),
            share_link_days_by_link=_share_link_days(db),
        )


def _grouped(
    db: async_sessionmaker[AsyncSession],
    query: Callable[[AsyncSession, Sequence[int]], Coroutine[Any, Any, dict[int, list[PlaceMention]]]],
) -> DataLoader[int, list[PlaceMention]]:
    async def load(ids: list[int]) -> list[list[PlaceMention]]:
        async with db() as session:
            found = await query(session, ids)
        return [found.get(i, []) for i in ids]

    return DataLoader(load_fn=load)


def _share_clicks(db: async_sessionmaker[AsyncSession]) -> DataLoader[int, int]:
    async def load(ids: list[int]) -> list[int]:
        async with db() as session:
            totals = await share_links.total_clicks(session, ids)
        return [totals.get(i, 0) for i in ids]

    return DataLoader(load_fn=load)


def _share_link_days(db: async_sessionmaker[AsyncSession]) -> DataLoader[tuple[int, int], LinkClicks]:
    async def load(keys: list[tuple[int, int]]) -> list[LinkClicks]:
        today = datetime.now(UTC).date()
        found: dict[tuple[int, int], LinkClicks] = {}
        async with db() as session:
            for days in sorted({days for _, days in keys}):  # one statement per span the document asks for
                links = [link for link, asked in keys if asked == days]
                found |= {(link, days): c for link, c in (await clicks_of_links(session, links, days, today)).items()}
        return [found[key] for key in keys]

    return DataLoader(load_fn=load)


def _perspectives(db: async_sessionmaker[AsyncSession]) -> DataLoader[int, StoryPerspectives]:
    async def load(ids: list[int]) -> list[StoryPerspectives]:
        async with db() as session:
            found = await perspectives(session, ids)
        return [found[i] for i in ids]

    return DataLoader(load_fn=load)


def _stories(db: async_sessionmaker[AsyncSession]) -> DataLoader[int, StoryCluster | None]:
    async def load(ids: list[int]) -> list[StoryCluster | None]:
        async with db() as session:
            found = await stories.stories_by_ids(session, ids)
        return [found.get(i) for i in ids]

    return DataLoader(load_fn=load)


# Loaders of articles fetch their sources in the same statement and prime `source_by_id` with them: `Article.source`
# then costs nothing, and how many statements a request takes does not hang on which loads happen to share a batch.
def _articles(db: async_sessionmaker[AsyncSession], source_by_id: SourceLoader) -> DataLoader[int, Article | None]:
    async def load(ids: list[int]) -> list[Article | None]:
        async with db() as session:
            rows = await articles.articles_with_sources(session, ids)
        source_by_id.prime_many({source.id: source for _, source in rows})
        found = {article.id: article for article, _ in rows}
        return [found.get(i) for i in ids]

    return DataLoader(load_fn=load)


def _coverage(
    db: async_sessionmaker[AsyncSession], source_by_id: SourceLoader
) -> DataLoader[CoverageRequest, CoveragePage]:
    async def load(requests: list[CoverageRequest]) -> list[CoveragePage]:
        async with db() as session:
            pages, found = await coverage_pages(session, requests)
        source_by_id.prime_many({source.id: source for source in found})
        return pages

    return DataLoader(load_fn=load)


def _latest_articles(
    db: async_sessionmaker[AsyncSession], source_by_id: SourceLoader
) -> DataLoader[tuple[int, int], list[Article]]:
    async def load(keys: list[tuple[int, int]]) -> list[list[Article]]:
        story_ids = list({story for story, _ in keys})
        async with db() as session:
            rows = await stories.latest_articles_of_stories(session, story_ids, limit=max(n for _, n in keys))
        source_by_id.prime_many({source.id: source for _, source in rows})
        by_story: dict[int | None, list[Article]] = defaultdict(list)
        for article, _ in rows:
            by_story[article.cluster_id].append(article)
        return [by_story[story][:limit] for story, limit in keys]

    return DataLoader(load_fn=load)


def _entities_of_articles(db: async_sessionmaker[AsyncSession]) -> DataLoader[int, list[NamedEntity]]:
    async def load(ids: list[int]) -> list[list[NamedEntity]]:
        async with db() as session:
            found = await entities.of_articles(session, ids)
        return [found.get(i, []) for i in ids]

    return DataLoader(load_fn=load)


def _entities_of_stories(db: async_sessionmaker[AsyncSession]) -> DataLoader[tuple[int, int], list[NamedEntity]]:
    async def load(keys: list[tuple[int, int]]) -> list[list[NamedEntity]]:
        async with db() as session:
            found = await entities.of_stories(session, list({s for s, _ in keys}), limit=max(n for _, n in keys))
        return [found.get(story, [])[:limit] for story, limit in keys]

    return DataLoader(load_fn=load)
