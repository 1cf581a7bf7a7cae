"""Keeping the search index in step with the articles table (invariant I-8).

Every statement that adds, deletes or changes the searchable fields of articles writes one `search` outbox event
with their ids, in its own transaction (a trigger, migration 0010): no writer can forget it. `sync` takes pending
events, reads those articles as they are now and sends them to the index (or deletes the ones that are gone), and
stamps the events delivered only once the index has applied them. When the index refuses or is down, the events stay,
each failure counted and held back 1, 2, 4… seconds (up to `search_retry_max_seconds`), and are sent when it
returns. On PostgreSQL alone there is nothing to send: the database keeps the search vector itself, and the events
are stamped delivered as they come. Either way, the title words of inserted articles join the vocabulary that
corrects typos (app/search/terms.py) in the transaction that stamps their events.

One process syncs at a time (a transaction-level advisory lock), and `reindex` takes the same lock for each chunk,
so whichever reads an article later also writes it to the index later: a reindex during ingest never leaves an
older copy in the index.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

if TYPE_CHECKING:
    from app.search.meili import MeiliSearch

from app.outbox import repository as outbox
from app.outbox.rounds import drain
from app.search import documents as projection
from app.search import terms
from app.search.query import POSTGRES, SearchUnavailable
from app.settings import Settings

log = logging.getLogger(__name__)

SEARCH_TOPIC = "search"  # written by the articles trigger (migration 0010)
EVENTS_PER_RUN = 200  # outbox events one sync round takes
_LOCK_KEY = "hashtext('newsagg.search-sync')"  # one process syncs (or reindexes a chunk) at a time
_LOCK = text(f"SELECT pg_try_advisory_xact_lock({_LOCK_KEY})")
_WAIT_LOCK = text(f"SELECT pg_advisory_xact_lock({_LOCK_KEY})")


@dataclass(frozen=True, slots=True)
class SyncRound:
    events: int  # events stamped delivered
    failed: bool  # the index refused or was down; the events wait for their retry


async def sync(engine: AsyncEngine, index: MeiliSearch | None, *, batch: int, retry_cap_seconds: float) -> SyncRound:
    """One round: up to EVENTS_PER_RUN pending events delivered to `index`."""
    async with engine.begin() as connection:
        if not await connection.scalar(_LOCK):
            return SyncRound(0, False)  # another process is syncing
        events = await outbox.take_pending(connection, (SEARCH_TOPIC,), EVENTS_PER_RUN)
        if not events:
            return SyncRound(0, False)
        ids = sorted({int(i) for event in events for i in event.payload.get("articles", ())})
        event_ids = [event.id for event in events]
        try:
            if index is not None:
                await _send(connection, index, ids, batch)
        except SearchUnavailable as error:
            await outbox.mark_failed(connection, event_ids, str(error), backoff_cap_seconds=retry_cap_seconds)
            log.warning("search sync: %d event(s) (%d articles) not indexed, retried with back-off: %s",
                        len(events), len(ids), error)  # fmt: skip
            return SyncRound(0, True)
        inserted = sorted({int(i) for event in events if event.payload.get("inserted")
                           for i in event.payload.get("articles", ())})  # fmt: skip
        await terms.learn(connection, inserted)  # with the stamp: each article's title words count once
        await outbox.mark_delivered(connection, event_ids)
        return SyncRound(len(events), False)


async def sync_all(engine: AsyncEngine, index: MeiliSearch | None, *, batch: int, retry_cap_seconds: float) -> int:
    """Rounds until nothing is pending or the index fails (app.outbox.rounds.drain); returns the events delivered."""

    async def one_round() -> int:
        return (await sync(engine, index, batch=batch, retry_cap_seconds=retry_cap_seconds)).events

    return await drain(one_round, batch=EVENTS_PER_RUN)


async def sync_pending(engine: AsyncEngine, index: MeiliSearch | None, settings: Settings) -> int:
    """`sync_all` with the settings' batch and back-off cap, as the worker runs it."""
    return await sync_all(engine, index, batch=settings.search_sync_batch,
                          retry_cap_seconds=settings.search_retry_max_seconds)  # fmt: skip


async def _send(connection: AsyncConnection, index: MeiliSearch, ids: list[int], batch: int) -> None:
    for start in range(0, len(ids), batch):
        found, gone = await projection.documents(connection, ids[start : start + batch])
        await index.upsert(found)
        await index.delete(gone)


@dataclass(frozen=True, slots=True)
class SyncStatus:
    backend: str
    pending_events: int
    lag_seconds: float  # age of the oldest event not yet in the index (0 when none waits)
    most_attempts: int


async def status(engine: AsyncEngine, index: MeiliSearch | None) -> SyncStatus:
    async with engine.connect() as connection:
        row = await outbox.backlog(connection, SEARCH_TOPIC)
    lag = max(0.0, (datetime.now(UTC) - row.oldest).total_seconds()) if row.oldest else 0.0
    backend = index.name if index is not None else POSTGRES
    return SyncStatus(backend, int(row.events), round(lag, 3), int(row.attempts or 0))


Progress = Callable[[int, int], None]  # (articles done, articles in all)


async def reindex(engine: AsyncEngine, index: MeiliSearch, *, since: datetime | None, batch: int,
                  progress: Progress | None = None) -> int:  # fmt: skip
    """Sends every article (or those crawled since `since`) to the index again, in id order, a chunk per lock hold
    (see the module docstring: safe while ingest and the sync go on). Returns how many were sent."""
    await index.configure()
    async with engine.connect() as connection:
        total = await projection.count(connection, since)
    done, after = 0, 0
    while True:
        async with engine.begin() as connection:
            ids = await projection.article_ids(connection, after=after, limit=batch, since=since)
            if not ids:
                break
            await connection.execute(_WAIT_LOCK)
            await _send(connection, index, ids, batch)
            done += len(ids)
        after = ids[-1]
        if progress:
            progress(done, max(total, done))
    return done
