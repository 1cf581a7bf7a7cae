"""The digest's claim: the due email entries of a few readers, every one of each reader's, leased to one sender;
readers in their quiet hours deferred to their end; the links of the stories a digest lists."""

from __future__ import annotations

from typing import Any

from sqlalchemy import text

from app.db.engine import Executor
from app.notifications.fanout_sql import QUIET, QUIET_ENDS

_DUE = "d.channel = 'email' AND d.status IN ('pending', 'sending', 'failed') AND d.next_attempt_at <= now()"

# Readers are taken from the front of the due index, each under an advisory lock for this transaction (one that
# another sender holds is passed over), so that two senders never split one reader's entries between two emails;
# every due entry of a reader taken is leased (thousands of them make one digest). Ranked per reader, urgent first
# and then the newest, with the payload only of the `top` the email may list (the others are counted). A reader in
# their quiet hours is passed over (`defer_quiet` moves their entries to the end of the quiet hours first; this
# covers one whose entries another transaction held meanwhile).
_CLAIM = text(f"""
    WITH front AS (
        SELECT d.user_id FROM deliveries d WHERE {_DUE} ORDER BY d.next_attempt_at LIMIT :scan),
    readers AS MATERIALIZED (
        SELECT DISTINCT f.user_id FROM front f LEFT JOIN alert_rules rd ON rd.user_id = f.user_id
        WHERE NOT coalesce({QUIET}, false)),
    mine AS MATERIALIZED (
        SELECT user_id FROM readers WHERE pg_try_advisory_xact_lock(hashtextextended('digest:' || user_id, 0))
        LIMIT :readers),
    due AS (
        SELECT d.id FROM deliveries d JOIN mine m ON m.user_id = d.user_id WHERE {_DUE}
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

# The readers at the front of the due index whose quiet hours (in their time zone) cover now: their due entries wait
# for the end of the quiet hours, as their webhooks do, uncharged; so they leave the front and hold no claim back.
_DEFER_QUIET = text(f"""
    WITH front AS (
        SELECT d.user_id FROM deliveries d WHERE {_DUE} ORDER BY d.next_attempt_at LIMIT :scan),
    hushed AS MATERIALIZED (
        SELECT rd.user_id, {QUIET_ENDS} AS quiet_ends FROM alert_rules rd
        WHERE rd.user_id IN (SELECT user_id FROM front) AND {QUIET}),
    due AS (
        SELECT d.id, h.quiet_ends FROM deliveries d JOIN hushed h ON h.user_id = d.user_id WHERE {_DUE}
        FOR UPDATE OF d SKIP LOCKED)
    UPDATE deliveries d SET next_attempt_at = due.quiet_ends FROM due WHERE d.id = due.id
    RETURNING d.user_id
""")


async def defer_quiet(db: Executor) -> int:
    """Readers at the front whose quiet hours cover now, their due entries moved to the end of them; how many."""
    return len({row.user_id for row in await db.execute(_DEFER_QUIET, {"scan": SCAN})})


async def any_due(db: Executor) -> bool:
    """Whether any digest entry is due (taken by no sender, or its lease over)."""
    return bool(await db.scalar(text(f"SELECT EXISTS (SELECT 1 FROM deliveries d WHERE {_DUE})")))


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


# A story's link is its representative article's; a story merged into another links to the survivor's.
_LINKS = text("""
    SELECT s.id, r.url FROM story_clusters s
      LEFT JOIN story_clusters m ON m.id = s.merged_into_id
      JOIN articles r ON r.id = coalesce(m.representative_article_id, s.representative_article_id)
     WHERE s.id = ANY(CAST(:ids AS bigint[])) AND r.url IS NOT NULL
""")


async def story_links(db: Executor, story_ids: list[int]) -> dict[int, str]:
    """The page of each story that has one (stories since deleted have none)."""
    if not story_ids:
        return {}
    return {row.id: row.url for row in await db.execute(_LINKS, {"ids": story_ids})}
