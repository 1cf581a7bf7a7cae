"""The arq worker: crawling (the crawl tick, source refreshes, WebSub pushes and subscriptions), understanding and
clustering new articles into stories, relaying the outbox to Redis, alerting readers (fan-out, webhooks, email
digests), keeping the search index in sync (and building the day's text-search index over the last days' articles),
sweeping up work whose worker died, and deleting rows past their retention; it samples its backlogs for /metrics;
beside its main loop, a second one may fetch article pages for their text from a queue of their own
(jobs/articles.py), unless article workers of their own do (`newsagg worker --articles`, create_article_worker). The
jobs live in jobs/crawl.py, jobs/websub.py, jobs/stories.py, jobs/outbox.py, jobs/notifications.py, jobs/search.py,
jobs/sweeper.py, jobs/retention.py and jobs/backlogs.py; each process beats a heartbeat (app/workers/heartbeat.py);
this module starts and registers them, each timed and its failures counted (app/observability/work.py)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine
from datetime import timedelta
from typing import Any

from arq import cron
from arq.cron import CronJob
from arq.worker import Function, Worker, func

from app.extraction.pool import close_extraction_pool
from app.ingest.fetch import new_http_client
from app.ingest.politeness import Politeness
from app.notifications.digest import run_seconds
from app.notifications.webhooks import webhook_client
from app.observability.work import measured
from app.queue_names import (
    CRAWL_TICK,
    FETCH_ARTICLE_TEXT,
    INGEST_PUSH,
    REFRESH_SOURCE,
    UNDERSTAND_ARTICLES,
    WEBSUB_SUBSCRIBE,
)
from app.services import Services
from app.settings import Settings, get_settings
from app.stories.store import ClusteringCache
from app.workers.heartbeat import Heartbeat
from jobs.articles import fetch_article_text_job
from jobs.backlogs import SAMPLE_SECONDS, sample_backlogs_job
from jobs.crawl import crawl_priority_job, crawl_tick, ingest_push_job, refresh_source_job
from jobs.loop import ResilientWorker, queue_pool, retried_on_redis
from jobs.notifications import deliver_webhooks_job, expire_alert_hours_job, fan_out_job, send_digests_job
from jobs.outbox import relay_outbox_job
from jobs.retention import RETENTION_TIMEOUT_S, retention_job
from jobs.search import recent_index_job, stored_bodies_job, sync_search_job
from jobs.sharing import flush_share_clicks_job
from jobs.stories import merge_stories_job, understand_articles_job
from jobs.sweeper import sweep_job
from jobs.websub import websub_renew, websub_subscribe_job


async def startup(ctx: dict[str, Any]) -> None:
    if "services" in ctx:
        return  # the loop restarted after a Redis outage (jobs/loop.py): the process's handles are still good
    _open(ctx)
    settings: Settings = ctx["settings"]
    # this worker's copy of the active stories (app/stories/store.py)
    ctx["clustering"] = ClusteringCache(timedelta(seconds=settings.velocity_window_seconds))
    ctx["heartbeat"] = Heartbeat(settings)  # its id names the claims this worker holds
    await ctx["heartbeat"].start()
    if ctx.get("article_worker") and fetches_articles_inline(settings):
        ctx["article_worker"] = await ArticleWorker.start(settings, ctx)


def fetches_articles_inline(settings: Settings) -> bool:
    """Whether a crawl worker also runs the article queue: unless article workers of their own do
    (`worker_fetches_articles` false), or it may fetch none at once."""
    return settings.worker_fetches_articles and settings.article_fetch_concurrency > 0


async def shutdown(ctx: dict[str, Any]) -> None:
    if isinstance(ctx.get("article_worker"), ArticleWorker):
        await ctx["article_worker"].stop()
    await ctx["heartbeat"].stop()
    await _close(ctx)


def _open(ctx: dict[str, Any]) -> None:
    """The process's handles: database and Redis, the HTTP client and politeness every fetch goes through."""
    settings: Settings = ctx.get("settings") or get_settings()
    ctx["settings"] = settings
    ctx["services"] = Services.open(settings, pre_ping=False)  # see app.db.engine.create_engine
    ctx["http"] = new_http_client(settings)
    ctx["politeness"] = Politeness(ctx["services"].redis, ctx["http"], settings)
    ctx["webhooks"] = webhook_client(settings)  # its own pool and SSRF rule (app/notifications/webhooks.py)


