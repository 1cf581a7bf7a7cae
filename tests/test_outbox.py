"""The outbox relay: committed events reach Redis pub/sub once, and survive Redis being down."""

from __future__ import annotations

import asyncio
import json

from redis.asyncio import Redis
from sqlalchemy import select

from app.outbox.models import OutboxEvent
from app.outbox.relay import relay
from app.realtime.broadcast import CHANNEL_PREFIX
from app.runtime.processes import free_port
from app.services import Services
from app.stories.velocity import BREAKING_TOPIC
from tests.newsroom import add_breaking_event


async def test_events_are_published_in_order_once(services: Services) -> None:
    pubsub = services.redis.pubsub(ignore_subscribe_messages=True)
    await pubsub.subscribe(CHANNEL_PREFIX + BREAKING_TOPIC)
    await add_breaking_event(services, 7)
    await add_breaking_event(services, 8)
    assert await relay(services.engine, services.redis, [BREAKING_TOPIC]) == 2
    assert await relay(services.engine, services.redis, [BREAKING_TOPIC]) == 0  # delivered ones stay delivered
    received = []
    while len(received) < 2:
        message = await asyncio.wait_for(pubsub.get_message(timeout=5), timeout=6)
        if message:
            received.append(json.loads(message["data"]))
    assert [r["story_id"] for r in received] == [7, 8]
    assert received[0]["event_id"] < received[1]["event_id"]
    await pubsub.aclose()


async def test_events_wait_in_the_outbox_while_redis_is_down(services: Services) -> None:
    down = Redis(host="127.0.0.1", port=free_port(), socket_connect_timeout=1)  # a port nothing listens on
    await add_breaking_event(services, 9)
    assert await relay(services.engine, down, [BREAKING_TOPIC]) == 0
    async with services.db() as session:
        [event] = await session.scalars(select(OutboxEvent))
    assert event.delivered_at is None
    assert event.attempts == 1
    assert "ConnectionError" in (event.last_error or "")
    assert await relay(services.engine, services.redis, [BREAKING_TOPIC]) == 1  # Redis is back: delivered
    async with services.db() as session:
        [event] = await session.scalars(select(OutboxEvent))
    assert event.delivered_at is not None
    await down.aclose()
