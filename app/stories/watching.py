"""One story watched live (the API's `storyUpdated`): its changes as they are published (app/stories/updates.py), each
once, and after a merge the changes of the story it was folded into. Not a reader following a story for alerts
(app/notifications/rules.py `follow_story`): nothing is stored, the watch lasts as long as its subscription."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.realtime.broadcast import Broadcaster
from app.stories import repository as stories
from app.stories.models import StoryCluster
from app.stories.updates import STORY_UPDATED_TOPIC

Sessions = Callable[[], AbstractAsyncContextManager[AsyncSession]]


@dataclass(frozen=True, slots=True)
class StoryChange:
    """Articles joined a story (or the watch moved to the story a merge folded it into): its counts now, from a
    published event (`event`) or as read from the table (`row`)."""

    story_id: int
    article_count: int
    source_count: int
    last_updated_at: datetime
    event: dict[str, Any] | None = None
    row: StoryCluster | None = None

    @classmethod
    def from_event(cls, event: dict[str, Any]) -> StoryChange:
        """KeyError, TypeError or ValueError for an event without the counts (not one this version understands)."""
        return cls(int(event["story_id"]), int(event["article_count"]), int(event["source_count"]),
                   datetime.fromisoformat(event["last_updated_at"]), event=event)  # fmt: skip

    @classmethod
    def from_row(cls, row: StoryCluster) -> StoryChange:
        return cls(row.id, row.article_count, row.source_count, row.last_updated_at, row=row)


async def current_story(sessions: Sessions, story_id: int) -> StoryCluster | None:
    """The story an id names now (a merged story's id leads to the one it joined)."""
    async with sessions() as session:
        return (await stories.stories_by_ids(session, [story_id])).get(story_id)


async def watch_story(broadcaster: Broadcaster, sessions: Sessions,
                      story: StoryCluster) -> AsyncGenerator[StoryChange, None]:  # fmt: skip
    """Changes of `story` newer than the state given (each once: a relay may publish an event twice); once it is
    merged, the story it joined: its state at that moment, then its changes. Listening first, then reading the state
    again, misses nothing in between: a change published after the caller read `story` and before the listener
    was attached comes as the story's state then."""
    following, seen, joined = story.id, story.revision, False  # joined: followed there after a merge
    while True:
        async with broadcaster.listen(STORY_UPDATED_TOPIC, story_id=following) as events:
            current = await current_story(sessions, following)
            if current is None:
                return
            if current.id != following:  # merged meanwhile: listen there
                following, joined = current.id, True
                continue
            if joined or current.revision > seen:
                joined, seen = False, current.revision
                yield StoryChange.from_row(current)
            while True:
                event = await events.get()
                revision = int(event.get("revision") or 0)
                if revision <= seen:
                    continue
                if event.get("merged_into"):
                    following, joined = int(event["merged_into"]), True
                    break
                try:
                    change = StoryChange.from_event(event)
                except (KeyError, TypeError, ValueError):
                    continue  # not an event this version understands
                seen = revision
                yield change
