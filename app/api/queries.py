"""Root query fields: sources and articles, as Relay connections and by id."""

from __future__ import annotations

import dataclasses

import strawberry
from strawberry import relay

from app.api import auth
from app.api import feed as feeds
from app.api import notifications as alerts
from app.api.context import Info
from app.api.feed import FeedConnection
from app.api.filters import language_codes, topic_values
from app.api.mutations.share_link import share_link
from app.api.relay import after_id_key, after_time_key, build_connection, id_of, page_size, resolve_global_id
from app.api.search import SearchConnection
from app.api.search import search as search_articles
from app.api.trending import TrendingStory, trending_stories
from app.api.trending_entities import TrendingEntity, trending_entities
from app.api.types.article import ArticleNode
from app.api.types.breaking import CURSOR_KIND as BREAKING_CURSOR
from app.api.types.breaking import BreakingEvent
from app.api.types.enums import SourceStatusEnum, TopicEnum
from app.api.types.notification import AlertRulesInfo, DeliveryInfo, NotificationNode, WebhookEndpointInfo
from app.api.types.rate_limit import RateLimit, rate_limit
from app.api.types.share_link import ShareLinkNode
from app.api.types.source import SourceNode
from app.api.types.story import StoryNode
from app.api.types.viewer import Viewer
from app.articles import repository as articles
from app.health import check_health
from app.outbox import repository as outbox
from app.sources import repository as sources
from app.sources.portability import export_opml
from app.stories import repository as story_queries
from app.stories.velocity import BREAKING_TOPIC


@strawberry.type(description="Whether this API process reaches its database and Redis, and how search is doing.")
class Health:
    ok: bool = strawberry.field(description="The process can serve: its database answers (without Redis it degrades).")
    database: bool
    redis: bool
    database_latency_ms: float
    redis_latency_ms: float
    search: SearchHealth


@strawberry.type(description="The search backend, and how far its index is behind the articles.")
class SearchHealth:
    backend: str = strawberry.field(description="`meilisearch` (MEILI_URL set) or `postgres`.")
    reachable: bool = strawberry.field(description="Meilisearch answers its health check (always true on PostgreSQL).")
    pending_events: int | None = strawberry.field(
        description="Article changes written but not yet in the index (null when the database does not answer)."
    )
    lag_seconds: float | None = strawberry.field(
        description="Age of the oldest of them in seconds (0 when the index is up to date)."
    )
    fallbacks: int | None = strawberry.field(
        description="Searches answered from PostgreSQL because Meilisearch failed, by every API process (null when "
        "Redis is down)."
    )


