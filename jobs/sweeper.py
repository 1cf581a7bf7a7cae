"""The sweeper job: every few seconds, workers whose heartbeat stopped are let go, claims whose refresh job was lost
return to pending, and articles whose understanding was lost are enqueued again; every `article_sweep_seconds`, those
whose page job was lost too (app/workers/sweep.py)."""

from __future__ import annotations

import logging
import time
from typing import Any

from app.queue_names import UNDERSTAND_ARTICLES
from app.services import Services
from app.workers.metrics import ARTICLES_REQUEUED, PAGES_REQUEUED
from app.workers.sweep import lost_page_fetches, release_jobless_claims, sweep
from jobs.articles import enqueue_page_fetches

log = logging.getLogger(__name__)

# A batch's job id holds for this long: while its job is queued or running, sweeps do not enqueue it twice; a job
# stranded by a dead worker (arq keeps its id taken for an hour) blocks its batch only until the period turns.
REQUEUE_PERIOD_S = 120
PAGE_SWEEP_KEY = "newsagg:sweep:pages:"  # + the article queue's name: taken by the sweep of lost pages that is due


async def due(redis: Any, key: str, every_seconds: int) -> bool:
    """Once in `every_seconds` across every worker's sweeper: the first to ask in a period takes it."""
    return bool(await redis.set(key, 1, nx=True, ex=every_seconds))


async def sweep_job(ctx: dict[str, Any]) -> int:
    services: Services = ctx["services"]
    found = await sweep(services.engine, services.settings)
    await release_jobless_claims(services.engine, ctx["redis"], services.settings)
    period = int(time.time() // REQUEUE_PERIOD_S)
    requeued = 0
    for id_range, article_ids in sorted(found.batches.items()):
        job_id = f"understand:sweep:{id_range}:{period}"
        job = await ctx["redis"].enqueue_job(
            UNDERSTAND_ARTICLES, article_ids, _job_id=job_id, _queue_name=services.settings.queue_name
        )
        requeued += len(article_ids) if job is not None else 0
    if requeued:
        log.warning("sweep: %d articles stored but never understood or clustered are enqueued again", requeued)
        ARTICLES_REQUEUED.inc(requeued)
    if await due(ctx["redis"], f"{PAGE_SWEEP_KEY}{services.settings.article_queue_name}",
                 services.settings.article_sweep_seconds):  # fmt: skip
        await requeue_lost_pages(ctx, services)
    return requeued


async def requeue_lost_pages(ctx: dict[str, Any], services: Services) -> int:
    """Page jobs lost with Redis (or never enqueued) enqueued again, each once: its article is then seen queued."""
    lost = await lost_page_fetches(services.engine, ctx["redis"], services.settings)
    requeued = await enqueue_page_fetches(ctx["redis"], services.settings, lost)
    if requeued:
        log.warning("sweep: %d articles whose page job was lost have it enqueued again", requeued)
        PAGES_REQUEUED.inc(requeued)
    return requeued
