"""Places for the edge and the feeds: a region's stories (about it or from it), a story's places and perspectives."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from app.db.engine import Executor
from app.places import repository
from app.places.perspectives import StoryPerspectives, perspectives_by_story


async def region_stories(db: Executor, country: str, since: datetime) -> tuple[dict[int, int], list[int]]:
    """(story -> its articles naming a place in the country since `since`, the country's outlets)."""
    return await repository.stories_about(db, country, since), await repository.sources_in(db, country)


async def perspectives(db: Executor, story_ids: Sequence[int]) -> dict[int, StoryPerspectives]:
    return perspectives_by_story(await repository.outlet_groups(db, story_ids), story_ids)
