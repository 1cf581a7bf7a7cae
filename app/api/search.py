"""`search`: keyword search over articles (app/search: PostgreSQL full text, or Meilisearch), with highlights,
filters, and one hit per story when asked."""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
from datetime import UTC, datetime, timedelta
from typing import Annotated

import strawberry
from strawberry import relay

from app.api.context import Info
from app.api.errors import bad_argument, bad_cursor
from app.api.filters import language_codes, topic_values
from app.api.relay import decode_cursor, encode_cursor, id_of, page_size, whole
from app.api.scalars import instant
from app.api.types.article import ArticleNode
from app.api.types.enums import TopicEnum
from app.api.types.story import StoryNode, load_story
from app.articles.models import Article
from app.search.query import (
    BODY_TIER,
    TITLE_TIER,
    SearchHit,
    SearchPosition,
    SearchQuery,
    SearchRejected,
    days_before,
)

CURSOR = "search"
EARLIEST_ASKED = datetime(2000, 1, 1, tzinfo=UTC)  # no search was asked before this software was written
MAX_SOURCES = 50


@strawberry.enum(description="Only articles published within the last day, week or month.")
class SearchFreshness(enum.Enum):
    DAY = 1
    WEEK = 7
    MONTH = 30


@strawberry.enum(
    description="RELEVANCE: text match blended with freshness. DATE: newest first. Either way, articles matched only "
    "by their own text (PostgreSQL search) come after every title or summary match, newest first."
)
class SearchSort(enum.Enum):
    RELEVANCE = "relevance"
    DATE = "date"


@strawberry.type(description="An article that matches, with the words found marked <mark>…</mark>.")
class SearchHitNode:
    article: ArticleNode
    score: float = strawberry.field(
        description="0.7 x text rank (0..1) + 0.3 x freshness (half-life 48 h); matched only by the article's own "
        "text: 0.1 x freshness."
    )
    title_highlight: str
    summary_highlight: str = strawberry.field(
        description="The summary (an extract of it), or, when only the article's own text matched, an extract of the "
        "text (PostgreSQL search; Meilisearch shows the summary)."
    )
    matches_in_story: int = strawberry.field(
        description="How many articles of its story match (1 for an article not in a story); with `groupByStory`, "
        "the story's other matches are folded into this hit."
    )
    story_id: strawberry.Private[int | None]

    @strawberry.field(description="Its story: the card, with `sourceCount`.")
    async def story(self, info: Info) -> StoryNode | None:
        return await load_story(info, self.story_id)


@strawberry.type
class SearchEdge:
    cursor: str
    node: SearchHitNode


@strawberry.type(description="One page of search results.")
class SearchConnection:
    edges: list[SearchEdge]
    page_info: relay.PageInfo
    approximate: bool = strawberry.field(
        description="True when nothing matched the words as typed and these hits are for `correctedQuery` (a short "
        'query with a typo): say so, e.g. "Showing results for ukraine".'
    )
    corrected_query: str | None = strawberry.field(
        description="The query as searched when it was corrected, on every page of the search; null when the words "
        "were searched as typed. A short query (up to 3 words) is corrected only when it matched nothing as typed "
        "and the corrected words match something: each word no title uses (or at most 2 do) is replaced by a title "
        "word it is one typo away from (two for words of 9 letters or more; words under 5 letters are kept) that "
        "titles use at least ten times more. A correctly spelled word that simply has no match is left as typed, "
        "with no results. PostgreSQL corrects; Meilisearch tolerates the same typos by itself, and a search it "
        "answers from its first page leaves this null."
    )


async def search(
    info: Info,
    query: str,
    topics: list[TopicEnum] | None = None,  # type: ignore[valid-type]
    sources: list[relay.GlobalID] | None = None,
    languages: list[str] | None = None,
    from_: Annotated[datetime | None, strawberry.argument(name="from")] = None,
    to: datetime | None = None,
    freshness: SearchFreshness | None = None,
    group_by_story: bool = False,
    sort: SearchSort = SearchSort.RELEVANCE,
    first: int | None = None,
    after: str | None = None,
) -> SearchConnection:
    size = page_size(first, info.context.services.settings)
    if sources and len(sources) > MAX_SOURCES:
        raise bad_argument(f"`sources`: at most {MAX_SOURCES}")
    wanted = SearchQuery(
        text=query, topics=tuple(topic_values(topics)), languages=tuple(language_codes(languages)),
        source_ids=tuple(id_of(s, "Source", "sources") for s in sources or ()), since=from_, until=to,
        by_story=group_by_story, newest_first=sort is SearchSort.DATE,
    )  # fmt: skip
    fingerprint = _fingerprint(wanted, from_, freshness)
    page = (_Page(0, None, datetime.now(UTC), None, None) if after is None
            else _later_page(after, fingerprint, wanted.newest_first))  # fmt: skip
    # the first page's words, moment and articles, from where the previous page ended
    searched = dataclasses.replace(wanted, text=page.corrected or wanted.text, since=_since(from_, freshness, page.now),
                                   newest_id=page.newest_id, after=page.after)  # fmt: skip
    try:
        found = await info.context.services.search.search(searched, now=page.now, limit=size + 1, offset=page.offset)
    except SearchRejected as error:
        raise bad_argument(f"query: {error}") from None
    offset, corrected = page.offset, found.corrected or page.corrected
    frozen = [page.now.isoformat(), found.newest_id]
    hits = found.hits[:size]
    rows = await info.context.loaders.article_by_id.load_many([h.article_id for h in hits])
    edges = [SearchEdge(cursor=encode_cursor(CURSOR, [fingerprint, offset + n + 1, corrected, *frozen,
                                                      *_position_key(hit.position)]), node=_node(hit, row))
             for n, (hit, row) in enumerate(zip(hits, rows, strict=True)) if row is not None]  # fmt: skip
    return SearchConnection(
        edges=edges,
        page_info=relay.PageInfo(has_next_page=len(found.hits) > size, has_previous_page=offset > 0,
                                 start_cursor=edges[0].cursor if edges else None,
                                 end_cursor=edges[-1].cursor if edges else after),
        approximate=corrected is not None,
        corrected_query=corrected,
    )  # fmt: skip


