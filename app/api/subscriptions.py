"""Root subscription fields, fed by Redis pub/sub through the process's Broadcaster."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

import strawberry
from strawberry import relay

from app.api.context import Info
from app.api.errors import BadRequest
from app.api.filters import language_codes, topic_values
from app.api.loaders import Loaders
from app.api.notifications import new_notifications
from app.api.relay import id_of
from app.api.types.article import ArticleNode
from app.api.types.breaking import BreakingEvent
from app.api.types.enums import TopicEnum
from app.api.types.notification import NotificationNode
from app.api.types.story_update import StoryUpdate
from app.ingest.events import ARTICLES_ADDED
from app.stories.models import StoryCluster
from app.stories.velocity import BREAKING_TOPIC
from app.stories.watching import current_story, watch_story


def _resolving(info: Info, event: dict[str, Any] | None) -> None:
    """What a subscription yields for an event resolves with that event's loaders (Loaders.for_event): shared by
    every subscriber of the process, fresh for each event. A value with no event gets loaders of its own. Only this
    operation's context changes: each operation on a socket has its own (app/api/websocket.py)."""
    db = info.context.services.db
    info.context.loaders = Loaders.for_event(db, event) if event is not None else Loaders.for_request(db)


@strawberry.type
class Subscription:
    @strawberry.subscription(description="Articles as they are stored, optionally from one source only.")
    async def article_added(
        self, info: Info, source_id: relay.GlobalID | None = None
    ) -> AsyncGenerator[ArticleNode, None]:
        wanted = id_of(source_id, "Source", "sourceId") if source_id else None
        services = info.context.services
        async for event in services.broadcaster.subscribe(ARTICLES_ADDED):
            if wanted is not None and event.get("source_id") != wanted:
                continue
            _resolving(info, event)
            rows = await info.context.loaders.article_by_id.load_many(event["article_ids"])
            for row in sorted((r for r in rows if r is not None), key=lambda r: r.id):
                yield ArticleNode.from_model(row)

    @strawberry.subscription(description="Stories as they become breaking (each once), optionally only about some "
                                         "topics or with articles in some languages (ISO 639-1). Each event has a "
                                         "cursor: after a reconnect, `breakingEvents(after:)` returns what was "
                                         "missed.")  # fmt: skip
    async def breaking_news(
        self,
        info: Info,
        topics: list[TopicEnum] | None = None,  # type: ignore[valid-type]
        languages: list[str] | None = None,
    ) -> AsyncGenerator[BreakingEvent, None]:
        wanted_topics = topic_values(topics)
        wanted_languages = language_codes(languages)
        async for event in info.context.services.broadcaster.subscribe(BREAKING_TOPIC):
            try:
                found = BreakingEvent.from_event(int(event["event_id"]), event)
            except (KeyError, TypeError, ValueError):
                continue  # not an event this version understands
            if found.wanted(wanted_topics, wanted_languages):
                _resolving(info, event)
                yield found

    @strawberry.subscription(description="Your new in-app notifications as they are written, each once, none lost "
                                         "while Redis is away (sign in over connection_init). `after`: the last "
                                         "notification you received, to resume after a reconnect: those written "
                                         "since come first (the newest 500 at most). Signing out (or revoking the "
                                         "API key) ends it with UNAUTHENTICATED.")  # fmt: skip
    async def notification_added(
        self, info: Info, after: relay.GlobalID | None = None
    ) -> AsyncGenerator[NotificationNode, None]:
        async for found in new_notifications(info, after):
            _resolving(info, None)
            yield found

    @strawberry.subscription(description="Live full coverage of one story: an update each time articles join it (a "
                                         "new outlet, a new count). A story merged into another is followed there. "
                                         "An id that names no story is a NOT_FOUND error at subscribe "
                                         "time.")  # fmt: skip
    async def story_updated(self, info: Info, id: relay.GlobalID) -> AsyncGenerator[StoryUpdate, None]:
        services = info.context.services
        story = await current_story(services.db, id_of(id, "Story", "id"))
        if story is None:
            raise BadRequest("NOT_FOUND", "no story has this id")
        return _updates(info, story)


async def _updates(info: Info, story: StoryCluster) -> AsyncGenerator[StoryUpdate, None]:
    services = info.context.services
    async for change in watch_story(services.broadcaster, services.db, story):
        _resolving(info, change.event)
        yield StoryUpdate.of(change)
