"""Breaking news events: a story became breaking (once per story). Live over `breakingNews`, and afterwards through
`breakingEvents(after: cursor)`, so a client that was offline catches up with exactly what it missed."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

import strawberry
from strawberry import relay

from app.api.context import Info
from app.api.filters import topics_of
from app.api.relay import database_id, encode_cursor
from app.api.types.enums import TopicEnum
from app.api.types.story import StoryNode, load_story
from app.outbox import repository as outbox
from app.stories.velocity import BREAKING_TOPIC
from app.topics.keywords import Topic

CURSOR_KIND = "breaking"


@strawberry.type(name="BreakingEvent", description="A story became breaking: > 2 articles/min from ≥ 5 outlets.")
class BreakingEvent(relay.Node):
    id: relay.NodeID[int]
    cursor: str = strawberry.field(description="Pass to `breakingEvents(after:)` to get what followed this event.")
    at: datetime
    title: str
    velocity: float = strawberry.field(description="Articles per minute over the velocity window (30 minutes) then.")
    source_count: int
    topics: list[TopicEnum]  # type: ignore[valid-type]
    languages: list[str]
    story_id: strawberry.Private[int]

    @strawberry.field(description="The story as it is now (a story merged since leads to the one it joined).")
    async def story(self, info: Info) -> StoryNode | None:
        return await load_story(info, self.story_id)

    @classmethod
    async def resolve_nodes(  # type: ignore[override]
        cls, *, info: Info, node_ids: Iterable[str], required: bool = False
    ) -> Iterable[BreakingEvent | None]:
        ids = [database_id(i) for i in node_ids]
        async with info.context.services.db() as session:
            found = {e.id: e for e in await outbox.events_by_ids(session, BREAKING_TOPIC, ids)}
        return [cls.from_event(i, found[i].payload) if i in found else None for i in ids]

    @classmethod
    def from_event(cls, event_id: int, payload: dict[str, Any]) -> BreakingEvent:
        return cls(
            id=event_id, cursor=encode_cursor(CURSOR_KIND, [event_id]), at=datetime.fromisoformat(payload["at"]),
            title=payload.get("title", ""), velocity=float(payload.get("velocity", 0.0)),
            source_count=int(payload.get("source_count", 0)),
            topics=topics_of(payload.get("topics", [])),
            languages=list(payload.get("languages", [])), story_id=int(payload["story_id"]),
        )  # fmt: skip

    def wanted(self, topics: list[str], languages: list[str]) -> bool:
        """Matches a subscriber's filters: any of its topics, any of its languages (no filter: everything)."""
        return (not topics or any(Topic(t).value in topics for t in self.topics)) and (
            not languages or any(language in languages for language in self.languages)
        )
