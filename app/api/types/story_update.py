"""Live full coverage of one story: `storyUpdated` pushes a small StoryUpdate each time articles join the story (a new
outlet, a new count), and follows the story a merge folds it into (app/stories/watching.py)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import strawberry

from app.api.context import Info
from app.api.types.story import StoryNode, load_story
from app.stories.models import StoryCluster
from app.stories.watching import StoryChange


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
    def of(cls, change: StoryChange) -> StoryUpdate:
        return cls(article_count=change.article_count, source_count=change.source_count,
                   last_updated_at=change.last_updated_at, story_id=change.story_id, event=change.event,
                   loaded=change.row)  # fmt: skip
