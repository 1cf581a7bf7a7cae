"""The outbox relay: committed events reach Redis pub/sub once, and survive Redis being down."""

from __future__ import annotations

import asyncio
import json

from redis.asyncio import Redis
from sqlalchemy import select

from app.outbox.models import OutboxEvent
from app.outbox.relay import relay
from app.realtime.broadcast import Broadcaster, channel_of, publish
from app.runtime.processes import free_port
from app.services import Services
from app.stories.velocity import BREAKING_TOPIC
from tests.newsroom import add_breaking_event


async def test_events_are_published_in_order_once(services: Services) -> None:
    pubsub = services.redis.pubsub(ignore_subscribe_messages=True)
    await pubsub.subscribe(channel_of(services.redis, BREAKING_TOPIC))
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


async def test_events_stay_within_their_redis_database(services: Services) -> None:
    """Pub/sub ignores database numbers: a deployment on another database of the same Redis server must not hear
    this one's events (it would look their ids up in its own database and push its readers the wrong articles)."""
    kwargs = services.redis.connection_pool.connection_kwargs
    neighbour = Redis(**{**kwargs, "db": int(kwargs.get("db", 0)) ^ 1})  # pub/sub only: nothing is stored there
    ours, theirs = Broadcaster(services.redis), Broadcaster(neighbour)
    try:
        async with ours.listen(BREAKING_TOPIC) as here, theirs.listen(BREAKING_TOPIC) as there:
            await add_breaking_event(services, 7)
            assert await relay(services.engine, services.redis, [BREAKING_TOPIC]) == 1
            assert (await asyncio.wait_for(here.get(), 10))["story_id"] == 7
            await publish(neighbour, BREAKING_TOPIC, {"story_id": 8})  # the neighbour's own, published after ours
            assert (await asyncio.wait_for(there.get(), 10))["story_id"] == 8  # ours never reached it
    finally:
        await ours.close()
        await theirs.close()
        await neighbour.aclose()
