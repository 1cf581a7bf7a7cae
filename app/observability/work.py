"""What the worker counts: every job's duration and failures, fetches by outcome, articles ingested and understood
(topic known or not), the time from an article's storing to its story, and how far the outbox relay, clustering and
the search index trail (sampled by the worker every few seconds: app/observability/backlogs.py)."""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from datetime import datetime
from typing import Any, ParamSpec, TypeVar

from prometheus_client import Counter, Gauge, Histogram

P = ParamSpec("P")
T = TypeVar("T")
_LONG = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600)  # a refresh to an index build

JOB_SECONDS = Histogram("newsagg_job_duration_seconds", "Worker jobs, start to end, by job.", ["job"], buckets=_LONG)
JOB_FAILURES = Counter("newsagg_job_failures", "Worker jobs that raised or were cut off, by job.", ["job"])
FETCHES = Counter(
    "newsagg_fetches",
    "Source refreshes by outcome: fetched, not_modified, failed, retry, deferred, postponed, skipped, superseded.",
    ["outcome"],
)
FETCH_FAILURES = Counter(
    "newsagg_fetch_failures",
    "Failed fetches by what was fetched (feed, robots) and why: dns, connect, tls, timeout, protocol, http_status, "
    "too_large, robots_disallowed, ...",
    ["fetched", "failure"],
)
CRAWL_PRIORITY_RAISED = Counter(
    "newsagg_crawl_priority_raised",
    "Sources whose crawl priority was raised, by why: breaking, trending, websub.",
    ["reason"],
)
ARTICLE_TEXTS = Counter(
    "newsagg_article_texts",
    "Article page fetches for their text, by outcome (extracted, empty, failed, not_modified, retry, deferred, "
    "skipped) and error class.", ["outcome", "error"],
)  # fmt: skip
EXTRACTION_ABANDONED = Counter(
    "newsagg_article_extraction_abandoned",
    "Article pages whose extraction was abandoned and its process replaced, by why: extraction_timeout (longer than "
    "NEWSAGG_ARTICLE_EXTRACTION_TIMEOUT_SECONDS) or extraction_crashed.", ["reason"],
)  # fmt: skip
INGESTED = Counter("newsagg_articles_ingested", "New articles stored, by how they came (poll or push).", ["via"])
UNDERSTOOD = Counter(
    "newsagg_articles_understood",
    "Articles labelled, by whether their topic is known or unknown (a language the topic classifier does not read).",
    ["topic"],
)  # fmt: skip
CLUSTERING_LAG = Histogram(
    "newsagg_clustering_lag_seconds", "From an article's storing to its story.", buckets=_LONG[3:]
)
# sampled from the database: whichever worker sampled last speaks for all (a dead worker's sample no longer counts)
OUTBOX_PENDING = Gauge("newsagg_outbox_pending_events", "Outbox events not yet delivered, by topic.", ["topic"],
                       multiprocess_mode="livemostrecent")  # fmt: skip
OUTBOX_OLDEST = Gauge("newsagg_outbox_oldest_pending_seconds", "Age of the oldest undelivered outbox event, by topic.",
                      ["topic"], multiprocess_mode="livemostrecent")  # fmt: skip
UNCLUSTERED = Gauge("newsagg_articles_unclustered", "Stored articles not yet in a story.",
                    multiprocess_mode="livemostrecent")  # fmt: skip
SEARCH_LAG = Gauge("newsagg_search_sync_lag_seconds", "Age of the oldest article change not yet in the search index.",
                   multiprocess_mode="livemostrecent")  # fmt: skip


def measured(job: Callable[P, Awaitable[T]], name: str | None = None) -> Callable[P, Coroutine[Any, Any, T]]:
    """`job`, timed and its failures counted under `name` (its function's name by default)."""
    label = name or job.__name__

    @functools.wraps(job)
    async def run(*args: P.args, **kwargs: P.kwargs) -> T:
        started = time.perf_counter()
        try:
            return await job(*args, **kwargs)
        except (Exception, asyncio.CancelledError):  # cancelled: arq's timeout, or a shutdown cut it off
            JOB_FAILURES.labels(label).inc()
            raise
        finally:
            JOB_SECONDS.labels(label).observe(time.perf_counter() - started)

    return run


def count_refresh(outcome: str, new_articles: int) -> None:
    FETCHES.labels(outcome).inc()
    INGESTED.labels("poll").inc(new_articles)


def count_fetch_failure(fetched: str, failure: str) -> None:
    FETCH_FAILURES.labels(fetched, failure).inc()


def count_priority_raised(reason: str, sources: int) -> None:
    CRAWL_PRIORITY_RAISED.labels(reason).inc(sources)


def count_article_text(outcome: str, error_class: str | None) -> None:
    ARTICLE_TEXTS.labels(outcome, error_class or "").inc()


def count_extraction_abandoned(reason: str) -> None:
    EXTRACTION_ABANDONED.labels(reason).inc()


def count_push(new_articles: int) -> None:
    INGESTED.labels("push").inc(new_articles)


def count_understood(topics: list[list[str]]) -> None:
    known = sum(1 for found in topics if found)
    UNDERSTOOD.labels("known").inc(known)
    UNDERSTOOD.labels("unknown").inc(len(topics) - known)


def count_clustered(stored_at: Iterable[datetime | None], now: datetime) -> None:
    for at in stored_at:
        if at is not None:
            CLUSTERING_LAG.observe(max(0.0, (now - at).total_seconds()))
