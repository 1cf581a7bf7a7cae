"""Every query on the fetch archive and on what fetches produced."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, insert, select, text, tuple_
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


@dataclass(frozen=True, slots=True)
class Listed:
    """An archived fetch as a replay lists it, before reading its body."""

    id: int
    fetched_at: datetime
    raw_bytes: int


async def archived_page(
    db: Executor, source_id: int, *, since: datetime, after: tuple[datetime, int] | None, limit: int
) -> list[Listed]:
    """The source's next `limit` archived fetches since `since` after `after` (fetched_at, id), oldest first (replay
    goes in the order they were fetched); keyset-paged on ix_fetch_archive_source_fetched, no body read."""
    query = (select(ArchivedFetch.id, ArchivedFetch.fetched_at, ArchivedFetch.raw_bytes)
             .where(ArchivedFetch.source_id == source_id, ArchivedFetch.fetched_at >= since)
             .order_by(ArchivedFetch.fetched_at, ArchivedFetch.id).limit(limit))  # fmt: skip
    if after is not None:
        query = query.where(tuple_(ArchivedFetch.fetched_at, ArchivedFetch.id) > tuple_(*after))
    return [Listed(row.id, row.fetched_at, row.raw_bytes) for row in await db.execute(query)]


async def archived_count(db: Executor, source_id: int, *, since: datetime) -> int:
    query = select(func.count()).where(ArchivedFetch.source_id == source_id, ArchivedFetch.fetched_at >= since)
    return int(await db.scalar(query) or 0)


async def archived_rows(db: Executor, fetch_ids: Sequence[int]) -> list[Any]:
    """These archived fetches (every column, the body's frame included), in the order given; pruned ones left out."""
    rows = {row.id: row for row in await db.execute(select(ArchivedFetch.__table__).where(
        ArchivedFetch.id.in_(list(fetch_ids))))}  # fmt: skip
    return [rows[i] for i in fetch_ids if i in rows]


async def archived(db: Executor, fetch_id: int) -> Any:
    """One archived fetch (every column; `reference_id` names the body it is compressed against), or None."""
    return (await db.execute(select(ArchivedFetch.__table__).where(ArchivedFetch.id == fetch_id))).first()


async def reference_frame(db: Executor, reference_id: int) -> tuple[bytes, int]:
    """A body stored whole: its frame and its size as received. LookupError when it is gone."""
    row = (await db.execute(select(ArchivedFetch.body, ArchivedFetch.raw_bytes).where(
        ArchivedFetch.id == reference_id))).first()  # fmt: skip
    if row is None:
        raise LookupError(f"reference body {reference_id} is missing")
    return row.body, row.raw_bytes


_ARCHIVE_STATE = text("""
    SELECT (SELECT count(*) FROM (SELECT 1 FROM fetch_archive
                                  WHERE source_id = :source_id AND fetched_at >= now() - CAST(:window AS interval)
                                  LIMIT :cap) AS recent) AS recent,
           k.id AS reference_id,
           (SELECT count(*) FROM (SELECT 1 FROM fetch_archive AS d WHERE d.reference_id = k.id
                                  LIMIT :every) AS f) AS followers
    FROM (SELECT 1) AS one
    LEFT JOIN LATERAL (SELECT id FROM fetch_archive WHERE source_id = :source_id AND reference_id IS NULL
                       ORDER BY id DESC LIMIT 1) AS k ON true
""")


@dataclass(frozen=True, slots=True)
class ArchiveState:
    """What archiving a source's next body needs to know, read in one statement."""

    recent: int  # bodies archived in the window, counted up to the cap (ix_fetch_archive_source_fetched)
    reference_id: int | None  # the latest body stored whole (ix_fetch_archive_references)
    followers: int  # bodies compressed against it, counted up to `every` (ix_fetch_archive_reference_id)


async def archive_state(db: Executor, source_id: int, *, window: timedelta, cap: int, every: int) -> ArchiveState:
    """The source's archive in one round trip, each count stopping where it decides (`cap`, `every`): the window is
    on the database's clock, as fetched_at's default."""
    params = {"source_id": source_id, "window": window, "cap": cap, "every": every}
    row = (await db.execute(_ARCHIVE_STATE, params)).one()
    return ArchiveState(int(row.recent), row.reference_id, int(row.followers))


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


async def stories_of(db: Executor, article_ids: Sequence[int]) -> list[int]:
    """The stories holding these articles."""
    query = select(Article.cluster_id).where(Article.id.in_(list(article_ids)), Article.cluster_id.is_not(None))
    return sorted({story for story in await db.scalars(query) if story is not None})


async def source_exists(db: Executor, source_id: int) -> bool:
    return await db.scalar(select(Source.id).where(Source.id == source_id)) is not None
