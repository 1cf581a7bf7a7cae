"""Every query on deliveries: claiming due ones with a lease, recording each attempt's outcome and its log line,
listing dead ones, replaying them."""

from __future__ import annotations

from typing import Any

from sqlalchemy import text

from app.db.engine import Executor

_CLAIM = text("""
    WITH due AS (
        SELECT d.id FROM deliveries d
        WHERE d.channel = :channel AND d.status IN ('pending', 'sending', 'failed') AND d.next_attempt_at <= now()
        ORDER BY d.next_attempt_at LIMIT :limit FOR UPDATE SKIP LOCKED)
    UPDATE deliveries d SET status = 'sending', attempts = d.attempts + 1,
           next_attempt_at = now() + :lease * interval '1 second'
    FROM due WHERE d.id = due.id
    RETURNING d.id, d.idempotency_key, d.user_id, d.event_id, d.endpoint_id, d.attempts, d.payload
""")


async def claim(db: Executor, channel: str, *, limit: int, lease_seconds: float) -> list[Any]:
    """Due deliveries of `channel`, marked sending with their attempt counted; one whose worker died is due again
    when its lease ends (at least once)."""
    return list(await db.execute(_CLAIM, {"channel": channel, "limit": limit, "lease": lease_seconds}))


async def endpoints(db: Executor, ids: list[int]) -> dict[int, Any]:
    rows = await db.execute(text("SELECT e.id, e.url, e.secret, e.active AND k.revoked_at IS NULL AS live "
                                 "FROM webhook_endpoints e JOIN api_keys k ON k.id = e.api_key_id "
                                 "WHERE e.id = ANY(CAST(:ids AS bigint[]))"), {"ids": ids})  # fmt: skip
    return {row.id: row for row in rows}


_RECORD = text("""
    WITH outcome AS (
        SELECT * FROM unnest(CAST(:ids AS bigint[]), CAST(:statuses AS varchar[]), CAST(:waits AS float8[]),
                             CAST(:errors AS text[]), CAST(:codes AS int[]), CAST(:durations AS float8[]))
                 AS o(id, status, wait, error, code, duration)),
    updated AS (
        UPDATE deliveries d SET status = o.status, last_error = o.error,
               next_attempt_at = now() + o.wait * interval '1 second',
               delivered_at = CASE WHEN o.status IN ('delivered', 'covered') THEN now() END
        FROM outcome o WHERE d.id = o.id
        RETURNING d.id, d.attempts)
    INSERT INTO delivery_log (delivery_id, attempt, outcome, status_code, error, duration_ms)
    SELECT o.id, u.attempts, o.status, o.code, o.error, o.duration FROM outcome o JOIN updated u ON u.id = o.id
""")


async def record(db: Executor, outcomes: list[tuple[int, str, float, str | None, int | None, float | None]]) -> None:
    """(delivery id, new status, seconds until the next attempt, error, HTTP status, duration ms) of each attempt."""
    if outcomes:
        columns = list(zip(*outcomes, strict=True))
        await db.execute(_RECORD, {"ids": list(columns[0]), "statuses": list(columns[1]), "waits": list(columns[2]),
                                   "errors": list(columns[3]), "codes": list(columns[4]),
                                   "durations": list(columns[5])})  # fmt: skip


async def dead(db: Executor, *, after: int | None, limit: int) -> list[Any]:
    """Dead deliveries, oldest first."""
    return list(await db.execute(text("""
        SELECT id, idempotency_key, user_id, event_id, channel, endpoint_id, priority, status, attempts,
               next_attempt_at, last_error, created_at, delivered_at FROM deliveries
        WHERE status = 'dead' AND id > :after ORDER BY id LIMIT :limit"""),
        {"after": after or 0, "limit": limit}))  # fmt: skip


async def replay(db: Executor, ids: list[int]) -> list[int]:
    """Dead deliveries among `ids` become pending now, with fresh attempts; a log line says so. The ids replayed."""
    rows = await db.execute(text("""
        WITH replayed AS (
            UPDATE deliveries SET status = 'pending', attempts = 0, next_attempt_at = now()
            WHERE id = ANY(CAST(:ids AS bigint[])) AND status = 'dead' RETURNING id),
        logged AS (
            INSERT INTO delivery_log (delivery_id, attempt, outcome) SELECT id, 0, 'replayed' FROM replayed)
        SELECT id FROM replayed ORDER BY id"""), {"ids": ids})  # fmt: skip
    return [row.id for row in rows]


async def log_of(db: Executor, delivery_ids: list[int]) -> list[Any]:
    return list(
        await db.execute(
            text("""
        SELECT delivery_id, at, attempt, outcome, status_code, error, duration_ms FROM delivery_log
        WHERE delivery_id = ANY(CAST(:ids AS bigint[])) ORDER BY delivery_id, id"""),
            {"ids": delivery_ids},
        )
    )


async def emails(db: Executor, user_ids: list[int]) -> dict[int, str]:
    rows = await db.execute(
        text("SELECT id, email FROM users WHERE id = ANY(CAST(:ids AS bigint[]))"), {"ids": user_ids}
    )
    return {row.id: row.email for row in rows}
