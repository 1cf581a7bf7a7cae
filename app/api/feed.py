"""The feeds: `feed` (personal for a signed-in reader, global otherwise), `topicFeed`, and `breaking`.

Ranked feeds are read from snapshots (app/feed/service.py): a cursor names its snapshot and position, so pages never
repeat or skip a story while news arrives. What a page shows (its stories, lead articles and sources) is cached for
`feed_cache_seconds` too and primed into the request's loaders, so a cached page runs no SQL for those fields.
"""

from __future__ import annotations

import enum
import json
from datetime import UTC, datetime

import strawberry
from strawberry import relay

from app.api import auth
from app.api.context import Info
from app.api.errors import BadRequest, bad_cursor
from app.api.filters import language_codes
from app.api.relay import after_time_key, build_connection, decode_cursor, encode_cursor, page_size, whole
from app.api.response_cache import FEED_VERSION, limit_max_age
from app.api.types.article import ArticleNode
from app.api.types.enums import TopicEnum
from app.api.types.story import StoryNode
from app.articles import repository as articles
from app.articles.models import Article
from app.db import rows
from app.feed import service as feeds
from app.feed import snapshots
from app.feed.ranking import COVERAGE_SHARE, FULL_COVERAGE, FreshnessClass
from app.places.countries import checked_country
from app.sources.models import Source
from app.stories import repository as stories
from app.stories.models import StoryCluster
from app.topics.keywords import Topic

CURSOR = "feed"
BREAKING_CURSOR = "breaking-story"
STORY_SKIP = frozenset({"centroid", "recent_arrivals", "source_ids", "topic_counts"})
ARTICLE_SKIP = frozenset({"simhash_bands"})

FreshnessClassEnum = strawberry.enum(
    FreshnessClass, name="FreshnessClass", description="How fast a story's freshness decays (per hour: 0.5, 0.1, 0.02)."
)


@strawberry.enum(description="FRESHNESS: the newest stories first. RELEVANCE: ranked like the feed.")
class TopicFeedSort(enum.Enum):
    FRESHNESS = "freshness"
    RELEVANCE = "relevance"


@strawberry.type(description="Why a story is where it is in a feed (for debugging a ranking).")
class RankingSignals:
    relevance: float = strawberry.field(description="Match with the reader's interests (cold start: broad appeal).")
    freshness: float = strawberry.field(description="exp(-lambda x hours since its latest article).")
    freshness_class: FreshnessClassEnum  # type: ignore[valid-type]
    quality: float = strawberry.field(
        description=f"min(sources / {FULL_COVERAGE}, 1) x {COVERAGE_SHARE} + lead source authority x "
        f"{round(1 - COVERAGE_SHARE, 2)}."
    )
    trending: float = strawberry.field(description="Arrivals and engagement in the last hour, 0..1.")
    diversity: float = strawberry.field(description="1 - its greatest similarity to the stories above it.")
    breaking_boost: float = strawberry.field(description="1.3 when breaking, else 1.")
    read_penalty: float = strawberry.field(description="0.1 when you already opened one of its articles, else 1.")
    locality: float = strawberry.field(
        description="With a region (`region:`, or your home region): 0.5 x the share of its articles naming a place "
        "there + 0.5 x the share of its outlets that are there; weighed 1.0 in a region's feed, 0.15 for your home "
        "region (1.0 before you have any interests)."
    )
    score: float = strawberry.field(description="The weighted sum times the boost and the penalty.")


@strawberry.type(description="A story in a feed: the card, the article it leads with, and why it is here.")
class FeedItem:
    story: StoryNode
    ranking_signals: RankingSignals | None = strawberry.field(
        description="Null in a newest-first list, which is not ranked."
    )
    article_id: strawberry.Private[int | None]

    @strawberry.field(description="The article the card leads with: the story's representative, or, when you mute "
                                  "its source, the best article from a source you do not mute.")  # fmt: skip
    async def representative(self, info: Info) -> ArticleNode | None:
        article_id = self.article_id or self.story.representative_article_id
        if article_id is None:
            return None
        row = await info.context.loaders.article_by_id.load(article_id)
        return ArticleNode.from_model(row) if row else None