@strawberry.type
class Query:
    @strawberry.field(description="Any object by its global id.")
    async def node(self, info: Info, id: relay.GlobalID) -> relay.Node | None:
        return await resolve_global_id(info, id, relay.Node)

    @strawberry.field(description="Sources in the order they were added.")
    async def sources(
        self,
        info: Info,
        first: int | None = None,
        after: str | None = None,
        status: SourceStatusEnum | None = None,  # type: ignore[valid-type]
    ) -> relay.Connection[SourceNode]:
        size = page_size(first, info.context.services.settings)
        after_id = after_id_key("source", after)
        async with info.context.services.db() as session:
            rows = await sources.list_sources(session, limit=size + 1, after_id=after_id, status=status)
        return build_connection(
            rows, size=size, had_cursor=after is not None, kind="source",
            key=lambda s: [s.id], node=SourceNode.from_model,
        )  # fmt: skip

    @strawberry.field(description="Every source as an OPML 2.0 document (folders are categories).")
    async def sources_opml(self, info: Info) -> str:
        async with info.context.services.db() as session:
            return await export_opml(session)

    @strawberry.field(description="One source by global id.")
    async def source(self, info: Info, id: relay.GlobalID) -> SourceNode | None:
        return await resolve_global_id(info, id, SourceNode)

    @strawberry.field(description="Articles, newest first; `sourceId` narrows them to one source, `languages` "
                                  "(ISO 639-1 codes) and `topics` to any of those.")  # fmt: skip
    async def articles(
        self,
        info: Info,
        first: int | None = None,
        after: str | None = None,
        source_id: relay.GlobalID | None = None,
        languages: list[str] | None = None,
        topics: list[TopicEnum] | None = None,  # type: ignore[valid-type]
    ) -> relay.Connection[ArticleNode]:
        size = page_size(first, info.context.services.settings)
        after_key = after_time_key("article", after)
        source = id_of(source_id, "Source", "sourceId") if source_id else None
        async with info.context.services.db() as session:
            rows = await articles.latest_articles(
                session, limit=size + 1, after=after_key, source_id=source, languages=language_codes(languages),
                topics=topic_values(topics),
            )  # fmt: skip
        return build_connection(
            rows, size=size, had_cursor=after is not None, kind="article",
            key=lambda a: [a.published_at.isoformat(), a.id], node=ArticleNode.from_model,
        )  # fmt: skip

    @strawberry.field(description="One article by global id.")
    async def article(self, info: Info, id: relay.GlobalID) -> ArticleNode | None:
        return await resolve_global_id(info, id, ArticleNode)

    @strawberry.field(description="Stories, most recently updated first; `topics` and `languages` (ISO 639-1) "
                                  "narrow them to any of those.")  # fmt: skip
    async def stories(
        self,
        info: Info,
        first: int | None = None,
        after: str | None = None,
        topics: list[TopicEnum] | None = None,  # type: ignore[valid-type]
        languages: list[str] | None = None,
    ) -> relay.Connection[StoryNode]:
        size = page_size(first, info.context.services.settings)
        after_key = after_time_key("story", after)
        async with info.context.services.db() as session:
            rows = await story_queries.latest_stories(session, limit=size + 1, after=after_key,
                                                      topics=topic_values(topics),
                                                      languages=language_codes(languages))  # fmt: skip
        return build_connection(
            rows, size=size, had_cursor=after is not None, kind="story",
            key=lambda s: [s.last_updated_at.isoformat(), s.id], node=StoryNode.from_model,
        )  # fmt: skip

    @strawberry.field(description="Breaking-news events, oldest first: after a cursor from `breakingNews` or from "
                                  "this list, exactly the events that followed it; `topics` and `languages` filter "
                                  "as the subscription does (any of them).")  # fmt: skip
    async def breaking_events(
        self,
        info: Info,
        first: int | None = None,
        after: str | None = None,
        topics: list[TopicEnum] | None = None,  # type: ignore[valid-type]
        languages: list[str] | None = None,
    ) -> relay.Connection[BreakingEvent]:
        size = page_size(first, info.context.services.settings)
        after_key = after_id_key(BREAKING_CURSOR, after)
        async with info.context.services.db() as session:
            rows = await outbox.events_after(
                session,
                BREAKING_TOPIC,
                after=after_key,
                limit=size + 1,
                topics=topic_values(topics),
                languages=language_codes(languages),
            )
        return build_connection(
            rows, size=size, had_cursor=after is not None, kind=BREAKING_CURSOR, key=lambda e: [e.id],
            node=lambda e: BreakingEvent.from_event(e.id, e.payload),
        )  # fmt: skip

    @strawberry.field(description="One story by global id (a merged story's id leads to the story it joined).")
    async def story(self, info: Info, id: relay.GlobalID) -> StoryNode | None:
        return await resolve_global_id(info, id, StoryNode)

    feed: FeedConnection = strawberry.field(
        resolver=feeds.feed,
        description="Stories ranked for you when signed in (your interests, follows, mutes and languages), for "
        "everyone otherwise (trending and coverage). At most 2 stories from one source in the top 20. Pages come "
        "from one ranking: walking them never repeats or skips a story while news arrives. `languages` (ISO 639-1) "
        "overrides your preferred languages. `region` (ISO 3166-1 alpha-2, such as `DE`) puts the stories about that "
        "country or covered by its outlets first; without it, your home region lifts local stories.",
    )
    topic_feed: FeedConnection = strawberry.field(
        resolver=feeds.topic_feed,
        description="Stories about one topic, the same for everyone: ranked (RELEVANCE) or newest first (FRESHNESS).",
    )
    breaking: relay.Connection[StoryNode] = strawberry.field(
        resolver=feeds.breaking, description="Stories breaking now, the most recent to break first."
    )

    search: SearchConnection = strawberry.field(
        resolver=search_articles,
        description="Articles matching keywords (quotes for phrases, `-word` to exclude, `or`), best first or newest "
        "first, with highlights and their story; `groupByStory` gives one hit per story. Later pages (`after`) walk "
        "the matches there were when the first page was asked, ranked as then: an article stored since comes with a "
        "new search. Public.",
    )

    @strawberry.field(description="The signed-in account, or null for an anonymous caller.")
    async def viewer(self, info: Info) -> Viewer | None:
        user = await auth.viewer(info)
        return Viewer.from_model(user) if user else None

    @strawberry.field(
        description="Database, Redis and search reachability of the process answering, and the search index's lag."
    )
    async def health(self, info: Info) -> Health:
        services = info.context.services
        report = await check_health(services.engine, services.redis, services.search)
        return Health(
            ok=report.ok,
            database=report.database.ok,
            redis=report.redis.ok,
            database_latency_ms=report.database.latency_ms,
            redis_latency_ms=report.redis.latency_ms,
            search=SearchHealth(**dataclasses.asdict(report.search)),
        )

    trending: list[TrendingStory] = strawberry.field(
        resolver=trending_stories, description="Stories gaining articles and readers fastest in the window (public)."
    )
    trending_entities: list[TrendingEntity] = strawberry.field(
        resolver=trending_entities,
        description="People, organisations and places being named fastest now: articles naming each in the window "
        "beyond their rate before it (only those named more than that rate predicts), for the topics and languages "
        "(ISO 639-1) given (public).",
    )
    share_link: ShareLinkNode | None = strawberry.field(
        resolver=share_link,
        description="One of your share links by its code, with its clicks by day and referrer (null for a code that "
        "is not one of yours).",
    )
    notifications: relay.Connection[NotificationNode] = strawberry.field(
        resolver=alerts.notifications,
        description="Your in-app alerts, newest first (`unreadOnly`: those not marked read). Signed-in readers.",
    )
    unread_notifications: int = strawberry.field(
        resolver=alerts.unread_notifications, description="How many of your notifications are unread."
    )
    alert_rules: AlertRulesInfo = strawberry.field(
        resolver=alerts.alert_rules, description="Your alert rules (defaults until you set them: no breaking alerts)."
    )
    webhook_endpoints: list[WebhookEndpointInfo] = strawberry.field(
        resolver=alerts.webhook_endpoints, description="The webhook endpoints of your API keys."
    )
    dead_deliveries: list[DeliveryInfo] = strawberry.field(
        resolver=alerts.dead_deliveries,
        description="Deliveries that failed every attempt, oldest first (after `afterId`), with their log "
        "(administrators).",
    )
    rate_limit: RateLimit | None = strawberry.field(
        resolver=rate_limit, description="Your points budget, GitHub's way (`dryRun: true` prices the query only)."
    )
