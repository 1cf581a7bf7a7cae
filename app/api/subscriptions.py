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
from app.api.relay import id_of
from app.api.types.article import ArticleNode
from app.api.types.breaking import BreakingEvent
from app.api.types.enums import TopicEnum
from app.api.types.story_update import StoryUpdate, current_story, follow_story
from app.articles import repository as articles
from app.ingest.events import ARTICLES_ADDED
from app.services import Services
from app.stories.velocity import BREAKING_TOPIC

_LOADERS = "_loaders"


def event_loaders(services: Services, event: dict[str, Any]) -> Loaders:
    """DataLoaders shared by every subscriber of this process that receives this event (the broadcaster hands them
    all the same object): 5,000 subscribers asking for the story and its lead article make one query per hop, not
    5,000. They live as long as the event, so a long-lived connection's loaders never grow."""
    loaders: Loaders | None = event.get(_LOADERS)
    if loaders is None:
        loaders = event[_LOADERS] = Loaders.for_request(services.db)
    return loaders


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
            async with services.db() as session:  # one query per event; a subscription's loaders would only grow
                rows = await articles.articles_by_ids(session, event["article_ids"])
            for row in sorted(rows, key=lambda r: r.id):
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
                info.context.loaders = event_loaders(info.context.services, event)
                yield found

    @strawberry.subscription(description="Live full coverage of one story: an update each time articles join it (a "
                                         "new outlet, a new count). A story merged into another is followed there. "
                                         "An id that names no story is a NOT_FOUND error at subscribe "
                                         "time.")  # fmt: skip
    async def story_updated(self, info: Info, id: relay.GlobalID) -> AsyncGenerator[StoryUpdate, None]:
        services = info.context.services
        story = await current_story(services, id_of(id, "Story", "id"))
        if story is None:
            raise BadRequest("NOT_FOUND", "no story has this id")
        return follow_story(services, story)
