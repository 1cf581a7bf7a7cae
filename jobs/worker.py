"""The arq worker: the crawl tick (cron) claims due sources, `refresh_source` jobs fetch and store them."""

from __future__ import annotations

import logging
from typing import Any

from arq import cron
from arq.connections import RedisSettings
from arq.worker import Function, Worker, func

from app.ingest.events import publish_articles_added
from app.ingest.fetch import new_http_client
from app.ingest.politeness import Politeness
from app.ingest.queue_names import CRAWL_TICK, REFRESH_SOURCE
from app.ingest.refresh import refresh_source
from app.ingest.scheduler import claim_due_sources
from app.services import Services
from app.settings import Settings, get_settings

log = logging.getLogger(__name__)


async def startup(ctx: dict[str, Any]) -> None:
    settings: Settings = ctx.get("settings") or get_settings()
    ctx["settings"] = settings
    ctx["services"] = Services.open(settings, pre_ping=False)  # see app.db.engine.create_engine
    ctx["http"] = new_http_client(settings)
    ctx["politeness"] = Politeness(ctx["services"].redis, ctx["http"], settings)


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
    await publish_articles_added(services.redis, source_id, outcome.new_article_ids)
    return {"status": outcome.status, "new": len(outcome.new_article_ids), "error": outcome.error_class}


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
    ]
    return {
        "functions": functions,
        "cron_jobs": [
            cron(crawl_tick, second=tick_seconds(settings.crawl_tick_seconds), run_at_startup=True, keep_result=0)
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
