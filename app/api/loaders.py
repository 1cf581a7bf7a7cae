"""DataLoaders, one set per request: every to-one hop is batched into one query."""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from strawberry.dataloader import DataLoader

from app.articles import repository as articles
from app.articles.models import Article
from app.sources import repository as sources
from app.sources.models import CrawlSchedule, Source
from app.stories import repository as stories
from app.stories.models import StoryCluster

M = TypeVar("M")


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


@dataclass(frozen=True)
class Loaders:
    source_by_id: DataLoader[int, Source | None]
    article_by_id: DataLoader[int, Article | None]
    crawl_schedule_by_source_id: DataLoader[int, CrawlSchedule | None]
    story_by_id: DataLoader[int, StoryCluster | None]

    @classmethod
    def for_request(cls, db: async_sessionmaker[AsyncSession]) -> Loaders:
        return cls(
            source_by_id=_by_key(db, sources.sources_by_ids, lambda s: s.id),
            article_by_id=_by_key(db, articles.articles_by_ids, lambda a: a.id),
            crawl_schedule_by_source_id=_by_key(db, sources.schedules_by_source_ids, lambda c: c.source_id),
            story_by_id=_stories(db),
        )


def _stories(db: async_sessionmaker[AsyncSession]) -> DataLoader[int, StoryCluster | None]:
    async def load(ids: list[int]) -> list[StoryCluster | None]:
        async with db() as session:
            found = await stories.stories_by_ids(session, ids)
        return [found.get(i) for i in ids]

    return DataLoader(load_fn=load)
