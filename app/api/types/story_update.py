"""Live full coverage of one story: `storyUpdated` pushes a small StoryUpdate each time articles join the story (a new
outlet, a new count), and follows the story a merge folds it into."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from datetime import datetime
from typing import Any

import strawberry

from app.api.context import Info
from app.api.types.story import StoryNode, load_story
from app.services import Services
from app.stories import repository as stories
from app.stories.models import StoryCluster
from app.stories.updates import STORY_UPDATED_TOPIC


@strawberry.type(name="StoryUpdate", description="Articles joined a story (or it was merged into another).")
class StoryUpdate:
    article_count: int
    source_count: int = strawberry.field(description="How many outlets cover it now.")
    last_updated_at: datetime
    story_id: strawberry.Private[int]
    event: strawberry.Private[dict[str, Any] | None] = None
    loaded: strawberry.Private[StoryCluster | None] = None

    @strawberry.field(description="The story as it is now: its title, representative and coverage.")
    async def story(self, info: Info) -> StoryNode | None:
        if self.loaded is not None:
            return StoryNode.from_model(self.loaded)
        return await load_story(info, self.story_id)

    @classmethod
    def from_event(cls, event: dict[str, Any]) -> StoryUpdate:
        return cls(article_count=int(event["article_count"]), source_count=int(event["source_count"]),
                   last_updated_at=datetime.fromisoformat(event["last_updated_at"]),
                   story_id=int(event["story_id"]), event=event)  # fmt: skip

    @classmethod
    def from_model(cls, row: StoryCluster) -> StoryUpdate:
        return cls(article_count=row.article_count, source_count=row.source_count,
                   last_updated_at=row.last_updated_at, story_id=row.id, loaded=row)  # fmt: skip


async def current_story(services: Services, story_id: int) -> StoryCluster | None:
    """The story an id names now (a merged story's id leads to the one it joined)."""
    async with services.db() as session:
        return (await stories.stories_by_ids(session, [story_id])).get(story_id)


async def follow_story(services: Services, story: StoryCluster) -> AsyncGenerator[StoryUpdate, None]:
    """Updates of `story` newer than the state given (each once: a relay may publish an event twice); once it is
    merged, the story it joined: its state at that moment, then its updates. Listening first, then reading the state
    again, misses nothing in between: an update published after the caller read `story` and before the listener
    was attached comes as the story's state then."""
    following, seen, joined = story.id, story.revision, False  # joined: followed there after a merge
    while True:
        async with services.broadcaster.listen(STORY_UPDATED_TOPIC, story_id=following) as events:
            current = await current_story(services, following)
            if current is None:
                return
            if current.id != following:  # merged meanwhile: listen there
                following, joined = current.id, True
                continue
            if joined or current.revision > seen:
                joined, seen = False, current.revision
                yield StoryUpdate.from_model(current)
            while True:
                event = await events.get()
                revision = int(event.get("revision") or 0)
                if revision <= seen:
                    continue
                if event.get("merged_into"):
                    following, joined = int(event["merged_into"]), True
                    break
                try:
                    update = StoryUpdate.from_event(event)
                except (KeyError, TypeError, ValueError):
                    continue  # not an event this version understands
                seen = revision
                yield update
