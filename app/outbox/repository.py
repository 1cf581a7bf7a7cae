"""Every query on the outbox: adding events once, taking pending ones for delivery, reading a topic's events,
pruning delivered ones."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import select, text
from sqlalchemy.dialects.postgresql import array

from app.db.engine import Executor
from app.outbox.models import OutboxEvent


async def events_after(db: Executor, topic: str, *, after: int | None, limit: int, topics: Sequence[str] = (),
                       languages: Sequence[str] = ()) -> list[OutboxEvent]:  # fmt: skip
    """Oldest first: what a client that saw event `after` has missed; with `topics` or `languages`, only events
    whose payload lists any of them."""
    query = select(OutboxEvent).where(OutboxEvent.topic == topic).order_by(OutboxEvent.id).limit(limit)
    if after is not None:
        query = query.where(OutboxEvent.id > after)
    if topics:
        query = query.where(OutboxEvent.payload["topics"].has_any(array(list(topics))))
    if languages:
        query = query.where(OutboxEvent.payload["languages"].has_any(array(list(languages))))
    return list(await db.scalars(query))


async def events_by_ids(db: Executor, topic: str, ids: list[int]) -> list[OutboxEvent]:
    return list(await db.scalars(select(OutboxEvent).where(OutboxEvent.topic == topic, OutboxEvent.id.in_(ids))))


_ADD_ONCE = text("""
    INSERT INTO outbox (topic, dedupe_key, payload)
    SELECT CAST(:topic AS varchar), u.key, CAST(u.payload AS jsonb)
    FROM unnest(CAST(:key AS text[]), CAST(:payload AS text[])) AS u(key, payload)
    ON CONFLICT (dedupe_key) DO NOTHING
""")


async def add_once(db: Executor, topic: str, events: dict[str, dict[str, Any]]) -> None:
    """Events of `topic` by deduplication key: a key already in the outbox adds nothing, ever."""
    if events:
        await db.execute(_ADD_ONCE, {"topic": topic, "key": list(events),
                                     "payload": [json.dumps(p) for p in events.values()]})  # fmt: skip


_PENDING = text("""
    SELECT id, topic, payload FROM outbox
    WHERE delivered_at IS NULL AND dead_at IS NULL AND topic = ANY(CAST(:topics AS varchar[]))
      AND (retry_at IS NULL OR retry_at <= now())
    ORDER BY id LIMIT :limit FOR UPDATE SKIP LOCKED
""")


async def take_pending(db: Executor, topics: Sequence[str], limit: int) -> list[Any]:
    """The oldest undelivered events of `topics` not held back by a back-off, locked for this transaction (other
    relays skip them)."""
    return list(await db.execute(_PENDING, {"topics": list(topics), "limit": limit}))


async def mark_delivered(db: Executor, ids: list[int]) -> None:
    await db.execute(text("UPDATE outbox SET delivered_at = now(), attempts = attempts + 1 "
                          "WHERE id = ANY(CAST(:ids AS bigint[]))"), {"ids": ids})  # fmt: skip


async def mark_failed(db: Executor, ids: list[int], error: str, *, backoff_cap_seconds: float | None = None) -> None:
    """Counts a failed attempt. With `backoff_cap_seconds`, the events wait 1, 2, 4… seconds (up to the cap) before
    they are taken again; without, the next run retries them."""
    await db.execute(
        text("""
        UPDATE outbox SET attempts = attempts + 1, last_error = :error,
               retry_at = CASE WHEN CAST(:cap AS float8) IS NULL THEN NULL
                               ELSE now() + least(:cap, power(2, least(attempts, 30))) * interval '1 second' END
        WHERE id = ANY(CAST(:ids AS bigint[]))"""),
        {"ids": ids, "error": error[:2000], "cap": backoff_cap_seconds},
    )


async def mark_poisoned(db: Executor, event_id: int, error: str, *, max_attempts: int, cap_seconds: float) -> bool:
    """Counts a failed attempt of an event that failed while Redis answered: it waits 1, 2, 4… seconds (up to the
    cap) and after `max_attempts` it is dead (kept, never taken again). True when it is dead now."""
    dead = await db.scalar(
        text("""
        UPDATE outbox SET attempts = attempts + 1, last_error = :error,
               retry_at = now() + least(:cap, power(2, least(attempts, 30))) * interval '1 second',
               dead_at = CASE WHEN attempts + 1 >= :max THEN now() END
        WHERE id = :id RETURNING dead_at IS NOT NULL"""),
        {"id": event_id, "error": error[:2000], "cap": cap_seconds, "max": max_attempts},
    )
    return bool(dead)


_BACKLOG = text("""
    SELECT count(*) AS events, min(created_at) AS oldest, max(attempts) AS attempts FROM outbox
    WHERE topic = :topic AND delivered_at IS NULL AND dead_at IS NULL
""")


async def backlog(db: Executor, topic: str) -> Any:
    """Undelivered events of `topic`: how many, when the oldest was written, the most attempts one has had."""
    return (await db.execute(_BACKLOG, {"topic": topic})).one()


_PRUNE_DELIVERED = text("""
    DELETE FROM outbox WHERE id IN (
        SELECT id FROM outbox WHERE topic = :topic AND delivered_at IS NOT NULL AND created_at < :older_than
        ORDER BY id LIMIT :batch)
""")


async def prune_delivered(db: Executor, topic: str, *, older_than: datetime, batch: int = 10_000) -> int:
    """Deletes one batch of delivered `topic` events created before `older_than` (undelivered ones always stay).
    Walked in id order, which is creation order: the old rows come first and the scan stops at the batch."""
    result = await db.execute(_PRUNE_DELIVERED, {"topic": topic, "older_than": older_than, "batch": batch})
    return int(getattr(result, "rowcount", 0) or 0)


_MISSED = text("""
    SELECT id, payload FROM outbox
    WHERE topic = :topic AND (id > :after OR delivered_at >= :since OR created_at >= :since)
    ORDER BY id LIMIT :limit
""")


async def events_missed(db: Executor, topic: str, *, after: int | None, since: datetime, limit: int) -> list[Any]:
    """What a process whose pub/sub lost Redis at `since` may have missed of `topic`: the events after the last one it
    delivered (`after`), and those delivered or written since it lost Redis (an event committed late can carry a
    smaller id than one already seen). Oldest first; the caller skips the ones it saw."""
    return list(await db.execute(_MISSED, {"topic": topic, "after": after if after is not None else 2**62,
                                           "since": since, "limit": limit}))  # fmt: skip
