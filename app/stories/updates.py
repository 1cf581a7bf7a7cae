"""Story updates for live full coverage: one small `story.updated` outbox event each time articles join a story (or
a story is merged into another), written in the transaction that saves the story, so it is pushed exactly when the
change is committed. The key is (story, revision): a replay or a second relay of one save adds nothing.

A story created by the same save gets no event: nobody can be following an id that did not exist yet, and most
stories are new ones, so this keeps the outbox to the stories people can be watching."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from app.stories.state import Story

STORY_UPDATED_TOPIC = "story.updated"


def update_events(grown: Sequence[Story], retired: Mapping[int, int], revision: int) -> dict[str, dict[str, Any]]:
    """Events by deduplication key for the stories that `grown` holds and for each retired story -> the story it was
    merged into, written with the save (app/stories/store.py)."""

    def key(story_id: int) -> str:
        return f"{STORY_UPDATED_TOPIC}:{story_id}:{revision}"

    events: dict[str, dict[str, Any]] = {
        key(old): {"story_id": old, "merged_into": into, "revision": revision} for old, into in retired.items()
    }
    absorbed: dict[int, list[int]] = {}
    for old, into in sorted(retired.items()):
        absorbed.setdefault(into, []).append(old)
    events |= {key(s.id): {
        "story_id": s.id, "article_count": s.size, "source_count": len(s.sources),
        "last_updated_at": s.last_updated.isoformat(), "revision": revision,
    } | ({"merged_from": absorbed[s.id]} if s.id in absorbed else {}) for s in grown}  # fmt: skip
    return events
