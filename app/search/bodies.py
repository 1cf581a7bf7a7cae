"""Texts stored before migration 0027 joined to search's index of bodies by the worker, in small committed batches.

The body index (app/search/body.py) holds a text once its `search_language` is set (the article's language, '' for
none): from 0027 on, triggers set it whenever a text is written. The texts already stored get theirs here rather
than in the migration: indexing a text costs a few milliseconds (its words in two configurations, the GIN index
updated), so 100,000 texts are minutes, which the migration would spend holding its locks (app/db/migrate.py runs
every migration in one transaction). Here each batch of BATCH texts is a transaction of its own, so readers and ingest
go on, and a search finds an old article by its body from the moment its batch commits. The worker runs it at its
start and daily (one worker at a time: an advisory lock), only when some are left: a probe of the partial index of
unindexed texts (migration 0029), empty once everything is indexed, so a start then costs one index lookup.
"""

from __future__ import annotations

import logging
import time

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

log = logging.getLogger(__name__)

BATCH = 200  # articles per transaction
LOCK_KEY = 0x6E65_7773_626F  # pg_advisory_lock key: one worker at a time

_ANY_LEFT = text("SELECT EXISTS (SELECT 1 FROM article_texts WHERE search_language IS NULL)")
_NEXT = text("""
    WITH batch AS (
        SELECT t.article_id FROM article_texts t
        WHERE t.article_id > :after AND t.search_language IS NULL
        ORDER BY t.article_id LIMIT :n
    ), indexed AS (
        UPDATE article_texts t SET search_language = coalesce(a.language, '')
        FROM batch b JOIN articles a ON a.id = b.article_id
        WHERE t.article_id = b.article_id AND t.search_language IS NULL
        RETURNING t.article_id, t.text <> '' AS words
    )
    SELECT (SELECT max(article_id) FROM batch) AS last, (SELECT count(*) FROM indexed WHERE words) AS indexed
""")


async def index_stored_bodies(engine: AsyncEngine, *, batch: int = BATCH) -> int | None:
    """Every stored text without its body vector gets it, `batch` articles per transaction: how many did (None when
    another worker is at it); 0 at once, without the lock, when none is left."""
    async with engine.connect() as probe:
        if not await probe.scalar(_ANY_LEFT):
            return 0
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
