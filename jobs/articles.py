"""Article text jobs, on a queue of their own (`article_queue_name`) run by a worker of their own in each worker
process (`article_fetch_concurrency` at once), so fetching pages never delays crawling feeds."""

from __future__ import annotations

import logging
from typing import Any

from app.extraction.service import fetch_article_text
from app.observability.work import count_article_text
from app.queue_names import FETCH_ARTICLE_TEXT
from app.services import Services

log = logging.getLogger(__name__)


async def enqueue_article_texts(ctx: dict[str, Any], article_ids: list[int]) -> int:
    """One job per new article whose page is to be fetched (after the articles' transaction committed); how many were
    enqueued (an article whose job is still queued keeps that one)."""
    settings = ctx["services"].settings
    enqueued = 0
    for article_id in article_ids:
        job = await ctx["redis"].enqueue_job(FETCH_ARTICLE_TEXT, article_id, _job_id=f"article-text:{article_id}",
                                             _queue_name=settings.article_queue_name)  # fmt: skip
        enqueued += job is not None
    return enqueued


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
        )  # fmt: skip
    count_article_text(outcome.status, outcome.error_class)
    return outcome.status