@strawberry.type
class FeedEdge:
    cursor: str
    node: FeedItem


@strawberry.type(description="One page of a ranked feed.")
class FeedConnection:
    edges: list[FeedEdge]
    page_info: relay.PageInfo
    ranked_at: datetime = strawberry.field(description="When this ranking was computed; every page shares it.")
    total_count: int = strawberry.field(description="Stories in this ranking.")


async def _snapshot(info: Info, scope: feeds.FeedScope, after: str | None) -> tuple[snapshots.Snapshot, int]:
    services = info.context.services
    if after is None:
        version = info.context.extra.get(FEED_VERSION)  # read already by the response cache, if it ran
        return await feeds.current(services, scope, datetime.now(UTC), version), 0
    snapshot_id, offset = decode_cursor(CURSOR, after, 2)
    if not isinstance(snapshot_id, str) or not whole(offset, least=0):
        raise bad_cursor()
    try:
        found = await feeds.snapshot(services, snapshot_id)
    except snapshots.SnapshotMissing:
        raise BadRequest("CURSOR_EXPIRED", "this feed's ranking has expired: start again from the first page") from None
    if found.scope != scope.key:
        raise bad_cursor("the cursor belongs to another feed (another reader, language or topic)")
    return found, offset


PAGE_MIN_SECONDS = 5.0  # the rows of a page of an older ranking (walking a feed's pages) are reused this long
NEWEST_SECONDS = 15.0  # a newest-first list is reused this long


async def _page(info: Info, snapshot: snapshots.Snapshot, offset: int, size: int) -> FeedConnection:
    items = snapshot.items[offset : offset + size]
    age = (datetime.now(UTC) - snapshot.ranked_at).total_seconds()
    fresh_for = max(info.context.services.settings.feed_cache_seconds - age, PAGE_MIN_SECONDS)
    limit_max_age(info.context, fresh_for)
    await _prime(info, snapshot, offset, items, fresh_for)
    found = await info.context.loaders.story_by_id.load_many([i.story_id for i in items])
    listed = {i.story_id for i in snapshot.items}
    edges = []
    for position, (item, row) in enumerate(zip(items, found, strict=True), start=offset + 1):
        if row is None or (row.id != item.story_id and row.id in listed):
            continue  # gone, or merged into a story this feed lists anyway
        node = FeedItem(story=StoryNode.from_model(row), article_id=item.article_id,
                        ranking_signals=_signals(item))  # fmt: skip
        edges.append(FeedEdge(cursor=encode_cursor(CURSOR, [snapshot.id, position]), node=node))
    end = offset + len(items)
    return FeedConnection(
        edges=edges,
        page_info=relay.PageInfo(
            has_next_page=end < len(snapshot.items), has_previous_page=offset > 0,
            start_cursor=edges[0].cursor if edges else None, end_cursor=encode_cursor(CURSOR, [snapshot.id, end]),
        ),
        ranked_at=snapshot.ranked_at,
        total_count=len(snapshot.items),
    )  # fmt: skip


def _signals(item: snapshots.Item) -> RankingSignals:
    s = item.signals
    return RankingSignals(relevance=s.relevance, freshness=s.freshness, freshness_class=s.freshness_class,
                          quality=s.quality, trending=s.trending, diversity=s.diversity,
                          breaking_boost=s.breaking_boost, read_penalty=s.read_penalty, score=s.score,
                          locality=s.locality)  # fmt: skip


