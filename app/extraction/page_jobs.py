"""Ids of article page jobs: each names its article, so the sweeper can ask the queue whether an article's page job
is queued, deferred or running, or was lost (with Redis, or never enqueued). An article has two ids, used in turn:
a job's follow-up (a retry, a politeness deferral) takes the other one, its own staying taken in arq until it ends;
so two members of the queue, asked for by name, say whether an article's page is in hand."""

from __future__ import annotations

from collections.abc import Sequence

from redis.asyncio import Redis

PREFIX = "article-text:"
SECOND = ":again"


def page_job_id(article_id: int) -> str:
    """The first job of an article's page (the crawl's, the backfill's, the sweeper's): enqueued twice, queued once."""
    return f"{PREFIX}{article_id}"


def page_job_ids(article_id: int) -> tuple[str, str]:
    return page_job_id(article_id), page_job_id(article_id) + SECOND


def follow_up_page_job_id(article_id: int, job_id: str | None) -> str:
    """The id of the follow-up of the page job `job_id`: the article's other id."""
    first, second = page_job_ids(article_id)
    return second if job_id == first else first


def article_of(job_id: str) -> int | None:
    """The article a page job id names; None for ids this module did not make."""
    if not job_id.startswith(PREFIX):
        return None
    article = job_id[len(PREFIX) :].partition(":")[0]
    return int(article) if article.isdigit() and len(article) < 20 else None


async def queued_pages(redis: Redis, queue_name: str, article_ids: Sequence[int]) -> set[int]:
    """Of these articles, those with a page job in the queue (waiting, deferred or running: arq keeps a job there
    until it ends), asked of the queue by name in one command (ZMSCORE): no other member is read."""
    if not article_ids:
        return set()
    members = [job_id for article_id in article_ids for job_id in page_job_ids(article_id)]
    scores = await redis.zmscore(queue_name, members)
    return {article_id for article_id, score in zip([article_of(m) for m in members], scores, strict=True)
            if score is not None and article_id is not None}  # fmt: skip