@dataclasses.dataclass(frozen=True, slots=True)
class _Page:
    """Where a page of a search starts, and what its first page fixed for every later one: the corrected words, the
    moment it was asked (freshness, and the `freshness` window, are reckoned from it) and the newest article then
    (none stored since is among its matches: the pages walk one set, and new matches do not push older ones out of
    the newest `candidates` that PostgreSQL ranks, nor shift Meilisearch's offsets).

    A page starts after the previous page's last hit (`after`, a position in PostgreSQL's order: `SearchPosition`
    says why), not at an offset. A page Meilisearch answered carries no position (its ranking cannot be resumed from
    one), and its next page goes by `offset`."""

    offset: int
    corrected: str | None
    now: datetime
    newest_id: int | None
    after: SearchPosition | None


def _later_page(after: str, fingerprint: str, newest_first: bool) -> _Page:
    cursor_print, offset, corrected, asked, newest_id, *position = decode_cursor(CURSOR, after, 8)
    now = instant(asked)
    valid = whole(offset, least=0) and (corrected is None or isinstance(corrected, str)) and whole(newest_id, least=0)
    if now is None or not _askable(now) or cursor_print != fingerprint or not valid:
        raise bad_cursor("the cursor belongs to another search")
    return _Page(offset, corrected, now, newest_id, _position(position, newest_first))


def _position_key(position: SearchPosition | None) -> list[object]:
    """A hit's position as the cursor's last three parts (tier, sort value, id), or three nulls."""
    if position is None:
        return [None, None, None]
    value = position.value.isoformat() if isinstance(position.value, datetime) else position.value
    return [position.tier, value, position.article_id]


def _position(key: list[object], newest_first: bool) -> SearchPosition | None:
    """The position `_position_key` wrote; BAD_CURSOR for any other."""
    tier, value, article_id = key
    if tier is None and value is None and article_id is None:
        return None
    if not (whole(tier) and tier in (TITLE_TIER, BODY_TIER) and whole(article_id)):
        raise bad_cursor()
    if tier == BODY_TIER or newest_first:  # a publication time
        moment = instant(value)
        if moment is None:
            raise bad_cursor()
        return SearchPosition(tier, moment, article_id)
    if not isinstance(value, int | float) or isinstance(value, bool):  # a score (decode_cursor: finite)
        raise bad_cursor()
    return SearchPosition(tier, float(value), article_id)


def _askable(now: datetime) -> bool:
    """A moment a first page was asked at: none before EARLIEST_ASKED, none later than a day from now (another API
    process's clock may be ahead). Anything else is forged, and would be reckoned with as no real moment is (year 1
    is -infinity to the database)."""
    return EARLIEST_ASKED <= now <= datetime.now(UTC) + timedelta(days=1)


def _since(from_: datetime | None, freshness: SearchFreshness | None, now: datetime) -> datetime | None:
    """The earliest publication a search takes: `from`, or the start of its `freshness` window if later."""
    if freshness is None:
        return from_
    recent = days_before(now, freshness.value)
    return max(from_, recent) if from_ else recent


def _node(hit: SearchHit, row: Article) -> SearchHitNode:
    return SearchHitNode(article=ArticleNode.from_model(row), score=round(hit.score, 6),
                         title_highlight=hit.title_highlight, summary_highlight=hit.summary_highlight,
                         matches_in_story=hit.matches_in_story, story_id=hit.story_id)  # fmt: skip


def _fingerprint(query: SearchQuery, since: datetime | None, freshness: SearchFreshness | None) -> str:
    """Names one search (the freshness window by its name, not its moving start), so a cursor fits only it."""
    described = [query.text, query.topics, query.source_ids, query.languages, since, freshness and freshness.name,
                 query.until, query.by_story, query.newest_first]  # fmt: skip
    return hashlib.sha256(json.dumps(described, default=str).encode()).hexdigest()[:16]
