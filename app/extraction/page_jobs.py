"""Ids of article page jobs: each names its article, so the sweeper can tell an article whose page job is queued,
deferred or running from one whose job was lost (with Redis, or never enqueued)."""

from __future__ import annotations

import uuid

from redis.asyncio import Redis

PREFIX = "article-text:"


def page_job_id(article_id: int) -> str:
    """The first job of an article's page (the crawl's, or the backfill's): enqueued twice, it is queued once."""
    return f"{PREFIX}{article_id}"


def follow_up_page_job_id(article_id: int, why: str) -> str:
    """A later job of the same page (a retry, a politeness deferral, the sweeper's): unique."""
    return f"{PREFIX}{article_id}:{why}:{uuid.uuid4().hex[:12]}"


def article_of(job_id: str) -> int | None:
    """The article a page job id names; None for ids this module did not make."""
    if not job_id.startswith(PREFIX):
        return None
    article = job_id[len(PREFIX) :].partition(":")[0]
    return int(article) if article.isdigit() and len(article) < 20 else None


async def queued_pages(redis: Redis, queue_name: str, *, most: int) -> set[int] | None:
    """The articles of every page job in the queue (waiting, deferred or running: arq keeps a job there until it
    ends), read in one command; None when the queue holds more than `most` (a backlog: the sweep waits for it)."""
    if await redis.zcard(queue_name) > most:
        return None
    members = await redis.zrange(queue_name, 0, -1)
    articles = (article_of(m.decode() if isinstance(m, bytes) else m) for m in members)
    return {article for article in articles if article is not None}
