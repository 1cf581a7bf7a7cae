"""Outbox jobs: pending events relayed to Redis (app/outbox/relay.py), delivered ones pruned."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

from app.ingest.events import ARTICLES_ADDED
from app.outbox import repository as outbox
from app.outbox.relay import relay_all
from app.search.sync import SEARCH_TOPIC
from app.services import Services
from app.stories.updates import STORY_UPDATED_TOPIC
from app.stories.velocity import BREAKING_TOPIC
from jobs.maintenance import delete_in_batches

PUSHED_TOPICS = (
    BREAKING_TOPIC,
    STORY_UPDATED_TOPIC,
    ARTICLES_ADDED,
)  # outbox topics the relay publishes on Redis, in this order


async def publish_outbox(services: Services) -> int:
    """Every pending event of PUSHED_TOPICS, topic by topic: breaking news never waits behind a busy hour's story
    updates, and a clustering batch that changed hundreds of stories is published in full."""
    return await relay_all(services.engine, services.redis, PUSHED_TOPICS)


async def relay_outbox_job(ctx: dict[str, Any]) -> int:
    """Every few seconds: outbox events not yet published (Redis was down, a worker died) go out."""
    return await publish_outbox(ctx["services"])


async def prune_outbox(ctx: dict[str, Any]) -> int:
    """Hourly: delivered events go once nobody reads them any more: breaking news after its catch-up window
    (`breakingEvents(after:)`), story updates and new articles (pushed live, kept for an API process's catch-up)
    and search-index events after their retention. Undelivered events stay."""
    services: Services = ctx["services"]
    settings, now = services.settings, datetime.now(UTC)
    retention = {BREAKING_TOPIC: timedelta(days=settings.breaking_events_retention_days),
                 STORY_UPDATED_TOPIC: timedelta(hours=settings.story_updates_retention_hours),
                 ARTICLES_ADDED: timedelta(hours=settings.articles_added_retention_hours),
                 SEARCH_TOPIC: timedelta(hours=settings.search_events_retention_hours)}  # fmt: skip
    deleted = 0
    for topic, kept in retention.items():
        prune = partial(outbox.prune_delivered, topic=topic, older_than=now - kept)
        deleted += await delete_in_batches(services.engine, prune)
    return deleted
