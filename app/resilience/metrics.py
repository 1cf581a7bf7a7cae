"""What surviving an outage counts: Redis calls that failed and were served degraded, the broadcaster's reconnects
and the events it caught up from the outbox, the worker's restarts of its arq loop, the supervisor's restarts."""

from __future__ import annotations

from prometheus_client import Counter

REDIS_DEGRADED = Counter(
    "newsagg_redis_degraded", "Work done without Redis because it was unreachable, by what (cache, broadcast, ...).",
    ["part"],
)  # fmt: skip
BROADCAST_RECONNECTS = Counter("newsagg_broadcast_reconnects", "Times the pub/sub reader lost Redis and came back.")
BROADCAST_SILENCES = Counter(
    "newsagg_broadcast_silences", "Times the pub/sub reader found Redis silent (a PING unanswered) and dropped it."
)
CAUGHT_UP = Counter(
    "newsagg_broadcast_caught_up_events", "Events missed on pub/sub and delivered from the outbox, by topic.", ["topic"]
)
DATABASE_RETRIES = Counter(
    "newsagg_database_unreachable_job_retries", "Jobs that found PostgreSQL unreachable, deferred to try again later."
)
DATABASE_OUTAGES = Counter(
    "newsagg_database_outages",
    "Outages of PostgreSQL met by a process's long-lived readers (counted once each), by part (notifications, ...).",
    ["part"],
)  # fmt: skip
WORKER_RESTARTS = Counter("newsagg_worker_loop_restarts", "Times the worker's arq loop died on Redis and restarted.")
CHILD_RESTARTS = Counter(
    "newsagg_supervisor_restarts", "Children that `newsagg up` restarted, by child and why (exited, unhealthy).",
    ["child", "reason"],
)  # fmt: skip
REDIS_SILENCES = Counter(
    "newsagg_redis_silences", "Times Redis left a connect or a command of this process unanswered for "
    "NEWSAGG_REDIS_TIMEOUT_SECONDS (a hung Redis); for as long after each, calls fail at once without asking it.",
)  # fmt: skip
