"""A story's full coverage as a Relay connection of outlets, each with its articles and their folded copies."""

from __future__ import annotations

import math
from datetime import datetime

import strawberry
from strawberry import relay

from app.api.context import Info
from app.api.errors import bad_cursor
from app.api.relay import decode_cursor, encode_cursor
from app.api.types.article import ArticleNode
from app.api.types.source import SourceNode
from app.stories.coverage import CoverageGroup as Group
from app.stories.coverage import CoverageItem, CoveragePage
from app.stories.repository import GroupKey

CURSOR_KIND = "coverage"


@strawberry.type(
    description="An article of the story, with the near-duplicate copies of it (syndicated or re-posted texts, from "
    "any outlet) folded under it instead of listed on their own."
)
class CoverageArticle:
    article: ArticleNode
    copies: list[ArticleNode] = strawberry.field(
        description="Articles of the story that copy this one, earliest first; each copy's `source` is its outlet."
    )
    copy_count: int

    @classmethod
    def from_item(cls, item: CoverageItem) -> CoverageArticle:
        copies = [ArticleNode.from_model(a) for a in item.copies]
        return cls(article=ArticleNode.from_model(item.article), copies=copies, copy_count=len(copies))


@strawberry.type(description="One outlet's coverage of a story.")
class CoverageGroup:
    source_id: strawberry.Private[int]
    articles: list[CoverageArticle] = strawberry.field(
        description="The outlet's articles in the story, earliest first; copies of another article of the story are "
        "not among them (they are that article's `copies`)."
    )

    @strawberry.field(description="The outlet.")
    async def source(self, info: Info) -> SourceNode:
        row = await info.context.loaders.source_by_id.load(self.source_id)
        assert row is not None  # articles.source_id is a foreign key
        return SourceNode.from_model(row)


@strawberry.type(description="An edge in a connection.")
class CoverageGroupEdge:
    cursor: str
    node: CoverageGroup


@strawberry.type(
    description="Outlets covering a story, most authoritative first (ties: the outlet that reported first). An outlet "
    "whose every article copies another outlet's is not listed."
)
class CoverageGroupConnection:
    edges: list[CoverageGroupEdge]
    page_info: relay.PageInfo
    total_count: int = strawberry.field(description="Outlets listed over every page.")

    @classmethod
    def from_page(cls, story_id: int, page: CoveragePage, *, had_cursor: bool) -> CoverageGroupConnection:
        edges = [CoverageGroupEdge(cursor=_cursor(story_id, group), node=_group(group)) for group in page.groups]
        return cls(
            edges=edges,
            page_info=relay.PageInfo(
                has_next_page=page.has_next,
                has_previous_page=had_cursor,
                start_cursor=edges[0].cursor if edges else None,
                end_cursor=edges[-1].cursor if edges else None,
            ),
            total_count=page.total,
        )


def _group(group: Group) -> CoverageGroup:
    return CoverageGroup(source_id=group.source_id, articles=[CoverageArticle.from_item(i) for i in group.items])


def _cursor(story_id: int, group: Group) -> str:
    authority, earliest, source_id = group.key
    return encode_cursor(CURSOR_KIND, [story_id, authority, earliest.isoformat(), source_id])


def after_key(story_id: int, after: str | None) -> GroupKey | None:
    """The group an `after` cursor points at; BAD_CURSOR for anything but a coverage cursor of this story."""
    if after is None:
        return None
    story, authority, earliest, source_id = decode_cursor(CURSOR_KIND, after, 4)
    if story != story_id or not (_is_int(story) and _is_int(source_id) and _is_number(authority)):
        raise bad_cursor()
    try:
        moment = datetime.fromisoformat(str(earliest))
    except ValueError as error:
        raise bad_cursor() from error
    if moment.tzinfo is None:
        raise bad_cursor()
    return float(authority), moment, source_id


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value < 2**63


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
