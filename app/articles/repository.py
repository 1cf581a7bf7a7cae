"""Every query on articles."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime

from sqlalchemy import select, tuple_
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from app.articles.models import Article


@dataclass(frozen=True, slots=True)
class NewArticle:
    source_id: int
    external_id: str
    url: str
    title: str
    summary: str
    author: str | None
    published_at: datetime
    content_hash: int


@dataclass(frozen=True, slots=True)
class InsertedArticle:
    id: int
    published_at: datetime


async def insert_new(session: AsyncSession, rows: Sequence[NewArticle]) -> list[InsertedArticle]:
    """One statement; rows whose URL or (source, external id) already exist are skipped. Returns the new ones."""
    if not rows:
        return []
    by_identity: dict[tuple[int, str], NewArticle] = {}
    seen_urls: set[str] = set()
    for row in rows:  # one feed may list an entry twice; Postgres refuses one statement that conflicts with itself
        if row.url not in seen_urls and (row.source_id, row.external_id) not in by_identity:
            by_identity[(row.source_id, row.external_id)] = row
            seen_urls.add(row.url)
    result = await session.execute(
        insert(Article)
        .values([asdict(r) for r in by_identity.values()])
        .on_conflict_do_nothing()
        .returning(Article.id, Article.published_at)
    )
    return sorted((InsertedArticle(id=r.id, published_at=r.published_at) for r in result), key=lambda a: a.id)


async def articles_by_ids(session: AsyncSession, ids: Sequence[int]) -> list[Article]:
    return list(await session.scalars(select(Article).where(Article.id.in_(ids))))


async def latest_articles(
    session: AsyncSession,
    *,
    limit: int,
    after: tuple[datetime, int] | None,
    source_id: int | None = None,
) -> list[Article]:
    """Newest first (published_at, id descending), keyset-paginated."""
    query = select(Article).order_by(Article.published_at.desc(), Article.id.desc()).limit(limit)
    if after is not None:
        query = query.where(tuple_(Article.published_at, Article.id) < tuple_(*after))
    if source_id is not None:
        query = query.where(Article.source_id == source_id)
    return list(await session.scalars(query))
