"""`trending(window:, region:)`: the stories gaining articles and readers fastest, from Redis, cached for 30 s per
window and region."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Annotated

import strawberry

from app.api.context import Info
from app.api.errors import BadRequest
from app.api.relay import page_size
from app.api.types.story import StoryNode
from app.places.countries import checked_country
from app.stories.models import StoryCluster
from app.trending.service import trending_page
from app.trending.store import Trend, TrendingUnavailable, fold_merged
from app.trending.windows import TrendingWindow

log = logging.getLogger(__name__)

CACHE_SECONDS = 30.0  # DESIGN §4: trending is cached 30 s

TrendingWindowEnum = strawberry.enum(
    TrendingWindow, name="TrendingWindow", description="How far back trending looks (recent activity weighs more)."
)


@strawberry.type(description="A story and how much it is trending in the window asked for.")
class TrendingStory:
    story: StoryNode
    score: float = strawberry.field(
        description="Arrivals plus half the engagement, each weighted by recency (1 now, falling linearly towards 0 at "
        "the window's start)."
    )
    arrivals: int = strawberry.field(description="Articles that joined the story in the window.")
    engagement: float = strawberry.field(
        description="Readers' actions on its articles in the window: click and read 1, share and save 2 (each "
        "reader's action counted once per story)."
    )


def cache_key(window: TrendingWindow, region: str | None = None) -> str:
    return f"trending:{window.value}" + (f":{region}" if region else "")


async def trending_stories(
    info: Info,
    window: TrendingWindowEnum = TrendingWindow.HOUR,  # type: ignore[valid-type]
    first: int | None = None,
    region: Annotated[
        str | None,
        strawberry.argument(
            description="ISO 3166-1 alpha-2 (`DE`): only stories about that country or covered by its outlets."
        ),
    ] = None,
) -> list[TrendingStory]:
    size = page_size(first, info.context.services.settings)
    chosen, country = TrendingWindow(window), None if region is None else checked_country(region)

    async def compute() -> str:
        services = info.context.services
        async with services.db() as session:
            ranked = await trending_page(session, services.redis, chosen, country, services.settings.page_size_max,
                                         datetime.now(UTC))  # fmt: skip
        return json.dumps([[t.story_id, t.score, t.arrivals, t.engagement] for t in ranked])

    try:
        cached = await info.context.services.cache.get_or_compute(cache_key(chosen, country), CACHE_SECONDS, compute)
    except TrendingUnavailable as error:
        log.warning("trending: Redis unavailable: %s", error.__cause__)
        raise BadRequest("TRENDING_UNAVAILABLE", "trending is unavailable right now; try again shortly") from error
    trends = await _resolved(info, [Trend(*row) for row in json.loads(cached)])  # stories merged since: folded too
    return [TrendingStory(story=StoryNode.from_model(story), score=trend.score, arrivals=trend.arrivals,
                          engagement=trend.engagement) for story, trend in trends[:size]]  # fmt: skip


async def _resolved(info: Info, trends: Sequence[Trend]) -> list[tuple[StoryCluster, Trend]]:
    rows = await info.context.loaders.story_by_id.load_many([t.story_id for t in trends])
    found = {t.story_id: row for t, row in zip(trends, rows, strict=True) if row is not None}
    folded = fold_merged(trends, {story_id: row.id for story_id, row in found.items()})
    stories = {row.id: row for row in found.values()}
    return [(stories[t.story_id], t) for t in folded]
