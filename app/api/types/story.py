"""The Story node: one event covered by many outlets."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

import strawberry
from strawberry import relay

from app.api.context import Info
from app.api.filters import topics_of
from app.api.relay import load_nodes, page_size
from app.api.types.article import ArticleNode
from app.api.types.coverage import CoverageGroupConnection, after_key, asked_sizes
from app.api.types.entity import EntityNode
from app.api.types.enums import TopicEnum
from app.api.types.place import Perspectives, Place
from app.stories.models import StoryCluster
from app.stories.repository import CoverageRequest


@strawberry.type(name="Story", description="One event, as covered by every outlet that reported it.")
class StoryNode(relay.Node):
    id: relay.NodeID[int]
    title: str = strawberry.field(description="The headline of the representative article.")
    article_count: int
    source_count: int = strawberry.field(description="How many outlets covered it: the card's “N sources”.")
    first_seen_at: datetime
    last_updated_at: datetime
    topics: list[TopicEnum] = strawberry.field(  # type: ignore[valid-type]
        description="What its articles with a topic are about: each topic of 30% of them, at most two, most common "
        "first (an article in a language the topic classifier does not read has none); empty when none has one."
    )
    languages: list[str] = strawberry.field(description="The languages its articles are written in (ISO 639-1).")
    velocity: float = strawberry.field(description="Articles a minute that joined it in the velocity window (30 min).")
    is_breaking: bool = strawberry.field(description="More than 2 articles a minute from at least 5 outlets.")
    breaking_started_at: datetime | None = strawberry.field(description="When it first became breaking.")
    representative_article_id: strawberry.Private[int | None]

    @strawberry.field(description="The article of the most authoritative outlet (ties: the earliest).")
    async def representative(self, info: Info) -> ArticleNode | None:
        if self.representative_article_id is None:
            return None
        row = await info.context.loaders.article_by_id.load(self.representative_article_id)
        return ArticleNode.from_model(row) if row else None

    @strawberry.field(description="Full coverage: every article of the story, grouped by outlet (most authoritative "
                                  "first), with near-duplicate copies folded under the article they copy. An outlet's "
                                  "`articles(first:)` and an article's `copies(first:)` list the earliest few; "
                                  "`articleCount` and `copyCount` count them all.")  # fmt: skip
    async def coverage(self, info: Info, first: int | None = None, after: str | None = None) -> CoverageGroupConnection:
        size = page_size(first, info.context.services.settings)
        request = CoverageRequest(self.id, size, *asked_sizes(info), after=after_key(self.id, after))
        page = await info.context.loaders.coverage_by_story.load(request)
        return CoverageGroupConnection.from_page(self.id, page, had_cursor=after is not None)

    @strawberry.field(description="The people, organisations and places its articles name, the most articles first "
                                  "(copies not counted).")  # fmt: skip
    async def entities(self, info: Info, first: int | None = None) -> list[EntityNode]:
        size = page_size(first, info.context.services.settings)
        return [EntityNode.of(e) for e in await info.context.loaders.entities_by_story.load((self.id, size))]

    @strawberry.field(description="The countries (and regions, where known) its articles name places in, the most "
                                  "articles first: a row per country (`region` null) and one per known "
                                  "region.")  # fmt: skip
    async def places(self, info: Info) -> list[Place]:
        return [Place.of(p) for p in await info.context.loaders.places_by_story.load(self.id)]

    @strawberry.field(description="Full coverage by perspective: its outlets grouped by country and kind, with "
                                  "counts per group.")  # fmt: skip
    async def perspectives(self, info: Info) -> Perspectives:
        return Perspectives.of(await info.context.loaders.perspectives_by_story.load(self.id))

    @strawberry.field(
        description="The story's articles, newest first.",
        deprecation_reason="Use `coverage`: the articles grouped by outlet, copies folded under their original.",
    )
    async def articles(self, info: Info, first: int | None = None) -> list[ArticleNode]:
        size = page_size(first, info.context.services.settings)
        rows = await info.context.loaders.latest_articles_by_story.load((self.id, size))
        return [ArticleNode.from_model(a) for a in rows]

    @classmethod
    def from_model(cls, row: StoryCluster) -> StoryNode:
        return cls(
            id=row.id, title=row.title, article_count=row.article_count, source_count=row.source_count,
            first_seen_at=row.first_seen_at, last_updated_at=row.last_updated_at,
            representative_article_id=row.representative_article_id,
            topics=topics_of(row.topics), languages=list(row.languages),
            velocity=row.velocity, is_breaking=row.is_breaking, breaking_started_at=row.breaking_started_at,
        )  # fmt: skip

    @classmethod
    async def resolve_nodes(  # type: ignore[override]
        cls, *, info: Info, node_ids: Iterable[str], required: bool = False
    ) -> Iterable[StoryNode | None]:
        return await load_nodes(info.context.loaders.story_by_id, node_ids, cls.from_model)


async def load_story(info: Info, story_id: int | None) -> StoryNode | None:
    """The story a row points at, through the request's loader (a merged story's id leads to the one it joined)."""
    if story_id is None:
        return None
    row = await info.context.loaders.story_by_id.load(story_id)
    return StoryNode.from_model(row) if row else None