async def _close(ctx: dict[str, Any]) -> None:
    close_extraction_pool()
    await ctx["http"].aclose()
    await ctx["webhooks"].aclose()
    await ctx["services"].close()


class ArticleWorker:
    """The article queue's worker inside a worker process: its own arq loop and job limit, sharing the process's
    handles (so one HTTP pool and one politeness serve both queues)."""

    def __init__(self, worker: Worker) -> None:
        self._worker = worker
        self._task = asyncio.create_task(worker.main(), name="article-worker")

    @classmethod
    async def start(cls, settings: Settings, shared: dict[str, Any]) -> ArticleWorker:
        pool = queue_pool(settings, settings.article_queue_name)
        handles = {key: shared[key] for key in ("settings", "services", "http", "politeness")}
        return cls(create_article_worker(settings, redis_pool=pool, ctx=handles, on_startup=None, on_shutdown=None))

    async def stop(self) -> None:
        """Its loop stopped, then its jobs told to stop and waited for before its pool closes (the worker's close,
        jobs/loop.py: a job still ending would otherwise record its end on a closed pool, or outlive the process's
        handles, which the crawl worker closes next)."""
        close_extraction_pool()
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        await self._worker.close()


async def _article_startup(ctx: dict[str, Any]) -> None:
    if "services" not in ctx:
        _open(ctx)


async def _article_process_startup(ctx: dict[str, Any]) -> None:
    """An article worker process (`newsagg worker --articles`): the handles, and a heartbeat as every worker beats."""
    if "services" in ctx:
        return  # the loop restarted after a Redis outage (jobs/loop.py)
    _open(ctx)
    ctx["heartbeat"] = Heartbeat(ctx["settings"], role="article worker")
    await ctx["heartbeat"].start()


async def _article_process_shutdown(ctx: dict[str, Any]) -> None:
    await ctx["heartbeat"].stop()
    await _close(ctx)


def article_worker_options(settings: Settings, *, process: bool = False) -> dict[str, Any]:
    """The article queue's worker: one job function, `article_fetch_concurrency` jobs at once; a `process` of its
    own beats a heartbeat and stops on SIGTERM."""
    if not settings.redis_url:
        raise SystemExit("REDIS_URL is not set: run `newsagg up` (starts embedded Redis) or set REDIS_URL")
    return {
        "functions": [_job(fetch_article_text_job, FETCH_ARTICLE_TEXT, max_tries=REDIS_TRIES)],
        "on_startup": _article_process_startup if process else _article_startup,
        "on_shutdown": _article_process_shutdown if process else _close,
        "queue_name": settings.article_queue_name,
        "poll_delay": settings.worker_poll_delay_seconds,
        "max_jobs": max(1, settings.article_fetch_concurrency),
        "ctx": {"settings": settings},
        "handle_signals": process,
        "health_check_interval": 60,
    }


def create_article_worker(settings: Settings, *, process: bool = False, **overrides: Any) -> Worker:
    """The article queue's worker on its own: `newsagg worker --articles` (`process`), or tests in burst mode; a
    crawl worker may also run one beside its main loop (ArticleWorker)."""
    return _resilient(settings, {**article_worker_options(settings, process=process), **overrides})


REDIS_TRIES = 6  # a job that keeps failing on Redis gives up after about a minute of retries (1+2+4+8+16 s)
STORED_BODIES_TIMEOUT_S = 6 * 3600  # texts stored before 0024 indexed in small batches (5 ms each: 4 h for 3M)
RECENT_INDEX_TIMEOUT_S = 3600  # building the recent search index reads the last days' articles (15 s at 240,000)


def tick_seconds(every: int) -> set[int]:
    """The seconds of each minute at which a tick of period `every` fires."""
    return set(range(0, 60, every))


