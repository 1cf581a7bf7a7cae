"""Running newsagg: supervision, workers, real-time delivery, retention and observability."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationInfo, field_validator
from pydantic_settings import BaseSettings

from app.resilience.backoff import RetryPolicy


class OperationsSettings(BaseSettings):
    """Running newsagg (part of `app.settings.Settings`)."""

    # --- supervision (`newsagg up`) ----------------------------------------------------------------------------------
    api_processes: int = Field(
        default=1,
        ge=1,
        description="API processes `newsagg up` runs (`--api`); more than one run on loopback ports behind HAProxy "
        "on the API's host and port, or one alone when no haproxy is installed.",
    )
    worker_processes: int = Field(default=1, ge=1, description="arq workers `newsagg up` runs (`--workers`).")
    article_worker_processes: int = Field(
        default=1,
        ge=0,
        description="Article workers `newsagg up` runs (`--article-workers`): processes of their own that fetch "
        "article pages for their text (`newsagg worker --articles`), so that extraction never slows crawling; its "
        "crawl workers then leave the article queue alone. 0: `up` fetches no article pages at all.",
    )
    stop_grace_seconds: float = Field(
        default=20,
        description="`newsagg up` waits this long after SIGTERM for a child before it sends SIGKILL.",
    )
    health_probe_seconds: float = Field(
        default=5,
        description="`newsagg up` asks its API's /healthz this often (and waits this long at most).",
    )
    health_failures_to_restart: int = Field(
        default=3,
        description="`newsagg up` restarts its API after this many unanswered /healthz probes in a row.",
    )
    restart_budget: int = Field(
        default=5,
        description="`newsagg up` restarts a child at most this many times within `restart_window_seconds`; "
        "one more failure stops everything.",
    )
    restart_window_seconds: float = Field(default=300, description="The window of `restart_budget`.")

    # --- worker ------------------------------------------------------------------------------------------------------
    worker_poll_delay_seconds: float = Field(
        default=0.05,
        description="How often an idle arq worker polls its queue (arq's default 0.5 s is slow).",
    )
    worker_max_jobs: int = Field(default=20, description="Concurrent jobs per worker process.")
    queue_name: str = Field(default="newsagg:queue", description="arq queue name.")
    worker_heartbeat_seconds: float = Field(
        default=5, gt=0, description="How often each worker renews its heartbeat (a row in PostgreSQL)."
    )
    worker_gone_after_seconds: float = Field(
        default=20, gt=0, description="A worker whose heartbeat is older than this is gone: the next crawl tick "
        "returns its claimed sources to pending (crawled again at once), without waiting for the in-flight timeout.",
    )  # fmt: skip
    sweep_seconds: int = Field(
        default=10, ge=1, le=60, description="How often the sweeper looks for articles whose understanding was lost."
    )
    sweep_grace_seconds: float = Field(
        default=30, gt=0, description="An article still without its story this long after it was stored is "
        "understood and clustered again, and a source claimed this long ago whose refresh job is neither queued nor "
        "running is claimed again (the job was lost with a worker, or with Redis).",
    )  # fmt: skip
    # --- notifications (app/notifications/: readers' alerts by in-app, webhook and email digest) --------------
    outbox_max_attempts: int = Field(
        default=20, ge=1, description="An outbox event that fails this many times while Redis answers (a poisoned "
        "event) is dead: kept with its error, never relayed again.",
    )  # fmt: skip
    notify_batch: int = Field(
        default=5000, ge=1, le=100_000, description="Readers one fan-out statement turns into notifications and "
        "deliveries (one transaction each; a story followed by 100,000 readers is 20 batches).",
    )  # fmt: skip
    notify_lookback_seconds: float = Field(
        default=3600, gt=0, description="Outbox events older than this are never fanned out to readers (a first "
        "start does not alert about last week's news).",
    )  # fmt: skip
    notify_retention_days: float = Field(
        default=30, ge=0, description="In-app notifications, deliveries (with their log) and finished fan-outs are "
        "deleted this many days after they were written, by the hourly retention pass; dead deliveries stay (0 "
        "keeps everything).",
    )  # fmt: skip
    notify_max_attempts: int = Field(
        default=8, ge=1, description="A webhook or email delivery that fails this many times is dead: listed for "
        "administrators (`deadDeliveries`), who can replay it (`deliveriesReplay`).",
    )  # fmt: skip
    notify_backoff_base_seconds: float = Field(
        default=2, gt=0, description="Retries wait a random time up to base * 2^(attempt-1) seconds (full jitter)."
    )
    notify_backoff_cap_seconds: float = Field(
        default=1800, gt=0, description="The longest wait between two attempts of one delivery."
    )
    webhook_timeout_seconds: float = Field(
        default=5, gt=0, description="A webhook POST ends within this many seconds, all of it: a receiver whose "
        "status and headers have not come by then failed (retried later); its body is read only while time is left.",
    )  # fmt: skip
    webhook_response_max_bytes: int = Field(
        default=65536, ge=0, description="Of a receiver's response body, at most this much is read (then closed); "
        "a 2xx status is success whatever the body.",
    )  # fmt: skip
    webhook_concurrency: int = Field(default=64, ge=1, description="Webhook POSTs one worker has in flight at once.")
    webhooks_allow_loopback: bool = Field(
        default=False, description="Allow webhook endpoints on loopback addresses (tests, local development); other "
        "non-public addresses are refused always, as for feeds.",
    )  # fmt: skip
    smtp_host: str | None = Field(default=None, description="SMTP server for email digests; unset: no email.")
    smtp_port: int = Field(default=25, ge=1, le=65535, description="Port of the SMTP server.")
    smtp_tls: Literal["none", "starttls", "tls"] = Field(
        default="starttls", description="`starttls` (upgrade a plain connection), `tls` (implicit TLS, port 465) or "
        "`none` (a local relay only).",
    )  # fmt: skip
    smtp_username: str | None = Field(default=None, description="SMTP login, when the server asks for one.")
    smtp_password: str | None = Field(default=None, description="SMTP password.")
    smtp_from: str = Field(default="newsagg <alerts@localhost>", description="From address of digests.")
    digest_hour: int = Field(default=8, ge=0, le=23, description="Local hour (the reader's time zone) of the daily "
                             "digest.")  # fmt: skip
    smtp_timeout_seconds: float = Field(
        default=10, gt=0, description="Timeout of each SMTP operation; a digest email that takes three times this "
        "(a reconnection included) is cut off and retried later.",
    )  # fmt: skip
    smtp_messages_per_connection: int = Field(
        default=100, ge=1, description="Digest emails sent over one SMTP connection before it is opened again (a "
        "server that allows fewer says so with a 421, and the connection is opened again then).",
    )  # fmt: skip
    digest_max_stories: int = Field(
        default=50, ge=1, description="Stories one digest email lists (urgent first, then the newest); the others "
        "are counted in an `and N more` line and not sent again.",
    )  # fmt: skip
    digest_max_bytes: int = Field(
        default=65536, ge=4096, description="Size cap of one digest email as sent, the whole message: headers and "
        "both its parts (plain text and HTML) together; stories that do not fit are counted with those left out.",
    )  # fmt: skip
    digest_concurrent_runs: int = Field(
        default=2, ge=1, description="Digest runs going at once across all workers (each worker runs one at a time; "
        "a run that finds the cap reached ends at once, counted in newsagg_alert_digest_runs_skipped_total). Leases "
        "in Redis that expire if their worker dies; without Redis, runs go ahead uncounted.",
    )  # fmt: skip

    # --- real-time delivery and Redis --------------------------------------------------------------------------------
    broadcast_catch_up_seconds: float = Field(
        default=10,
        description="After a Redis outage, an API process re-reads from the outbox the events delivered "
        "this long before it noticed the loss (events its subscribers may have missed; those seen are skipped).",
    )
    broadcast_liveness_seconds: float = Field(
        default=5,
        gt=0,
        description="An API process's pub/sub reader PINGs Redis after this long without a word from it, and "
        "reconnects when the PING goes unanswered as long (a Redis that hangs closes no connection).",
    )
    redis_backoff_max_seconds: float = Field(
        default=5,
        description="Longest wait between two reconnects to Redis (the broadcaster's and the worker's).",
    )
    redis_timeout_seconds: float = Field(
        default=2,
        gt=0,
        description="A connect to Redis, or a command, that gets no answer within this fails as a refused connection "
        "does (the caller degrades: uncached answers, unmetered requests, a job retried later); the client that met "
        "it then asks Redis nothing for as long, so a Redis that hangs (stopped, partitioned) costs a request about "
        "one timeout, not one per call. Applies to the API's, the worker's and the enqueuers' connections; the pub/sub "
        "reader's idle waits are bounded by NEWSAGG_BROADCAST_LIVENESS_SECONDS instead. A `socket_timeout` in "
        "REDIS_URL's query wins.",
    )

    # --- retention (app/retention/: one hourly pass, bounded batches; 0 keeps forever) -------------------------------
    # Notifications (DESIGN §6) do not exist yet: their retention comes with them.
    articles_retention_days: float = Field(
        default=90,
        ge=0,
        description="Articles stored more than this many days ago are deleted, with their read events; the stories "
        "they were in are counted and represented again. An article of a story that changed in the last 49 hours "
        "(the clustering window and an hour) waits until the story has settled.",
    )
    stories_retention_days: float = Field(
        default=7,
        ge=0,
        description="Stories left with no article (retention or sourceDelete took them all) or merged into another "
        "are deleted once unchanged this many days (never within 49 hours, and those retention empties by the next "
        "hourly pass); until then their ids still resolve.",
    )
    read_events_retention_days: float = Field(
        default=180,
        ge=0,
        description="Reading history (clicks, reads, saves) older than this is deleted; the interests learnt "
        "from it stay.",
    )
    sessions_retention_days: float = Field(
        default=7,
        ge=0,
        description="Sign-in sessions are deleted this many days after they expired or were signed out "
        "(they stop working at once either way).",
    )
    fetch_log_retention_days: float = Field(default=14, ge=0, description="Fetch log rows older than this are deleted.")
    fetch_archive_retention_days: float = Field(
        default=7,
        ge=0,
        description="Archived fetch bodies older than this are deleted (never later than their fetch log row).",
    )
    vocabulary_retention_days: float = Field(
        default=90,
        ge=0,
        description="Terms of the clustering vocabulary (the document frequencies behind IDF) that at most "
        "`NEWSAGG_VOCABULARY_RARE_DOCUMENTS` articles had, and none for this many days, are forgotten: the table "
        "every new clustering worker reads whole stops growing with each typo and one-off name. A term forgotten "
        "and seen again counts from there; a running worker keeps what it holds until it restarts.",
    )
    vocabulary_rare_documents: int = Field(
        default=2,
        ge=1,
        description="The most articles a vocabulary term may have had to be forgotten "
        "(`NEWSAGG_VOCABULARY_RETENTION_DAYS`); common terms stay, however old.",
    )
    breaking_events_retention_days: float = Field(
        default=30,
        ge=0,
        description="Delivered breaking-news events are kept this long (`breakingEvents(after:)` reads).",
    )
    story_updates_retention_hours: float = Field(
        default=24,
        ge=0,
        description="Delivered `storyUpdated` events are kept this long (only the live push reads them).",
    )
    articles_added_retention_hours: float = Field(
        default=1,
        ge=0,
        description="Delivered `articleAdded` events are kept this long (an API process that lost Redis "
        "catches its subscribers up from them).",
    )
    search_events_retention_hours: float = Field(
        default=24,
        ge=0,
        description="Delivered search-index events are kept this long (for looking into a sync).",
    )
    retention_article_batch: int = Field(
        default=500,
        ge=1,
        le=10_000,
        description="Retention deletes articles (their stories repaired in each batch) and emptied stories this many "
        "per transaction, clustering waiting meanwhile, and other rows twenty times as many: no transaction holds "
        "locks for long.",
    )

    # --- observability -----------------------------------------------------------------------------------------------
    log_format: Literal["text", "json"] | None = Field(
        default=None,
        description="`text` (aligned, for people) or `json` (one object a line, for collectors); unset: text when "
        "standard error is a terminal, else json (`--log-format`).",
    )
    log_level: str = Field(
        default="INFO", pattern=r"(?i)^(debug|info|warning|error)$", description="DEBUG, INFO, WARNING or ERROR "
        "(`--log-level`).",
    )  # fmt: skip
    metrics_dir: Path | None = Field(
        default=None,
        description="Folder where every API and worker process of one host writes its metrics, so that any API's "
        "/metrics reports them all (emptied when the first of them starts); unset: `metrics` under `home`.",
    )

    worker_metrics_address: str | None = Field(
        default=None,
        pattern=r"^[^:\s]*:\d{1,5}$",
        description="HOST:PORT where `newsagg worker` also serves /metrics (its host's processes, as an API does), for "
        "workers on hosts or in containers without an API process, e.g. `0.0.0.0:9100`; unset: none.",
    )

    @property
    def notify_retries(self) -> RetryPolicy:
        """How webhook deliveries, digest entries and fan-outs are retried, and when they are dead."""
        return RetryPolicy(self.notify_max_attempts, self.notify_backoff_base_seconds, self.notify_backoff_cap_seconds)

    @field_validator("worker_gone_after_seconds")
    @classmethod
    def _gone_after_missed_beats(cls, seconds: float, info: ValidationInfo) -> float:
        """Shorter, and a worker whose beat is a little late would lose its claims to a duplicate crawl."""
        beat = info.data.get("worker_heartbeat_seconds")
        if beat is not None and seconds < 2 * beat:
            raise ValueError("must be at least twice worker_heartbeat_seconds")
        return seconds
