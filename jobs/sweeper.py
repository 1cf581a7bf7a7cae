"""The sweeper job: every few seconds, workers whose heartbeat stopped are let go, claims whose refresh job was lost
return to pending, and articles whose understanding or page fetch was lost are enqueued again (app/workers/sweep.py)."""

from __future__ import annotations

import logging
import time
from typing import Any

from app.queue_names import UNDERSTAND_ARTICLES
from app.services import Services
from app.workers.metrics import ARTICLE_TEXTS_REQUEUED, ARTICLES_REQUEUED
from app.workers.sweep import release_jobless_claims, sweep
from jobs.articles import enqueue_article_texts

log = logging.getLogger(__name__)

# A batch's job id holds for this long: while its job is queued or running, sweeps do not enqueue it twice; a job
# stranded by a dead worker (arq keeps its id taken for an hour) blocks its batch only until the period turns.
REQUEUE_PERIOD_S = 120


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
    if found.texts:  # a job still queued has the same id: arq refuses the second
        texts = await enqueue_article_texts(ctx, found.texts)
        if texts:
            log.warning("sweep: %d articles whose page-fetching job was lost are enqueued again", texts)
            ARTICLE_TEXTS_REQUEUED.inc(texts)
    return requeued
