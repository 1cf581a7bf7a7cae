"""Retention's SQL: one bounded batch of each kind of row deleted, and how many are due (for a dry run).

Each walks an index of the age it deletes by (migrations 0013 and 0015), so a batch costs its size, not its table.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import text

from app.db.engine import Executor
from app.stories.repair import ArticlesDeleted, delete_articles, lock_clustering

_DUE_ARTICLES = """
    FROM articles AS a
    WHERE a.crawled_at < :before AND (a.cluster_id IS NULL OR NOT EXISTS (
        SELECT FROM story_clusters AS s WHERE s.id = a.cluster_id AND s.last_updated_at >= :settled))
"""
# Skips rows another transaction holds (an article being understood): they go in a later batch or pass.
_DELETE_ARTICLES = text(f"""
    WITH doomed AS (SELECT a.id {_DUE_ARTICLES} ORDER BY a.crawled_at LIMIT :batch FOR UPDATE OF a SKIP LOCKED)
    DELETE FROM articles AS a USING doomed WHERE a.id = doomed.id
    RETURNING a.cluster_id
""")
# kind -> (table, which rows are due)
_ROWS = {
    "stories": ("story_clusters", "(article_count = 0 OR merged_into_id IS NOT NULL) AND last_updated_at < :before"),
    "read_events": ("read_events", "at < :before"),
    "sessions": ("user_sessions", "expires_at < :before OR revoked_at < :before"),
    "fetch_log": ("fetch_log", "fetched_at < :before"),
    # a body others are compressed against goes after them (a later batch or pass)
    "fetch_archive": (
        "fetch_archive",
        "fetched_at < :before AND NOT EXISTS (SELECT FROM fetch_archive AS f WHERE f.reference_id = fetch_archive.id)",
    ),
    # rare terms unseen for long (a typo, a one-off name); '' counts the articles (app/stories/store.TOTAL)
    "vocabulary": ("story_vocabulary", "term <> '' AND documents <= :rare AND seen_at < :before"),
}
_KEYS = {"vocabulary": "term"}  # the rows' key where it is not `id`
# Stories oldest first: one merged into another is never newer than it (app/stories/clustering.py), so no batch
# deletes a story before those merged into it, whose link the delete would cut (SET NULL): they would look live.
_ORDER = {"stories": "ORDER BY last_updated_at"}
_DELETES = {kind: text(f"DELETE FROM {table} WHERE {key} IN (SELECT {key} FROM {table} WHERE {due} "
                       f"{_ORDER.get(kind, '')} LIMIT :batch FOR UPDATE SKIP LOCKED)")
            for kind, (table, due) in _ROWS.items() for key in [_KEYS.get(kind, "id")]}  # fmt: skip
_COUNTS = {kind: text(f"SELECT count(*) FROM {table} WHERE {due}") for kind, (table, due) in _ROWS.items()}
_COUNTS["articles"] = text(f"SELECT count(*) {_DUE_ARTICLES}")
_SEEN_AT = text("""SELECT EXISTS (SELECT FROM information_schema.columns
                                  WHERE table_name = 'story_vocabulary' AND column_name = 'seen_at')""")


async def delete_articles_batch(db: Executor, *, before: datetime, settled: datetime, batch: int) -> ArticlesDeleted:
    """Up to `batch` articles stored before `before`, oldest first, and not in a story changed since `settled`;
    their stories repaired (app/stories/repair.py) in the same transaction."""
    return await delete_articles(db, _DELETE_ARTICLES, {"before": before, "settled": settled, "batch": batch}, [])


async def delete_rows_batch(db: Executor, kind: str, *, before: datetime, batch: int, rare: int = 0) -> int:
    """Up to `batch` rows of `kind` (stories, read_events, sessions, fetch_log, fetch_archive, vocabulary) older than
    `before` (vocabulary: with `rare`, the most documents a term forgotten has). Stories are deleted under the
    clustering lock, as every write of stories is; vocabulary rows are statistics, written without it."""
    if kind == "stories":
        await lock_clustering(db)
    due = {"rare": rare} if kind == "vocabulary" else {}
    result = await db.execute(_DELETES[kind], {"before": before, "batch": batch, **due})
    return int(getattr(result, "rowcount", 0) or 0)


async def count_due(db: Executor, kind: str, **cutoffs: datetime | int) -> int:
    """How many rows of `kind` a pass would delete now (`before`, and `settled` for articles, `rare` for vocabulary);
    none of a table or column the schema does not have yet (a dry run looks at a database before it is migrated)."""
    if kind in _ROWS and await db.scalar(text("SELECT to_regclass(:name)"), {"name": _ROWS[kind][0]}) is None:
        return 0
    if kind == "vocabulary" and not await db.scalar(_SEEN_AT):
        return 0
    return int(await db.scalar(_COUNTS[kind], cutoffs) or 0)


_OUTBOX_DUE = text("""
    SELECT count(*) FROM outbox WHERE topic = :topic AND delivered_at IS NOT NULL AND created_at < :before
""")


async def count_outbox_due(db: Executor, topic: str, *, before: datetime) -> int:
    return int(await db.scalar(_OUTBOX_DUE, {"topic": topic, "before": before}) or 0)
