"""Trending as a finished page: the stories gaining articles and readers fastest, merged stories folded into the ones
they joined, and for a region only the stories about it or covered by its outlets."""

from __future__ import annotations

from datetime import datetime

from redis.asyncio import Redis

from app.db.engine import Executor
from app.places import repository as places
from app.stories import repository as stories
from app.trending.store import Trend, fold_merged, ranking
from app.trending.windows import TrendingWindow

READ_FROM_REDIS = 500  # stories read per page: room for merged ids to fold and for a region to keep its own


async def trending_page(db: Executor, redis: Redis, window: TrendingWindow, region: str | None, size: int,
                        now: datetime) -> list[Trend]:  # fmt: skip
    """The best `size` stories as they are now (of the region, when one is given), merged ids counted towards the
    stories they joined. Raises TrendingUnavailable when Redis cannot be read."""
    trends = await ranking(redis, window.span, now, limit=READ_FROM_REDIS)
    found = await stories.stories_by_ids(db, [t.story_id for t in trends])
    folded = fold_merged(trends, {story_id: story.id for story_id, story in found.items()})
    if region is not None:
        local = await places.local_stories(db, region, [t.story_id for t in folded])
        folded = [t for t in folded if t.story_id in local]
    return folded[:size]
