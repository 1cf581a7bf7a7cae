"""Fan-out of one breaking story to 100,000 readers with alert rules: every in-app notification written and every
webhook (1,000 endpoints, on a real loopback receiver that verifies each signature) delivered.

Reported: the fan-out's time and rate, the webhook delivery's time, and the p99 from the story breaking (the event's
`at`) to delivery, for in-app notifications (committed) and webhooks (answered 2xx). The baseline, in the same run
and database, is a bare INSERT … SELECT of the same 100,000 notification rows with no rules, cap, idempotency or
channels: `ratio_fanout_to_bare_insert` is what they cost.

    python -m bench.notify [--readers 100000] [--endpoints 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import time
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from app.db.migrate import upgrade
from app.notifications.delivery import deliver_webhooks
from app.notifications.fanout import fan_out
from app.notifications.webhooks import webhook_client
from app.settings import Settings
from bench.ingest import scratch_database
from bench.webhook_receiver import receiver

SECRET = "whsec_" + secrets.token_urlsafe(24)


async def _readers(engine: AsyncEngine, readers: int, endpoints: int, url: str) -> None:
    async with engine.begin() as connection:
        await connection.execute(text("INSERT INTO users (email, password_hash) SELECT 'r' || g || '@example.com', 'x' "
                                      "FROM generate_series(1, :n) g"), {"n": readers})  # fmt: skip
        # rules: a third follow the story's topic, a third its language, a third take every breaking story
        await connection.execute(
            text("""
            INSERT INTO alert_rules (user_id, topics, languages, cap_per_hour)
            SELECT id, CASE WHEN id % 3 = 0 THEN '{world,politics}'::varchar[] ELSE '{}' END,
                   CASE WHEN id % 3 = 1 THEN '{en}'::varchar[] ELSE '{}' END, 20 FROM users""")
        )
        await connection.execute(text("INSERT INTO api_keys (user_id, name, key_hash) SELECT id, 'app', md5(id::text) "
                                      "FROM users WHERE id <= :n"), {"n": endpoints})  # fmt: skip
        await connection.execute(text("INSERT INTO webhook_endpoints (api_key_id, user_id, url, secret) "
                                      "SELECT id, user_id, :url, :secret FROM api_keys"),
                                 {"url": url + "/hook", "secret": SECRET})  # fmt: skip
        await connection.execute(text("ANALYZE"))


_BARE = """
    INSERT INTO bare_notifications (id, user_id, event_id, kind, priority, story_id, title)
    SELECT user_id, user_id, 1, 'breaking', 'urgent', 1, 'Story 1' FROM alert_rules
"""


async def _bare_insert(engine: AsyncEngine) -> float:
    async with engine.begin() as connection:
        await connection.execute(text("CREATE TABLE bare_notifications (LIKE notifications INCLUDING ALL)"))
    started = time.perf_counter()
    async with engine.begin() as connection:
        await connection.execute(text(_BARE))
    return time.perf_counter() - started


async def _breaking(engine: AsyncEngine) -> None:
    payload = {"story_id": 1, "title": "Dam bursts upstream", "article_count": 70, "source_count": 6,
               "topics": ["world"], "languages": ["en"], "velocity": 2.3,
               "at": datetime.now(UTC).isoformat()}  # fmt: skip
    add = (
        "INSERT INTO outbox (topic, dedupe_key, payload) "
        "VALUES ('story.breaking', 'story.breaking:1', CAST(:p AS jsonb))"
    )
    async with engine.begin() as connection:
        await connection.execute(text(add), {"p": json.dumps(payload)})


_P99 = text("""
    SELECT (SELECT percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM n.created_at - e.at))
            FROM notifications n) AS in_app,
           (SELECT percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM delivered_at - event_at))
            FROM deliveries WHERE status = 'delivered') AS webhook,
           (SELECT count(*) FROM notifications) AS notifications,
           (SELECT count(*) FROM deliveries WHERE status = 'delivered') AS delivered
    FROM (SELECT CAST(payload->>'at' AS timestamptz) AS at FROM outbox WHERE id = 1) e
""")


async def run(readers: int, endpoints: int) -> dict[str, Any]:
    async with scratch_database() as url, receiver() as hook:
        hook.secrets["/hook"] = SECRET
        engine = create_async_engine(url, pool_size=4)
        await upgrade(engine)
        settings = Settings(_env_file=None, database_url=url, webhooks_allow_loopback=True)  # type: ignore[call-arg]
        await _readers(engine, readers, endpoints, hook.url)
        bare = await _bare_insert(engine)
        await _breaking(engine)
        started = time.perf_counter()
        batches = 0
        while done := (await fan_out(engine, settings)).batches:
            batches += done
        fanned = time.perf_counter() - started
        async with webhook_client(settings) as client:
            while (await deliver_webhooks(engine, client, settings)).delivered:
                pass
        delivered = time.perf_counter() - started
        async with engine.connect() as connection:
            found = (await connection.execute(_P99)).one()
        await engine.dispose()
    return {"bench": "notify", "readers": readers, "endpoints": endpoints, "batches": batches,
            "notifications": found.notifications, "webhooks_delivered": found.delivered,
            "webhooks_received_verified": len(hook.received), "bad_signatures": hook.invalid,
            "fanout_seconds": round(fanned, 3), "fanout_rate_per_s": round(found.notifications / fanned),
            "all_delivered_seconds": round(delivered, 3),
            "p99_breaking_to_in_app_s": round(float(found.in_app), 3),
            "p99_breaking_to_webhook_s": round(float(found.webhook), 3),
            "bare_insert_seconds": round(bare, 3), "ratio_fanout_to_bare_insert": round(fanned / bare, 2)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--readers", type=int, default=100_000)
    parser.add_argument("--endpoints", type=int, default=1000)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(run(args.readers, args.endpoints))))


if __name__ == "__main__":
    main()
