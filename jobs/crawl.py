"""Crawling jobs: the crawl tick claims due sources, `refresh_source` jobs fetch and store them, hubs' pushes are
stored at once (app/websub/intake.py), and what follows an ingest is enqueued (the fetch log goes with retention,
jobs/retention.py)."""

from __future__ import annotations

import functools
import logging
from datetime import UTC, datetime
from typing import Any

from app.ingest.events import ARTICLES_ADDED
from app.ingest.priority import raise_for_news
from app.ingest.refresh import RefreshOutcome, refresh_source
from app.ingest.refresh_jobs import follow_up_job_id, refresh_job_id
from app.ingest.scheduler import claim_due_sources
from app.observability.work import count_refresh
from app.outbox.relay import relay_all
from app.queue_names import INGEST_PUSH, REFRESH_SOURCE, UNDERSTAND_ARTICLES
from app.services import Services
from app.sources import repository as sources
from app.websub.intake import store_held, store_push
from app.websub.pushes import Pushed
from jobs.articles import enqueue_article_texts
from jobs.websub import enqueue_subscribe

log = logging.getLogger(__name__)


async def crawl_tick(ctx: dict[str, Any]) -> int:
    """Claim due sources and enqueue one refresh each, after the claim commits; claim again, up to
    NEWSAGG_CRAWL_BATCHES_PER_TICK times, while each claim is full and fewer jobs than a tick's whole capacity wait
    in the crawl queue (past that the workers are behind, and more claims would only queue work nobody does). Each
    claim's job has an id of its own (a job stranded by a dead worker keeps its id taken in arq for an hour: it must
    not block the next claim's)."""
    services: Services = ctx["services"]
    settings = services.settings
    total = 0
    for _ in range(settings.crawl_batches_per_tick):
        now = datetime.now(UTC)  # names the claims
        async with services.db.begin() as session:
            claimed = await claim_due_sources(session, settings, now, claimed_by=ctx["heartbeat"].worker_id)
        for source_id in claimed:
            await ctx["redis"].enqueue_job(
                REFRESH_SOURCE, source_id, claimed_at=now, _job_id=refresh_job_id(source_id, now),
                _queue_name=settings.queue_name,
            )  # fmt: skip
        total += len(claimed)
        backlog = settings.crawl_batch_size * settings.crawl_batches_per_tick  # one tick's worth of jobs waiting
        if len(claimed) < settings.crawl_batch_size or await _jobs_waiting(ctx) >= backlog:
            break
    if total:
        log.info("crawl tick claimed %d sources", total)
    return total


async def _jobs_waiting(ctx: dict[str, Any]) -> int:
    """Jobs of the crawl queue due now that no worker has taken yet, those this tick just enqueued included (deferred
    ones wait for their time; a millisecond's margin for arq's rounding of the enqueue time)."""
    queue: str = ctx["services"].settings.queue_name
    return int(await ctx["redis"].zcount(queue, "-inf", int(datetime.now(UTC).timestamp() * 1000) + 1))


async def crawl_priority_job(ctx: dict[str, Any]) -> dict[str, int]:
    """Every NEWSAGG_CRAWL_PRIORITY_EVERY_SECONDS: the sources of breaking and trending stories are crawled sooner."""
    services: Services = ctx["services"]
    async with services.engine.begin() as connection:
        return await raise_for_news(connection, services.redis, services.settings, datetime.now(UTC))


async def refresh_source_job(
    ctx: dict[str, Any], source_id: int, attempt: int = 1, admitted: bool = False, claimed_at: datetime | None = None
) -> dict[str, Any]:
    """Refresh one claimed source (the claim made at `claimed_at`: none when it was made for an administrator's
    refresh); a wait it asks for (politeness, a transient error) becomes a deferred job (one longer than the claim
    can wait has returned the claim instead: `postponed`, nothing more to enqueue)."""
    services: Services = ctx["services"]
    if not await _hold_claim(ctx, source_id, claimed_at):
        count_refresh("superseded", 0)
        return {"status": "superseded", "new": 0, "error": None}
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
            claimed_at,
            _job_id=follow_up_job_id(source_id, claimed_at),
            _defer_by=outcome.retry_in_s,
            _queue_name=services.settings.queue_name,
        )
    await after_ingest(ctx, source_id, outcome)
    count_refresh(outcome.status, len(outcome.new_article_ids))
    return {"status": outcome.status, "new": len(outcome.new_article_ids), "error": outcome.error_class}


async def _hold_claim(ctx: dict[str, Any], source_id: int, claimed_at: datetime | None) -> bool:
    """This worker holds the claim from now on (if it dies, the claim returns at once). False when the claim the job
    was enqueued for has been released since (its worker was thought gone) and perhaps claimed anew: the job is
    superseded. A job of no claim time (an administrator's refresh) runs whatever it finds."""
    services: Services = ctx["services"]
    async with services.engine.begin() as connection:
        held = await sources.adopt_claim(connection, source_id, worker_id=ctx["heartbeat"].worker_id,
                                         claimed_at=claimed_at)  # fmt: skip
    return held or claimed_at is None


async def after_ingest(ctx: dict[str, Any], source_id: int, outcome: RefreshOutcome) -> None:
    """What follows a committed ingest: new articles announced at once (their outbox event published; with Redis
    down, the relay's next run does it), understood next, the pages of those without their full text fetched (on the
    article queue), a discovered hub subscribed to."""
    services: Services = ctx["services"]
    if outcome.new_article_ids:
        await relay_all(services.engine, services.redis, (ARTICLES_ADDED,))
        await ctx["redis"].enqueue_job(
            UNDERSTAND_ARTICLES, outcome.new_article_ids, _queue_name=services.settings.queue_name
        )
    if outcome.article_text_ids:
        await enqueue_article_texts(ctx, outcome.article_text_ids)
    if outcome.subscribe is not None:
        await enqueue_subscribe(ctx, source_id, outcome.subscribe.hub, outcome.subscribe.topic)


async def ingest_push_job(ctx: dict[str, Any], source_id: int, body: bytes | None = None,
                          content_type: str | None = None, failures: int = 0) -> str:  # fmt: skip
    """A hub pushed new entries: the source's pushes waiting stored (app/websub/intake.py), the next job enqueued for
    the rest, deferred when this one was cut short by a passing failure (`failures` in a row); a job enqueued with its
    body, as they were before, stores that one."""
    services: Services = ctx["services"]
    follow_up = functools.partial(after_ingest, ctx)
    if body is not None:
        return await store_push(services.engine, services.settings, source_id, Pushed(body, content_type), follow_up)
    intake = await store_held(services.engine, services.redis, services.settings, source_id, follow_up,
                              failures=failures)  # fmt: skip
    if intake.more:
        await ctx["redis"].enqueue_job(INGEST_PUSH, source_id, failures=intake.failures, _defer_by=intake.retry_in_s,
                                       _queue_name=services.settings.queue_name)  # fmt: skip
    return intake.status
