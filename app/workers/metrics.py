"""What the sweep of stranded work counts, for /metrics: workers found gone, claims returned, articles enqueued
again."""

from __future__ import annotations

from prometheus_client import Counter

WORKERS_GONE = Counter("newsagg_workers_gone", "Workers whose heartbeat stopped (let go by the sweeper).")
CLAIMS_RELEASED = Counter(
    "newsagg_claims_released",
    "In-flight source claims returned to pending, by why: worker_gone (its worker stopped beating), job_lost (no "
    "job of the claim is queued or running: Redis lost it, or it was never enqueued) or stale (older than the "
    "in-flight timeout).",
    ["reason"],
)
ARTICLES_REQUEUED = Counter(
    "newsagg_articles_requeued", "Articles stored but never understood or clustered, enqueued again by the sweeper."
)
PAGES_REQUEUED = Counter(
    "newsagg_article_pages_requeued",
    "Articles whose page was never sought and whose page job was lost (with Redis, or never enqueued), enqueued "
    "again by the sweeper.",
)
HEARTBEAT_FAILURES = Counter("newsagg_worker_heartbeat_failures", "Heartbeats a worker failed to write.")


def count_released(worker_gone: int, stale: int) -> None:
    CLAIMS_RELEASED.labels("worker_gone").inc(worker_gone)
    CLAIMS_RELEASED.labels("stale").inc(stale)
