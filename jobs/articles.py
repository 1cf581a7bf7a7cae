"""Article text jobs, on a queue of their own (`article_queue_name`), run by article workers
(`newsagg worker --articles`), or beside crawling in a crawl worker that also fetches pages, `article_fetch_concurrency`
at once, so fetching pages never delays crawling feeds."""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import AsyncIterator
from typing import Any

from arq.connections import ArqRedis

from app.extraction.backfill import Enqueue
from app.extraction.page_jobs import follow_up_page_job_id, page_job_id
from app.extraction.service import fetch_article_text
from app.observability.work import count_article_text
from app.queue_names import FETCH_ARTICLE_TEXT
from app.services import Services
from app.settings import Settings
from jobs.loop import queue_pool

log = logging.getLogger(__name__)


async def enqueue_page_fetches(redis: ArqRedis, settings: Settings, article_ids: list[int]) -> int:
    """One job per article's page; how many were enqueued. Each has its article's first page job id: an article whose
    first job is queued already is not queued twice."""
    enqueued = 0
    for article_id in article_ids:
        job = await redis.enqueue_job(FETCH_ARTICLE_TEXT, article_id, _job_id=page_job_id(article_id),
                                      _queue_name=settings.article_queue_name)  # fmt: skip
        enqueued += job is not None
    return enqueued


@contextlib.asynccontextmanager
async def page_queue(settings: Settings) -> AsyncIterator[Enqueue]:
    """Enqueueing page jobs from outside a worker (`newsagg articles fetch-text`)."""
    pool = queue_pool(settings, settings.article_queue_name)
    try:
        yield functools.partial(enqueue_page_fetches, pool, settings)
    finally:
        await pool.aclose()


async def enqueue_article_texts(ctx: dict[str, Any], article_ids: list[int]) -> None:
    """One job per new article whose page is to be fetched (after the articles' transaction committed)."""
    await enqueue_page_fetches(ctx["redis"], ctx["services"].settings, article_ids)


async def fetch_article_text_job(ctx: dict[str, Any], article_id: int, attempt: int = 1, admitted: bool = False
                                 ) -> str:  # fmt: skip
    """Fetch one article's page and store its text; a wait it asks for (politeness, a transient error) becomes a
    deferred job."""
    services: Services = ctx["services"]
    outcome = await fetch_article_text(services.engine, ctx["http"], ctx["politeness"], services.settings,
                                       article_id, attempt=attempt, admitted=admitted)  # fmt: skip
    if outcome.status in ("retry", "deferred"):
        await ctx["redis"].enqueue_job(
            FETCH_ARTICLE_TEXT, article_id, attempt + 1 if outcome.status == "retry" else attempt,
            outcome.status == "deferred",  # a deferred job already holds its politeness slot
            _defer_by=outcome.retry_in_s, _queue_name=services.settings.article_queue_name,
            _job_id=follow_up_page_job_id(article_id, ctx.get("job_id")),  # the sweeper sees its article is in hand
        )  # fmt: skip
    count_article_text(outcome.status, outcome.error_class)
    return outcome.status
