"""A story's full coverage as a Relay connection of outlets, each with its articles and their folded copies."""

from __future__ import annotations

import math
from collections.abc import Iterator

import strawberry
from strawberry import relay

from app.api.analysis.cost import asked_page
from app.api.context import Info
from app.api.errors import bad_cursor
from app.api.relay import decode_cursor, encode_cursor, page_size, whole
from app.api.scalars import instant
from app.api.types.article import ArticleNode
from app.api.types.source import SourceNode
from app.stories.coverage import CoverageGroup as Group
from app.stories.coverage import CoverageItem, CoveragePage
from app.stories.repository import GroupKey
from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLField,
    GraphQLObjectType,
    GraphQLSchema,
    InlineFragmentNode,
)

CURSOR_KIND = "coverage"
# What a coverage page shows when `articles` or `copies` is not given a `first`: an outlet rarely has more articles in
# one story; a copy is mostly another outlet's name, and `copyCount` tells how many there are in all.
ARTICLES_PER_OUTLET = 10
COPIES_PER_ARTICLE = 5


@strawberry.type(
    description="An article of the story, with the near-duplicate copies of it (syndicated or re-posted texts, from "
    "any outlet) folded under it instead of listed on their own."
)
class CoverageArticle:
    item: strawberry.Private[CoverageItem]

    @strawberry.field
    def article(self) -> ArticleNode:
        return ArticleNode.from_model(self.item.article)

    @strawberry.field(description="The first `first` articles of the story that copy this one, earliest first; each "
                                  "copy's `source` is its outlet.")  # fmt: skip
    def copies(self, info: Info, first: int | None = COPIES_PER_ARTICLE) -> list[ArticleNode]:
        size = page_size(COPIES_PER_ARTICLE if first is None else first, info.context.services.settings)
        return [ArticleNode.from_model(a) for a in self.item.copies[:size]]

    @strawberry.field(description="How many articles of the story copy this one, all of them.")
    def copy_count(self) -> int:
        return self.item.copy_count


@strawberry.type(description="One outlet's coverage of a story.")
class CoverageGroup:
    source_id: strawberry.Private[int]
    items: strawberry.Private[list[CoverageItem]]
    article_count: int = strawberry.field(description="The outlet's articles in the story, all of them; copies of "
                                                      "another article of the story are not counted.")  # fmt: skip

    @strawberry.field(description="The outlet's first `first` articles in the story, earliest first; copies of "
                                  "another article of the story are not among them (they are that article's "
                                  "`copies`).")  # fmt: skip
    def articles(self, info: Info, first: int | None = ARTICLES_PER_OUTLET) -> list[CoverageArticle]:
        size = page_size(ARTICLES_PER_OUTLET if first is None else first, info.context.services.settings)
        return [CoverageArticle(item=item) for item in self.items[:size]]

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
    return CoverageGroup(source_id=group.source_id, items=group.items, article_count=group.article_count)


def asked_sizes(info: Info) -> tuple[int, int]:
    """How many articles of each outlet and copies of each article a `coverage` field's selection asks for, the
    most over its `articles` and `copies` fields (0 when none is selected): what its page must hold. Each is read
    as the query's price read it (app/api/analysis/cost.py), from the field's nodes in the document."""
    raw, settings = info._raw_info, info.context.services.settings  # the document, where a literal is not yet text
    groups = [node for coverage in raw.field_nodes for edges in _named(coverage, "edges", raw.fragments)
              for node in _named(edges, "node", raw.fragments)]  # fmt: skip
    articles = [field for group in groups for field in _named(group, "articles", raw.fragments)]
    copies = [field for article in articles for field in _named(article, "copies", raw.fragments)]
    in_group, in_article = _fields(raw.schema, CoverageGroup), _fields(raw.schema, CoverageArticle)
    variables = info.variable_values
    return (max((asked_page(f, in_group["articles"], variables, settings) for f in articles), default=0),
            max((asked_page(f, in_article["copies"], variables, settings) for f in copies), default=0))  # fmt: skip


def _named(parent: FieldNode | InlineFragmentNode | FragmentDefinitionNode, name: str,
           fragments: dict[str, FragmentDefinitionNode]) -> Iterator[FieldNode]:  # fmt: skip
    """The fields called `name` right under `parent`, fragments looked into (validation has refused cycles)."""
    for selection in parent.selection_set.selections if parent.selection_set else ():
        if isinstance(selection, FieldNode):
            if selection.name.value == name:
                yield selection
        elif isinstance(selection, InlineFragmentNode):
            yield from _named(selection, name, fragments)
        elif isinstance(selection, FragmentSpreadNode) and selection.name.value in fragments:
            yield from _named(fragments[selection.name.value], name, fragments)


def _fields(schema: GraphQLSchema, type_: type) -> dict[str, GraphQLField]:
    """The schema's fields of a strawberry type, by their GraphQL names."""
    named = schema.get_type(type_.__strawberry_definition__.name)  # type: ignore[attr-defined]
    assert isinstance(named, GraphQLObjectType)
    fields: dict[str, GraphQLField] = named.fields
    return fields


def _cursor(story_id: int, group: Group) -> str:
    authority, earliest, source_id = group.key
    return encode_cursor(CURSOR_KIND, [story_id, authority, earliest.isoformat(), source_id])


def after_key(story_id: int, after: str | None) -> GroupKey | None:
    """The group an `after` cursor points at; BAD_CURSOR for anything but a coverage cursor of this story."""
    if after is None:
        return None
    story, authority, earliest, source_id = decode_cursor(CURSOR_KIND, after, 4)
    if story != story_id or not (whole(story) and whole(source_id) and _is_number(authority)):
        raise bad_cursor()
    moment = instant(earliest)  # a moment the database can take: with its offset, in UTC within years 1..9999
    if moment is None:
        raise bad_cursor()
    return float(authority), moment, source_id


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
