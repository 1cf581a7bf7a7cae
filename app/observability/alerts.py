"""What readers' alerts count: notifications written, deliveries by channel and outcome, digest emails sent, digest
runs that did not start (one was going already), and
(sampled by the worker with the other backlogs) dead deliveries waiting for an administrator and how far the fan-out
trails the outbox."""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client import Counter, Gauge

NOTIFICATIONS_WRITTEN = Counter(
    "newsagg_notifications_written", "In-app notifications the fan-out wrote, by kind (breaking, story_update).",
    ["kind"],
)  # fmt: skip
DELIVERIES = Counter(
    "newsagg_alert_deliveries",
    "Delivery attempts by channel (webhook, email) and outcome (delivered, failed: retried later, dead).",
    ["channel", "outcome"],
)  # fmt: skip
DIGEST_EMAILS = Counter("newsagg_alert_digest_emails_sent", "Digest emails the SMTP server accepted.")
DIGEST_RUNS_SKIPPED = Counter(
    "newsagg_alert_digest_runs_skipped",
    "Digest runs that ended at once, by reason: worker_busy (this worker's previous run still going), cluster_cap "
    "(NEWSAGG_DIGEST_CONCURRENT_RUNS runs going across the workers).",
    ["reason"],
)  # fmt: skip
# sampled from the database: whichever worker sampled last speaks for all
DEAD_DELIVERIES = Gauge("newsagg_alert_deliveries_dead", "Dead deliveries, waiting for an administrator's replay.",
                        multiprocess_mode="livemostrecent")  # fmt: skip
FANOUT_LAG = Gauge(
    "newsagg_alert_fanout_lag_seconds",
    "Age of the oldest outbox event (breaking, story updated) not yet fanned out to readers; 0 when none waits.",
    multiprocess_mode="livemostrecent",
)  # fmt: skip


def count_notified(kind: str, readers: int) -> None:
    if readers:
        NOTIFICATIONS_WRITTEN.labels(kind).inc(readers)


def count_deliveries(channel: str, outcomes: Iterable[str]) -> None:
    for outcome in outcomes:
        DELIVERIES.labels(channel, outcome).inc()


def count_digest_emails(sent: int) -> None:
    DIGEST_EMAILS.inc(sent)


def count_digest_run_skipped(reason: str) -> None:
    DIGEST_RUNS_SKIPPED.labels(reason).inc()


def set_backlog(dead: int, fanout_lag_seconds: float) -> None:
    DEAD_DELIVERIES.set(dead)
    FANOUT_LAG.set(max(0.0, fanout_lag_seconds))