async def _prime(
    info: Info, snapshot: snapshots.Snapshot, offset: int, items: list[snapshots.Item], ttl_s: float
) -> None:
    """The page's stories, lead articles and their sources, from the page cache (filled on a miss)."""
    services, loaders = info.context.services, info.context.loaders

    async def hydrate() -> str:
        async with services.db() as session:
            found = await stories.stories_by_ids(session, [i.story_id for i in items])
            leads = {i.article_id or (s.representative_article_id if (s := found.get(i.story_id)) else None)
                     for i in items}  # fmt: skip
            lead_rows = await articles.articles_with_sources(session, [a for a in leads if a is not None])
        return json.dumps({
            "stories": [[requested, rows.dump(s, STORY_SKIP)] for requested, s in found.items()],
            "articles": [rows.dump(a, ARTICLE_SKIP) for a, _ in lead_rows],
            "sources": [rows.dump(s) for s in {source.id: source for _, source in lead_rows}.values()],
        }, separators=(",", ":"))  # fmt: skip

    key = f"feed-page:{snapshot.id}:{offset}:{len(items)}"
    cached = json.loads(await services.cache.get_or_compute(key, ttl_s, hydrate))
    loaders.story_by_id.prime_many({requested: rows.load(StoryCluster, s) for requested, s in cached["stories"]})
    loaders.article_by_id.prime_many({a["id"]: rows.load(Article, a) for a in cached["articles"]})
    loaders.source_by_id.prime_many({s["id"]: rows.load(Source, s) for s in cached["sources"]})


def _languages(languages: list[str] | None) -> tuple[str, ...]:
    """In one order, each once: ["fr", "en"] and ["en", "fr", "en"] are one feed, with one ranking and its cursors."""
    return tuple(sorted(set(language_codes(languages))))


async def feed(info: Info, first: int | None = None, after: str | None = None, languages: list[str] | None = None,
               region: str | None = None) -> FeedConnection:  # fmt: skip
    size = page_size(first, info.context.services.settings)
    chosen = None if region is None else checked_country(region)
    user = await auth.viewer(info)
    scope = feeds.FeedScope(user.id if user else None, _languages(languages), region=chosen)
    snapshot, offset = await _snapshot(info, scope, after)
    return await _page(info, snapshot, offset, size)


async def topic_feed(
    info: Info,
    topic: TopicEnum,  # type: ignore[valid-type]
    sort: TopicFeedSort = TopicFeedSort.RELEVANCE,
    first: int | None = None,
    after: str | None = None,
    languages: list[str] | None = None,
) -> FeedConnection:
    size = page_size(first, info.context.services.settings)
    codes = _languages(languages)
    if sort is TopicFeedSort.RELEVANCE:
        snapshot, offset = await _snapshot(info, feeds.FeedScope(None, codes, Topic(topic).value), after)
        return await _page(info, snapshot, offset, size)
    return await _newest(info, Topic(topic).value, codes, size, after)


async def _newest(info: Info, topic: str, languages: tuple[str, ...], size: int, after: str | None) -> FeedConnection:
    """Newest first, keyed on when each story appeared (a key that never changes, so pages never shift)."""
    kind = f"{CURSOR}-new:{topic}:{','.join(languages)}"
    key = after_time_key(kind, after)
    limit_max_age(info.context, NEWEST_SECONDS)
    async with info.context.services.db() as session:
        found = await stories.latest_stories(
            session, limit=size + 1, after=key, topics=[topic], languages=languages, by=stories.BY_APPEARANCE
        )
    edges = [FeedEdge(cursor=encode_cursor(kind, [s.first_seen_at.isoformat(), s.id]),
                      node=FeedItem(story=StoryNode.from_model(s), article_id=None, ranking_signals=None))
             for s in found[:size]]  # fmt: skip
    return FeedConnection(
        edges=edges,
        page_info=relay.PageInfo(has_next_page=len(found) > size, has_previous_page=after is not None,
                                 start_cursor=edges[0].cursor if edges else None,
                                 end_cursor=edges[-1].cursor if edges else after),
        ranked_at=datetime.now(UTC), total_count=len(edges),
    )  # fmt: skip


async def breaking(info: Info, first: int | None = None, after: str | None = None,
                   languages: list[str] | None = None) -> relay.Connection[StoryNode]:  # fmt: skip
    size = page_size(first, info.context.services.settings)
    key = after_time_key(BREAKING_CURSOR, after)
    async with info.context.services.db() as session:
        found = await stories.latest_stories(session, limit=size + 1, after=key, languages=language_codes(languages),
                                             by=stories.BY_BREAKING, breaking_only=True)  # fmt: skip
    return build_connection(
        found, size=size, had_cursor=after is not None, kind=BREAKING_CURSOR,
        key=lambda s: [(s.breaking_started_at or s.first_seen_at).isoformat(), s.id], node=StoryNode.from_model,
    )  # fmt: skip
