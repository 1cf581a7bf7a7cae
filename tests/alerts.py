"""Factories for the notification tests: readers with alert rules, webhook endpoints, breaking events in bulk."""

from __future__ import annotations

import asyncio
import secrets
from typing import Any

from sqlalchemy import text

from app.notifications.live import NOTIFICATION_ADDED
from app.notifications.models import AlertRules, WebhookEndpoint
from app.services import Services
from app.users.models import ApiKey, User
from tests.conftest import until_listening


async def add_reader(services: Services, email: str, **rules: Any) -> int:
    """A reader whose alert rules are `rules` (over the defaults: every breaking story, cap 10, no digest)."""
    async with services.db.begin() as session:
        user = User(email=email, password_hash="x")
        session.add(user)
        await session.flush()
        session.add(AlertRules(user_id=user.id, **rules))
        return user.id


async def add_readers(services: Services, count: int, **rules: Any) -> None:
    """`count` readers with the same rules, in one statement each."""
    async with services.engine.begin() as connection:
        await connection.execute(text("INSERT INTO users (email, password_hash) "
                                      "SELECT 'bulk' || g || '@example.com', 'x' FROM generate_series(1, :n) g"),
                                 {"n": count})  # fmt: skip
        await connection.execute(text("INSERT INTO alert_rules (user_id) SELECT id FROM users "
                                      "WHERE email LIKE 'bulk%' ON CONFLICT DO NOTHING"))  # fmt: skip
        if rules:
            sets = ", ".join(f"{name} = :{name}" for name in rules)
            await connection.execute(text(f"UPDATE alert_rules SET {sets}"), rules)


async def add_endpoint(services: Services, user_id: int, url: str) -> tuple[int, str]:
    """A webhook endpoint on a new API key of the reader: its id and signing secret."""
    secret = "whsec_" + secrets.token_urlsafe(24)
    async with services.db.begin() as session:
        key = ApiKey(user_id=user_id, name="app", key_hash=secrets.token_hex(32))
        session.add(key)
        await session.flush()
        endpoint = WebhookEndpoint(api_key_id=key.id, user_id=user_id, url=url, secret=secret)
        session.add(endpoint)
        await session.flush()
        return endpoint.id, secret


async def add_hooked_readers(services: Services, urls: list[str]) -> None:
    """One reader per URL (default rules), each with an API key and a webhook endpoint there, in one statement."""
    async with services.engine.begin() as connection:
        await connection.execute(text("""
            WITH hooks AS (SELECT url, n FROM unnest(CAST(:urls AS text[])) WITH ORDINALITY AS h(url, n)),
            readers AS (
                INSERT INTO users (email, password_hash) SELECT 'hooked' || n || '@example.com', 'x' FROM hooks
                RETURNING id, email),
            rules AS (INSERT INTO alert_rules (user_id) SELECT id FROM readers),
            keys AS (
                INSERT INTO api_keys (user_id, name, key_hash) SELECT id, 'app', md5(email) || md5(random()::text)
                FROM readers RETURNING id, user_id)
            INSERT INTO webhook_endpoints (api_key_id, user_id, url, secret)
            SELECT k.id, k.user_id, h.url, 'whsec_' || md5(random()::text) FROM keys k
            JOIN readers r ON r.id = k.user_id JOIN hooks h ON 'hooked' || h.n || '@example.com' = r.email"""),
            {"urls": urls})  # fmt: skip


async def add_breaking_events(services: Services, count: int, topic: str = "world") -> None:
    """`count` breaking events about stories 1..count, as app/stories/velocity.py writes them, in one statement."""
    async with services.engine.begin() as connection:
        await connection.execute(text("""
            INSERT INTO outbox (topic, dedupe_key, payload)
            SELECT 'story.breaking', 'story.breaking:' || g, jsonb_build_object(
                'story_id', g, 'title', 'Story ' || g, 'article_count', 70, 'source_count', 6,
                'topics', jsonb_build_array(CAST(:topic AS text)), 'languages', jsonb_build_array('en'),
                'velocity', 2.3, 'at', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US+00:00'))
            FROM generate_series(1, :n) g"""), {"n": count, "topic": topic})  # fmt: skip


async def count(services: Services, sql: str, **params: Any) -> int:
    async with services.engine.connect() as connection:
        return int(await connection.scalar(text(sql), params) or 0)


async def until_subscribed(services: Services, count: int, seconds: float = 10) -> None:
    """Until `count` notificationAdded subscriptions of this process know where they start and its router hears
    the fan-out's announcements: a notification written from then on reaches them."""
    async with asyncio.timeout(seconds):
        while True:
            if services.notifications.subscriptions() >= count:
                break
            await asyncio.sleep(0.01)
    await until_listening(services, NOTIFICATION_ADDED)


async def add_digest_entries(services: Services, user_ids: list[int], count: int, *, title: str = "Story") -> None:
    """`count` digest entries of each reader, due now, about stories 1..count (every 100th urgent, the others story
    updates; story n broke n minutes ago), as the fan-out writes them, in one statement."""
    async with services.engine.begin() as connection:
        await connection.execute(text("""
            INSERT INTO deliveries (idempotency_key, user_id, event_id, channel, priority, next_attempt_at, payload,
                                    event_at)
            SELECT g || '/' || u || '/email', u, g, 'email', 'batch', now(), jsonb_build_object(
                       'story_id', g, 'title', CAST(:title AS text) || ' ' || g, 'source_count', 6, 'at', now()::text,
                       'priority', CASE WHEN g % 100 = 0 THEN 'urgent' ELSE 'normal' END),
                   now() - g * interval '1 minute'
            FROM unnest(CAST(:users AS bigint[])) u, generate_series(1, :n) g"""),
            {"users": user_ids, "n": count, "title": title})  # fmt: skip
