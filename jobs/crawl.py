"""Crawling jobs: the crawl tick claims due sources, `refresh_source` jobs fetch and store them, hubs' pushes are
stored at once (the fetch log goes with retention, jobs/retention.py)."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.exc import SQLAlchemyError

from app.ingest.events import ARTICLES_ADDED
from app.ingest.priority import raise_for_news, raise_sources
from app.ingest.refresh import RefreshOutcome, ingest_body, refresh_source
from app.ingest.refresh_jobs import follow_up_job_id, refresh_job_id
from app.ingest.scheduler import claim_due_sources
from app.observability.work import count_push, count_refresh
from app.outbox.relay import relay_all
from app.queue_names import INGEST_PUSH, REFRESH_SOURCE, UNDERSTAND_ARTICLES
from app.resilience.outage import refused_data
from app.services import Services
from app.sources import repository as sources
from app.websub import pushes
from jobs.articles import enqueue_article_texts
from jobs.loop import lost_server
from jobs.websub import enqueue_subscribe

log = logging.getLogger(__name__)
PUSHES_PER_JOB = 20  # a job stays short (well within arq's job timeout) however many pushes wait


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
    refresh); a wait it asks for (politeness, a transient error) becomes a deferred job."""
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
                          content_type: str | None = None) -> str:  # fmt: skip
    """A hub pushed new entries: the source's pushes waiting (app/websub/pushes.py) stored, oldest first, at most
    PUSHES_PER_JOB a run, one that cannot be stored set aside, the next job enqueued for the rest (a job enqueued
    with its body, as they were before, stores that one)."""
    services: Services = ctx["services"]
    if body is not None:
        return await _ingest_push(ctx, source_id, pushes.Pushed(body, content_type))
    status = "none"
    for _ in range(PUSHES_PER_JOB):
        if (pushed := await pushes.next_push(services.redis, source_id)) is None:
            break
        status = await _ingest_held(ctx, source_id, pushed)
    if not await pushes.finished(services.redis, source_id):  # more came meanwhile: a job of their own
        await ctx["redis"].enqueue_job(INGEST_PUSH, source_id, _queue_name=services.settings.queue_name)
    return status


async def _ingest_held(ctx: dict[str, Any], source_id: int, pushed: pushes.Pushed) -> str:
    """A held push stored and taken off its list. One whose storing fails for good (data PostgreSQL refuses, a bug)
    would fail every job that reads it again, and block its source's pushes behind it: it is set aside in the source's
    dead list instead (an outage, a deadlock or a lock timeout leaves it where it is, for the job's retry)."""
    redis = ctx["services"].redis
    try:
        status = await _ingest_push(ctx, source_id, pushed)
    except Exception as error:
        if not _for_good(error):
            raise
        log.exception("push of source %d (%d bytes) set aside in %s", source_id, len(pushed.body),
                      pushes.dead_key(source_id))  # fmt: skip
        await pushes.set_aside(redis, source_id, pushed)
        return "dead"
    await pushes.done_with(redis, source_id, pushed)
    return status


def _for_good(error: Exception) -> bool:
    if isinstance(error, SQLAlchemyError):
        return refused_data(error)
    return lost_server(error) is None  # not Redis or a socket lost: a bug, which trying again will not change


async def _ingest_push(ctx: dict[str, Any], source_id: int, pushed: pushes.Pushed) -> str:
    services: Services = ctx["services"]
    outcome = await ingest_body(services.engine, services.settings, source_id, pushed.body, pushed.content_type)
    # a hub may push only the newest entries, or none (a light ping): the source is crawled soon, first among peers
    async with services.engine.begin() as connection:
        await raise_sources(connection, services.settings, [source_id], reason="websub", now=datetime.now(UTC))
    await after_ingest(ctx, source_id, outcome)
    count_push(len(outcome.new_article_ids))
    return outcome.status
