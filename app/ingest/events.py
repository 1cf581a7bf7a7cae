"""The `articleAdded` events of ingest: written to the outbox in the transaction that stores the articles, so a
Redis outage delays them and loses none (the relay publishes them; an API process that missed some catches up)."""

from __future__ import annotations

from app.db.engine import Executor
from app.outbox import repository as outbox

ARTICLES_ADDED = "articles_added"


async def announce_articles_added(db: Executor, source_id: int, article_ids: list[int]) -> None:
    """One event per ingest of a source; keyed by its first article (ids are never reused): a replay adds nothing."""
    if article_ids:
        key = f"{ARTICLES_ADDED}:{min(article_ids)}"
        await outbox.add_once(db, ARTICLES_ADDED, {key: {"source_id": source_id, "article_ids": article_ids}})
