"""The body vectors of texts stored before migration 0024, computed by the worker in small committed batches.

From 0024 on, triggers give every text written its article's body vector. The texts already stored get theirs here
rather than in the migration: indexing a text costs about 5 ms (its words in two configurations, the row rewritten,
the body's GIN index updated), so 100,000 texts are 8 minutes, which the migration would spend holding the exclusive
lock it takes on articles (reads wait too). Here each batch of BATCH articles is a transaction of its own (about a
second), so readers and ingest go on, and a search finds an old article by its body from the moment its batch
commits. The worker runs it at its start and daily (one worker at a time: an advisory lock); once everything is
indexed a run only reads article_texts' keys."""

from __future__ import annotations

import logging
import time

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

log = logging.getLogger(__name__)

BATCH = 200  # articles per transaction
LOCK_KEY = 0x6E65_7773_626F  # pg_advisory_lock key: one worker at a time

_NEXT = text("""
    WITH batch AS (
        SELECT t.article_id FROM article_texts t JOIN articles a ON a.id = t.article_id
        WHERE t.article_id > :after AND t.text <> '' AND a.body_vector IS NULL
        ORDER BY t.article_id LIMIT :n
    ), indexed AS (
        UPDATE articles a SET body_vector = newsagg_body_vector(a.language, t.text)
        FROM batch b JOIN article_texts t ON t.article_id = b.article_id
        WHERE a.id = b.article_id AND a.body_vector IS NULL
        RETURNING a.id
    )
    SELECT (SELECT max(article_id) FROM batch) AS last, (SELECT count(*) FROM indexed) AS indexed
""")


async def index_stored_bodies(engine: AsyncEngine, *, batch: int = BATCH) -> int | None:
    """Every stored text without its body vector gets it, `batch` articles per transaction: how many did (None when
    another worker is at it)."""
    async with engine.connect() as holder:
        await holder.execution_options(isolation_level="AUTOCOMMIT")
        if not await holder.scalar(text("SELECT pg_try_advisory_lock(:key)"), {"key": LOCK_KEY}):
            return None
        try:
            started, after, indexed = time.monotonic(), 0, 0
            while True:
                async with engine.begin() as db:
                    row = (await db.execute(_NEXT, {"after": after, "n": batch})).one()
                if row.last is None:
                    break
                after, indexed = row.last, indexed + row.indexed
            if indexed:
                log.info("indexed the bodies of %d stored texts in %.1f s", indexed, time.monotonic() - started)
            return indexed
        finally:
            await holder.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": LOCK_KEY})
