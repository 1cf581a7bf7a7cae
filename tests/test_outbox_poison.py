"""A poisoned outbox event (one Redis refuses while it answers everything else) is set aside, lets the events after
it through, and is dead after its attempts: never retried forever. Runs a Redis server of its own."""

from __future__ import annotations

from pathlib import Path

from redis.asyncio import Redis
from sqlalchemy import text

from app.outbox.models import OutboxEvent
from app.outbox.relay import relay
from app.services import Services
from app.stories.velocity import BREAKING_TOPIC
from tests.newsroom import add_breaking_event
from tests.test_redis_outage import own_redis


async def test_an_event_redis_refuses_is_dead_after_its_attempts(services: Services, tmp_path: Path) -> None:
    with own_redis(tmp_path / "redis") as server:
        redis = Redis.from_url(server.url())
        await redis.config_set("proto-max-bulk-len", "1mb")  # this server's own limit: a 2 MB event is refused
        async with services.db.begin() as session:
            session.add(
                OutboxEvent(topic=BREAKING_TOPIC, dedupe_key="huge", payload={"story_id": 1, "title": "x" * 2**21})
            )
        await add_breaking_event(services, 2)
        assert await relay(services.engine, redis, [BREAKING_TOPIC], max_attempts=3) == 1  # the next one goes out
        for _ in range(4):
            async with services.engine.begin() as connection:  # its back-off over
                await connection.execute(text("UPDATE outbox SET retry_at = now() WHERE dedupe_key = 'huge'"))
            assert await relay(services.engine, redis, [BREAKING_TOPIC], max_attempts=3) == 0
        async with services.engine.connect() as connection:
            row = (await connection.execute(text("SELECT attempts, dead_at, delivered_at, last_error FROM outbox "
                                                 "WHERE dedupe_key = 'huge'"))).one()  # fmt: skip
        await redis.aclose()
    assert row.attempts == 3
    assert row.dead_at is not None
    assert row.delivered_at is None
    assert row.last_error
