"""Fan-out: each breaking story and each update of a followed story, read from the outbox, becomes in-app
notifications, webhook deliveries and digest entries for the readers whose rules match, in bounded batches.

Priorities: a breaking story is urgent (its webhooks are due at once), a followed story's update normal, a digest
entry batch. A batch is one transaction: it writes its rows and moves the event's progress on together, so a worker
that dies mid-way leaves the event to be taken again from the last committed batch, and the idempotency keys (unique
per reader, event and channel) make the replayed batch add nothing. An event whose batch keeps failing is dead after
`notify_max_attempts`, never retried forever. After each commit, the readers notified in-app are announced on Redis
(`notificationAdded` subscriptions)."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import RedisError
from sqlalchemy.exc import DBAPIError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.notifications import repository as fanouts
from app.notifications.fanout_sql import write_batch
from app.notifications.live import NOTIFICATION_ADDED
from app.observability.alerts import count_notified
from app.realtime.broadcast import publish
from app.settings import Settings
from app.stories.updates import STORY_UPDATED_TOPIC
from app.stories.velocity import BREAKING_TOPIC

log = logging.getLogger(__name__)

TOPICS = (BREAKING_TOPIC, STORY_UPDATED_TOPIC)
BATCHES_PER_RUN = 200  # one run stops after this many batches (the next run goes on)


@dataclass
class FanoutReport:
    batches: int = 0
    notified: int = 0
    webhooks: int = 0
    digests: int = 0
    dead: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class Alert:
    """What an outbox event is to readers, and what their rules match it on."""

    kind: str
    priority: str
    story_id: int
    title: str
    at: datetime | None
    topics: list[str]
    languages: list[str]
    payload: dict[str, Any]


async def fan_out(engine: AsyncEngine, settings: Settings, redis: Redis | None = None) -> FanoutReport:
    """Fans out every event waiting (up to BATCHES_PER_RUN batches)."""
    async with engine.begin() as connection:
        await fanouts.enqueue_events(connection, TOPICS, lookback_seconds=settings.notify_lookback_seconds)
    report = FanoutReport()
    while report.batches < BATCHES_PER_RUN:
        async with engine.begin() as connection:
            row = await fanouts.take_fanout(connection, TOPICS)
            if row is None:
                break
            notified = await _one_batch(connection, row, settings, report)
        report.batches += 1
        count_notified("breaking" if row.topic == BREAKING_TOPIC else "story_update", len(notified))
        if notified and redis is not None:
            await _announce(redis, row.event_id, notified)
    return report


async def _one_batch(connection: AsyncConnection, row: Any, settings: Settings, report: FanoutReport) -> list[int]:
    """One batch of readers of the event `row`, or its failure recorded; the readers notified in-app."""
    try:
        async with connection.begin_nested():
            alert = await _alert(connection, row.topic, row.payload, row.created_at)
            if alert is None:
                await fanouts.advance(connection, row.event_id, row.after_user_id, done=True)
                return []
            result = await _batch(connection, row, alert, settings)
    except (SQLAlchemyError, KeyError, TypeError, ValueError) as error:
        if isinstance(error, DBAPIError) and error.connection_invalidated:
            raise  # PostgreSQL went away: no failure of the event's; the run fails and the next one takes it up
        reason = f"{type(error).__name__}: {error}"
        status, wait = settings.notify_retries.settle(row.attempts + 1, True)
        await fanouts.mark_failed(connection, row.event_id, reason, dead=status == "dead", wait_seconds=wait)
        if status == "dead":
            report.dead.append(row.event_id)
            log.error("notifications: event %d is dead after %d failed fan-outs: %s", row.event_id,
                      row.attempts + 1, reason)  # fmt: skip
        else:
            log.warning("notifications: fanning out event %d failed, retried in %.1f s: %s", row.event_id, wait, reason)
        return []
    done = result.readers < settings.notify_batch
    await fanouts.advance(connection, row.event_id, result.last_user or row.after_user_id, done=done)
    notified = list(result.notified or [])
    report.notified += len(notified)
    report.webhooks += int(result.webhooks)
    report.digests += int(result.digests)
    return notified


async def _batch(connection: AsyncConnection, row: Any, alert: Alert, settings: Settings) -> Any:
    params: dict[str, Any] = {
        "after": row.after_user_id, "batch": settings.notify_batch, "event": row.event_id, "kind": alert.kind,
        "priority": alert.priority, "story": alert.story_id, "title": alert.title, "event_at": alert.at,
        "payload": json.dumps(alert.payload), "digest_hour": settings.digest_hour,
    }  # fmt: skip
    if alert.kind == "breaking":
        sources, entities = await fanouts.story_outlets(connection, alert.story_id)
        params |= {"topics": alert.topics, "languages": alert.languages, "sources": sources, "entities": entities}
    return await write_batch(connection, alert.kind, params)


async def _alert(connection: AsyncConnection, topic: str, payload: dict[str, Any], written: datetime) -> Alert | None:
    """The alert an event makes; None for one that alerts nobody (a story merged away, a story since deleted)."""
    story_id = int(payload["story_id"])
    if topic == BREAKING_TOPIC:
        at, title = datetime.fromisoformat(payload["at"]), str(payload.get("title", ""))
        topics, languages = [str(t) for t in payload.get("topics", [])], [str(x) for x in payload.get("languages", [])]
        body = {"type": topic, "kind": "breaking", "priority": "urgent", "story_id": story_id, "at": at.isoformat(),
                "title": title, "topics": topics, "languages": languages,
                "source_count": payload.get("source_count"), "article_count": payload.get("article_count")}  # fmt: skip
        return Alert("breaking", "urgent", story_id, title, at, topics, languages, body)
    if "merged_into" in payload:
        return None
    headline = await fanouts.story_title(connection, story_id)
    if headline is None:
        return None
    at = datetime.fromisoformat(payload["last_updated_at"]) if payload.get("last_updated_at") else written
    body = {"type": topic, "kind": "story_update", "priority": "normal", "story_id": story_id, "at": at.isoformat(),
            "title": headline, "source_count": payload.get("source_count"),
            "article_count": payload.get("article_count")}  # fmt: skip
    if payload.get("merged_from"):  # stories merged into this one: their followers follow it now
        body["merged_from"] = [int(i) for i in payload["merged_from"]]
    return Alert("story_update", "normal", story_id, headline, at, [], [], body)


async def _announce(redis: Redis, event_id: int, user_ids: list[int]) -> None:
    """Live `notificationAdded` subscribers hear of it; without Redis they read it in `notifications` later."""
    try:
        await publish(redis, NOTIFICATION_ADDED, {"event_id": event_id, "user_ids": user_ids})
    except (RedisError, OSError) as error:
        log.warning("notifications: %d reader(s) of event %d not told live (Redis): %s", len(user_ids), event_id,
                    error)  # fmt: skip
