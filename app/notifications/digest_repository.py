"""The digest's claim: the due email entries of a few readers, every one of each reader's, leased to one sender."""

from __future__ import annotations

from typing import Any

from sqlalchemy import text

from app.db.engine import Executor

# Readers are taken from the front of the due index, each under an advisory lock for this transaction (one that
# another sender holds is passed over), so that two senders never split one reader's entries between two emails;
# every due entry of a reader taken is leased (thousands of them make one digest). Ranked per reader, urgent first
# and then the newest, with the payload only of the `top` the email may list (the others are counted).
_CLAIM = text("""
    WITH front AS (
        SELECT d.user_id FROM deliveries d
        WHERE d.channel = 'email' AND d.status IN ('pending', 'sending', 'failed') AND d.next_attempt_at <= now()
        ORDER BY d.next_attempt_at LIMIT :scan),
    readers AS MATERIALIZED (SELECT DISTINCT user_id FROM front),
    mine AS MATERIALIZED (
        SELECT user_id FROM readers WHERE pg_try_advisory_xact_lock(hashtextextended('digest:' || user_id, 0))
        LIMIT :readers),
    due AS (
        SELECT d.id FROM deliveries d JOIN mine m ON m.user_id = d.user_id
        WHERE d.channel = 'email' AND d.status IN ('pending', 'sending', 'failed') AND d.next_attempt_at <= now()
        FOR UPDATE OF d SKIP LOCKED),
    leased AS (
        UPDATE deliveries d SET status = 'sending', attempts = d.attempts + 1,
               next_attempt_at = now() + :lease * interval '1 second'
        FROM due WHERE d.id = due.id
        RETURNING d.id, d.user_id, d.attempts, d.payload, d.event_at),
    ranked AS (
        SELECT *, row_number() OVER (PARTITION BY user_id ORDER BY payload ->> 'priority' = 'urgent' DESC,
                                     event_at DESC NULLS LAST, id DESC) AS rank
        FROM leased)
    SELECT id, user_id, attempts, CASE WHEN rank <= :top THEN payload END AS payload FROM ranked
    ORDER BY user_id, rank
""")
SCAN = 1000  # due entries looked at to find the readers of one claim


async def claim(db: Executor, *, readers: int, top: int, lease_seconds: float) -> list[Any]:
    """The leased entries of up to `readers` readers, by reader, best first."""
    params = {"scan": SCAN, "readers": readers, "top": top, "lease": lease_seconds}
    return list(await db.execute(_CLAIM, params))


# Entries leased but not tried (their email would have outlasted the lease) go back uncharged and due at once, unless
# the lease ended and another sender claimed them meanwhile (their attempts moved on).
_RELEASE = text("""
    UPDATE deliveries d SET attempts = d.attempts - 1, next_attempt_at = now()
    FROM unnest(CAST(:ids AS bigint[]), CAST(:attempts AS int[])) AS l(id, attempts)
    WHERE d.id = l.id AND d.attempts = l.attempts AND d.status = 'sending'
""")


async def release(db: Executor, rows: list[Any]) -> None:
    """The claimed entries `rows` (id, attempts as claimed) released to the next claim, no attempt charged."""
    if rows:
        await db.execute(_RELEASE, {"ids": [row.id for row in rows], "attempts": [row.attempts for row in rows]})
