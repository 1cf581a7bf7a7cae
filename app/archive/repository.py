"""Every query on the fetch archive and on what fetches produced."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, insert, select, text
from sqlalchemy.dialects.postgresql import insert as pg_insert

from app.archive.models import ArchivedFetch, FetchedArticle
from app.articles.models import Article
from app.db.engine import Executor
from app.sources.models import FetchLog, Source

NEW, UPDATED = "new", "updated"


async def add(db: Executor, **values: object) -> None:
    await db.execute(insert(ArchivedFetch).values(**values))


async def link_articles(db: Executor, fetch_id: int, article_ids: Sequence[int], change: str) -> None:
    """Idempotent: a link made before (the same fetch, article and change) stays as it is."""
    if article_ids:
        rows = [{"fetch_id": fetch_id, "article_id": article_id, "change": change} for article_id in article_ids]
        await db.execute(pg_insert(FetchedArticle).values(rows).on_conflict_do_nothing())


async def archived_ids(db: Executor, source_id: int, *, since: datetime) -> list[int]:
    """The source's archived fetches since `since`, oldest first (replay goes in the order they were fetched)."""
    query = (select(ArchivedFetch.id).where(ArchivedFetch.source_id == source_id, ArchivedFetch.fetched_at >= since)
             .order_by(ArchivedFetch.fetched_at, ArchivedFetch.id))  # fmt: skip
    return list(await db.scalars(query))


async def archived(db: Executor, fetch_id: int) -> Any:
    """One archived fetch (its columns, and `reference`: the frame of the body it is compressed against), or None."""
    reference = ArchivedFetch.__table__.alias("reference")
    query = (select(ArchivedFetch.__table__, reference.c.body.label("reference"))
             .outerjoin(reference, reference.c.id == ArchivedFetch.reference_id)
             .where(ArchivedFetch.id == fetch_id))  # fmt: skip
    return (await db.execute(query)).first()


async def archived_within(db: Executor, source_id: int, window: timedelta) -> int:
    """How many of the source's bodies were archived in the last `window`, on the database's clock as fetched_at's
    default (ix_fetch_archive_source_fetched)."""
    query = select(func.count()).where(ArchivedFetch.source_id == source_id,
                                       ArchivedFetch.fetched_at >= func.now() - window)  # fmt: skip
    return int(await db.scalar(query) or 0)


_CURRENT_REFERENCE = text("""
    SELECT k.id, k.body, (SELECT count(*) FROM fetch_archive AS d WHERE d.reference_id = k.id) AS followers
    FROM fetch_archive AS k WHERE k.source_id = :source_id AND k.reference_id IS NULL
    ORDER BY k.id DESC LIMIT 1
""")


async def current_reference(db: Executor, source_id: int) -> Any:
    """The source's latest body stored whole (id, body frame) and how many are compressed against it, or None."""
    return (await db.execute(_CURRENT_REFERENCE, {"source_id": source_id})).first()


async def fetch_row(db: Executor, fetch_id: int) -> Any:
    """The fetch log row with its source's name and feed URL, and the archive's columns (NULL when none)."""
    query = (
        select(FetchLog.__table__, Source.name.label("source_name"), Source.feed_url,
               ArchivedFetch.url.label("archived_url"), ArchivedFetch.headers, ArchivedFetch.raw_bytes,
               func.octet_length(ArchivedFetch.body).label("stored_bytes"))
        .join(Source, Source.id == FetchLog.source_id)
        .outerjoin(ArchivedFetch, ArchivedFetch.id == FetchLog.id)
        .where(FetchLog.id == fetch_id)
    )  # fmt: skip
    return (await db.execute(query)).first()


async def produced(db: Executor, fetch_id: int) -> list[Any]:
    """The articles a fetch stored or changed: change, id, title, url."""
    query = (select(FetchedArticle.change, Article.id, Article.title, Article.url)
             .join(Article, Article.id == FetchedArticle.article_id)
             .where(FetchedArticle.fetch_id == fetch_id).order_by(Article.id, FetchedArticle.change))  # fmt: skip
    return list(await db.execute(query))


@dataclass(frozen=True, slots=True)
class StoredText:
    id: int
    title: str
    summary: str
    author: str | None


async def stored_texts(db: Executor, source_id: int, external_ids: Sequence[str]) -> dict[str, StoredText]:
    """The source's stored articles of these external ids, by external id."""
    if not external_ids:
        return {}
    query = select(Article.external_id, Article.id, Article.title, Article.summary, Article.author).where(
        Article.source_id == source_id, Article.external_id.in_(list(external_ids))
    )
    return {row.external_id: StoredText(row.id, row.title, row.summary, row.author) for row in await db.execute(query)}


_UPDATE_TEXTS = text("""
    UPDATE articles SET title = u.title, summary = u.summary, author = u.author, content_hash = u.content_hash
    FROM unnest(CAST(:id AS bigint[]), CAST(:title AS text[]), CAST(:summary AS text[]), CAST(:author AS text[]),
                CAST(:content_hash AS bigint[])) AS u(id, title, summary, author, content_hash)
    WHERE articles.id = u.id
""")


async def update_texts(db: Executor, changes: dict[int, tuple[str, str, str | None, int]]) -> None:
    """article id -> (title, summary, author, content hash); the search trigger hears of it (migration 0010)."""
    if changes:
        ids = list(changes)
        await db.execute(_UPDATE_TEXTS, {
            "id": ids, "title": [changes[i][0] for i in ids], "summary": [changes[i][1] for i in ids],
            "author": [changes[i][2] for i in ids], "content_hash": [changes[i][3] for i in ids],
        })  # fmt: skip


async def source_exists(db: Executor, source_id: int) -> bool:
    return await db.scalar(select(Source.id).where(Source.id == source_id)) is not None
