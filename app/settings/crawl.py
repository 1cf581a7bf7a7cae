"""Crawling: scheduling, priority, fetching, politeness, article pages, WebSub and parsing."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings


class CrawlSettings(BaseSettings):
    """Crawling (part of `app.settings.Settings`)."""

    # --- crawl scheduling (DESIGN §4) --------------------------------------------------------------------------------
    crawl_tick_seconds: int = Field(default=15, ge=1, le=60, description="How often due sources are claimed.")
    crawl_batch_size: int = Field(default=100, ge=1, description="Sources claimed at once (one claim).")
    crawl_batches_per_tick: int = Field(
        default=5,
        ge=1,
        description="Claims one tick may make, each of `crawl_batch_size`: another follows only while the last was "
        "full and fewer jobs than the tick's whole capacity (batch size times this) wait in the crawl queue. At the "
        "defaults 2,000 sources a minute; 10,000 sources at the 15-minute maximum interval need about 667.",
    )
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
    crawl_dead_after_gone: int = Field(
        default=3,
        description="Consecutive 404/410 answers (over at least NEWSAGG_CRAWL_DEAD_AFTER_GONE_HOURS) that mark a "
        "source dead.",
    )
    crawl_dead_after_gone_hours: float = Field(
        default=24,
        ge=0,
        description="A source answering only 404/410 is dead once the first of them is this old (and there have been "
        "NEWSAGG_CRAWL_DEAD_AFTER_GONE): a deploy's brief 404s kill no source. Until then it is fetched at the failure "
        "back-off and not paused; a success or another error ends the streak.",
    )
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
    crawl_priority_trending_min_score: float = Field(
        default=3.0,
        ge=0,
        description="A trending story raises its sources only with at least this trending score (about one article "
        "joining it now = 1, older arrivals in the hour less, reader engagement half as much): on a quiet day the "
        "top stories are noise and raise nothing.",
    )
    crawl_priority_websub_window_minutes: float = Field(
        default=30,
        ge=0,
        description="A hub's pushes raise their source's crawl priority at most once in this many minutes, however "
        "many arrive: a publisher pushing without end cannot hold its source at the top (its pushed entries are "
        "stored all the same). 0: every push raises.",
    )
    crawl_priority_every_seconds: int = Field(
        default=60,
        description="How often breaking and trending stories raise their sources' crawl priority: a divisor of 60, "
        "or whole minutes dividing an hour.",
    )
    source_refresh_throttle_seconds: int = Field(
        default=60, description="sourceRefresh runs at most once per source in this many seconds."
    )

    # --- fetching ----------------------------------------------------------------------------------------------------
    fetch_timeout_seconds: float = Field(default=10, description="Connect/read timeout of one fetch.")
    fetch_total_seconds: float = Field(
        default=60,
        gt=0,
        description="Longest one fetch (a feed, a robots.txt, an article page) may take, its redirects and its "
        "body's last byte included; then it fails as a timeout. A server that drips its body slower than the "
        "connect/read timeout notices is cut off here.",
    )
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
    fetch_archive_per_source_per_hour: int = Field(
        default=120,
        ge=0,
        description="Most bodies archived for one source in an hour (polls come at most once a minute; a hub "
        "pushing without end would otherwise fill the archive): past it a fetch or push is stored and logged but its "
        "body not archived (counted in newsagg_fetch_archive_skipped_total). 0: no cap.",
    )
    fetch_archive_reference_cache_mb: float = Field(
        default=64,
        ge=0,
        description="Reference bodies (those stored whole, that the next ones of their source are compressed "
        "against) kept decompressed in each process, with their zstd dictionaries, up to this many MB (least "
        "recently used go first): a reference is read from PostgreSQL once per process, not once per fetch.",
    )
    replay_batch_fetches: int = Field(
        default=100, ge=1, description="`newsagg replay` reads and stores archived fetches this many at a time."
    )
    replay_batch_mb: float = Field(
        default=32,
        gt=0,
        description="A `newsagg replay` batch holds at most this many MB of bodies as received (a larger body is "
        "a batch of its own): what a replay holds in memory stays bounded however many fetches it replays.",
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

    # --- article text ------------------------------------------------------------------------------------------------
    article_text_enabled: bool = Field(
        default=True,
        description="Fetch the page of each new article whose feed entry has no full text, for its main text (each "
        "source can turn it off: `articleText`); a feed's own full text is stored either way.",
    )
    article_queue_name: str = Field(
        default="newsagg:articles", description="arq queue of the article-text fetches (apart from crawling's)."
    )
    article_fetch_concurrency: int = Field(
        default=4, ge=0, description="Article pages each article worker (or crawl worker that also fetches them) "
        "fetches at once (0: none in a crawl worker).",
    )  # fmt: skip
    worker_fetches_articles: bool = Field(
        default=True,
        description="`newsagg worker` also fetches article pages beside crawling, in the same process. Set it false "
        "where article workers (`newsagg worker --articles`) run apart, so the crawl keeps its CPU; `newsagg up` does "
        "so itself when it runs article workers.",
    )
    article_extraction_timeout_seconds: float = Field(
        default=20, gt=0, description="A page whose extraction takes longer is abandoned (its extraction process "
        "replaced) and marked `extraction_timeout`, never tried again.",
    )  # fmt: skip
    article_extraction_nice: int = Field(
        default=10, ge=0, le=19, description="Niceness added to the extraction processes (os.nice), so that on a busy "
        "host crawling and the API win the CPU over article extraction.",
    )  # fmt: skip
    article_sweep_hours: float = Field(
        default=24, ge=0, description="The sweeper enqueues again the page fetch of an article stored in this many "
        "last hours (and at least `sweep_grace_seconds` ago) that has neither a text nor a job queued: its job was "
        "lost with Redis. Older articles: `newsagg articles fetch-text`. 0: no sweep of page fetches.",
    )  # fmt: skip
    article_sweep_seconds: int = Field(
        default=300, ge=1, description="How often the sweeper looks for articles whose page job was lost (once in "
        "this many seconds across workers): it reads the articles without a page first, at most 5,000, and asks the "
        "article queue about those only.",
    )  # fmt: skip
    article_max_bytes: int = Field(default=2 * 1024 * 1024, description="Abort an article page larger than this.")
    article_feed_text_min_words: int = Field(
        default=120, description="A feed entry's content:encoded of at least this many words is its full text."
    )

    # --- WebSub (push) -----------------------------------------------------------------------------------------------
    public_url: str | None = Field(
        default=None,
        description="Public base URL of the API (e.g. https://news.example.com): where WebSub hubs reach it; "
        "unset = no push.",
    )

    websub_lease_seconds: int = Field(default=10 * 86400, description="Subscription lease asked of hubs.")
    websub_renew_before_hours: float = Field(default=24, description="Renew a lease this long before it ends.")
    websub_poll_hours: float = Field(default=6, description="A source the hub pushes is still polled this often.")
    websub_retry_hours: float = Field(default=24, description="Wait before asking a hub again after a failure.")
    websub_pending_pushes: int = Field(
        default=100, ge=1, description="Pushes of one source waiting to be ingested, at most: one more is refused "
        "with 503 and Retry-After (hubs retry; counted in newsagg_websub_pushes_refused_total). One ingest job at a "
        "time per source stores what waits, oldest first.",
    )  # fmt: skip

    # --- parsing -----------------------------------------------------------------------------------------------------
    summary_max_chars: int = Field(default=1000, description="Plain-text summaries are cut to this length.")
    title_max_chars: int = Field(default=500, description="Titles are cut to this length.")

    @property
    def user_agent(self) -> str:
        from app import __version__

        return f"newsagg/{__version__} (+{self.contact_url})"
