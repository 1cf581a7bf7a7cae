"""Outbox jobs: pending events relayed to Redis (app/outbox/relay.py); delivered ones go with retention."""

from __future__ import annotations

from typing import Any

from app.ingest.events import ARTICLES_ADDED
from app.outbox.relay import relay_all
from app.services import Services
from app.stories.updates import STORY_UPDATED_TOPIC
from app.stories.velocity import BREAKING_TOPIC

PUSHED_TOPICS = (
    BREAKING_TOPIC,
    STORY_UPDATED_TOPIC,
    ARTICLES_ADDED,
)  # outbox topics the relay publishes on Redis, in this order


async def publish_outbox(services: Services) -> int:
    """Every pending event of PUSHED_TOPICS, topic by topic: breaking news never waits behind a busy hour's story
    updates, and a clustering batch that changed hundreds of stories is published in full."""
    return await relay_all(
        services.engine, services.redis, PUSHED_TOPICS, max_attempts=services.settings.outbox_max_attempts
    )


async def relay_outbox_job(ctx: dict[str, Any]) -> int:
    """Every few seconds: outbox events not yet published (Redis was down, a worker died) go out."""
    return await publish_outbox(ctx["services"])
