"""The arq worker: the crawl tick (cron) claims due sources, `refresh_source` jobs fetch and store them."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import Any

from arq import cron
from arq.connections import RedisSettings
from arq.worker import Function, Worker, func

from app.articles.understanding import understand_articles
from app.ingest.events import publish_articles_added
from app.ingest.fetch import new_http_client
from app.ingest.politeness import Politeness
from app.ingest.refresh import RefreshOutcome, ingest_body, refresh_source
from app.ingest.scheduler import claim_due_sources
from app.outbox import repository as outbox
from app.outbox.relay import BATCH, relay
from app.queue_names import CRAWL_TICK, INGEST_PUSH, REFRESH_SOURCE, UNDERSTAND_ARTICLES, WEBSUB_SUBSCRIBE
from app.services import Services
from app.settings import Settings, get_settings
from app.sources import repository as sources
from app.stories.service import cluster_articles, merge_stories
from app.stories.store import ClusteringCache
from app.stories.updates import STORY_UPDATED_TOPIC
from app.stories.velocity import BREAKING_TOPIC
from app.trending.store import record_arrivals
from app.websub.protocol import Discovery
from app.websub.service import renewals_due, subscribe

log = logging.getLogger(__name__)


async def startup(ctx: dict[str, Any]) -> None:
    settings: Settings = ctx.get("settings") or get_settings()
    ctx["settings"] = settings
    ctx["services"] = Services.open(settings, pre_ping=False)  # see app.db.engine.create_engine
    ctx["http"] = new_http_client(settings)
    ctx["politeness"] = Politeness(ctx["services"].redis, ctx["http"], settings)
    ctx["clustering"] = ClusteringCache()  # this worker's copy of the active stories (app/stories/store.py)


async def shutdown(ctx: dict[str, Any]) -> None:
    await ctx["http"].aclose()
    await ctx["services"].close()


async def crawl_tick(ctx: dict[str, Any]) -> int:
    """Claim due sources and enqueue one refresh each, after the claim commits."""
    services: Services = ctx["services"]
    async with services.db.begin() as session:
        claimed = await claim_due_sources(session, services.settings)
    for source_id in claimed:
        await ctx["redis"].enqueue_job(
            REFRESH_SOURCE, source_id, _job_id=f"refresh:{source_id}", _queue_name=services.settings.queue_name
        )
    if claimed:
        log.info("crawl tick claimed %d sources", len(claimed))
    return len(claimed)


async def refresh_source_job(
    ctx: dict[str, Any], source_id: int, attempt: int = 1, admitted: bool = False
) -> dict[str, Any]:
    """Refresh one claimed source; a wait it asks for (politeness, a transient error) becomes a deferred job."""
    services: Services = ctx["services"]
    outcome = await refresh_source(
        services.engine, ctx["http"], services.settings, source_id,
        politeness=ctx["politeness"], attempt=attempt, admitted=admitted,
    )  # fmt: skip
    if outcome.status in ("retry", "deferred"):
        await ctx["redis"].enqueue_job(
            REFRESH_SOURCE,
            source_id,
            attempt + 1 if outcome.status == "retry" else attempt,
            outcome.status == "deferred",  # a deferred job already holds its politeness slot
            _defer_by=outcome.retry_in_s,
            _queue_name=services.settings.queue_name,
        )
    await after_ingest(ctx, source_id, outcome)
    return {"status": outcome.status, "new": len(outcome.new_article_ids), "error": outcome.error_class}


async def after_ingest(ctx: dict[str, Any], source_id: int, outcome: RefreshOutcome) -> None:
    """What follows a committed ingest: new articles announced, a discovered hub subscribed to."""
    services: Services = ctx["services"]
    await publish_articles_added(services.redis, source_id, outcome.new_article_ids)
    if outcome.new_article_ids:
        await ctx["redis"].enqueue_job(
            UNDERSTAND_ARTICLES, outcome.new_article_ids, _queue_name=services.settings.queue_name
        )
    if outcome.subscribe is not None:
        await ctx["redis"].enqueue_job(
            WEBSUB_SUBSCRIBE, source_id, outcome.subscribe.hub, outcome.subscribe.topic,
            _job_id=f"websub:{source_id}", _queue_name=services.settings.queue_name,
        )  # fmt: skip


async def ingest_push_job(ctx: dict[str, Any], source_id: int, body: bytes, content_type: str | None) -> str:
    """A hub pushed new entries: store them at once."""
    services: Services = ctx["services"]
    outcome = await ingest_body(services.engine, services.settings, source_id, body, content_type)
    await after_ingest(ctx, source_id, outcome)
    return outcome.status


PUSHED_TOPICS = (BREAKING_TOPIC, STORY_UPDATED_TOPIC)  # outbox topics the relay publishes on Redis, in this order
RELAY_ROUNDS = 50  # batches one relay run publishes per topic at most (then the next run goes on)
CLUSTER_PENDING = 2000  # a clustering job also takes up to this many other understood articles still waiting


async def understand_articles_job(ctx: dict[str, Any], article_ids: list[int]) -> int:
    """New articles, once stored: fingerprinted and labelled (copies marked), then clustered into stories."""
    services: Services = ctx["services"]
    await understand_articles(services.engine, article_ids, now=datetime.now(UTC))
    placed = await cluster_articles(services.engine, article_ids, ctx["clustering"], pending=CLUSTER_PENDING)
    await record_arrivals(services.redis, placed, datetime.now(UTC))  # trending (logs, never raises, if Redis fails)
    await publish_outbox(services)  # a story that just broke, or grew, is announced at once
    return len(placed)


async def publish_outbox(services: Services) -> int:
    """Every pending event of PUSHED_TOPICS, topic by topic: breaking news never waits behind a busy hour's story
    updates, and a clustering batch that changed hundreds of stories is published in full, not 100 at a time."""
    published = 0
    for topic in PUSHED_TOPICS:
        for _ in range(RELAY_ROUNDS):
            delivered = await relay(services.engine, services.redis, (topic,))
            published += delivered
            if delivered < BATCH:  # drained (or Redis is down: the next run tries again)
                break
    return published


async def relay_outbox_job(ctx: dict[str, Any]) -> int:
    """Every few seconds: outbox events not yet published (Redis was down, a worker died) go out."""
    return await publish_outbox(ctx["services"])


async def merge_stories_job(ctx: dict[str, Any]) -> int:
    """Every two minutes: stories that later articles show to be one are merged (old ids resolve); breaking stories
    cool down."""
    services: Services = ctx["services"]
    return await merge_stories(services.engine, datetime.now(UTC), ctx["clustering"])


async def websub_subscribe_job(ctx: dict[str, Any], source_id: int, hub: str, topic: str) -> str:
    services: Services = ctx["services"]
    return await subscribe(services.engine, ctx["http"], services.settings, source_id, Discovery(hub, topic))


async def websub_renew(ctx: dict[str, Any]) -> int:
    """Hourly: ask hubs again before leases run out."""
    services: Services = ctx["services"]
    if not services.settings.public_url:
        return 0
    async with services.engine.connect() as connection:
        due = await renewals_due(connection, services.settings)
    for source_id, found in due:
        await ctx["redis"].enqueue_job(
            WEBSUB_SUBSCRIBE, source_id, found.hub, found.topic,
            _job_id=f"websub:{source_id}", _queue_name=services.settings.queue_name,
        )  # fmt: skip
    return len(due)


async def prune_fetch_log(ctx: dict[str, Any]) -> int:
    """Hourly: the fetch log keeps its retention window and no more."""
    services: Services = ctx["services"]
    cutoff = datetime.now(UTC) - timedelta(days=services.settings.fetch_log_retention_days)
    deleted = 0
    while True:
        async with services.engine.begin() as connection:
            batch = await sources.prune_fetch_log(connection, older_than=cutoff)
        deleted += batch
        if batch == 0:
            return deleted


async def prune_outbox(ctx: dict[str, Any]) -> int:
    """Hourly: delivered events go once nobody reads them any more: breaking news after its catch-up window
    (`breakingEvents(after:)`), story updates (only ever pushed live) after a day. Undelivered events stay."""
    services: Services = ctx["services"]
    settings, now = services.settings, datetime.now(UTC)
    retention = {BREAKING_TOPIC: timedelta(days=settings.breaking_events_retention_days),
                 STORY_UPDATED_TOPIC: timedelta(hours=settings.story_updates_retention_hours)}  # fmt: skip
    deleted = 0
    for topic, kept in retention.items():
        while True:
            async with services.engine.begin() as connection:
                batch = await outbox.prune_delivered(connection, topic, older_than=now - kept)
            deleted += batch
            if batch == 0:
                break
    return deleted


def tick_seconds(every: int) -> set[int]:
    """The seconds of each minute at which a tick of period `every` fires."""
    return set(range(0, 60, every))


def worker_options(settings: Settings) -> dict[str, Any]:
    """Everything arq needs, from newsagg's settings (used by `newsagg worker` and by tests)."""
    if not settings.redis_url:
        raise SystemExit("REDIS_URL is not set: run `newsagg up` (starts embedded Redis) or set REDIS_URL")
    functions: list[Function] = [
        func(refresh_source_job, name=REFRESH_SOURCE, keep_result=0, max_tries=1),
        func(crawl_tick, name=CRAWL_TICK, keep_result=0, max_tries=1),  # also enqueueable, besides the cron
        func(ingest_push_job, name=INGEST_PUSH, keep_result=0, max_tries=1),
        func(websub_subscribe_job, name=WEBSUB_SUBSCRIBE, keep_result=0, max_tries=1),
        func(understand_articles_job, name=UNDERSTAND_ARTICLES, keep_result=0, max_tries=3),
    ]
    return {
        "functions": functions,
        "cron_jobs": [
            cron(crawl_tick, second=tick_seconds(settings.crawl_tick_seconds), run_at_startup=True, keep_result=0),
            cron(websub_renew, minute=17, second=0, keep_result=0),
            cron(prune_fetch_log, minute=41, second=0, keep_result=0),
            cron(prune_outbox, minute=41, second=30, keep_result=0),
            cron(merge_stories_job, minute=set(range(0, 60, 2)), second=30, keep_result=0),
            cron(relay_outbox_job, second=tick_seconds(5), keep_result=0),
        ],
        "on_startup": startup,
        "on_shutdown": shutdown,
        "redis_settings": RedisSettings.from_dsn(settings.redis_url),
        "queue_name": settings.queue_name,
        "poll_delay": settings.worker_poll_delay_seconds,
        "max_jobs": settings.worker_max_jobs,
        "ctx": {"settings": settings},
        "handle_signals": True,
        "health_check_interval": 60,
    }


def create_worker(settings: Settings, **overrides: Any) -> Worker:
    return Worker(**{**worker_options(settings), **overrides})
