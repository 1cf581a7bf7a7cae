"""The Article node."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import strawberry
from strawberry import relay

from app.api.context import Info
from app.api.filters import topics_of
from app.api.relay import load_nodes
from app.api.scalars import BigInt
from app.api.types.article_text import ArticleTextNode
from app.api.types.entity import EntityNode
from app.api.types.enums import TopicEnum
from app.api.types.source import SourceNode
from app.articles.models import Article
from app.extraction.text import reading_minutes

if TYPE_CHECKING:
    from app.api.types.story import StoryNode


@strawberry.type(name="Article", description="One article, stored once per URL.")
class ArticleNode(relay.Node):
    id: relay.NodeID[int]
    url: str | None = strawberry.field(description="The article's page; null for the rare entry known only by an id.")
    title: str
    summary: str = strawberry.field(description="Plain text: tags, scripts and styles removed.")
    author: str | None
    published_at: datetime = strawberry.field(description="As the feed says; clamped to the fetch time.")
    crawled_at: datetime
    language: str | None = strawberry.field(
        description="ISO 639-1 code: detected from the text when the detector is sure, else the source's language."
    )
    topics: list[TopicEnum] = strawberry.field(  # type: ignore[valid-type]
        description="Most likely first; one, or two when close. Empty when unknown: an article in a language the "
        "topic classifier does not read (English only today), or with no words."
    )
    content_hash: BigInt = strawberry.field(
        description="64-bit hash of the normalized title and summary: equal for exact copies."
    )
    simhash: BigInt | None = strawberry.field(
        description="64-bit SimHash of title and summary; near-duplicates are within 3 bits (null until computed)."
    )
    click_count: int = strawberry.field(
        description="Readers who followed a share link to it (one a day each; written every "
        "NEWSAGG_SHARE_CLICK_FLUSH_SECONDS)."
    )
    share_count: int = strawberry.field(description="Share links made to it (or to its story while it led it).")
    source_id: strawberry.Private[int]
    duplicate_of_id: strawberry.Private[int | None]
    cluster_id: strawberry.Private[int | None]

    @strawberry.field(description="The story this article belongs to (null until it is clustered).")
    async def story(self, info: Info) -> Annotated[StoryNode, strawberry.lazy("app.api.types.story")] | None:
        from app.api.types.story import load_story

        return await load_story(info, self.cluster_id)

    @strawberry.field(description="The earlier article this one copies (a syndicated or re-posted text), if any.")
    async def duplicate_of(self, info: Info) -> ArticleNode | None:
        if self.duplicate_of_id is None:
            return None
        row = await info.context.loaders.article_by_id.load(self.duplicate_of_id)
        return ArticleNode.from_model(row) if row else None

    @strawberry.field(description="The people, organisations and places its headline and summary name, most named "
                                  "first.")  # fmt: skip
    async def entities(self, info: Info) -> list[EntityNode]:
        return [EntityNode.of(e) for e in await info.context.loaders.entities_by_article.load(self.id)]

    @strawberry.field(description="Its full text, cleaned: the feed's own (content:encoded) or, when the feed has "
                                  "only a summary, extracted from its page. Null until fetched, or when none was "
                                  "found.")  # fmt: skip
    async def text(self, info: Info) -> ArticleTextNode | None:
        row = await info.context.loaders.text_by_article.load(self.id)
        return ArticleTextNode.from_model(row) if row else None

    @strawberry.field(description="The URL of its lead image, as its page names it (null without one).")
    async def image(self, info: Info) -> str | None:
        row = await info.context.loaders.text_by_article.load(self.id)
        return row.image if row else None

    @strawberry.field(description="Minutes to read its full text at 230 words a minute (null without the text).")
    async def reading_time_minutes(self, info: Info) -> int | None:
        row = await info.context.loaders.text_by_article.load(self.id)
        return reading_minutes(row.word_count) if row else None

    @strawberry.field(description="The source that published this article.")
    async def source(self, info: Info) -> SourceNode:
        row = await info.context.loaders.source_by_id.load(self.source_id)
        assert row is not None  # articles.source_id is a foreign key
        return SourceNode.from_model(row)

    @classmethod
    def from_model(cls, row: Article) -> ArticleNode:
        return cls(
            id=row.id,
            url=row.url,
            title=row.title,
            summary=row.summary,
            author=row.author,
            published_at=row.published_at,
            crawled_at=row.crawled_at,
            language=row.language,
            topics=topics_of(row.topics),
            content_hash=BigInt(row.content_hash),
            simhash=BigInt(row.simhash) if row.simhash is not None else None,
            click_count=row.click_count,
            share_count=row.share_count,
            source_id=row.source_id,
            duplicate_of_id=row.duplicate_of_id,
            cluster_id=row.cluster_id,
        )

    @classmethod
    async def resolve_nodes(  # type: ignore[override]
        cls, *, info: Info, node_ids: Iterable[str], required: bool = False
    ) -> Iterable[ArticleNode | None]:
        return await load_nodes(info.context.loaders.article_by_id, node_ids, cls.from_model)