def _every(seconds: int) -> dict[str, set[int]]:
    """A cron schedule for a period that divides a minute or an hour (an hourly one at half past the minute)."""
    if seconds < 60:
        return {"second": tick_seconds(seconds)}
    return {"minute": set(range(0, 60, seconds // 60)), "second": {30}}


def _job(function: Callable[..., Coroutine[Any, Any, Any]], name: str, max_tries: int) -> Function:
    """A job enqueued by name, measured under that name, run again later when it failed on Redis (each try counts
    against `max_tries`); results are not kept (nothing reads them)."""
    return func(measured(retried_on_redis(function), name), name=name, keep_result=0, max_tries=max_tries)


def _cron(function: Callable[..., Coroutine[Any, Any, Any]], **schedule: Any) -> CronJob:
    """A periodic job, measured under its function's name."""
    return cron(measured(function), keep_result=0, **schedule)


def worker_options(settings: Settings) -> dict[str, Any]:
    """Everything arq needs, from newsagg's settings (used by `newsagg worker` and by tests)."""
    if not settings.redis_url:
        raise SystemExit("REDIS_URL is not set: run `newsagg up` (starts embedded Redis) or set REDIS_URL")
    functions: list[Function] = [
        _job(refresh_source_job, REFRESH_SOURCE, max_tries=REDIS_TRIES),
        _job(crawl_tick, CRAWL_TICK, max_tries=REDIS_TRIES),  # also enqueueable, besides the cron
        _job(ingest_push_job, INGEST_PUSH, max_tries=REDIS_TRIES),
        _job(websub_subscribe_job, WEBSUB_SUBSCRIBE, max_tries=REDIS_TRIES),
        _job(understand_articles_job, UNDERSTAND_ARTICLES, max_tries=REDIS_TRIES),
    ]
    return {
        "functions": functions,
        "cron_jobs": [
            _cron(crawl_tick, second=tick_seconds(settings.crawl_tick_seconds), run_at_startup=True),
            _cron(websub_renew, minute=17, second=0),
            _cron(retention_job, minute=41, second=0, timeout=RETENTION_TIMEOUT_S),
            _cron(merge_stories_job, **_every(settings.story_merge_seconds)),
            _cron(crawl_priority_job, **_every(settings.crawl_priority_every_seconds)),
            _cron(relay_outbox_job, second=tick_seconds(5)),
            _cron(flush_share_clicks_job, **_every(settings.share_click_flush_seconds)),
            _cron(fan_out_job, second=tick_seconds(2)),  # urgent alerts: < 30 s from breaking to delivery
            _cron(deliver_webhooks_job, second=tick_seconds(2)),
            _cron(send_digests_job, second={45}, timeout=run_seconds(settings)),
            _cron(expire_alert_hours_job, **_every(300)),
            _cron(sync_search_job, second=tick_seconds(5)),
            _cron(sweep_job, second=tick_seconds(settings.sweep_seconds), run_at_startup=True),
            _cron(sample_backlogs_job, second=tick_seconds(SAMPLE_SECONDS), run_at_startup=True),
            _cron(recent_index_job, minute=7, second=0, run_at_startup=True, timeout=RECENT_INDEX_TIMEOUT_S),
            _cron(stored_bodies_job, hour=3, minute=17, second=0, run_at_startup=True, timeout=STORED_BODIES_TIMEOUT_S),
        ],
        "on_startup": startup,
        "on_shutdown": shutdown,
        "queue_name": settings.queue_name,
        "poll_delay": settings.worker_poll_delay_seconds,
        "max_jobs": settings.worker_max_jobs,
        # a burst worker (tests, one-off runs) leaves the article queue to a worker of its own (create_article_worker)
        "ctx": {"settings": settings, "article_worker": True},
        "handle_signals": True,
        "health_check_interval": 60,
    }


def create_worker(settings: Settings, **overrides: Any) -> Worker:
    """A worker whose loop survives Redis outages (jobs/loop.py)."""
    options = {**worker_options(settings), **overrides}
    if options.get("burst"):
        options["ctx"] = {**options["ctx"], "article_worker": False}
    return _resilient(settings, options)


def _resilient(settings: Settings, options: dict[str, Any]) -> Worker:
    """The worker of `options`, on the given `redis_pool` or on one of its own whose calls are bounded
    (jobs/loop.py `queue_pool`: arq's own pool would wait forever on a Redis that hangs)."""
    pool = options.pop("redis_pool", None) or queue_pool(settings, options["queue_name"])
    return ResilientWorker(**options, redis_pool=pool, backoff_cap=settings.redis_backoff_max_seconds)
