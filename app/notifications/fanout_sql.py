"""The fan-out statement: one batch of readers matching an event becomes in-app notifications, webhook deliveries
and digest entries in a single set-based INSERT … SELECT … ON CONFLICT DO NOTHING (so running it twice adds
nothing), and its execution. Readers are walked in user id order; the statement returns where the batch ended.

- the hourly cap is counted atomically in `alert_hours` (an upsert that only counts while under the reader's cap);
  a reader already notified of this event is not counted again;
- quiet hours, in the reader's IANA time zone, defer webhooks to the end of the quiet period (in-app notifications
  are written at once: the reader sees them when they open the app);
- a rule with a region takes only the stories local to it (app/places' notion: a place named, an outlet there);
- the digest takes every matching event, capped or not, due at the next hour (hourly) or the next `digest_hour`
  local time (daily).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import text

from app.db.engine import Executor
from app.places.repository import countries_of_story

# Columns every reader batch provides: user_id, cap_per_hour, time_zone, quiet_start, quiet_end, digest.
# A rule's region (a country) matches a story local to it in the sense of app/places (a place named or an outlet
# there), read once per batch as an uncorrelated subquery.
BREAKING_READERS = f"""
    SELECT r.user_id, r.cap_per_hour, r.time_zone, r.quiet_start, r.quiet_end, r.digest FROM alert_rules r
    WHERE r.user_id > :after AND r.breaking
      AND (cardinality(r.languages) = 0 OR r.languages && CAST(:languages AS varchar[]))
      AND ((cardinality(r.topics) = 0 AND cardinality(r.source_ids) = 0 AND cardinality(r.entities) = 0)
           OR r.topics && CAST(:topics AS varchar[]) OR r.source_ids && CAST(:sources AS bigint[])
           OR r.entities && CAST(:entities AS varchar[]))
      AND (r.region IS NULL OR r.region IN ({countries_of_story("CAST(:story AS bigint)")}))
    ORDER BY r.user_id LIMIT :batch
"""

FOLLOWER_READERS = """
    SELECT r.user_id, r.cap_per_hour, r.time_zone, r.quiet_start, r.quiet_end, r.digest
    FROM story_follows f JOIN alert_rules r ON r.user_id = f.user_id
    WHERE f.story_id = :story AND f.user_id > :after AND r.story_updates
    ORDER BY f.user_id LIMIT :batch
"""

_LOCAL = "(now() AT TIME ZONE rd.time_zone)"
_MINUTE = f"(extract(hour FROM {_LOCAL}) * 60 + extract(minute FROM {_LOCAL}))"
# Whether the reader `rd` (time_zone, quiet_start, quiet_end) is in their quiet hours now, and when they end; the
# digest's claim reads them too (app/notifications/digest_repository.py).
QUIET = f"""(rd.quiet_start IS NOT NULL AND rd.quiet_end IS NOT NULL AND CASE
    WHEN rd.quiet_start < rd.quiet_end THEN {_MINUTE} >= rd.quiet_start AND {_MINUTE} < rd.quiet_end
    ELSE {_MINUTE} >= rd.quiet_start OR {_MINUTE} < rd.quiet_end END)"""


def _next_local(minutes: str) -> str:
    """The next moment (after now) the reader's local clock shows `minutes` past midnight, as a timestamptz."""
    at = f"(date_trunc('day', {_LOCAL}) + ({minutes}) * interval '1 minute')"
    return (
        f"(({at} + CASE WHEN {at} <= {_LOCAL} THEN interval '1 day' ELSE interval '0' END) AT TIME ZONE rd.time_zone)"
    )


QUIET_ENDS = _next_local("rd.quiet_end")
PUSH_AT = f"CASE WHEN {QUIET} THEN {QUIET_ENDS} ELSE now() END"
DIGEST_AT = f"""CASE WHEN rd.digest = 'hourly' THEN date_trunc('hour', now()) + interval '1 hour'
                     ELSE {_next_local(":digest_hour * 60")} END"""


def fan_out_statement(readers: str) -> str:
    return f"""
    WITH readers AS ({readers}),
    fresh AS (
        SELECT rd.* FROM readers rd  -- a hashed subplan: one index range scan, not a probe per reader
        WHERE rd.user_id NOT IN (SELECT n.user_id FROM notifications n
                                 WHERE n.event_id = :event AND n.user_id > :after)),
    counted AS (
        INSERT INTO alert_hours AS h (user_id, hour, sent)
        SELECT user_id, date_trunc('hour', now()), 1 FROM fresh WHERE cap_per_hour > 0
        ON CONFLICT (user_id, hour) DO UPDATE SET sent = h.sent + 1
        WHERE h.sent < (SELECT r.cap_per_hour FROM alert_rules r WHERE r.user_id = h.user_id)
        RETURNING user_id),
    in_app AS (
        INSERT INTO notifications (user_id, event_id, kind, priority, story_id, title)
        SELECT user_id, :event, :kind, :priority, :story, :title FROM counted
        ON CONFLICT (event_id, user_id) DO NOTHING
        RETURNING user_id),
    hooks AS (
        INSERT INTO deliveries (idempotency_key, user_id, event_id, channel, endpoint_id, priority, next_attempt_at,
                                payload, event_at)
        SELECT :event || '/' || rd.user_id || '/webhook/' || e.id, rd.user_id, :event, 'webhook', e.id, :priority,
               {PUSH_AT}, CAST(:payload AS jsonb), :event_at
        FROM counted c JOIN readers rd ON rd.user_id = c.user_id
        JOIN webhook_endpoints e ON e.user_id = rd.user_id AND e.active
        JOIN api_keys k ON k.id = e.api_key_id AND k.revoked_at IS NULL
        ON CONFLICT (idempotency_key) DO NOTHING
        RETURNING 1),
    digests AS (
        INSERT INTO deliveries (idempotency_key, user_id, event_id, channel, priority, next_attempt_at, payload,
                                event_at)
        SELECT :event || '/' || rd.user_id || '/email', rd.user_id, :event, 'email', 'batch', {DIGEST_AT},
               CAST(:payload AS jsonb), :event_at
        FROM fresh rd WHERE rd.digest <> 'none'
        ON CONFLICT (idempotency_key) DO NOTHING
        RETURNING 1)
    SELECT (SELECT max(user_id) FROM readers) AS last_user, (SELECT count(*) FROM readers) AS readers,
           (SELECT array_agg(user_id) FROM in_app) AS notified, (SELECT count(*) FROM hooks) AS webhooks,
           (SELECT count(*) FROM digests) AS digests
    """


_FAN_OUT = {
    "breaking": text(fan_out_statement(BREAKING_READERS)),
    "story_update": text(fan_out_statement(FOLLOWER_READERS)),
}


async def write_batch(db: Executor, kind: str, params: dict[str, Any]) -> Any:
    """One batch of the readers of an alert of `kind` (breaking, story_update) written: (last_user, readers, notified,
    webhooks, digests)."""
    # asyncpg prepares the statement, and PostgreSQL's generic plan for it (chosen from the sixth run on) walks
    # readers without knowing `after`: 10 times slower per batch. A custom plan each time.
    await db.execute(text("SET LOCAL plan_cache_mode = force_custom_plan"))
    return (await db.execute(_FAN_OUT[kind], params)).one()
