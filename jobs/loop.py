"""The worker's arq loop, made to outlive Redis: arq's `Worker.main` ends at the first failed Redis call, so it is
restarted with back-off (logged and counted); a job that failed on Redis, or on PostgreSQL being unreachable, is retried
later with back-off."""

from __future__ import annotations

import asyncio
import functools
import logging
import signal
import time
from collections.abc import Callable, Coroutine
from typing import Any

from arq.connections import ArqRedis
from arq.worker import Retry, Worker
from redis.exceptions import RedisError
from sqlalchemy.exc import DBAPIError

from app.redis_client import redis_of
from app.resilience.backoff import Backoff
from app.resilience.metrics import DATABASE_RETRIES, REDIS_DEGRADED, WORKER_RESTARTS
from app.resilience.outage import unreachable
from app.resilience.stopping import stop_if_told
from app.settings import Settings

log = logging.getLogger(__name__)

REDIS_FAILURES = (RedisError, OSError, asyncio.TimeoutError)  # what a lost Redis raises, from redis-py or a socket
REDIS_RETRY_FIRST_S = 1.0  # a job that failed on Redis runs again after 1, 2, 4 … seconds
REDIS_RETRY_CAP_S = 60.0


class ResilientWorker(Worker):
    """An arq worker whose loop restarts when Redis goes away, waiting 0.1 s doubling up to `backoff_cap`; the jobs
    it runs meanwhile go on (they find Redis again when it is back)."""

    def __init__(self, *args: Any, backoff_cap: float = 5, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._backoff = Backoff(cap=backoff_cap)

    async def main(self) -> None:
        while True:
            started = time.monotonic()
            try:
                await super().main()
                return
            except REDIS_FAILURES as error:
                stop_if_told(error)
                if time.monotonic() - started > 2 * self._backoff.cap:
                    self._backoff.reset()  # it ran well for a while: this is a new outage
                wait = self._backoff.next_wait()
                WORKER_RESTARTS.inc()
                log.warning("worker: lost Redis (%s: %s); restarting the loop in %.1f s",
                            type(error).__name__, error, wait)  # fmt: skip
                await asyncio.sleep(wait)

    async def _poll_iteration(self) -> None:
        """arq's, between two checks that the worker was not told to stop: a stop that a Redis command's socket
        timeout dropped (app/resilience/stopping.py) left the loop polling for good (`newsagg worker` deaf to SIGTERM,
        a crawl worker's shutdown waiting on its article loop forever)."""
        stop_if_told()
        await super()._poll_iteration()
        stop_if_told()

    async def close(self) -> None:
        """arq's close (0.28, pinned: its steps in its order) with two steps allowed to fail. Waiting for the jobs it
        cancelled: all are waited for, where one that could not record its end in Redis (gone meanwhile) ended arq's
        wait at once, the others still stopping (recording theirs once Redis was back), and the close in that error,
        the worker's shutdown skipped. And removing the health-check key: when Redis is already gone (stopped with the
        worker, as `newsagg up` stops them together), the key is left to expire. Either way the worker's own shutdown
        still runs (its heartbeat signs off, its handles close), rather than the stop ending in a traceback."""
        if not self._handle_signals:
            self.handle_sig(signal.SIGUSR1)  # arq's way of cancelling its own loop
        if not self._pool:
            return
        for ended in await asyncio.gather(*self.tasks.values(), return_exceptions=True):
            if isinstance(ended, REDIS_FAILURES):  # its job runs again once its in-progress mark expires, as arq's do
                log.warning("worker: a job's end not recorded, Redis gone (%s: %s)", type(ended).__name__, ended)
            elif isinstance(ended, Exception):
                log.error("worker: a job ended in an error at shutdown", exc_info=ended)
        try:
            await self.pool.delete(self.health_check_key)
        except REDIS_FAILURES as error:
            log.warning("worker: Redis gone at shutdown (%s: %s); stopping without it", type(error).__name__, error)
        if self.on_shutdown:
            await self.on_shutdown(self.ctx)
        await self.pool.aclose(close_connection_pool=True)
        self._pool = None


def queue_pool(settings: Settings, queue_name: str) -> ArqRedis:
    """An arq pool for `queue_name` whose calls are bounded as every Redis client's are (app/redis_client.py); arq's
    own `create_pool` sets no socket timeout (its RedisSettings has only `conn_timeout`), so a hung Redis would hold
    the worker's loop and every enqueue forever. It connects on first use: a Redis away at start is the loop's to
    wait out (ResilientWorker), an enqueuer's call fails at once."""
    pool = redis_of(ArqRedis, settings)
    pool.default_queue_name = queue_name
    return pool


JobFunction = Callable[..., Coroutine[Any, Any, Any]]


def retried_on_redis(function: JobFunction) -> JobFunction:
    """`function`, run again later (arq's Retry, while its tries last) when it fails because Redis or PostgreSQL is
    unreachable (refused, dropped, shutting down); the log and the metrics say which."""

    @functools.wraps(function)
    async def job(ctx: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        try:
            return await function(ctx, *args, **kwargs)
        except (*REDIS_FAILURES, DBAPIError) as error:
            server = lost_server(error)
            if server is None:
                raise
            (REDIS_DEGRADED.labels("job") if server == "Redis" else DATABASE_RETRIES).inc()
            wait = min(REDIS_RETRY_CAP_S, REDIS_RETRY_FIRST_S * 2 ** (int(ctx.get("job_try") or 1) - 1))
            log.warning("job %s failed on %s (%s: %s); retried in %.0f s", function.__name__, server,
                        type(error).__name__, str(error).split("\n", 1)[0], wait)  # fmt: skip
            raise Retry(defer=wait) from error

    return job


def lost_server(error: BaseException) -> str | None:
    """ "PostgreSQL" or "Redis" when `error` says that server could not be reached; None when it is another error."""
    if isinstance(error, DBAPIError):
        return "PostgreSQL" if unreachable(error) else None
    if isinstance(error, RedisError):
        return "Redis"
    if isinstance(error, REDIS_FAILURES):  # a bare socket error: whose driver raised it?
        return "PostgreSQL" if _raised_in(error, ("asyncpg", "sqlalchemy")) else "Redis"
    return None


def _raised_in(error: BaseException, packages: tuple[str, ...]) -> bool:
    frame = error.__traceback__
    while frame is not None:
        if str(frame.tb_frame.f_globals.get("__name__", "")).startswith(packages):
            return True
        frame = frame.tb_next
    return False
