"""The search projection: what the index holds of an article, read from the articles table."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import text

from app.db.engine import Executor

TEXT_CHARS = 20_000  # of an article's full text indexed: enough for any news story, bounded for the index

_DOCUMENTS = text(f"""
    SELECT a.id, a.title, a.summary, a.topics, a.source_id, a.language, a.published_at, a.cluster_id,
           left(coalesce(t.text, ''), {TEXT_CHARS}) AS text
    FROM articles a LEFT JOIN article_texts t ON t.article_id = a.id
    WHERE a.id = ANY(CAST(:ids AS bigint[]))
""")

_SINCE = text("""
    SELECT id FROM articles WHERE crawled_at >= :since AND id > :after ORDER BY id LIMIT :limit
""")
_ALL = text("SELECT id FROM articles WHERE id > :after ORDER BY id LIMIT :limit")


def document(row: Any) -> dict[str, Any]:
    """One article as an index document: filterable fields by the names the index settings use."""
    return {
        "id": row.id, "title": row.title, "summary": row.summary, "text": row.text, "topics": list(row.topics or ()),
        "source": row.source_id, "language": row.language or "", "published_at": int(row.published_at.timestamp()),
        "story": row.cluster_id, "group": f"s{row.cluster_id}" if row.cluster_id is not None else f"a{row.id}",
    }  # fmt: skip


async def documents(db: Executor, ids: list[int]) -> tuple[list[dict[str, Any]], list[int]]:
    """The documents of `ids` that exist, and the ids that no longer do (to delete from the index)."""
    rows = list(await db.execute(_DOCUMENTS, {"ids": ids}))
    found = {row.id for row in rows}
    return [document(row) for row in rows], [i for i in ids if i not in found]


async def article_ids(db: Executor, *, after: int, limit: int, since: datetime | None) -> list[int]:
    """The next `limit` article ids after `after`, in id order (all of them, or those crawled since `since`)."""
    if since is None:
        return list(await db.scalars(_ALL, {"after": after, "limit": limit}))
    return list(await db.scalars(_SINCE, {"since": since, "after": after, "limit": limit}))


async def count(db: Executor, since: datetime | None) -> int:
    query = "SELECT count(*) FROM articles" + (" WHERE crawled_at >= :since" if since else "")
    return int(await db.scalar(text(query), {"since": since} if since else {}) or 0)
