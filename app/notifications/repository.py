"""Every query of the fan-out's bookkeeping: which outbox events are to be fanned out, taking one, recording its
progress, failure or end, and what a story's event matches (its outlets and entities)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import text

from app.db.engine import Executor

_ENQUEUE = text("""
    INSERT INTO notification_fanouts (event_id, topic)
    SELECT o.id, o.topic FROM outbox o
    WHERE o.topic = ANY(CAST(:topics AS varchar[])) AND o.dead_at IS NULL
      AND o.id > (SELECT coalesce(max(event_id), 0) FROM notification_fanouts) - :slack
      AND o.created_at > now() - :lookback * interval '1 second'
      AND NOT EXISTS (SELECT FROM notification_fanouts f WHERE f.event_id = o.id)
    ORDER BY o.id LIMIT :limit
    ON CONFLICT (event_id) DO NOTHING
""")
SLACK = 10_000  # outbox ids below the newest one fanned out still looked at: a transaction that committed late


async def enqueue_events(db: Executor, topics: Sequence[str], *, lookback_seconds: float, limit: int = 1000) -> int:
    """New outbox events of `topics` (written in the last `lookback_seconds`) become fan-outs to do."""
    result = await db.execute(_ENQUEUE, {"topics": list(topics), "slack": SLACK, "lookback": lookback_seconds,
                                         "limit": limit})  # fmt: skip
    return int(getattr(result, "rowcount", 0) or 0)


_TAKE = text("""
    SELECT f.event_id, f.topic, f.after_user_id, f.attempts, o.payload, o.created_at
    FROM notification_fanouts f JOIN outbox o ON o.id = f.event_id
    WHERE f.status = 'pending' AND f.topic = :topic AND f.next_attempt_at <= now()
    ORDER BY f.event_id LIMIT 1 FOR UPDATE OF f SKIP LOCKED
""")


async def take_fanout(db: Executor, topics: Sequence[str]) -> Any:
    """The oldest due fan-out of the first of `topics` that has one, locked for this transaction; None when there is
    none. Walked by the pending rows' index, topic by topic: a backlog costs nothing per take."""
    for topic in topics:
        row = (await db.execute(_TAKE, {"topic": topic})).first()
        if row is not None:
            return row
    return None


async def advance(db: Executor, event_id: int, after_user_id: int, *, done: bool) -> None:
    await db.execute(text("""
        UPDATE notification_fanouts SET after_user_id = :after, attempts = 0, last_error = NULL,
               status = CASE WHEN :done THEN 'done' ELSE 'pending' END,
               done_at = CASE WHEN :done THEN now() END
        WHERE event_id = :event"""), {"event": event_id, "after": after_user_id, "done": done})  # fmt: skip


async def mark_failed(db: Executor, event_id: int, error: str, *, dead: bool, wait_seconds: float) -> None:
    """A failed batch: dead, or retried after `wait_seconds`."""
    await db.execute(text("""
        UPDATE notification_fanouts SET attempts = attempts + 1, last_error = :error,
               next_attempt_at = now() + :wait * interval '1 second',
               status = CASE WHEN :dead THEN 'dead' ELSE status END
        WHERE event_id = :event"""),
        {"event": event_id, "error": error[:2000], "wait": wait_seconds, "dead": dead})  # fmt: skip


async def story_outlets(db: Executor, story_id: int) -> tuple[list[int], list[str]]:
    """The sources and the entity keys of a story's articles: what alert rules on sources and entities match."""
    row = (await db.execute(text("""
        SELECT (SELECT coalesce(array_agg(DISTINCT a.source_id), '{}') FROM articles a WHERE a.cluster_id = :story),
               (SELECT coalesce(array_agg(DISTINCT e.key), '{}') FROM article_entities e
                JOIN articles a ON a.id = e.article_id WHERE a.cluster_id = :story)"""),
        {"story": story_id})).one()  # fmt: skip
    return list(row[0]), list(row[1])


async def story_title(db: Executor, story_id: int) -> str | None:
    """The story's title; None for a story since deleted."""
    title = await db.scalar(text("SELECT title FROM story_clusters WHERE id = :id"), {"id": story_id})
    return None if title is None else str(title)


async def prune_hours(db: Executor) -> int:
    """Hourly counts older than the previous hour count nothing any more; how many went."""
    result = await db.execute(
        text("DELETE FROM alert_hours WHERE hour < date_trunc('hour', now()) - interval '1 hour'")
    )
    return int(getattr(result, "rowcount", 0) or 0)


# kind -> (table, its key, which rows are due): dead deliveries stay for administrators to see and replay
_DUE = {
    "notifications": ("notifications", "id", "created_at < :before"),
    "deliveries": (
        "deliveries",
        "id",
        "created_at < :before AND status IN ('delivered', 'covered', 'pending', 'failed')",
    ),
    "fanouts": ("notification_fanouts", "event_id", "status = 'done' AND created_at < :before"),
}
PRUNED = tuple(_DUE)  # the kinds of alert rows retention deletes
_PRUNE = {kind: text(f"DELETE FROM {table} WHERE {key} IN (SELECT {key} FROM {table} WHERE {due} ORDER BY created_at "
                     "LIMIT :batch)") for kind, (table, key, due) in _DUE.items()}  # fmt: skip
_COUNTS = {kind: text(f"SELECT count(*) FROM {table} WHERE {due}") for kind, (table, _, due) in _DUE.items()}


async def count_due(db: Executor, kind: str, *, before: datetime) -> int:
    """How many rows of `kind` a retention pass would delete now (none of a table the schema does not have yet: a dry
    run looks at a database before it is migrated)."""
    if await db.scalar(text("SELECT to_regclass(:name)"), {"name": _DUE[kind][0]}) is None:
        return 0
    return int(await db.scalar(_COUNTS[kind], {"before": before}) or 0)


async def prune(db: Executor, kind: str, *, before: datetime, batch: int) -> int:
    """One batch of `kind` rows written before `before` (a delivery's log goes with it; dead deliveries stay for
    administrators to see and replay)."""
    result = await db.execute(_PRUNE[kind], {"before": before, "batch": batch})
    return int(getattr(result, "rowcount", 0) or 0)


_BACKLOG = text("""
    SELECT (SELECT count(*) FROM deliveries WHERE status = 'dead') AS dead,
           least((SELECT min(o.created_at) FROM notification_fanouts f JOIN outbox o ON o.id = f.event_id
                  WHERE f.status = 'pending'),
                 (SELECT min(o.created_at) FROM outbox o
                  WHERE o.topic = ANY(CAST(:topics AS varchar[])) AND o.dead_at IS NULL
                    AND o.created_at > now() - :lookback * interval '1 second'
                    AND o.id > (SELECT coalesce(max(event_id), 0) FROM notification_fanouts))) AS oldest
""")


async def backlog(db: Executor, topics: Sequence[str], *, lookback_seconds: float) -> Any:
    """(dead deliveries, when the oldest event not yet fanned out was written: a pending fan-out, or an event newer
    than every one taken, within the look-back; None when none waits)."""
    return (await db.execute(_BACKLOG, {"topics": list(topics), "lookback": lookback_seconds})).one()
