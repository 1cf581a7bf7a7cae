"""`trendingEntities`: the people, organisations and places named fastest now, from PostgreSQL, cached 30 s per
window and filter."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import strawberry

from app.api.context import Info
from app.api.filters import language_codes, topic_values
from app.api.relay import page_size
from app.api.trending import CACHE_SECONDS, TrendingWindowEnum
from app.api.types.entity import EntityNode
from app.api.types.enums import TopicEnum
from app.entities.repository import NamedEntity
from app.entities.service import trending_entities as ranked_entities
from app.trending.windows import TrendingWindow


@strawberry.type(description="An entity and how fast it is being named in the window asked for.")
class TrendingEntity:
    entity: EntityNode = strawberry.field(description="`mentions` counts the articles naming it in the window.")
    score: float = strawberry.field(
        description="Articles naming it in the window beyond what its rate over the four windows before predicts."
    )
    velocity: float = strawberry.field(description="Articles naming it per hour, in the window.")
    previous: int = strawberry.field(description="Articles naming it in the four windows before.")


async def trending_entities(
    info: Info,
    window: TrendingWindowEnum = TrendingWindow.HOUR,  # type: ignore[valid-type]
    topics: list[TopicEnum] | None = None,  # type: ignore[valid-type]
    languages: list[str] | None = None,
    first: int | None = None,
) -> list[TrendingEntity]:
    size = page_size(first, info.context.services.settings)
    chosen, codes, wanted = TrendingWindow(window), sorted(set(language_codes(languages))), sorted(topic_values(topics))
    services = info.context.services

    async def compute() -> str:
        async with services.db() as session:
            trends = await ranked_entities(session, chosen, now=datetime.now(UTC), languages=codes, topics=wanted,
                                           limit=services.settings.page_size_max)  # fmt: skip
        return json.dumps([[t.mentions.entity.key, t.mentions.entity.name, t.mentions.entity.kind, t.mentions.recent,
                            t.mentions.before, t.velocity, t.score] for t in trends])  # fmt: skip

    key = f"trending-entities:{chosen.value}:{','.join(codes)}:{','.join(wanted)}"
    rows = json.loads(await services.cache.get_or_compute(key, CACHE_SECONDS, compute))
    return [
        TrendingEntity(entity=EntityNode.of(NamedEntity(k, name, kind, recent)), score=score, velocity=speed,
                       previous=before)
        for k, name, kind, recent, before, speed, score in rows[:size]
    ]  # fmt: skip
