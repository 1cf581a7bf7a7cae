"""A second text-search index over the last days' articles, rebuilt every day by the worker.

PostgreSQL search reads a query's matches newest first, a day and then a week at a time (app/search/postgres.py), and
the GIN index it asks holds every article ever stored: "dies" has 40,000 matches at a million articles, and the
index read them all (10 ms) to keep the day's 1,700. A partial index of the same vectors over the articles published
since a fixed moment (`ix_articles_search_since_20261113`: since 13 November, 00:00 UTC) answers the first day's and
the week's windows, which the planner proves it covers from their dates (each search is planned with its values): the
same word read 10,000 postings there (1.7 ms). Its size is the last days' articles whatever the age of the corpus.

Every run of `keep_recent_index` (the worker's, hourly and at its start) makes sure one exists whose cutoff is the
start of the UTC day RECENT_DAYS ago: the one for today is built (CREATE INDEX CONCURRENTLY, so ingest goes on), and
older ones are dropped after it. Until the first is built, and for windows it does not cover, the full index serves;
no result depends on it. Workers take an advisory lock for it, so one builds while the others skip.
"""

from __future__ import annotations

import logging
import re
import time
from datetime import UTC, datetime, timedelta

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

log = logging.getLogger(__name__)

RECENT_DAYS = 8  # the cutoff: the week's window (7 days) and a day's margin, so a day-old index still covers it
PREFIX = "ix_articles_search_since_"
_NAME = re.compile(rf"^{PREFIX}(\d{{8}})$")
LOCK_KEY = 0x6E65_7773_7265  # pg_advisory_lock key: one worker at a time builds or drops
_OURS = text(f"""
    SELECT c.relname AS name, i.indisvalid AS valid
    FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
    WHERE i.indrelid = CAST('articles' AS regclass) AND c.relname LIKE '{PREFIX}%'""")


def cutoff(now: datetime) -> datetime:
    """The start of the UTC day RECENT_DAYS before `now`: what the index built today covers from."""
    day = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return day - timedelta(days=RECENT_DAYS)


def index_name(since: datetime) -> str:
    return f"{PREFIX}{since:%Y%m%d}"


async def keep_recent_index(engine: AsyncEngine, now: datetime) -> str | None:
    """Builds today's recent index if it is missing and drops the others (older ones, and any a build that was cut
    off left invalid); the name built, or None (it existed, or another worker holds the lock)."""
    since = cutoff(now)
    wanted = index_name(since)
    async with engine.connect() as connection:
        await connection.execution_options(isolation_level="AUTOCOMMIT")  # CONCURRENTLY runs outside transactions
        if not await connection.scalar(text("SELECT pg_try_advisory_lock(:key)"), {"key": LOCK_KEY}):
            return None
        try:
            present = await recent_indexes(connection)
            for name, valid in present.items():
                if not valid:  # a build that was cut off (under the lock, nobody else is building)
                    await _drop(connection, name)
            built = None
            if not present.get(wanted):
                started = time.monotonic()
                await connection.execute(text(
                    f"CREATE INDEX CONCURRENTLY {wanted} ON articles USING gin (search_vector) "
                    f"WHERE published_at >= '{since.isoformat()}'"))  # fmt: skip
                log.info("built %s in %.1f s", wanted, time.monotonic() - started)
                built = wanted
            for name, valid in present.items():
                if valid and name != wanted:
                    await _drop(connection, name)
            return built
        finally:
            await connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": LOCK_KEY})


async def recent_indexes(connection: AsyncConnection) -> dict[str, bool]:
    """The recent indexes on articles, and whether each is valid (usable)."""
    return {row.name: row.valid for row in await connection.execute(_OURS) if _NAME.match(row.name)}


async def _drop(connection: AsyncConnection, name: str) -> None:
    await connection.execute(text(f"DROP INDEX CONCURRENTLY IF EXISTS {name}"))
    log.info("dropped %s", name)
